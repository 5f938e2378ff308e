"""An error's sentence names its command briefly: a probe's srun carries its whole Python
source (13 KB), and written out it pushed what happened past Slack's 3000-character cut."""

from __future__ import annotations

from types import SimpleNamespace

from bot.cluster.errors import (
    BRIEF_ARG_CHARS,
    BRIEF_COMMAND_CHARS,
    CommandFailed,
    CommandTimedOut,
    OutcomeUnknown,
    OutputTooLarge,
    brief_command,
    said,
)
from bot.probes.dataloader_srun import build_probe_argv
from bot.services.probes import _view
from bot.slack.render import TemplateRenderer


def _probe_argv() -> list[str]:
    recipe = SimpleNamespace(partition="gpu", account=None, qos=None, workdir="/scratch/p",
                             exclude=None, env={}, env_setup=None,
                             placement_flags=lambda: ["--partition=gpu"])
    probe = SimpleNamespace(timeout_s=900.0, mem=None, python="python3", factory="m:f",
                            workers=2, samples=160, path=())
    return build_probe_argv(recipe, probe)  # type: ignore[arg-type]


def test_a_probe_that_outlived_its_timeout_says_so_within_slacks_cut():
    argv = _probe_argv()
    assert sum(len(a) for a in argv) > 3000
    exc = CommandTimedOut(argv, 900.0)
    assert str(exc).startswith("`srun --job-name=trainbot-dataloader-probe-")
    assert "--chdir=/scratch/p python3 -c '\"\"\"Find a DataLoader" in str(exc)
    assert str(exc).endswith("…' m:f 2 160` did not finish within 900 s")
    assert exc.argv == argv  # the whole command stays on the exception
    view = {**_view(SimpleNamespace(target_job="42", decided_by="U1"), "r", said(exc), "m:f"),
            "actor": "U1"}
    blocks, _ = TemplateRenderer().render_blocks("probe_result", "en", view)
    body = blocks[0]["text"]["text"]
    assert len(body) < 700 and "did not finish within 900 s" in body
    ko, _ = TemplateRenderer().render_blocks("probe_result", "ko", view)
    assert "900초 안에 끝나지 않았습니다" in ko[0]["text"]["text"]


def test_flooded_and_failed_commands_keep_their_cause_after_a_short_command():
    argv = _probe_argv()
    flood = str(OutputTooLarge(argv, 1 << 20))
    assert len(flood) < 400 and flood.endswith("sent more than 1 MiB of output; trainbot "
                                               "stopped reading it and closed its channel")
    assert "sent more than 1 MiB" in str(OutcomeUnknown.flooded(OutputTooLarge(argv, 1 << 20)))
    failed = str(CommandFailed(argv, 1, "srun: error: Unable to allocate resources"))
    assert len(failed) < 400 and failed.endswith("exited 1: srun: error: Unable to allocate "
                                                 "resources")


def test_short_arguments_stay_whole_long_ones_are_cut_on_one_line():
    assert brief_command(["squeue", "--me"]) == "squeue --me"
    assert brief_command(["sh", "-c", "a\nb"]) == "sh -c 'a b'"
    wrapped = brief_command(["timeout", "-k", "5", "55", "/bin/sh", "-c",
                             "trap 'exit 143' TERM; " * 10, "scancel", "5"])
    assert wrapped.startswith("timeout -k 5 55 /bin/sh -c ") and wrapped.endswith("…' scancel 5")
    long = brief_command(["python3", "-c", "x = 1\n" * 100])
    assert long == "python3 -c '" + ("x = 1 " * 11)[:BRIEF_ARG_CHARS - 1] + "…'"
    many = brief_command(["a" * 60] * 20)
    assert len(many) == BRIEF_COMMAND_CHARS and many.endswith("…")


# A secret cut with its argument is no longer one any redactor finds: each argument is
# redacted whole (token shapes, the configured secrets) before it is cut.
_PW = "Zq8vN2kLm4Rt7Wx1Yb5Hc9Jd3Fg6Ps0Qa"


def _leaks(text: str, secret: str) -> bool:
    return any(secret[:n] in text for n in range(5, len(secret) + 1))


def test_a_configured_secret_in_a_long_argument_is_redacted_before_the_cut():
    from bot.core.redact import Redactor
    from bot.log_redaction import install_log_redaction

    secret = "k9" + _PW  # a recipe env value, no token shape
    argv = ["sbatch", "--parsable", f"--comment=run-{'x' * 30}-key-{secret}-end",
            f"--results-db=postgresql://trainer:{_PW}@db.internal.example:5432/runs"]
    install_log_redaction(Redactor([secret, _PW]))  # as a loaded config does (conftest undoes)
    for exc in (CommandFailed(argv, 1, "sbatch: error: x"), CommandTimedOut(argv, 5.0),
                OutputTooLarge(argv, 1 << 20)):
        shown = Redactor([secret, _PW]).redact(str(exc))  # as Slack's renderer would
        assert not _leaks(shown, secret) and not _leaks(shown, _PW), shown
        assert "[redacted]" in shown


def test_token_shapes_are_redacted_before_the_cut():
    from bot.core.redact import Redactor

    gh = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    hf = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
    argv = ["srun", f"--export=ALL,PADDING_{'P' * 20}={gh}",
            f"--comment={'c' * 30} {hf} tail"]
    shown = Redactor().redact(brief_command(argv))
    assert not _leaks(shown, gh[4:]) and not _leaks(shown, hf[3:]), shown
