"""Everything `/train` says in a Korean channel is Korean: help, grammar errors, refusals,
"not found", status and history tables, internal errors. Each reply kind is rendered with
the fakes and searched for English words outside an allowlist of identifiers (commands, Slurm
states, config keys, the terms the catalogue keeps in English), so a new English-only sentence
fails here."""

from __future__ import annotations

import re

import pytest
from fakes import FakeSlurm, make_context, present

from bot.core import train_grammar as c
from bot.core.text import N_, display_width
from bot.services.access import may_control_job, recipe_of_job
from bot.services.train import command_error_text, execute, help_text, say
from bot.store import Store

NOW = 1_732_871_000.0
CHANNEL = "C0TRAIN"  # recipe mix's channel: its language, Korean here

# Words a Korean sentence keeps in Latin letters: names and values, not sentences.
ALLOWED = {
    # product, tools, terms the catalogue keeps in English
    "trainbot", "slurm", "python", "id", "array", "task", "preflight", "override", "key",
    "value", "nul", "rank", "jobid", "jobid_task", "true", "false", "g", "int", "float",
    # Slurm states and stored statuses
    "running", "pending", "failed", "completed", "unknown", "active",
    # names from the fixtures and config keys
    "mix", "dev", "nosuch", "mixx", "frob", "submti", "bad", "name", "log_path", "slack",
    "approvers", "recipes", "recipe", "lr", "u0owner", "u0appr", "leads", "robots", "x",
    "status", "watch", "command", "submit", "resume", "cancel", "logs", "stacks", "history",
    "help", "train", "n", "c0train", "c0other", "abc",
    "target_iter", "memory", "sweep", "other", "owner", "overridable",
}
WORD = re.compile(r"[A-Za-z][A-Za-z_]*")
HANGUL = re.compile("[\uac00-\ud7a3]")


def english_words(text: str) -> list[str]:
    """Latin words outside code spans, mentions and the allowlist."""
    text = re.sub(r"<[@#!][^>]*>|:[a-z_]+:|'[^']*'|https?://\S+", " ", text)  # mentions, emoji,
    # quoted, links
    text = re.sub(r"`[^`\n]*`", " ", text.replace("```", "\n"))
    return [w for w in WORD.findall(text) if w.lower() not in ALLOWED]


def code_span_words(text: str) -> list[str]:
    """Lower-case Latin words inside inline code spans (a command's synopsis: its words and
    UPPER-CASE placeholders only; an English explanation there is left untranslated)."""
    spans = re.findall(r"`([^`\n]*)`", re.sub(r"```.*?```", " ", text, flags=re.S))
    return [w for span in spans for w in WORD.findall(span)
            if not w.isupper() and w.lower() not in ALLOWED | set(c.USAGE)]


@pytest.fixture
def ctx(store):
    slurm = FakeSlurm()
    slurm.add(88017, name="mix", state="RUNNING")
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    slurm.add(6203, name="sweep", state="RUNNING", array_job_id=6200, array_task_id=2)
    slurm.add(5000, name="other", state="RUNNING")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1)
    store.attempts.record(chain_id=chain.id, job_id="88017", now=2, state="RUNNING")
    return make_context(store, slurm, lang="ko")


BAD_TEXTS = ["frob", "submti mix", "submit", "submit mix lr", "submit mix lr=", "submit mix "
             "lr=1 lr=2", "submit mix 9x=1", "logs 1 x", "logs 1 9999", "cancel abc",
             "help frob", "submit 'mix", "status a b", "submit bad/name", "x" * 2001,
             "submit a\x00"]

