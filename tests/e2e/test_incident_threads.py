"""A run chain's whole thread through the real templates, charts and poster, against the
Slack stand-in: one root, the right replies and uploads, under faults and at Slack's limits;
the watcher's incidents and leak warnings (ThreadEvents) with their charts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from slack_standin import SlackStandIn
from support.e2e import CHANNEL

from bot.charts.figures import progress_chart, rss_chart
from bot.core.incident import (
    AttemptSummary,
    build_incident,
    build_resolution,
    build_root,
    build_warning,
)
from bot.core.models import Action, Diagnosis, DiagnosisMetrics, Evidence, UpstreamCause
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.slack.poster import SlackPoster
from bot.slack.render import render_blocks

GIB = 1024**3
T0 = 1_747_239_000.0


def nccl_diagnosis(evidence_lines: int = 3) -> Diagnosis:
    return Diagnosis(
        class_id="nccl_timeout", action=Action.RESUBMIT, retryable=True, charges_budget=True,
        hint="Resume from the last complete checkpoint.", title="NCCL timeout",
        evidence=tuple(Evidence(2400 + i, f"[rank3]: Watchdog caught collective operation "
                                          f"timeout: WorkNCCL(SeqNum={i}, OpType=ALLGATHER)")
                       for i in range(evidence_lines)),
        metrics=DiagnosisMetrics(last_iter=3470, target_iter=8000, sec_per_iter=4.5,
                                 stall_seconds=1800),
        upstream=UpstreamCause("hang", started_at=T0, last_iter=3470,
                               seconds_before_failure=1800),
    )


def run_chain(poster: SlackPoster, store, lang: str = "en", evidence_lines: int = 3) -> int:
    """What the watcher does for the 88154 story, through the poster."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0).id
    attempts = [AttemptSummary("88154", "RUNNING", 3470, 1000)]
    root = build_root(recipe="mix", attempts=attempts, target_iter=8000)
    poster.post_root(chain, CHANNEL, *render_blocks("root", lang, root))
    warn = build_warning(kind="stall", recipe="mix", job_id="88154", last_iter=3470,
                         now=T0 + 360, stalled_since=T0, sec_per_iter=4.5,
                         last_checkpoint_iter=3000)
    poster.post_reply(chain, "warning:88154:stall", *render_blocks("warning", lang, warn))
    inc = build_incident(nccl_diagnosis(evidence_lines), recipe="mix", job_id="88154",
                         last_checkpoint_iter=3000, now=T0 + 1800)
    poster.post_reply(chain, "incident:88154", *render_blocks("incident", lang, inc))
    progress = progress_chart([("88154", [(T0 - 4.5 * k, 3470 - k) for k in range(0, 2470, 10)])],
                              stalls=[(T0, T0 + 1800)], failures=[(T0 + 1800, "NCCL")])
    poster.upload_file(chain, "chart:88154:progress", progress, "progress.png",
                        "Progress · job 88154")
    rss = rss_chart([(i, 45 * GIB) for i in range(1000, 3471, 50)], mem_limit_bytes=950 * GIB)
    poster.upload_file(chain, "chart:88154:rss", rss, "rss.png", "Host RSS · job 88154")
    attempts = [AttemptSummary("88154", "FAILED", 3470, 1000, "nccl_timeout"),
                AttemptSummary("88887", "RUNNING", 3000, 3000)]
    root = build_root(recipe="mix", attempts=attempts, target_iter=8000, retries_used=1)
    poster.update_root(chain, *render_blocks("root", lang, root))
    res = build_resolution(recipe="mix", old_job_id="88154", new_job_id="88887",
                           from_iter=3000, lost_iters=470, lost_seconds=3900, actor="U0ONCALL")
    poster.post_reply(chain, "resolution:88887", *render_blocks("resolution", lang, res))
    return chain


