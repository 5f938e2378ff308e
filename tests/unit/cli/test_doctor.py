"""`trainbot doctor` checks with the cluster faked: failures say what is wrong and the fix."""

from __future__ import annotations

import os
from unittest import mock

import pytest

from bot.cli.doctor import _proxy_check, format_check, run_checks
from bot.cluster.errors import ClusterUnavailable
from bot.config.models.service import SlackConfig

CONFIG = """\
clusters:
  dev: {host: 127.0.0.1, port: 2222, user: u, key_file: /k, known_hosts: /kh}
store: {url: "sqlite:///STORE"}
"""


class DownRunner:
    closed = False

    def connect(self):
        raise ClusterUnavailable("cannot connect to u@127.0.0.1:2222: Connection refused")

    def close(self):
        DownRunner.closed = True


def test_unreachable_cluster_fails_with_fix_and_other_checks_still_run(tmp_path):
    path = tmp_path / "trainbot.yaml"
    path.write_text(CONFIG.replace("STORE", str(tmp_path / "s.db")))
    env = {"SLACK_BOT_TOKEN": "xapp-swapped", "SLACK_APP_TOKEN": "xapp-1"}
    checks = {c.name: c for c in run_checks(path, env, runner_factory=lambda _c: DownRunner())}
    assert checks["config"].ok and checks["store"].ok
    ssh = checks["ssh dev"]
    assert not ssh.ok and "Connection refused" in ssh.detail and "ssh -p 2222" in ssh.fix
    assert "slurm dev" not in checks and DownRunner.closed
    slack = checks["slack tokens"]
    assert not slack.ok and "SLACK_BOT_TOKEN does not start with 'xoxb-'" in slack.detail
    assert "fix:" in format_check(slack)


