"""Config and catalogue files that are not what they should be (binary, not UTF-8, nested
20,000 deep, an alias bomb, a number of 5,000 digits, a bad proxy_jump): one clear line naming
the file, from `load_config`, `Catalogue.load`, `trainbot doctor` and `trainbot run` alike;
never a traceback, never minutes of CPU or gigabytes of memory."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.cli import EXIT_USAGE, build_parser
from bot.cli import run as run_cmd
from bot.cli.doctor import run_checks
from bot.config import ConfigError, load_config
from bot.core.catalogue import Catalogue, CatalogueError

CONFIG = """\
clusters:
  dev: {host: 127.0.0.1, port: 2222, user: u, key_file: /k, known_hosts: /kh}
recipes:
  mix:
    cluster: dev
    sbatch_script: /home/u/train.sbatch
    owners: [U0123ABCD]
store: {url: "sqlite:///STORE"}
"""

# Nine levels of nine aliases: 9**9 (387 million) strings once expanded, in 451 bytes.
LIST_BOMB = "".join(
    [f'l0: &l0 [{", ".join(["lol"] * 9)}]\n']
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)]
)
# The same with mappings and merge keys, the shape a config would use.
MAP_BOMB = "".join(
    ["m0: &m0 {a: lol, b: lol, c: lol}\n"]
    + [f"m{i}: &m{i} {{{', '.join(f'k{j}: *m{i - 1}' for j in range(9))}}}\n"
       for i in range(1, 9)]
)
DEEP_FLOW = "[" * 20_000 + "]" * 20_000
DEEP_BLOCK = "".join(f"{' ' * i}k:\n" for i in range(1_200)) + " " * 1_200 + "x\n"

BAD_YAML = [
    pytest.param(LIST_BOMB, "aliases expand the document to more than", id="list-alias-bomb"),
    pytest.param(MAP_BOMB, "aliases expand the document to more than", id="map-alias-bomb"),
    pytest.param(f"clusters: {DEEP_FLOW}\n", "nested deeper than", id="deep-flow"),
    pytest.param(f"clusters:\n{DEEP_BLOCK}", "nested deeper than", id="deep-block"),
    pytest.param("a: &a [*a]\nclusters: {}\n", "refers to the node that contains it",
                 id="recursive-alias"),
    pytest.param(f"clusters: {{dev: {{port: {'9' * 5000}}}}}\n", "a number of 5000 digits",
                 id="5000-digit-int"),
    pytest.param("clusters: {dev: {host: 2024-13-45}}\n", "not a valid date", id="bad-date"),
]
NOT_TEXT = [
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "not a text file (a NUL byte",
                 id="binary"),
    pytest.param("clusters:\n  dev: {host: caf\u00e9}\n".encode("latin-1"), "not UTF-8",
                 id="latin-1"),
    pytest.param(b"clusters: {dev: {host: a\x01b}}\n", "control character", id="control-char"),
]


def config_path(tmp_path: Path, text: str | None = None, **replace: str) -> Path:
    text = text if text is not None else CONFIG.replace("STORE", str(tmp_path / "s.db"))
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / "trainbot.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def one_line_error(exc: Exception, name: Path) -> str:
    message = str(exc)
    assert str(name) in message, message
    assert "\n" not in message and len(message) < 400, message
    return message


# ------------------------------------------------------------------ config and catalogue files


# Each kind of file: its name, its top-level key, how trainbot loads it, what it raises.
KINDS: dict[str, tuple[str, str, Callable[[Path], object], type[Exception]]] = {
    "config": ("trainbot.yaml", "clusters:", lambda path: load_config(path, env={}),
               ConfigError),
    "site catalogue": ("site.yaml", "classes:", lambda path: Catalogue.load([path]),
                       CatalogueError),
}


def refusal(path: Path, kind: str) -> str:
    """The one line loading `path` as a `kind` file is refused with (it names the file)."""
    _, _, load, error = KINDS[kind]
    with pytest.raises(error) as info:
        load(path)
    return one_line_error(info.value, path)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("text", "problem"), BAD_YAML)
def test_bad_yaml_is_one_line_within_bounds(tmp_path, kind, text, problem):
    name, key, _, _ = KINDS[kind]
    path = tmp_path / name
    path.write_text(text.replace("clusters:", key), encoding="utf-8")
    tracemalloc.start()
    try:
        message = refusal(path, kind)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problem in message
    assert peak < 100 * 1024**2, f"{peak / 1024**2:.0f} MiB"


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("data", "problem"), NOT_TEXT)
def test_a_file_that_is_not_utf8_text_is_named(tmp_path, kind, data, problem):
    path = tmp_path / KINDS[kind][0]
    path.write_bytes(data)
    assert problem in refusal(path, kind)


def test_a_huge_config_file_is_refused_before_it_is_parsed(tmp_path):
    path = tmp_path / "trainbot.yaml"
    path.write_text("# " + "x" * (8 * 1024**2) + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert "larger than" in one_line_error(info.value, path)


def test_a_config_with_anchors_and_merge_keys_still_loads(tmp_path):
    text = CONFIG.replace("STORE", str(tmp_path / "s.db")).replace(
        "  mix:\n", "  mix: &mix\n").replace(
        "store:", "  mix2: {<<: *mix, partition: gpu, owners: [U0456EFGH]}\nstore:")
    config = load_config(config_path(tmp_path, text), env={})
    mix2 = config.recipe("mix2")
    assert (mix2.cluster, mix2.partition, mix2.owners) == ("dev", "gpu", ["U0456EFGH"])


@pytest.mark.parametrize(("jump", "problem"), [
    ("h:abc", "port 'abc' is not a number"),
    ("ops@h:99999", "port 99999 is out of range 1-65535"),
])
def test_a_bad_proxy_jump_is_a_config_error_at_its_key(tmp_path, jump, problem):
    path = config_path(tmp_path,
                       **{"known_hosts: /kh}": f"known_hosts: /kh, proxy_jump: '{jump}'}}"})
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    message = str(info.value)
    assert "clusters.dev.proxy_jump (line 2)" in message and problem in message


# ------------------------------------------------------------------------------ doctor and run


def run_bot(path: Path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test")
    code = run_cmd.run(build_parser(only="run").parse_args(["run", "--config", str(path)]))
    return code, capsys.readouterr().err


class _Unreachable:
    def connect(self) -> None:
        from bot.cluster.errors import ClusterUnavailable

        raise ClusterUnavailable("cannot connect: Connection refused")

    def close(self) -> None:
        pass


def failed_checks(path: Path) -> dict[str, str]:
    return {c.name: c.detail for c in run_checks(path, {}, runner_factory=lambda _c: _Unreachable())
            if not c.ok}


def test_doctor_fails_a_binary_site_catalogue_and_run_refuses_with_the_same_words(
        tmp_path, monkeypatch, capsys):
    site = tmp_path / "site.yaml"
    site.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    path = config_path(tmp_path, **{"store:": f"catalogue: {{extra: [{site}]}}\nstore:"})
    failed = failed_checks(path)
    assert "catalogue" in failed and str(site) in failed["catalogue"]
    code, err = run_bot(path, monkeypatch, capsys)
    assert code == EXIT_USAGE
    assert err == f"trainbot run: {failed['catalogue']}\n"


def test_doctor_fails_an_alias_bomb_config_and_run_refuses_with_the_same_words(
        tmp_path, monkeypatch, capsys):
    path = config_path(tmp_path, LIST_BOMB + CONFIG.replace("STORE", str(tmp_path / "s.db")))
    failed = failed_checks(path)
    assert list(failed) == ["config"] and "aliases expand the document" in failed["config"]
    code, err = run_bot(path, monkeypatch, capsys)
    assert code == EXIT_USAGE and err == f"trainbot run: {failed['config']}\n"


@pytest.mark.parametrize(("ssh_config", "problem"), [
    ("Host dev\n  Port abc\n", "Port 'abc' is not a number"),
    ("Host dev\n  ProxyCommand ssh -W %h:%p bastion\n", "uses ProxyCommand"),
])
def test_a_bad_ssh_config_fails_doctor_and_run_with_the_same_words(
        tmp_path, monkeypatch, capsys, ssh_config, problem):
    file = tmp_path / "ssh_config"
    file.write_text(ssh_config)
    path = config_path(tmp_path, **{"host: 127.0.0.1, port: 2222, user: u, key_file: /k":
                                    f"host: dev, user: u, key_file: /k, ssh_config: {file}"})
    failed = failed_checks(path)
    assert problem in failed["ssh settings dev"] and str(file) in failed["ssh settings dev"]
    code, err = run_bot(path, monkeypatch, capsys)
    assert code == EXIT_USAGE
    assert err == f"trainbot run: {failed['ssh settings dev']}\n"


@pytest.mark.parametrize(("text", "problem"), [
    ("clusters: {[1]: 2}\n", "found a list or mapping as a key"),
    ("clusters: {dev: {host: h, key_file: /k, connect_timeout: .inf}}\n", "finite number"),
    ("clusters: {dev: {host: h, key_file: /k, command_timeout: .nan}}\n", "finite number"),
])
def test_odd_but_valid_yaml_values_are_config_errors(tmp_path, text, problem):
    path = config_path(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert problem in str(info.value)