def thread_summary(slack: SlackStandIn) -> list:
    roots = slack.root_messages(CHANNEL)
    return [(r["text"], [(m.get("text"), [f["title"] for f in m.get("files", [])])
                         for m in slack.replies(CHANNEL, r["ts"])]) for r in roots]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_chain_posts_one_root_the_replies_and_the_charts(slack, poster, store, lang):
    run_chain(poster, store, lang)
    [(root_text, replies)] = thread_summary(slack)
    assert "88887" in root_text  # updated in place to the resumed job
    texts = [t for t, files in replies if not files]
    assert len(texts) == 3 and "88154" in texts[0] and "88887" in texts[2]
    assert [files for _, files in replies if files] == [["Progress · job 88154"],
                                                        ["Host RSS · job 88154"]]
    root_ts = slack.root_messages(CHANNEL)[0]["ts"]
    posts = slack.ok_calls("chat.postMessage")
    assert posts[0].params.get("thread_ts") is None
    assert all(p.params["thread_ts"] == root_ts for p in posts[1:])
    assert len(slack.ok_calls("chat.update")) == 1
    uploads = slack.ok_calls("upload")
    assert len(uploads) == 2 and all(u.body.startswith(b"\x89PNG") for u in uploads)


def test_faults_everywhere_give_the_same_thread(slack, poster, store):
    for method in ("chat.postMessage", "files.getUploadURLExternal",
                   "files.completeUploadExternal", "chat.update"):
        slack.fail_next(method, status=429, retry_after=1)
    slack.fail_next("chat.postMessage", status=500, count=2)
    slack.fail_next("chat.postMessage", status=503, after_processing=True, count=1)
    slack.fail_next("upload", status=500)
    run_chain(poster, store)
    with SlackStandIn() as clean:
        from bot.slack.retry import make_client
        from bot.store import Store

        other = Store.open("sqlite://")
        client = make_client(clean.token, base_url=clean.api_url, timeout=10)
        run_chain(SlackPoster(client, other, deadline_s=POST_DEADLINE_S), other)
        expected = thread_summary(clean)
    assert thread_summary(slack) == expected


def test_rerunning_the_chain_after_a_restart_posts_nothing_new(slack, slack_client, store,
                                                               fake_sleep):
    run_chain(SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep), store)
    before = len(slack.requests)
    # A new process with the same store replays the same keys (chain id 1 again).
    restarted = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep)
    chain = 1
    root = build_root(recipe="mix", target_iter=8000, retries_used=1, attempts=[
        AttemptSummary("88154", "FAILED", 3470, 1000, "nccl_timeout"),
        AttemptSummary("88887", "RUNNING", 3000, 3000)])
    restarted.post_root(chain, CHANNEL, *render_blocks("root", "en", root))
    restarted.update_root(chain, *render_blocks("root", "en", root))  # unchanged: no call
    res = build_resolution(recipe="mix", old_job_id="88154", new_job_id="88887",
                           from_iter=3000, lost_iters=470, lost_seconds=3900, actor="U0ONCALL")
    restarted.post_reply(chain, "resolution:88887", *render_blocks("resolution", "en", res))
    restarted.upload_file(chain, "chart:88154:rss", b"png", "rss.png", "Host RSS · job 88154")
    assert len(slack.requests) == before


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_5000_line_evidence_still_posts(slack, poster, store, lang):
    run_chain(poster, store, lang, evidence_lines=5000)
    incident = slack.ok_calls("chat.postMessage")[2]
    assert "incident" in str(incident.params["metadata"])
    blocks = incident.params["blocks"]
    evidence = next(b for b in blocks if b.get("block_id") == "evidence")["text"]["text"]
    assert "SeqNum=4999" in evidence
    assert any(b.get("block_id") == "trainbot_trimmed" for b in blocks)
    assert blocks[-1]["type"] == "actions"