COMMANDS: list[tuple[c.Command, str, str | None]] = [  # (command, actor, channel)
    (c.Status(), "U0ALICE", CHANNEL),
    (c.Status("mix"), "U0ALICE", CHANNEL),
    (c.Status("12345"), "U0ALICE", CHANNEL),
    (c.Status("6100_7"), "U0ALICE", CHANNEL),
    (c.History("mix"), "U0ALICE", CHANNEL),
    (c.Submit("mix"), "U0ALICE", "C0OTHER"),
    (c.Submit("mix"), "U0NOBODY", CHANNEL),
    (c.Submit("nosuch"), "U0ALICE", CHANNEL),
    (c.Submit("mixx"), "U0ALICE", CHANNEL),
    (c.Resume("mix"), "U0ALICE", CHANNEL),
    (c.JobControl("cancel", 88017), "U0NOBODY", CHANNEL),
    (c.JobControl("hold", 12345), "U0NOBODY", CHANNEL),
    (c.Logs(12345), "W0LEAD", CHANNEL),
    (c.Stacks(88017), "U0NOBODY", CHANNEL),
    (c.Watch(12345), "W0LEAD", CHANNEL),
    (c.Watch(6100, 7), "W0LEAD", CHANNEL),
    (c.Preflight("mix"), "U0NOBODY", CHANNEL),
    (c.Submit("mix", (("lr", "x"),)), "U0ALICE", CHANNEL),
    (c.Submit("mix", (("target_iter", "8k"),)), "U0ALICE", CHANNEL),
    (c.Submit("mix", (("memory", "1"),)), "U0ALICE", CHANNEL),
    (c.Submit("mix"), "U0ALICE", CHANNEL),  # submitted, from scratch
    (c.JobControl("release", 6200, 2), "W0LEAD", CHANNEL),  # a job of no recipe: the channel's
    (c.JobControl("hold", 5000), "W0LEAD", CHANNEL),
    (c.Watch(6200, 2), "W0LEAD", CHANNEL),
    (c.Watch(6200, 2), "W0LEAD", CHANNEL),  # already watched
    (c.Watch(5000), "U0NOBODY", CHANNEL),  # refused: only the approvers, as for its log
    (c.Watch(5000), "W0LEAD", CHANNEL),
    (c.Unwatch(88017), "W0LEAD", CHANNEL),  # trainbot's run: not unwatched
    (c.Unwatch(4), "W0LEAD", CHANNEL),  # not watched
    (c.Unwatch(5000), "U0NOBODY", CHANNEL),  # refused: watched for W0LEAD
    (c.Unwatch(5000), "W0LEAD", CHANNEL),  # stopped watching
    (c.Watch(6100), "W0LEAD", CHANNEL),  # a whole array
    (c.Unwatch(6100, 3), "W0LEAD", CHANNEL),  # one task of it: unwatch the array
]


def replies(ctx) -> list[tuple[str, str]]:
    out = [("help", help_text(ctx, c.Help(), CHANNEL))]
    out += [(f"help {v}", help_text(ctx, c.Help(v), CHANNEL)) for v in c.USAGE]
    for text in BAD_TEXTS:
        with pytest.raises(c.CommandError) as err:
            c.parse_command(text)
        out.append((repr(text[:30]), command_error_text(ctx, err.value, CHANNEL)))
    for cmd, actor, channel in COMMANDS:
        out.append((repr(cmd), execute(ctx, cmd, actor=actor, channel=channel, now=NOW).text))
    out.append(("internal error", say(ctx, None, "internal_error", channel=CHANNEL)))
    return out


def test_every_train_reply_in_a_korean_channel_is_korean(ctx) -> None:
    found = replies(ctx)
    untranslated = {name: (english_words(text), text) for name, text in found
                    if english_words(text) or not HANGUL.search(text)}
    assert not untranslated, untranslated
    in_code = {name: code_span_words(text) for name, text in found if code_span_words(text)}
    assert not in_code, in_code


def test_the_english_channel_gets_the_english_sentences(store) -> None:
    ctx = make_context(store)
    assert help_text(ctx, c.Help(), CHANNEL).startswith("*trainbot* — `/train` commands:")
    with pytest.raises(c.CommandError) as err:
        c.parse_command("logs 1 9999")
    assert command_error_text(ctx, err.value, CHANNEL) == (
        ":x: line count 9999 is out of range 1..500. Usage: `" + c.USAGE["logs"] + "`")
    refused = execute(ctx, c.JobControl("cancel", 12345), actor="U0NOBODY", channel=CHANNEL,
                      now=NOW)
    assert refused.text == ("Refused: job 12345 was not submitted by trainbot; only group "
                            "leads can cancel it.")


