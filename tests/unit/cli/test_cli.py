"""The `trainbot` command line: subcommand discovery and what a command imports."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from bot.cli import build_parser, command_names, main


def test_every_command_module_is_named_as_its_command() -> None:
    names = command_names()
    assert {"diagnose", "run", "sampler", "status", "submit"} <= set(names)
    for name in names:
        assert importlib.import_module(f"bot.cli.{name}").NAME == name


def test_a_command_imports_only_its_own_module() -> None:
    """`trainbot sampler` runs in batch scripts: it must not pay for pydantic or numpy, which
    other commands' modules import (checked in a fresh interpreter)."""
    code = ("import sys\nfrom bot.cli import main\ntry:\n    main(['sampler', '--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'pydantic', 'bot.config', 'bot.cli.run')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_the_full_listing_and_unknown_commands_still_work(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["nosuchcommand"])
    assert exc.value.code == 2
    assert "invalid choice: 'nosuchcommand'" in capsys.readouterr().err
    helptext = build_parser().format_help()
    assert all(name in helptext for name in command_names())


@pytest.mark.parametrize("flag", ["--worker-rss", "--mem", "--per-gpu-cap", "--site-floor"])
def test_a_bad_preflight_size_names_the_flag_and_the_form_it_takes(capsys, flag) -> None:
    code = main(["preflight", "mix", flag, "lots"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (f"trainbot preflight: {flag}: 'lots' is not a memory size; use a number "
                   "with K, M, G or T (e.g. 400G, 950GB, 563200M, 1T)\n")


@pytest.mark.parametrize("argv", [["status"], ["submit", "mix"]])
def test_a_store_that_cannot_be_opened_is_a_usage_error_saying_why(tmp_path, capsys,
                                                                   argv) -> None:
    config = tmp_path / "trainbot.yaml"
    config.write_text(
        "clusters:\n  dev: {host: 127.0.0.1, port: 1, user: u, key_file: /k, known_hosts: /kh}\n"
        "recipes:\n  mix: {cluster: dev, sbatch_script: /s.sbatch}\n"
        "store: {url: 'postgresql+psycopg://trainbot@db.example.org:port/trainbot'}\n")
    code = main([*argv, "--config", str(config)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"trainbot {argv[0]}: store.url ")
    assert "is not a database URL (its port is not a number)" in err
