"""Text that comes from files, tools and people (a finding's path and error, a log line, a job
name) reaches Slack mrkdwn escaped once (&amp; &lt; &gt;), so `<!channel>` in it pings no one
and `a < b` breaks nothing; the mentions trainbot builds itself stay mentions. Each reply is
checked with the Slack stand-in's own rule (tests/slack_standin.mrkdwn_errors)."""

from __future__ import annotations

import pytest
from fakes import FakeSlurm, make_context
from slack_standin import mrkdwn_errors

from bot.core.authz import Decision, People
from bot.core.findings import Finding
from bot.core.text import N_, Mrkdwn, mrkdwn_escape, mrkdwn_sentence, render_text
from bot.services.threads import code
from bot.services.train import preflight_rows, say
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
                      N_("fix recipes.<name>.sbatch_script (absolute, or relative to workdir)"))
    plain = Finding("launcher", "warn", 3, "SC2086 (shellcheck): echo a < b && c > d")
    text = say(ctx, "mix", "preflight", channel="C0TRAIN", recipe="mix<&>", level=N_("fail"),
               findings=preflight_rows({"launcher": [finding, plain]}))
    assert text == (
        "*preflight mix&lt;&amp;&gt;*: fail\n"
        "• launcher: fail cannot read the recipe's batch script /work/&lt;!channel&gt;/run.sh "
        f"on the cluster: {ESCAPED} → fix: fix recipes.&lt;name&gt;.sbatch_script (absolute, "
        "or relative to workdir)\n"
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