def test_status_and_history_tables_line_up_in_korean(ctx) -> None:
    """Monospaced tables, headers in Korean: the right-aligned job column ends at the same
    display column (Hangul two wide) on every line."""
    for cmd in (c.Status("mix"), c.History("mix")):
        text = execute(ctx, cmd, actor="U0ALICE", channel=CHANNEL, now=NOW).text
        table = [line for line in text.split("```")[1].splitlines() if "  " in line]
        assert len(table) >= 2 and "작업" in table[0], text
        starts = {display_width(present(m).group(1)) for m in
                  (re.match(r"(\s*\S+)", line) for line in table)}
        assert len(starts) == 1, table


# --- preflight findings: every check's sentences, as `/train preflight` lists them ---------

# Tools and terms a Korean finding keeps in Latin letters (names, not sentences).
FINDING_NAMES = {
    "dataloader", "adam", "ema", "cuda", "gpu", "gpus", "rss", "gib", "b", "py", "spy", "nccl",
    "triton", "inductor", "deepspeed", "flexattention", "conda", "bash", "sbatch", "rhel",
    "ninja", "yama", "ptrace", "sysctl", "setcap", "srun", "dcp", "torch", "c", "jit", "uid",
    "shellcheck", "sc", "error", "warning", "info", "style", "completed", "failed", "compile",
    "cpu", "sigpipe", "gcc", "nvcc", "tib", "mib", "kib",
}
LINT_SCRIPTS = [
    """#!/bin/bash
set -euo pipefail
count=0
((count++))
clear
source ~/.bashrc
echo $SLURM_RESTART_COUNT $SLURM_ARRAY_TASK_ID $SLURM_CPUS_PER_TASK
source activate myenv
LATEST=$(ls -t /ckpt/step_* | head -1)
RESUME=$(cat /ckpt/latest_checkpointed_iteration.txt)
ls /scratch/out | head -1
find /scratch/runs -name '*.pt' | head -1
grep -c loss /scratch/logs/train.log
cat /scratch/results/*.json
stamp() { grep done /scratch/run/out.log; }
stamp | tee /scratch/run/x.log
python -c "import torch; m = torch.compile(m)"
torchrun train.py --save /scratch/ckpt
mkdir -p /scratch/made
ls /scratch/made | head -1
""",
    "\n#!/bin/bash\necho hi\n",
    "#!/bin/bash\nexport CC=gcc\npython -c 'torch.compile(m)'\n",
    "#!/bin/bash\nexport CC=gcc CXX=g++\npython -c 'torch.compile(m)'\n",
    "#!/bin/bash\nmodule load gcc/12\npython -c 'torch.compile(m)'\n",
    "#!/bin/bash\nsingularity exec img.sif python -c 'torch.compile(m)'\n",
    "#!/bin/bash\nexport DS_BUILD_OPS=1\ndeepspeed train.py\n",
    "#!/bin/bash\necho fine\n",
    "#!/bin/bash\nset -e\nV=$(grep x /scratch/in.txt)\nif [ -z \"$V\" ]; then echo none; fi\n",
    "#!/bin/bash\necho start\n#SBATCH --time=1:00:00\nset -eu\necho $1 $3\n"
    "trap 'echo bye; exit 0' EXIT\npython train.py | tee out.log\n",
    "#!/bin/bash\ntrap 'exit 0' EXIT\nset -u\necho $2\npython train.py | tee out.log\n",
    "#!/bin/bash\n  #SBATCH --mem=1G\necho go\n\t#SBATCH --time=1:00:00\n"
    "if python train.py | tee out.log; then echo ok; fi\n"
    "( trap 'exit 0' EXIT; srun python train.py )\n",
]