def test_log_lines_in_an_incident_are_escaped_for_slack(slack, poster, store):
    """A log line with `<!channel>` and `a < b && c > d` in an incident's evidence, its
    recipe's name and the diagnosis' hint: Slack (the stand-in) accepts the message, and the
    text shows as it was written instead of pinging the channel."""
    chain = store.chains.create(recipe="mix<&>", cluster="dev", job_name="mix", now=T0).id
    root = build_root(recipe="mix<&>", attempts=[AttemptSummary("88154", "RUNNING", 10)],
                      target_iter=100)
    poster.post_root(chain, CHANNEL, *render_blocks("root", "en", root))
    diagnosis = Diagnosis(
        class_id="nccl_timeout", action=Action.RESUBMIT, retryable=True, charges_budget=True,
        hint="Guard with `cmd 2>/dev/null || true` <!here>.", title="NCCL timeout",
        evidence=(Evidence(7, "[rank0]: <!channel> a < b && c > d"),
                  Evidence(8, "<http://evil|click> &lt;kept&gt;")),
        metrics=DiagnosisMetrics(last_iter=10))
    inc = build_incident(diagnosis, recipe="mix<&>", job_id="88154", last_checkpoint_iter=None,
                         now=T0 + 60)
    poster.post_reply(chain, "incident:88154", *render_blocks("incident", "en", inc))
    [posted] = [c for c in slack.ok_calls("chat.postMessage") if "incident" in
                str(c.params.get("metadata"))]
    blocks = posted.params["blocks"]
    evidence = next(b for b in blocks if b.get("block_id") == "evidence")["text"]["text"]
    assert "[rank0]: &lt;!channel&gt; a &lt; b &amp;&amp; c &gt; d" in evidence
    assert "&lt;http://evil|click&gt; &amp;lt;kept&amp;gt;" in evidence
    explanation = next(b for b in blocks if b.get("block_id") == "explanation")["text"]["text"]
    assert "`cmd 2&gt;/dev/null || true` &lt;!here&gt;." in explanation
    assert posted.params["text"].startswith("mix&lt;&amp;&gt;: job 88154")
    assert not [c for c in slack.calls("chat.postMessage") if c.response.get("ok") is False]


BAD = "<!channel> a < b && c > d"
BAD_ONCE = "&lt;!channel&gt; a &lt; b &amp;&amp; c &gt; d"


