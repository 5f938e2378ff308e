"""Text that comes from files, tools and people (a finding's path and error, a log line, a job
name) reaches Slack mrkdwn escaped once (&amp; &lt; &gt;), so `<!channel>` in it pings no one
and `a < b` breaks nothing; the mentions trainbot builds itself stay mentions. Each reply is
checked with the Slack stand-in's own rule (tests/slack_standin.mrkdwn_errors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes import FakeSlurm, make_context
from slack_standin import mrkdwn_errors, validate_blocks

from bot.core.authz import Decision, People
from bot.core.findings import Finding
from bot.core.policy import resume_start
from bot.core.text import N_, Mrkdwn, mrkdwn_escape, mrkdwn_sentence, render_text
from bot.services.threads import code
from bot.services.train import preflight_rows, say
from bot.slack.render import render_blocks
from bot.store import Store

HOSTILE = "<!channel> a < b && c > d <@U0EVE> <http://x|y>"
ESCAPED = ("&lt;!channel&gt; a &lt; b &amp;&amp; c &gt; d &lt;@U0EVE&gt; "
           "&lt;http://x|y&gt;")


@pytest.fixture
def ctx(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        yield make_context(store, FakeSlurm())


def test_the_stand_in_flags_what_slack_would_mangle() -> None:
    assert mrkdwn_errors(HOSTILE)  # the broadcast and the stray < and >
    assert mrkdwn_errors("a < b")
    assert mrkdwn_errors("<!here>")
    assert mrkdwn_errors(ESCAPED) == []
    assert mrkdwn_errors("by <@U0BOB> in <#C0TRAIN> <!subteam^S0LEADS> "
                         "<https://example.com/x?a=1&amp;b=2|the run>") == []


def test_escaping_is_once_and_keeps_own_mentions() -> None:
    once = mrkdwn_escape(HOSTILE)
    assert once == ESCAPED and isinstance(once, Mrkdwn)
    assert mrkdwn_escape(once) == ESCAPED  # already escaped: as it is
    assert mrkdwn_escape("&lt;") == "&amp;lt;"  # a literal entity in a log shows as typed
    assert mrkdwn_sentence("Approved by <@%(user)s>: see recipes.<name> 2>/dev/null") == \
        "Approved by <@%(user)s>: see recipes.&lt;name&gt; 2&gt;/dev/null"
    text = N_("%(who)s: %(what)s (%(n)d)", who=Mrkdwn("<@U0BOB>"), what=HOSTILE, n=3)
    assert render_text(text, mrkdwn_sentence, mrkdwn_escape) == f"<@U0BOB>: {ESCAPED} (3)"
    assert render_text(text) == f"<@U0BOB>: {HOSTILE} (3)"  # the CLI and logs: as typed


def test_preflight_reply_escapes_a_findings_path_error_and_fix(ctx) -> None:
    finding = Finding("launcher", "fail", None,
                      N_("cannot read the recipe's batch script %(path)s on the cluster: "
                         "%(error)s", path="/work/<!channel>/run.sh", error=HOSTILE),
                      N_("fix recipes.<name>.sbatch_script (absolute, or relative to workdir "
                         "or the home)"))
    plain = Finding("launcher", "warn", 3, "SC2086 (shellcheck): echo a < b && c > d")
    text = say(ctx, "mix", "preflight", channel="C0TRAIN", recipe="mix<&>", level=N_("fail"),
               findings=preflight_rows({"launcher": [finding, plain]}))
    assert text == (
        "*preflight mix&lt;&amp;&gt;*: fail\n"
        "• launcher: fail cannot read the recipe's batch script /work/&lt;!channel&gt;/run.sh "
        f"on the cluster: {ESCAPED} → fix: fix recipes.&lt;name&gt;.sbatch_script (absolute, "
        "or relative to workdir or the home)\n"
        "• launcher: warn SC2086 (shellcheck): echo a &lt; b &amp;&amp; c &gt; d")
    assert mrkdwn_errors(text) == []


def test_a_refusal_keeps_the_mentions_trainbot_builds(ctx) -> None:
    reason = N_("job %(job)s is watched for %(who)s; only they can stop watching it",
                job="6100<x>", who=People(("U0BOB",)).describe())
    text = say(ctx, "mix", "refused", channel="C0TRAIN", reason=Decision(False, reason).reason)
    assert "<@U0BOB>" in text and "6100&lt;x&gt;" in text
    assert mrkdwn_errors(text) == []


def test_a_job_name_from_slurm_and_a_log_tail_are_escaped(ctx) -> None:
    text = say(ctx, None, "watching", channel="C0TRAIN", job="5150", name="<!here> x&y",
               state="RUNNING", raw=None, cluster="dev")
    assert text == "Watching job 5150 (&lt;!here&gt; x&amp;y, RUNNING) on dev."
    tail = say(ctx, "mix", "log_tail", channel="C0TRAIN", lines=2, path="/x/<y>.out",
               text=code(f"{HOSTILE}\nok"), empty=False)
    assert f"```{ESCAPED}\nok```" in tail and "`/x/&lt;y&gt;.out`" in tail
    assert mrkdwn_errors(tail) == []


def test_a_cut_log_tail_keeps_its_end_and_no_half_entity() -> None:
    shown = code("<" * 50 + "end", limit=20)
    assert shown.startswith("```…&lt;") and shown.endswith("end```")
    assert len(shown) - 6 <= 20
    assert mrkdwn_errors(shown) == []


# --- every template, value by value ---------------------------------------------------------
# Each template is rendered with BAD in every value that can carry text from files, tools,
# Slurm or people; its mrkdwn (every mrkdwn text object and the message `text`) must pass the
# stand-in's rule and show BAD escaped once. A value that is trainbot's own mrkdwn (a prompt's
# question, a note) arrives escaped by its maker: the template must not escape it again.

BAD = "<!channel> a < b && c > d"
BAD_ONCE = "&lt;!channel&gt; a &lt; b &amp;&amp; c &gt; d"
OWN = f"<@U0BOB> {BAD_ONCE}"  # trainbot's mrkdwn: a live mention and escaped text


def _mrkdwn(obj: object) -> list[str]:
    """The message's `text` and every mrkdwn text object in its blocks."""
    found: list[str] = []
    if isinstance(obj, dict):
        if obj.get("type") == "mrkdwn" and isinstance(obj.get("text"), str):
            found.append(obj["text"])
        for value in obj.values():
            found += _mrkdwn(value)
    elif isinstance(obj, list):
        for value in obj:
            found += _mrkdwn(value)
    return found