def every_finding(ctx) -> list:
    """Findings of every kind the checks make, from real inputs (no message written here)."""
    from bot.core.launcher_lint import after_toolchain_probe, lint_launcher
    from bot.core.memory_budget import SaveMemoryInputs, SaveMode, estimate_save_peak
    from bot.probes.shellcheck import parse_shellcheck_json
    from bot.probes.toolchain import checks_from_node, ptrace_checks
    from bot.services.preflight import PreflightOptions, flight_recorder_check, memory_section

    gib = 1 << 30
    found = []
    for script in LINT_SCRIPTS:
        lint = lint_launcher(script, {"train.py": "import torch\ntorch.compile(model)\n"})
        found += lint
        for works in (None, True, False):
            found += after_toolchain_probe(lint, works)
    for args in ((), ("a",), ("a", "b")):  # the recipe's args, short of what $3 needs
        found += lint_launcher(LINT_SCRIPTS[-2], script_args=args)
    big = SaveMemoryInputs(params=70_000_000_000, ranks_per_node=8, workers_per_rank=4,
                           worker_rss_bytes=2 * gib)
    small = SaveMemoryInputs(params=1_400_000_000, ranks_per_node=8,
                             save_mode=SaveMode.SHARDED)
    for inp, mem, cap in ((big, None, 64 * gib), (big, None, 400 * gib), (small, None, None),
                          (small, 40 * gib, None), (small, 80 * gib, 200 * gib),
                          (small, 85 * gib, None), (small, 900 * gib, None)):
        found.append(estimate_save_peak(inp, mem_limit_bytes=mem,
                                        per_gpu_cap_bytes=cap).finding())
    recipe = ctx.config.recipes["mix"]
    found += memory_section(recipe, PreflightOptions(params=1_400_000_000, ranks_per_node=8,
                                                     workers_per_rank=2), None)[0]
    found += memory_section(recipe, PreflightOptions(), None)[0]
    found.append(flight_recorder_check(recipe))
    found += parse_shellcheck_json('[{"line": 3, "level": "warning", "code": 2086, '
                                   '"message": "Double quote to prevent globbing."}]')
    good = {"host": "gpu01", "cc": {"works": True, "path": "/usr/bin/gcc", "origin": "path"},
            "cxx": {"works": True, "path": "/usr/bin/g++"}, "python": "3.11",
            "python_executable": "/usr/bin/python3", "torch": "2.4", "cuda": True, "gpus": 1,
            "triton": "3.0", "compile": {"ran": True, "device": "cuda"},
            "ptrace": {"attach": True, "uid": 1000, "ptrace_scope": 1}}
    bad = {"cc": {"works": False}, "cxx": {"works": False, "error": "not found"},
           "python": "3.11", "python_executable": "python3", "torch": "2.4",
           "compile": {"ran": False, "device": "cpu", "error": "Failed to find C compiler"},
           "ptrace": {"attach": False, "pyspy": "/opt/py-spy", "uid": 1000, "ptrace_scope": 3,
                      "error": "Permission denied"}}
    found += checks_from_node(good) + ptrace_checks(good)
    found += checks_from_node(bad) + ptrace_checks(bad)
    found += checks_from_node({"cxx": {"works": False, "error": "g++: not found"},
                               "python": "3.11", "python_executable": "python3", "torch": None})
    found += ptrace_checks({"ptrace": {"pyspy": None}})
    found += ptrace_checks({"ptrace": {"pyspy": "/x", "uid": 1000, "ptrace_scope": 1}})
    return found


def test_every_preflight_finding_in_a_korean_channel_is_korean(ctx) -> None:
    from bot.services.train import preflight_rows

    found = every_finding(ctx)
    kinds = {f.text.msgid for f in found if not isinstance(f.text, str)}
    assert len(kinds) >= 40, sorted(kinds)
    untranslated = {}
    for f in found:
        text = say(ctx, "mix", "preflight", channel=CHANNEL, recipe="mix", level=N_("warn"),
                   findings=preflight_rows({"launcher": [f]}))
        words = [w for w in english_words(text) if w.lower() not in FINDING_NAMES]
        if words or not HANGUL.search(text.split("\n", 1)[1]):
            untranslated[f.message] = (words, text)
    assert not untranslated, untranslated


