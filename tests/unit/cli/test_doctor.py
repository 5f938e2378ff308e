"""`trainbot doctor` checks with the cluster faked: failures say what is wrong and the fix."""

from __future__ import annotations

from bot.cli.doctor import format_check, run_checks
from bot.cluster.errors import ClusterUnavailable

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