def test_unwritable_store_fails(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = tmp_path / "trainbot.yaml"
    path.write_text(CONFIG.replace("STORE", str(blocker / "sub" / "s.db")))
    checks = {c.name: c for c in run_checks(path, {}, runner_factory=lambda _c: DownRunner())}
    assert not checks["store"].ok and "store.url" in checks["store"].fix
    assert not checks["slack tokens"].ok



def test_doctor_shows_the_post_deadline_the_bot_runs_with(tmp_path):
    """Doctor names the post deadline (slack.post_deadline_s) and the wait before another
    run makes a post a stopped bot began, the configured one or the default's, whether the
    Slack tokens are set or not (it is configuration). Before, it showed them only when the
    tokens check passed."""
    path = tmp_path / "trainbot.yaml"
    with_tokens = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
    for slack, deadline, takeover in (("", "300 s", "390 s"),
                                      ("slack: {post_deadline_s: 600}\n", "600 s", "690 s")):
        path.write_text(CONFIG.replace("STORE", str(tmp_path / "s.db")) + slack)
        for env in (with_tokens, {}):
            checks = {c.name: c for c in run_checks(path, env,
                                                    runner_factory=lambda _c: DownRunner(),
                                                    slack_client_factory=lambda _c: DownSlack())}
            assert checks["slack tokens"].ok == bool(env)
            posts = checks["slack posts"]
            assert posts.ok and f"stops at {deadline} (slack.post_deadline_s)" in posts.detail
            assert f"made by another after {takeover}" in format_check(posts)


def test_doctor_refuses_a_post_deadline_too_short_for_an_upload(tmp_path):
    """A slack.post_deadline_s that leaves no room for an upload's two requests fails the
    config check with the config's own message (field, line, minimum, why); before, doctor
    passed it and every chart upload then failed."""
    path = tmp_path / "trainbot.yaml"
    config = CONFIG.replace("STORE", str(tmp_path / "s.db"))
    path.write_text(config + "slack: {post_deadline_s: 25}\n")
    checks = list(run_checks(path, {}, runner_factory=lambda _c: DownRunner()))
    assert [(c.name, c.ok) for c in checks] == [("config", False)]
    detail = checks[0].detail
    assert "slack.post_deadline_s" in detail
    assert f"(line {len(config.splitlines()) + 1})" in detail
    assert "25 must be more than 60 s" in detail and "upload" in detail


class DownSlack:
    def auth_test(self):
        raise OSError("no network in this test")

def test_missing_config_is_one_failed_check(tmp_path):
    checks = list(run_checks(tmp_path / "none.yaml", {}))
    assert [(c.name, c.ok) for c in checks] == [("config", False)]
    assert "not found" in checks[0].detail


def test_the_store_check_never_prints_the_database_password(tmp_path):
    path = tmp_path / "trainbot.yaml"
    path.write_text(CONFIG.replace("sqlite:///STORE",
                                   "postgresql+psycopg://trainbot:s3cret@127.0.0.1:1/trainbot"))
    store = {c.name: c for c in run_checks(path, {}, runner_factory=lambda _c: DownRunner())
             }["store"]
    assert not store.ok and "127.0.0.1:1" in store.detail  # it names where it tried
    assert "s3cret" not in store.detail + store.fix


def test_a_store_url_that_does_not_parse_is_shown_without_its_password(tmp_path):
    path = tmp_path / "trainbot.yaml"
    path.write_text(CONFIG.replace("sqlite:///STORE", "postgresql://trainbot:s3cret@db:abc/x"))
    store = {c.name: c for c in run_checks(path, {}, runner_factory=lambda _c: DownRunner())
             }["store"]
    assert not store.ok and "postgresql://trainbot:***@db:abc/x" in store.detail
    assert "s3cret" not in store.detail + store.fix


def test_a_store_url_from_the_environment_is_named_and_masked(tmp_path):
    path = tmp_path / "trainbot.yaml"
    path.write_text(CONFIG.replace("STORE", str(tmp_path / "from-file.db")))
    env = {"TRAINBOT_STORE_URL": "postgresql+psycopg://trainbot:s3cret@127.0.0.1:1/trainbot"}
    store = {c.name: c for c in run_checks(path, env, runner_factory=lambda _c: DownRunner())
             }["store"]
    assert not store.ok
    assert store.detail.startswith("postgresql+psycopg://trainbot:***@127.0.0.1:1/trainbot "
                                   "(from $TRAINBOT_STORE_URL): ")
    assert "$TRAINBOT_STORE_URL" in store.fix and "s3cret" not in store.detail + store.fix
    env["TRAINBOT_STORE_URL"] = f"sqlite:///{tmp_path / 'from-env.db'}"
    store = {c.name: c for c in run_checks(path, env, runner_factory=lambda _c: DownRunner())
             }["store"]
    assert store.ok and "from-env.db (from $TRAINBOT_STORE_URL) writable" in store.detail
    assert not (tmp_path / "from-file.db").exists()


# ------------------------------------------------------------------ Slack, for real


SLACK_CONFIG = CONFIG + """\
recipes:
  mix: {cluster: dev, sbatch_script: /s.sbatch, channel: training}
  eval: {cluster: dev, sbatch_script: /e.sbatch, channel: evals}
slack:
  api_url: API_URL
  channels: {training: C0TRAINRUNS, evals: C0EVALRUNS}
"""


def slack_checks(tmp_path, slack, *extra: str) -> dict:
    from bot.slack.retry import make_client

    path = tmp_path / "trainbot.yaml"
    path.write_text(SLACK_CONFIG.replace("STORE", str(tmp_path / "s.db"))
                    .replace("API_URL", slack.api_url))
    env = {"SLACK_BOT_TOKEN": slack.token, "SLACK_APP_TOKEN": "xapp-1"}
    return {c.name: c for c in run_checks(
        path, env, runner_factory=lambda _c: DownRunner(),
        slack_client_factory=lambda config: make_client(slack.token, base_url=slack.api_url,
                                                        timeout=10))}


def test_doctor_checks_the_token_scopes_and_channels_against_slack(tmp_path):
    from slack_standin import SlackStandIn

    with SlackStandIn() as slack:
        checks = slack_checks(tmp_path, slack)
    assert checks["slack auth"].ok and "@trainbot" in checks["slack auth"].detail
    assert checks["slack scopes"].ok
    assert checks["slack channel C0TRAINRUNS"].ok and checks["slack channel C0EVALRUNS"].ok
    assert "recipe(s) mix" in checks["slack channel C0TRAINRUNS"].detail


def test_doctor_reports_missing_scopes_and_a_channel_the_bot_is_not_in(tmp_path):
    from slack_standin import SlackStandIn

    with SlackStandIn() as slack:
        slack.scopes -= {"files:write", "chat:write.public"}
        slack.outside.add("C0EVALRUNS")
        checks = slack_checks(tmp_path, slack)
    scopes = checks["slack scopes"]
    assert not scopes.ok and scopes.detail == "missing files:write"
    assert "reinstall" in scopes.fix
    assert checks["slack channel C0TRAINRUNS"].ok
    evals = checks["slack channel C0EVALRUNS"]
    assert not evals.ok and "not a member" in evals.detail and "recipe(s) eval" in evals.detail
    assert "/invite @trainbot" in evals.fix


def test_doctor_reports_a_token_slack_refuses(tmp_path):
    from slack_standin import SlackStandIn

    from bot.slack.retry import make_client

    with SlackStandIn() as slack:
        path = tmp_path / "trainbot.yaml"
        path.write_text(SLACK_CONFIG.replace("STORE", str(tmp_path / "s.db"))
                        .replace("API_URL", slack.api_url))
        env = {"SLACK_BOT_TOKEN": "xoxb-revoked", "SLACK_APP_TOKEN": "xapp-1"}
        checks = {c.name: c for c in run_checks(
            path, env, runner_factory=lambda _c: DownRunner(),
            slack_client_factory=lambda config: make_client("xoxb-revoked",
                                                            base_url=slack.api_url,
                                                            timeout=10))}
    auth = checks["slack auth"]
    assert not auth.ok and "invalid_auth" in auth.detail and "SLACK_BOT_TOKEN" in auth.fix
    assert "slack scopes" not in checks


def test_doctor_json_lists_every_check(tmp_path, capsys, monkeypatch):
    import json

    from bot.cli import main

    path = tmp_path / "trainbot.yaml"  # port 1: refused at once, no SSH server is asked
    path.write_text(CONFIG.replace("STORE", str(tmp_path / "s.db")).replace("2222", "1"))
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    assert main(["doctor", "--json", "--config", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["config"] == str(path)
    names = [c["name"] for c in doc["checks"]]
    assert names[0] == "config" and "slack tokens" in names
    tokens = next(c for c in doc["checks"] if c["name"] == "slack tokens")
    assert tokens["ok"] is False and tokens["fix"].startswith("export")


class UpRunner:
    """A cluster that answers `true` and nothing else (the Slurm checks then fail)."""

    def connect(self):
        pass

    def run(self, argv, **_kw):
        if list(argv) != ["true"]:
            raise ClusterUnavailable("no Slurm here")

    def close(self):
        pass


def test_doctor_shows_the_ssh_bounds_the_bot_runs_with(tmp_path):
    """The ssh check names each SSH bound with the key that sets it, the output bound
    (clusters.<name>.max_output_mib) beside the timeouts, the configured value or the
    default's. Before, doctor showed none of them."""
    path = tmp_path / "trainbot.yaml"
    config = CONFIG.replace("STORE", str(tmp_path / "s.db"))
    for extra, mib in (("", 64), (", max_output_mib: 8", 8)):
        path.write_text(config.replace("known_hosts: /kh", "known_hosts: /kh" + extra))
        checks = {c.name: c for c in run_checks(path, {}, runner_factory=lambda _c: UpRunner())}
        ssh = checks["ssh dev"]
        assert ssh.ok and ssh.detail == (
            "u@127.0.0.1:2222 reachable, host key matches known_hosts; a connection takes at "
            "most 10 s (clusters.dev.connect_timeout), a command 60 s "
            "(clusters.dev.command_timeout), an SFTP reply 15 s (clusters.dev.sftp_timeout); "
            f"a command's output is read up to {mib} MiB (clusters.dev.max_output_mib)")


def test_doctor_shows_the_proxy_slack_is_reached_through_its_password_masked(tmp_path):
    """Doctor names the proxy Slack is reached through, whether the tokens are set or not:
    slack.proxy (over the environment's), else HTTPS_PROXY and its kin as slack_sdk reads
    them (failed when not an http:// proxy URL, the fix naming the variable), else none;
    never a password."""
    path = tmp_path / "trainbot.yaml"
    config = CONFIG.replace("STORE", str(tmp_path / "s.db"))
    secret_proxy = "http://bot:pr0xy-s3cret@proxy.example.org:3128"
    cases: tuple[tuple[str, dict[str, str], bool, str], ...] = (
        ("", {}, True, "none: Slack is reached directly"),
        ("slack: {proxy: 'http://proxy.example.org:3128'}\n", {"HTTPS_PROXY": secret_proxy},
         True, "through http://proxy.example.org:3128 (slack.proxy)"),
        ("", {"https_proxy": secret_proxy}, True,
         "through http://bot:***@proxy.example.org:3128 ($https_proxy)"),
        ("", {"HTTP_PROXY": "socks5://proxy.example.org:1080"}, False, "scheme is 'socks5'"),
    )
    for slack, env, ok, said in cases:
        path.write_text(config + slack)
        checks = {c.name: c for c in run_checks(path, env,
                                                runner_factory=lambda _c: DownRunner())}
        proxy = checks["slack proxy"]
        assert proxy.ok == ok and said in proxy.detail, proxy
        assert "pr0xy-s3cret" not in format_check(proxy)
        if not ok:
            assert "$HTTP_PROXY" in proxy.fix


BLANK_PROXY_ENVS: tuple[dict[str, str], ...] = (
    {"HTTPS_PROXY": " ", "HTTP_PROXY": "http://proxy.example.org:3128"},
    {"HTTP_PROXY": " ", "http_proxy": "http://proxy.example.org:3128"},
    {"HTTPS_PROXY": "", "HTTP_PROXY": "http://proxy.example.org:3128"},
    {"https_proxy": "\t", "HTTP_PROXY": "http://proxy.example.org:3128"},
)


@pytest.mark.parametrize("env", BLANK_PROXY_ENVS)
def test_doctor_names_the_proxy_slack_sdk_takes_from_the_environment_by_its_rule(env):
    """slack_sdk takes the first of HTTPS_PROXY, https_proxy, HTTP_PROXY, http_proxy that is
    not empty, and no proxy when that one is blank: doctor names that one, never a proxy
    named after a blank (it said Slack went through HTTP_PROXY's behind a blank
    HTTPS_PROXY)."""
    from slack_sdk.proxy_env_variable_loader import load_http_proxy_from_env

    with mock.patch.dict(os.environ, env, clear=True):
        used = load_http_proxy_from_env()
    detail = _proxy_check(SlackConfig(), env).detail
    assert ("proxy.example.org" in detail) == (used is not None), detail


def test_a_blank_https_proxy_fails_doctor_saying_the_web_api_breaks_on_it():
    """A blank HTTPS_PROXY: slack_sdk takes no proxy (Socket Mode connects directly) but its
    Web API requests then go through urllib's opener, which takes the blank as its https
    proxy and fails each one: doctor fails, saying so and to unset it. A blank HTTP_PROXY
    alone leaves Slack reached directly."""
    check = _proxy_check(SlackConfig(), BLANK_PROXY_ENVS[0])
    assert not check.ok
    assert "$HTTPS_PROXY is blank" in check.detail and "fails each request" in check.detail
    assert check.fix.startswith("unset $HTTPS_PROXY")
    check = _proxy_check(SlackConfig(), {"HTTP_PROXY": " "})
    assert check.ok and check.detail.startswith("none: Slack is reached directly ($HTTP_PROXY")


class _ReadableRunner:
    """A login node where only `readable` paths pass `test -r` (the shell starts in $HOME)."""

    def __init__(self, *readable: str):
        self.readable = readable
        self.ran: list[list[str]] = []

    def run(self, argv, timeout=None, **kw):
        from bot.cluster.errors import CommandFailed

        self.ran.append(list(argv))
        if argv[-1] not in self.readable:
            raise CommandFailed(list(argv), 1, "")


def test_a_relative_script_is_looked_for_in_the_workdir_where_sbatch_opens_it():
    """sbatch runs with --chdir=workdir: `train.sbatch` is /scratch/proj/train.sbatch, as
    preflight reads it, not train.sbatch in the login shell's home."""
    from types import SimpleNamespace

    from bot.cli.doctor import _recipe_check

    recipe = SimpleNamespace(sbatch_script="train.sbatch", submit_command=None,
                             workdir="/scratch/proj")
    runner = _ReadableRunner("/scratch/proj/train.sbatch")
    check = _recipe_check("r", recipe, runner)
    assert check.ok, check
    assert runner.ran == [["test", "-r", "/scratch/proj/train.sbatch"]]
    assert "/scratch/proj/train.sbatch present" in check.detail
    missing = _recipe_check("r", recipe, _ReadableRunner())
    assert not missing.ok and "neither /scratch/proj/train.sbatch" in missing.detail
    no_workdir = SimpleNamespace(sbatch_script="train.sbatch", submit_command=None, workdir=None)
    assert _recipe_check("r", no_workdir, _ReadableRunner("train.sbatch")).ok


def test_a_relative_script_only_in_the_home_is_found_where_sbatch_finds_it():
    """sbatch looks in --chdir first, then (PATH, then) its own cwd, the login shell's home
    (strace on 22.05): a script only in the home submits, so doctor passes it too."""
    from types import SimpleNamespace

    from bot.cli.doctor import _recipe_check

    recipe = SimpleNamespace(sbatch_script="train.sbatch", submit_command=None,
                             workdir="/scratch/proj")
    runner = _ReadableRunner("train.sbatch")
    check = _recipe_check("r", recipe, runner)
    assert check.ok, check
    assert runner.ran == [["test", "-r", "/scratch/proj/train.sbatch"],
                          ["test", "-r", "train.sbatch"]]
