"""`trainbot sampler` and `python -m bot.probes.sampler`: one set of options, one validation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import build_parser as build_cli_parser
from bot.cli import main as cli_main
from bot.probes import sampler


def _parse_cli(argv: list[str]) -> dict:
    args = build_cli_parser(only="sampler").parse_args(["sampler", *argv])
    return {k: v for k, v in vars(args).items() if k not in ("command", "run")}


def _parse_module(argv: list[str]) -> dict:
    return vars(sampler.build_parser().parse_args(argv))


ENTRY_POINTS = {"trainbot sampler": _parse_cli, "python -m bot.probes.sampler": _parse_module}


@pytest.mark.parametrize("extra", [
    [],
    ["--interval", "0.1"],
    ["--interval", "2.5", "--count", "3"],
    ["--pid", "1", "--count", "1"],
])
def test_both_entry_points_accept_the_same_arguments_with_the_same_defaults(tmp_path, extra):
    argv = ["--out", str(tmp_path / "rss.jsonl"), *extra]
    parsed = {name: parse(argv) for name, parse in ENTRY_POINTS.items()}
    assert parsed["trainbot sampler"] == parsed["python -m bot.probes.sampler"]
    if not extra:
        assert parsed["trainbot sampler"] == {"out": str(tmp_path / "rss.jsonl"),
                                              "interval": sampler.DEFAULT_INTERVAL_S,
                                              "pid": None, "count": None}


@pytest.mark.parametrize(("extra", "complaint"), [
    (["--interval", "0.05"], "argument --interval: 0.05: use at least 0.1 seconds"),
    (["--interval", "nan"], "argument --interval: nan: use at least 0.1 seconds"),
    (["--interval", "inf"], "argument --interval: inf: use at least 0.1 seconds"),
    (["--interval", "soon"], "argument --interval: soon: not a number of seconds"),
    (["--count", "0"], "argument --count: 0: use a positive number of samples"),
    (["--count", "two"], "argument --count: two: not a whole number"),
    (["--pid", "0"], "argument --pid: 0: not a process id"),
    (["--pid", "-4"], "argument --pid: -4: not a process id"),
])
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_both_entry_points_refuse_the_same_arguments(tmp_path, capsys, entry, extra, complaint):
    with pytest.raises(SystemExit) as exc:
        ENTRY_POINTS[entry](["--out", str(tmp_path / "rss.jsonl"), *extra])
    assert exc.value.code == 2
    assert f"{entry}: error: {complaint}" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "complaint"), [
    (["--out", "/no/such/dir/rss.jsonl"],
     "argument --out: /no/such/dir/rss.jsonl: directory /no/such/dir does not exist"),
    (["--pid", "12"], "the following arguments are required: --out"),
])
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_both_entry_points_refuse_a_missing_output_place(capsys, entry, argv, complaint):
    with pytest.raises(SystemExit) as exc:
        ENTRY_POINTS[entry](argv)
    assert exc.value.code == 2
    assert f"{entry}: error: {complaint}" in capsys.readouterr().err


def test_an_unwritable_output_is_exit_2_naming_the_entry_point(tmp_path, capsys):
    out = tmp_path / "readonly" / "rss.jsonl"
    out.parent.mkdir()
    out.mkdir()  # a directory where the file should be: open() fails
    assert cli_main(["sampler", "--out", str(out), "--count", "1"]) == 2
    assert f"trainbot sampler: cannot write {out}" in capsys.readouterr().err
    assert sampler.main(["--out", str(out), "--count", "1"]) == 2
    assert f"python -m bot.probes.sampler: cannot write {out}" in capsys.readouterr().err


def test_the_module_entry_point_imports_only_the_sampler_and_its_core_series():
    """A job ships only these modules (tests/integration/test_sampler_in_slurm.py): the
    sampler must not pull in bot.probes' heavier siblings, the CLI or the config."""
    code = ("import sys, bot.probes.sampler\n"
            "print(sorted(m for m in sys.modules if m == 'bot' or m.startswith('bot.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3]).stdout
    assert out.strip() == str(["bot", "bot.core", "bot.core.sampler_series", "bot.probes",
                               "bot.probes.sampler"])