def test_slurms_and_the_jobs_words_in_a_thread_are_escaped_for_slack(slack, poster, store):
    """The thread's other messages with `<!channel>` and `a < b && c > d` in a job id and
    state from Slurm, ssh's error, a stack frame, a host and a dump's reason: Slack (the
    stand-in) accepts each, and each shows the text once escaped, the asker's mention live."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0).id
    root = build_root(recipe="mix", attempts=[AttemptSummary("88154", "RUNNING", 10)],
                      target_iter=100)
    poster.post_root(chain, CHANNEL, *render_blocks("root", "en", root))
    group = {"count": 2, "where": [BAD, BAD], "hosts": [BAD],
             "ranks": [{"rank": r, "pid": r, "host": BAD, "step": 0} for r in range(2)]}
    views = {
        "completed": {"job_id": BAD, "replaced": [BAD], "last_iter": 10, "target_iter": 10,
                      "elapsed_s": 60, "attempts": 2, "retries_used": 1},
        "hold_released": {"competitor": BAD, "for_job": "88154", "why": "ended",
                          "state": BAD, "problem": BAD},
        "stacks": {"job_id": BAD, "problem": None, "summary": {
            "ranks": 2, "groups": [group], "majority": None, "odd": [],
            "failures": [{"cause": "failed", "count": 1, "detail": BAD, "host": BAD}]}},
        "flight_recorder": {"job_id": BAD, "dir": BAD, "error": None, "summary": {
            "ranks": [0, 1], "waiting_seq": 9, "waiting_op": BAD,
            "behind": [{"rank": 1, "seq": 8, "op": BAD, "state": BAD}],
            "unread": [{"rank": 2, "why": BAD}]}},
        "probe_result": {"recipe": BAD, "actor": "U0BOB", "error": BAD},
    }
    for name, view in views.items():
        poster.post_reply(chain, f"{name}:88154", *render_blocks(name, "en", view))
    assert not [c for c in slack.calls("chat.postMessage") if c.response.get("ok") is False]
    posted = [c for c in slack.ok_calls("chat.postMessage") if "root" not in
              str(c.params.get("metadata"))]
    assert len(posted) == len(views)
    for call in posted:
        shown = call.params["text"] + str(call.params["blocks"])
        assert BAD_ONCE in shown and "&amp;lt;" not in shown, shown
    assert "<@U0BOB>" in posted[-1].params["text"]


def test_two_chains_get_two_threads(slack, poster, store):
    a = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0).id
    b = store.chains.create(recipe="succ", cluster="dev", job_name="succ", now=T0).id
    for chain, recipe in ((a, "mix"), (b, "succ")):
        root = build_root(recipe=recipe, target_iter=100,
                          attempts=[AttemptSummary(str(chain), "RUNNING", 1)])
        poster.post_root(chain, CHANNEL, *render_blocks("root", "en", root))
    poster.post_reply(b, "note:b", [{"type": "section", "text": {"type": "mrkdwn",
                                                                 "text": "for succ"}}], "succ")
    roots = slack.root_messages(CHANNEL)
    assert len(roots) == 2
    assert slack.replies(CHANNEL, roots[0]["ts"]) == []
    assert [m["text"] for m in slack.replies(CHANNEL, roots[1]["ts"])] == ["succ"]


# ------------------------------------------------------------------ the watcher's charts


STORY = Path(__file__).resolve().parents[1] / "fixtures" / "stories" / "88154.log"
LOG = "/scratch/mix/logs/mix.out"


def watch_one_job(poster: SlackPoster, store, job_id: int, log: bytes, **record):
    """The production sink (ThreadEvents) on the poster, the watcher on fake Slurm and SFTP,
    one chain with its root posted; returns (watcher, the root's ts)."""
    from fakes import FakeCheckpoints, FakeSFTP, FakeSlurm, make_context

    from bot.core.catalogue import Catalogue
    from bot.services.watch.tick import Watcher
    from bot.services.watch_events import ThreadEvents

    slurm = FakeSlurm()
    ctx = make_context(store, slurm, sink=poster, target_iter=8000)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0).id
    store.attempts.record(chain_id=chain, job_id=str(job_id), now=T0)
    store.watched_jobs.add("dev", str(job_id), now=T0, chain_id=chain)
    root = build_root(recipe="mix", target_iter=8000,
                      attempts=[AttemptSummary(str(job_id), "RUNNING", None)])
    root_ts = poster.post_root(chain, CHANNEL, *render_blocks("root", "en", root))
    sftp = FakeSFTP()
    sftp.clock = T0 + 1800
    sftp.append(LOG, log)
    slurm.add(job_id, stdout_path=LOG, start_time=T0, name="mix", **record)
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx), config=ctx.config, checkpoint=FakeCheckpoints(3000))
    return w, root_ts


def thread_files(slack: SlackStandIn, root_ts: str) -> list[str]:
    return [f["title"] for m in slack.replies(CHANNEL, root_ts) for f in m.get("files", [])]


def thread_texts(slack: SlackStandIn, root_ts: str) -> list[str]:
    return [m["text"] for m in slack.replies(CHANNEL, root_ts) if not m.get("files")]


def test_the_watchers_incident_arrives_with_its_charts(slack, poster, store):
    w, root_ts = watch_one_job(poster, store, 88154, STORY.read_bytes(), state="FAILED",
                               exit_code=1, signal=0, end_time=T0 + 1805,
                               mem_limit_bytes=950 * GIB)
    w.tick(T0 + 1830)
    [incident] = thread_texts(slack, root_ts)
    assert "job 88154 FAILED: nccl_timeout" in incident
    assert thread_files(slack, root_ts) == ["Host RSS · job 88154 (final)",
                                            "Progress · job 88154 (final)",
                                            "Loss · job 88154 (final)"]
    uploads = slack.ok_calls("upload")
    assert len(uploads) == 3 and all(u.body.startswith(b"\x89PNG") for u in uploads)