def _check(template: str, view: dict, *, shows: int = 1) -> str:
    blocks, text = render_blocks(template, "en", view)
    assert validate_blocks(blocks) == []
    texts = [text, *_mrkdwn(blocks)]
    for t in texts:
        assert mrkdwn_errors(t) == [], (template, t)
        assert "&amp;lt;" not in t and "&amp;amp;" not in t and "&amp;gt;" not in t, t
    shown = "\n".join(texts)
    assert shown.count(BAD_ONCE) >= shows, (template, shown)
    return shown


def _outcome(**kw: object) -> dict:
    base = {"kind": "approved", "did": "resubmitted", "actor": "U0BOB", "job_id": BAD,
            "new_job_id": BAD, "from_iter": 300, "mem": BAD, "exclude": BAD,
            "not_applied": [(BAD, BAD, BAD)], "error": BAD, "state": BAD, "recipe": BAD,
            "for_job": BAD, "current_job": BAD}
    return {**base, **kw}


@pytest.mark.parametrize("outcome", [
    _outcome(),
    _outcome(from_iter=None),
    _outcome(from_iter=None, mem=None),
    _outcome(did="cancelled"),
    _outcome(did="cancel_resumed"),
    _outcome(did="cancel_resumed", from_iter=None),
    _outcome(did="held"),
    _outcome(did="held_released"),
    _outcome(did="held_released", state=None),
    _outcome(did="held_not_released"),
    _outcome(did="held_not_released", state=None),
    _outcome(did="held_by_person"),
    _outcome(did="hold_skipped"),  # its state unread (`error`)
    _outcome(did="hold_skipped", error=None),
    _outcome(did="hold_skipped", state=None, error=None),
    _outcome(did="hold_failed"),
    _outcome(did="hold_unknown"),
    _outcome(kind="failed", did="not_running"),
    _outcome(kind="failed", did="resubmit_failed"),
    _outcome(kind="failed", did="other"),
    _outcome(kind="stale", did="competitor_started"),
    _outcome(kind="stale", did="competitor_left"),
    _outcome(kind="stale", did="newer_job"),
    _outcome(kind="kept"),
    _outcome(kind="expired", did="resubmit"),
    _outcome(kind="expired", did="cancel"),
    _outcome(kind="expired", did="hold"),
], ids=lambda o: f"{o['kind']}-{o['did']}-{o['from_iter']}-{o['mem'] is None}-{o['state']}")
@pytest.mark.parametrize("summary", [OWN, None])
def test_decided_escapes_slurms_and_ssh_words_once(outcome: dict, summary: str | None) -> None:
    shown = _check("decided", {"summary": summary, "outcome": outcome})
    if outcome["kind"] in ("approved", "failed", "kept"):
        assert "<@U0BOB>" in shown  # the decider's mention stays live