def test_every_finding_sentence_has_korean_words_only_around_its_names() -> None:
    """The catalogue side of the walk: each message id the checks can say (the lint, the
    memory budget, the probes, preflight), its Korean with every value filled in, has no
    English word outside code spans and names: a sentence no fixture above reaches still
    fails here when it is left in English."""
    from pathlib import Path

    from bot.slack.render import templates_root, translator
    from bot.slack.translations import PYTHON_DIRS, extract

    root = Path(__file__).resolve().parents[3]
    sources = ("launcher_lint/", "memory_budget.py", "probes/", "services/preflight.py")
    ids = [m.id for m in extract(templates_root(), tuple(root / "bot" / d for d in PYTHON_DIRS))
           if m.id and any(s in loc for loc, _ in m.locations for s in sources)]
    assert len(ids) > 150
    ko = translator("ko")
    bad = {}
    for msgid in ids:
        text = re.sub(r"%\(\w+\)s", "0", ko.gettext(msgid)).replace("%%", "%")
        words = [w for w in english_words(text) if w.lower() not in FINDING_NAMES]
        if words:
            bad[msgid] = (words, text)
    assert not bad, bad


def test_a_preflight_usage_error_is_said_in_korean(ctx) -> None:
    from bot.services import UsageProblem
    from bot.services.preflight import PreflightUsageError, run_preflight

    with pytest.raises(PreflightUsageError) as err:
        run_preflight(ctx.config, "nosuch", None)
    assert str(err.value).startswith("no recipe 'nosuch' in the config")
    text = say(ctx, "mix", "usage", channel=CHANNEL, problem=UsageProblem(err.value.text).args[0],
               usage=c.USAGE["preflight"])
    assert HANGUL.search(text) and not english_words(text), text


@pytest.mark.parametrize("lang, said", [
    ("ko", "mem: '999999999999'… (401자)은(는) 메모리 크기로는 너무 큽니다. 최대 1024P (1 EiB)"
           "입니다"),
    ("en", "mem: '999999999999'… (401 characters) is too large for a memory size; at most "
           "1024P (1 EiB)"),
])
def test_a_size_override_too_long_to_quote_is_refused_in_the_channels_language(
        store, lang, said) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang, overridable={"mem": "size"})
    text = execute(ctx, c.Submit("mix", (("mem", "9" * 400 + "G"),)), actor="U0ALICE",
                   channel=CHANNEL, now=NOW).text
    assert text.startswith(said), text
    assert slurm.submits() == []


@pytest.mark.parametrize("channel", [None, "C0OTHER"])  # a direct message, an English channel
def test_a_failure_of_a_command_naming_a_runs_job_is_said_in_its_recipes_language(
        ctx, channel) -> None:
    """`/train logs|cancel N` of a job of recipe mix (Korean) asked where the workspace's
    language (English) is the channel's: its log that does not exist, the refusal, are in
    Korean, as its answer would be, and audited under mix; a job of no recipe's is answered
    in the channel's language."""
    missing = execute(ctx, c.Logs(88017), actor="W0LEAD", channel=channel, now=NOW).text
    refused = execute(ctx, c.JobControl("cancel", 88017), actor="U0NOBODY", channel=channel,
                      now=NOW).text
    for text in (missing, refused):
        assert HANGUL.search(text) and not english_words(text), text
    assert [(e.action, e.result, e.recipe) for e in ctx.store.audit.recent(2)][::-1] == [
        ("command.logs", "refused", "mix"), ("command.cancel", "refused", "mix")]
    other = execute(ctx, c.JobControl("cancel", 5000), actor="U0NOBODY", channel=channel,
                    now=NOW).text
    assert not HANGUL.search(other), other