def test_a_refused_chart_upload_never_reposts_the_incident(slack, poster, store):
    slack.fail_next("files.getUploadURLExternal", status=400)  # the first chart: refused
    w, root_ts = watch_one_job(poster, store, 88154, STORY.read_bytes(), state="FAILED",
                               exit_code=1, signal=0, end_time=T0 + 1805,
                               mem_limit_bytes=950 * GIB)
    w.tick(T0 + 1830)
    w.tick(T0 + 1890)
    assert len(thread_texts(slack, root_ts)) == 1  # the incident, once
    assert thread_files(slack, root_ts) == ["Progress · job 88154 (final)",
                                            "Loss · job 88154 (final)"]
    assert store.incidents.get("dev:88154:final").state == "posted"


def test_a_leak_warning_arrives_with_its_rss_chart(slack, poster, store):
    import time

    lines = []
    for k in range(161):  # RSS +0.2 GiB per iteration against a 100 GiB limit
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0 + 1080 + 4.5 * k))
        lines.append(f"{stamp}.000 | INFO | iter: {64 + k}/8000 | loss: 0.9 | 4.50 s/iter | "
                     f"rss: {60 + 0.2 * k:.1f} GiB\n")
    w, root_ts = watch_one_job(poster, store, 88016, "".join(lines).encode(), state="RUNNING",
                               mem_limit_bytes=100 * GIB)
    w.tick(T0 + 1805)
    [warning] = thread_texts(slack, root_ts)
    assert "host memory is growing" in warning
    assert thread_files(slack, root_ts) == ["Host RSS · job 88016 (leak)"]


def incident_message(poster: SlackPoster, store, slack: SlackStandIn, lang: str,
                     class_id: str, state: str = "FAILED", *, mem_limit: bool = True,
                     **diagnosis: Any) -> dict:
    """The incident message the watcher's sink (ThreadEvents) posts in a `lang` recipe's thread
    for a `class_id` failure of job 88154 (3,400 of 8,000 iterations, checkpoint at 3,000),
    as the stand-in received it; `diagnosis` overrides fields of its Diagnosis (a site's own
    hint: `hint`, `site_hint`, `translations`; a case's `detail`)."""
    from fakes import make_context

    from bot.core.catalogue import Catalogue
    from bot.core.models import Accounting
    from bot.core.policy import AttemptFacts, ChainHistory, PolicyParams, decide
    from bot.core.slurm.records import JobRecord
    from bot.services.watch.events import WatchEvent
    from bot.services.watch_events import ThreadEvents

    ctx = make_context(store, sink=poster, clock=lambda: T0, lang=lang, charts=False)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0).id
    root = build_root(recipe="mix", target_iter=8000,
                      attempts=[AttemptSummary("88154", "RUNNING", None)])
    root_ts = poster.post_root(chain, CHANNEL, *render_blocks("root", lang, root))
    cls = Catalogue.load().classes[class_id]
    d = Diagnosis(class_id=class_id, action=cls.action, retryable=cls.retryable,
                  charges_budget=cls.charges_budget, hint=cls.hint, title=cls.title,
                  metrics=DiagnosisMetrics(last_iter=3400, target_iter=8000))
    d = replace(d, **diagnosis)
    acct = Accounting(state=state, exit_code=1, signal=0,
                      mem_limit_bytes=950 * GIB if mem_limit else None, max_rss_bytes=940 * GIB)
    dec = decide(d, ChainHistory(attempts=(AttemptFacts("88154", 1, last_iter=3400),)),
                 PolicyParams(backoff_s=60), T0, checkpoint_iter=3000, accounting=acct)
    ThreadEvents(ctx).publish(WatchEvent(
        "incident", "dev:88154:final", "dev", f"job 88154 {state}: {class_id}", chain, "88154",
        "mix", diagnosis=d, decision=dec,
        record=JobRecord(job_id=88154, state=state, mem_limit_bytes=acct.mem_limit_bytes,
                         max_rss_bytes=acct.max_rss_bytes)))
    [message] = slack.replies(CHANNEL, root_ts)
    return message