def test_approval_shows_its_question_as_made() -> None:
    button = {"kind": "resubmit_mem", "action_id": "approve_resubmit_mem", "value": "tok",
              "style": "primary", "from_iter": 300, "mem": BAD, "exclude": None, "job_id": BAD}
    shown = _check("approval", {"summary": OWN, "block_id": "approve:tok", "buttons": [button]})
    assert "<@U0BOB>" in shown


@pytest.mark.parametrize("view", [
    {"kind": "probe_queued", "name": BAD},
    {"kind": "unauthorized", "approvers": ["U0BOB", "U0ALICE"]},
    {"kind": "busy", "decided_by": "U0BOB", "job": BAD, "cancel_job": None,
     "cancel_wait_s": None},
], ids=lambda v: v["kind"])
def test_click_reply_escapes_a_recipe_and_a_job(view: dict) -> None:
    _check("click_reply", view, shows=0 if view["kind"] == "unauthorized" else 1)


def test_hold_prompt_escapes_the_competitors_name_and_ids() -> None:
    shown = _check("hold_prompt", {"competitor": BAD, "competitor_name": BAD, "for_job": BAD,
                                   "block_id": "hold:tok", "yes_action": "hold_yes",
                                   "no_action": "hold_no", "token": "tok"})
    assert shown.count(BAD_ONCE) >= 3


@pytest.mark.parametrize("why", ["running", "ended", "gone", "cancelled", "failed", "retry",
                                 "unknown", "unknown_retry"])
def test_hold_released_escapes_slurms_words(why: str) -> None:
    _check("hold_released", {"competitor": BAD, "for_job": BAD, "why": why, "state": BAD,
                             "problem": BAD if why in ("failed", "retry", "unknown",
                                                       "unknown_retry") else None,
                             "retry_in_min": 14 if why.endswith("retry") else None,
                             "unknown": why.startswith("unknown")})


def test_a_note_is_trainbots_mrkdwn_as_made() -> None:
    assert "<@U0BOB>" in _check("note", {"text": OWN})


@pytest.mark.parametrize("kind", ["reminded", "escalated"])
def test_prompt_follow_up_keeps_the_mentions_and_the_question_as_made(kind: str) -> None:
    shown = _check("prompt_follow_up", {"kind": kind, "mentions": ["<@U0BOB>", "<!subteam^S0L>"],
                                        "question": OWN, "age_s": 3600, "expires_at": 1.7e9})
    assert "<@U0BOB> <!subteam^S0L>" in shown


@pytest.mark.parametrize("error", [BAD, None])
def test_probe_result_escapes_the_recipe_factory_host_and_error(error: str | None) -> None:
    view = {"recipe": BAD, "actor": "U0BOB", "error": error, "factory": BAD, "host": BAD,
            "workers": [{"pid": 7, "rss_start_mb": 100, "rss_end_mb": 180, "samples": 40,
                         "slope_mb": 2.0}], "grows": "workers", "slope_mb": 2.0}
    shown = _check("probe_result", view)
    assert shown.count(BAD_ONCE) >= (2 if error else 3)  # head and body: text and block


def _group(n: int) -> dict:
    return {"count": n, "where": [BAD, BAD], "hosts": [BAD],
            "ranks": [{"rank": r, "pid": 10 + r, "host": BAD, "step": 0} for r in range(n)]}


@pytest.mark.parametrize("summary", [
    None,
    {"ranks": 3, "groups": [_group(3)], "majority": None, "odd": [], "failures": []},
    {"ranks": 4, "groups": [_group(3), _group(1)], "majority": _group(3), "odd": [_group(1)],
     "failures": [{"cause": "pyspy_absent", "count": 1, "detail": BAD, "host": BAD}]},
    {"ranks": 2, "groups": [_group(1), _group(1)], "majority": None,
     "odd": [_group(1), _group(1)],
     "failures": [{"cause": "no_processes", "count": 1, "detail": BAD, "host": BAD}]},
], ids=["problem", "one", "majority", "split"])
def test_stacks_escapes_the_job_frames_hosts_and_details(summary: dict | None) -> None:
    _check("stacks", {"job_id": BAD, "summary": summary,
                      "problem": {"cause": "failed", "detail": BAD, "host": BAD}},
           shows=2)


