"""Everything `/train` says in a Korean channel is Korean: help, grammar errors, refusals,
"not found", status and history tables, internal errors. Each reply kind is rendered with
the fakes and searched for English words outside an allowlist of identifiers (commands, Slurm
states, config keys, the terms the catalogue keeps in English), so a new English-only sentence
fails here."""

from __future__ import annotations

import re

import pytest
from fakes import FakeSlurm, make_context

from bot.core import train_grammar as c
from bot.core.text import display_width
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
    text = re.sub(r"<[@#!][^>]*>|:[a-z_]+:|'[^']*'", " ", text)  # mentions, emoji, quoted
    text = re.sub(r"`[^`\n]*`", " ", text.replace("```", "\n"))
    return [w for w in WORD.findall(text) if w.lower() not in ALLOWED]


def code_span_words(text: str) -> list[str]:
    """Lower-case Latin words inside inline code spans (a command's synopsis: its words and
    UPPER-CASE placeholders only; an English explanation there is left untranslated)."""
    spans = re.findall(r"`([^`\n]*)`", re.sub(r"```.*?```", " ", text, flags=re.S))
    return [w for span in spans for w in WORD.findall(span)
            if not w.isupper() and w.lower() not in ALLOWED | set(c.USAGE)]


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


@pytest.fixture
def ctx(store):
    slurm = FakeSlurm()
    slurm.add(88017, name="mix", state="RUNNING")
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    slurm.add(6203, name="sweep", state="RUNNING", array_job_id=6200, array_task_id=2)
    slurm.add(5000, name="other", state="RUNNING")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1)
    store.attempts.add(chain_id=chain.id, job_id="88017", now=2, state="RUNNING")
    return make_context(store, slurm, lang="ko")


BAD_TEXTS = ["frob", "submti mix", "submit", "submit mix lr", "submit mix lr=", "submit mix "
             "lr=1 lr=2", "submit mix 9x=1", "logs 1 x", "logs 1 9999", "cancel abc",
             "help frob", "submit 'mix", "status a b", "submit bad/name", "x" * 2001,
             "submit a\x00"]

COMMANDS = [  # (command, actor, channel)
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
        starts = {display_width(m.group(1)) for m in
                  (re.match(r"(\s*\S+)", line) for line in table)}
        assert len(starts) == 1, table