def said_blocks(message: dict) -> list[str]:
    """Each block's words as the thread shows them: its text, its fields, its elements'."""
    said = []
    for b in message["blocks"]:
        if isinstance(b.get("text"), dict):
            said.append(b["text"]["text"])
        said += [f["text"] for f in b.get("fields", ())]
        said += [e["text"] for e in b.get("elements", ()) if isinstance(e.get("text"), str)]
    return said


@pytest.mark.parametrize(("lang", "class_id", "hint", "title"), [
    ("en", "cuda_oom", "Lower the per-GPU batch size", "GPU memory exhausted (CUDA out of memory)"),
    ("ko", "cuda_oom", "GPU당 배치 크기나", None),
    ("en", "unknown_failure", "Read the attached last lines",
     "Job failed (no known signature)"),
    ("ko", "unknown_failure", "첨부된 마지막 줄들을 읽어 보세요", None),
    ("en", "compiler_missing", "Set CC/CXX on the worker", "No C/C++ compiler on the worker node"),
])
def test_a_head_line_that_explains_leaves_the_card_its_title_alone(slack, poster, store, lang,
                                                                   class_id, hint, title):
    """A stop class's head line (not retryable) and a person's decision's (unknown_failure:
    resubmit offered) say the class's hint: the card under them says its title alone, so the
    thread says the hint once."""
    message = incident_message(poster, store, slack, lang, class_id)
    said = said_blocks(message)
    assert hint in said[0]  # the head line
    assert sum(text.count(hint) for text in said) == 1, said
    [card] = [b["text"]["text"] for b in message["blocks"] if b.get("block_id") == "explanation"]
    assert card.endswith(f"(`{class_id}`, FAILED 1:0)") or card.endswith(f"(`{class_id}`, FAILED)")
    assert "\n" not in card
    if title:
        assert card.startswith(f"*{title}*")


@pytest.mark.parametrize(("lang", "hint"), [
    ("en", "Resubmit with more --mem (check the site's per-GPU cap)"),
    ("ko", "--mem을 늘려 재제출하거나"),
])
def test_a_head_line_that_does_not_explain_leaves_the_card_its_explanation(slack, poster, store,
                                                                           lang, hint):
    """A host OOM's head line proposes the --mem and says no hint: the card explains, once."""
    message = incident_message(poster, store, slack, lang, "host_oom")
    said = said_blocks(message)
    assert hint not in said[0]
    [card] = [b["text"]["text"] for b in message["blocks"] if b.get("block_id") == "explanation"]
    assert hint in card
    assert sum(text.count(hint) for text in said) == 1, said


SITE_HINT = "Our nodes cap /dev/shm at 8 GiB: add `#SBATCH --constraint=bigshm` (wiki/shm)."


@pytest.mark.parametrize(("lang", "translations", "said"), [
    ("en", {}, SITE_HINT),
    ("ko", {"ko": {"hint": "우리 노드는 /dev/shm이 8 GiB입니다: `--constraint=bigshm`을 쓰세요."}},
     "우리 노드는 /dev/shm이 8 GiB입니다: `--constraint=bigshm`을 쓰세요."),
    ("ko", {}, SITE_HINT),  # a site's English hint alone: said as it wrote it
])
def test_a_sites_own_hint_is_said_once_in_the_head_line(slack, poster, store, lang,
                                                        translations, said):
    """unknown_failure with NCCL's shared-memory case (its own fix, which replaces the class's
    hint) at a site whose catalogue gives the class its own hint (`site_hint`, or its
    `hint_ko`): a person decides, so the head line explains, the site's hint with it, and the
    card under it says its title alone: the site's hint is said once, not lost. Fails if the
    head line drops the site's hint (event.json.j2's after_hint without `site_hint`)."""
    message = incident_message(poster, store, slack, lang, "unknown_failure",
                               detail={"kind": "nccl_shm"}, hint=SITE_HINT, site_hint=True,
                               translations=translations)
    texts = said_blocks(message)
    assert said in texts[0]  # the head line
    assert sum(text.count(said) for text in texts) == 1, texts
    [card] = [b["text"]["text"] for b in message["blocks"] if b.get("block_id") == "explanation"]
    assert said not in card and "\n" not in card