@pytest.mark.parametrize("view", [
    {"error": BAD, "summary": None},
    {"error": None, "summary": None},
    {"error": None, "summary": {
        "ranks": [0, 1, 2], "waiting_seq": 9, "waiting_op": BAD,
        "behind": [{"rank": 2, "seq": 8, "op": BAD, "state": BAD}],
        "unread": [{"rank": 3, "why": BAD}]}},
    {"error": None, "summary": {"ranks": [0, 1], "waiting_seq": 9, "waiting_op": BAD,
                                "behind": [], "unread": []}},
], ids=["error", "none", "behind", "all"])
def test_flight_recorder_escapes_the_job_dir_ops_and_reasons(view: dict) -> None:
    _check("flight_recorder", {"job_id": BAD, "dir": BAD, **view}, shows=2)


def _home_run(**kw: object) -> dict:
    run = {"chain_id": 1, "recipe": BAD, "job_id": BAD, "state": BAD, "cluster": "dev",
           "adopted": False, "array": False, "tasks": [], "progress_bar": BAD,
           "retries_used": 1, "retry_budget": 3, "last_incident": {"class_id": BAD,
                                                                   "job_id": BAD},
           "task_retries": [], "more_task_retries": 0,
           "prompts": [{"summary": OWN, "token": "tok", "buttons": []}], "buttons": []}
    return {**run, **kw}


def test_home_escapes_a_runs_state_progress_and_tasks() -> None:
    view = {"user": "U0BOB", "more": 0, "notice": OWN,
            "runs": [_home_run(), _home_run(chain_id=2, array=True,
                                            tasks=[{"state": BAD, "n": 2}])]}
    shown = _check("home", view)
    for piece in (f"*{BAD_ONCE}*", f"`{BAD_ONCE}`", f"2 {BAD_ONCE}", f"· {BAD_ONCE}\n"):
        assert piece in shown, piece


def test_completed_escapes_the_job_and_those_it_replaced() -> None:
    shown = _check("completed", {"job_id": BAD, "replaced": [BAD, BAD], "last_iter": 10,
                                 "target_iter": 10, "elapsed_s": 60, "attempts": 2,
                                 "retries_used": 1})
    assert f"{BAD_ONCE} (was {BAD_ONCE}, {BAD_ONCE})" in shown


# --- a join never escaped twice --------------------------------------------------------------
# `esc` leaves a Mrkdwn as it is, but Jinja's `~` and a macro's output are plain str: a value
# made from escaped parts and piped through `esc` again would show &amp;lt;. No template may
# do that; this reads every template for it (the test after it shows the hazard is real).

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
_SET = re.compile(r"{%-?\s*set\s+(\w+)\s*=(.*?)-?%}", re.S)
_MACRO = re.compile(r"{%-?\s*macro\s+(\w+)\(.*?%}(.*?){%-?\s*endmacro", re.S)
_ESCAPES = re.compile(r"\|\s*(?:esc|msg|code_block)\b")


def _escaped_names(source: str) -> tuple[set[str], set[str]]:
    """The variables and the macros a template makes from escaped parts (transitively)."""
    sets = [(m.group(1), m.group(2)) for m in _SET.finditer(source)]
    macros = [(m.group(1), m.group(2)) for m in _MACRO.finditer(source)]
    names: set[str] = set()
    calls: set[str] = set()
    while True:
        uses = [rf"\b{re.escape(n)}\b(?!\s*=)" for n in names] + \
               [rf"\b{re.escape(c)}\(" for c in calls]
        used = re.compile("|".join(uses)) if uses else None

        def escaped(text: str, used: re.Pattern[str] | None = used) -> bool:
            return bool(_ESCAPES.search(text) or (used and used.search(text)))

        more = {n for n, rhs in sets if escaped(rhs)} - names
        more_calls = {m for m, body in macros if escaped(body)} - calls
        if not more and not more_calls:
            return names, calls
        names |= more
        calls |= more_calls