def _array_run(store: Store) -> None:
    """Recipe mix's run of array 6200, which records only its tasks, each under its own raw
    id: 6200_1 (6201) and 6200_2 (6203)."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="sweep", now=1,
                                kind="array", array_job_id=6200)
    for job, task in (("6201", 1), ("6203", 2)):
        store.attempts.record(chain_id=chain.id, job_id=job, now=2, state="RUNNING",
                              display_id=f"6200_{task}")


@pytest.mark.parametrize("channel", [None, "C0OTHER"])  # a direct message, an English channel
def test_a_command_naming_a_runs_array_or_its_task_is_said_in_its_recipes_language(
        ctx, channel) -> None:
    """`/train cancel 6200_2` and `/train logs 6200` of the array of recipe mix (Korean),
    whose run records only its tasks, asked where the channel's language is English: the
    refusal and the log that does not exist are in Korean and audited under mix, as a job the
    run records by its own id is."""
    _array_run(ctx.store)
    refused = execute(ctx, c.JobControl("cancel", 6200, 2), actor="U0NOBODY", channel=channel,
                      now=NOW).text
    missing = execute(ctx, c.Logs(6200), actor="W0LEAD", channel=channel, now=NOW).text
    for text in (refused, missing):
        assert HANGUL.search(text) and not english_words(text), text
    assert "mix" in refused  # whose job it is
    assert [(e.action, e.result, e.job_id, e.recipe)
            for e in ctx.store.audit.recent(2)][::-1] == [
        ("command.cancel", "refused", "6200_2", "mix"), ("command.logs", "refused", "6200", "mix")]
    assert ctx.clusters.slurm("dev").job(6203).state == "RUNNING"  # nothing cancelled


def test_who_may_control_a_runs_array_is_its_recipes_people(ctx) -> None:
    """The array 6200 of recipe mix's run, named by its id or a task's own id: mix's owner
    and submitters may cancel it (before, a whole array's id found no run, so only
    slack.approvers could), anyone else is refused as for mix's other jobs; a job of no
    recipe's stays slack.approvers'."""
    _array_run(ctx.store)
    config, store = ctx.config, ctx.store
    for job in (6200, 6203):
        assert may_control_job(config, store, "U0OWNER", job, "cancel"), job
        assert may_control_job(config, store, "U0ALICE", job, "cancel"), job
        refused = may_control_job(config, store, "U0NOBODY", job, "cancel")
        assert not refused and "belongs to mix" in str(refused.reason), job
    said = execute(ctx, c.JobControl("cancel", 6200), actor="U0OWNER", channel=None,
                   now=NOW).text
    assert HANGUL.search(said) and not english_words(said), said
    [entry] = store.audit.recent(1)
    assert (entry.action, entry.result, entry.job_id, entry.recipe) == (
        "command.cancel", "ok", "6200", "mix")
    assert not may_control_job(config, store, "U0OWNER", 5000, "cancel")
    assert may_control_job(config, store, "W0LEAD", 5000, "cancel")
    assert recipe_of_job(store, "6200_2") == recipe_of_job(store, "6200") == ("mix", False)
    assert recipe_of_job(store, "6200_9") == ("mix", False)  # a task not recorded yet
    assert recipe_of_job(store, "620") == (None, False)


@pytest.mark.parametrize(("lang", "refusal"), [
    ("en", "job 6200_2 belongs to mix; only "),
    ("ko", "6200_2"),
])
def test_a_refusal_of_an_array_task_names_it_as_the_person_wrote_it(store, lang,
                                                                    refusal) -> None:
    """`/train cancel 6200_2` of recipe mix's array task (Slurm's raw id 6203) refused to
    someone outside mix's people: the reply names the task 6200_2, as typed and as the run's
    thread shows it, never its raw id 6203 (before: "job 6203 belongs to mix")."""
    slurm = FakeSlurm()
    slurm.add(6203, name="sweep", state="RUNNING", array_job_id=6200, array_task_id=2)
    ctx = make_context(store, slurm, lang=lang)
    _array_run(store)
    for cmd in (c.JobControl("cancel", 6200, 2), c.JobControl("hold", 6200, 2),
                c.Logs(6200, array_task=2)):
        said = execute(ctx, cmd, actor="U0NOBODY", channel=CHANNEL, now=NOW).text
        assert refusal in said and "6203" not in said, said
        assert "mix" in said, said
        if lang == "ko":
            assert HANGUL.search(said) and not english_words(said), said
    assert present(slurm.job(6203)).state == "RUNNING"  # nothing cancelled or held