@pytest.mark.parametrize(("lang", "class_id", "lost"), [
    ("en", "nccl_timeout", "400 iterations"),
    ("ko", "nccl_timeout", "400 iteration"),
    ("en", "unknown_failure", "400 iterations"),
    ("ko", "unknown_failure", "400 iteration"),
    ("en", "host_oom", "400 iterations"),
    ("ko", "host_oom", "400 iteration"),
])
def test_the_work_lost_is_said_once_in_the_card(slack, poster, store, lang, class_id, lost):
    """Job 88154 reached iteration 3,400 and resumes from 3,000: the head line says where the
    resubmit starts, the card's work-lost line the 400 iterations lost, and nothing else says
    them (before, the head line said "(400 iterations lost)" as well)."""
    message = incident_message(poster, store, slack, lang, class_id)
    said = said_blocks(message)
    assert "3,000" in said[0]
    assert "400" not in said[0], said[0]
    [card_lost] = [b["text"]["text"] for b in message["blocks"]
                   if b.get("block_id") == "work_lost"]
    assert card_lost.endswith(f": {lost}")
    assert sum(text.count(lost) for text in said) == 1, said


@pytest.mark.parametrize(("lang", "limit", "max_rss"), [
    ("en", "*Memory limit*\n950 GiB", "*Max RSS*\n940 GiB"),
    ("ko", "\n950 GiB", "\n940 GiB"),
])
def test_a_host_oom_says_its_limit_and_max_rss_once_in_the_card(slack, poster, store, lang,
                                                                 limit, max_rss):
    """A host OOM (limit 950 GiB, MaxRSS 940 GiB) with --mem proposed: the head line says the
    proposal, the card's figures the limit and the MaxRSS, each once (before, the head line
    said "(limit 950.0 GiB, MaxRSS 940.0 GiB)" too)."""
    message = incident_message(poster, store, slack, lang, "host_oom")
    said = said_blocks(message)
    assert "--mem=1430G" in said[0]
    assert "950" not in said[0] and "940" not in said[0] and "MaxRSS" not in said[0], said[0]
    proposed = {"en": "host memory exhausted: proposing to resubmit from iteration 3,000 with "
                      "--mem=1430G",
                "ko": "호스트 메모리 부족: iteration 3,000부터 --mem=1430G으로 재제출을 제안합니다"}
    assert said[0].split(" — ", 1)[1] == proposed[lang], said[0]
    assert sum(t.endswith(limit) for t in said) == 1, said
    assert sum(t.endswith(max_rss) for t in said) == 1, said
    assert sum(t.count("950") for t in said) == 1 and sum(t.count("940") for t in said) == 1


def test_a_head_line_without_its_card_keeps_the_figures(slack, poster, store, monkeypatch):
    """An incident card that fails to render leaves the head line alone in the thread: it
    says the work lost and the limit and MaxRSS itself, so no figure is lost."""
    from bot.services import watch_words

    def broken(*_a, **_k):
        raise RuntimeError("card view")
    monkeypatch.setattr(watch_words, "build_incident", broken)
    message = incident_message(poster, store, slack, "en", "host_oom")
    [head] = said_blocks(message)[:1]
    assert "(limit 950.0 GiB, MaxRSS 940.0 GiB)" in head
    assert "(400 iterations lost)" in head