def test_no_template_escapes_a_value_made_of_escaped_parts_again() -> None:
    common = (TEMPLATES / "_common.j2").read_text()
    _, common_calls = _escaped_names(common)
    offenders = []
    for path in sorted(TEMPLATES.glob("*.j2")):
        source = path.read_text()
        names, calls = _escaped_names(source)
        calls |= {f"c.{m}" for m in common_calls}
        for name in names:
            offenders += [f"{path.name}: {name}" for _ in
                          re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\|\s*esc\b", source)]
        for call in calls:
            offenders += [f"{path.name}: {call}()" for _ in re.finditer(
                rf"(?<![\w]){re.escape(call)}\((?:[^()]|\([^()]*\))*\)\s*\|\s*esc\b", source)]
    assert offenders == []


def test_the_reader_would_catch_a_join_escaped_twice(tmp_path) -> None:
    source = ('{% set name = " (" ~ (x | esc) ~ ")" %}'
              '{"text": {{ (name | esc) | tojson }}, "blocks": []}')
    names, _ = _escaped_names(source)
    assert names == {"name"}
    (tmp_path / "twice.json.j2").write_text(source)
    from bot.slack.render import render_template
    shown = render_template("twice", "en", {"x": "a < b"}, override_dir=tmp_path)["text"]
    assert shown == " (a &amp;lt; b)"  # what the reader above keeps out of every template


# --- every value of every template, one at a time --------------------------------------------
# A value reaches Slack escaped exactly once wherever it lands: each sample view below is
# rendered again with ANY_VALUE in place of one of its values (a string or a None: a job id,
# a Slurm state, a class, an exit code, a job name, a log line), for every value in turn. The
# stand-in must accept every message: no raw `<!channel>` or stray `<` in mrkdwn (a value not
# escaped), no entity in plain_text (a header or a button escaped for mrkdwn), no `&amp;amp;`
# (escaped twice). Values that are trainbot's own mrkdwn or Slack user ids keep what they are
# (OWN_KEYS); a value a template cannot take as text (a figure it formats) is left as it was.

ANY_VALUE = "<!channel> a&b <x>"
# trainbot's own mrkdwn (a prompt's question, a notice, mentions), Slack user ids and a
# button's style
OWN_KEYS = frozenset({"summary", "question", "notice", "mentions", "actor", "approvers",
                      "decided_by", "user", "style"})


def _samples() -> list[tuple[str, object]]:
    """A view of every template that posts to Slack (each kind of the event template's
    sentences; the stories' incidents, warnings and roots)."""
    from test_render_golden import STORY_IDS, story_views

    from bot.core.home import prompt_confirm
    out: list[tuple[str, object]] = [(t, v) for s in STORY_IDS
                                     for t, v in story_views(s).items()]
    button = {"kind": "cancel_resume", "action_id": "trainbot_cancel_resume", "value": "tok",
              "style": "danger", "from_iter": 300, "mem": "64G", "exclude": "gpu07",
              "job_id": "6100_1", **prompt_confirm("cancel_resume", "6100_1", "RUNNING", 300)}
    out += [
        ("approval", {"summary": OWN, "block_id": "approve:tok", "buttons": [
            button, {**button, "kind": "resubmit_mem", "action_id": "trainbot_resubmit_mem",
             "style": None, "confirm": None},
            {**button, "kind": "cancel", "action_id": "trainbot_cancel",
             **prompt_confirm("cancel", "6100_1", "RUNNING")}]}),
        ("array_root", {"array_job_id": 6100, "name": "sweep", "cluster": "dev",
                        "state": "RUNNING", "counts": [["RUNNING", 2], ["FAILED", 1]],
                        "rows": [{"display_id": "6100_1", "attempt": 2, "state": "FAILED",
                                  "last_iter": 40, "cause": "host_oom"}],
                        "hidden": [["PENDING", 3]], "started": 3, "waiting": True,
                        "recipe": "mix"}),
        ("submitted", {"recipe": "mix", "job_id": "88887", "attempt_no": 2, "job_name": "wm",
                       "actor": "U0ALICE", "automatic": False, "checkpoint_path": "/ck/i3",
                       "checkpoint_iter": 3000,
                       "start": N_("resuming %(start)s (`%(path)s`)",
                                   start=resume_start(3000), path="/ck/i3"),
                       "overrides": [["lr", "3e-4"]],
                       "not_applied": [["mem", "64G", "32G"]]}),
        ("hold_prompt", {"competitor": "88017", "competitor_name": "succ", "for_job": "88887",
                         "token": "tok", "block_id": "hold:tok", "yes_action": "hold_yes",
                         "no_action": "hold_no"}),
        ("hold_released", {"competitor": "88017", "for_job": "88887", "why": "ended",
                           "state": "FAILED", "problem": None, "retry_in_min": None}),
        ("decided", {"summary": OWN, "outcome": _outcome(job_id="88154", state="RUNNING")}),
        ("click_reply", {"kind": "busy", "decided_by": "U0BOB", "job": "88154"}),
        ("completed", {"job_id": "140_4", "replaced": ["123_4"], "last_iter": 10,
                       "target_iter": 10, "elapsed_s": 60, "attempts": 2, "retries_used": 1}),
        ("home", {"user": "U0BOB", "more": 0, "notice": OWN, "runs": [
            _home_run(prompts=[{"summary": OWN, "token": "tok", "buttons": [button]}]),
            _home_run(chain_id=2, array=True, tasks=[{"state": "RUNNING", "n": 2}])]}),
        ("train_reply", {"kind": "watching", "job": "5150", "name": "x", "state": "RUNNING",
                         "raw": "5151", "cluster": "dev"}),
        ("train_reply", {"kind": "controlled", "verb": "cancel", "job": "5150_1",
                         "raw": "5151", "actor": "U0BOB"}),
        ("train_reply", {"kind": "watching_array", "job": "6100", "name": "sweep", "tasks": 3,
                         "waiting": True, "cluster": "dev"}),
        ("train_reply", {"kind": "unwatched", "job": "6100", "actor": "U0BOB"}),
        ("train_reply", {"kind": "never_run", "recipe": "mix"}),
        ("train_reply", {"kind": "history", "recipe": "mix", "runs": [
            {"chain": 1, "status": "active", "retries": 1,
             "rows": [["88154", "0", "3,470", "FAILED", "nccl_timeout"]]}]}),
        ("train_reply", {"kind": "status", "title": "Jobs", "note": None,
                         "unreachable": {"dev": "timeout"},
                         "rows": [["88154", "mix", "PENDING", " (Priority)", "1"]]}),
        ("prompt_follow_up", {"kind": "escalated", "mentions": ["<@U0BOB>"], "question": OWN,
                              "age_s": 3600, "expires_at": 1.7e9}),
        ("probe_result", {"recipe": "mix", "actor": "U0BOB", "error": None, "factory": "m:f",
                          "host": "gpu07", "grows": "workers", "slope_mb": 2.0, "workers": [
                              {"pid": 7, "rss_start_mb": 100, "rss_end_mb": 180,
                               "samples": 40, "slope_mb": 2.0}]}),
        ("stacks", {"job_id": "88154", "problem": None, "summary": {
            "ranks": 4, "groups": [_group(3), _group(1)], "majority": _group(3),
            "odd": [_group(1)],
            "failures": [{"cause": "pyspy_absent", "count": 1, "detail": "x", "host": "h"}]}}),
        ("flight_recorder", {"job_id": "88154", "dir": "/fr", "error": None, "summary": {
            "ranks": [0, 1, 2], "waiting_seq": 9, "waiting_op": "allreduce",
            "behind": [{"rank": 2, "seq": 8, "op": "allgather", "state": "scheduled"}],
            "unread": [{"rank": 3, "why": "truncated"}]}}),
    ]
    event = {"kind": "incident", "prompt": False, "text_only": False, "job_id": "88154",
             "cluster": "dev", "state": "FAILED", "class_id": "host_oom",
             "hint": "Lower the batch size.",
             "detail": None, "translations": {}, "facts": {}, "text": "job 88154 FAILED"}
    reason = {"kind": "ask", "class_id": "host_oom", "charged": True, "resume_from": 3000,
              "work_lost_iters": 470, "mem": "64G", "projected_oom_iter": 900, "used": 1,
              "budget": 3, "charge_no": 1, "job": "88154", "last_iter": 40, "prev_job": "88153",
              "prev_iter": 40, "current": "32G", "cap": "64G", "limit": "32G",
              "max_rss": "31G", "exclude": "gpu07", "stalled_s": 600, "cpu_hung": True,
              "cpu_before": 90.0, "cpu_after": 1.0, "slope": 1.5, "target": 1000,
              "workers_gib": [1.0, 4.0], "earlier": True, "sstat_step": "0",
              "need_gib": 80, "ceiling_gib": 64, "with_gib": 64, "reach_iter": 800,
              "pct": 20.0, "threshold": 40.0, "during_save": True}
    whys = ("completed", "leak_ended", "not_retryable", "nothing_to_do", "budget_exhausted",
            "no_progress", "retryable", "ask", "leak_hopeless", "leak_limit_unknown",
            "mem_unknown", "mem_at_cap", "mem_whole_node", "mem_propose", "stall", "leak",
            "low_gpu")
    out += [("event", {**event, "reason": {**reason, "why": w}}) for w in whys]
    out += [("event", {**event, "kind": "warning", "prompt": True,
                       "reason": {**reason, "why": "stall"}})]
    out += [("event", {**event, "kind": kind, "reason": {}, "facts": facts})
            for kind, facts in (
                ("held", {"held_s": 900, "reason": "JobHeldAdmin"}),
                ("unknown", {"minutes": 30}),
                ("resubmitted", {"new_job": "88887"}),
                ("cluster_unreachable", {"ticks": 3, "since": "05:00", "error": "timeout"}),
                ("cluster_back", {"since": "05:00"}))]
    return out


def _leaves(value: object, path: tuple = ()) -> list[tuple]:
    """The paths of a view's values that can be text: strings (not trainbot's own mrkdwn)
    and Nones, outside OWN_KEYS."""
    if isinstance(value, Mrkdwn) or (path and path[-1] in OWN_KEYS):
        return []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    if value is None or isinstance(value, str):
        return [path]
    return []


def _replaced(value: object, path: tuple, new: object) -> object:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    items = list(value)  # type: ignore[call-overload]
    items[head] = _replaced(items[head], rest, new)
    return type(value)(items) if isinstance(value, tuple) else items


def _hostile_problems(template: str, view: object, override_dir: Path | None = None
                      ) -> tuple[int, list[str]]:
    """How many of the view's values took ANY_VALUE, and what the stand-in said of each."""
    from bot.slack.views import template_context
    context = template_context(view)
    rendered, problems = 0, []
    for path in _leaves(context):
        try:
            blocks, text = render_blocks(template, "en", _replaced(context, path, ANY_VALUE),
                                         override_dir=override_dir)
        except Exception:  # noqa: BLE001 - a figure the template formats: not text
            continue
        rendered += 1
        found = [*validate_blocks(blocks), *mrkdwn_errors(text)]
        found += [f"escaped twice: {t!r}" for t in [text, *_mrkdwn(blocks)]
                  if re.search(r"&amp;(?:amp|lt|gt);", t)]
        problems += [f"{template} {'.'.join(map(str, path))}: {e}" for e in found]
    return rendered, problems


@pytest.mark.parametrize("sample", range(len(_samples())),
                         ids=[t for t, _ in _samples()])
def test_every_value_reaches_slack_escaped_exactly_once(sample: int) -> None:
    template, view = _samples()[sample]
    rendered, problems = _hostile_problems(template, view)
    assert rendered, f"no value of the {template} sample could be replaced"
    assert problems == []


def test_every_template_that_posts_has_a_sample() -> None:
    posted = {p.name.removesuffix(".json.j2") for p in TEMPLATES.glob("*.json.j2")}
    # explanation: a sentence for the CLI's terminal, never posted; note: its one value is
    # trainbot's own mrkdwn (test_a_note_is_trainbots_mrkdwn_as_made); file_title: a shared
    # file's plain-text title, not mrkdwn (test_stacks_service)
    covered = {t for t, _ in _samples()} | {"explanation", "note", "file_title"}
    assert posted <= covered, posted - covered


def test_the_hostile_walk_would_catch_a_value_left_unescaped(tmp_path) -> None:
    (tmp_path / "raw.json.j2").write_text(
        '{"text": "x", "blocks": [{"type": "section", "text": {"type": "mrkdwn", '
        '"text": {{ ("job " ~ job_id) | tojson }}}}, {"type": "header", "text": '
        '{"type": "plain_text", "text": {{ ("job " ~ (job_id | esc)) | tojson }}}}]}')
    rendered, problems = _hostile_problems("raw", {"job_id": "88154"}, tmp_path)
    assert rendered == 1
    assert any("broadcast mention" in p for p in problems)
    assert any("entity '&lt;' in plain_text" in p for p in problems)
