"""The watcher's events in the run threads: incidents with approval buttons, warnings, notes.

`ThreadEvents(ctx).publish(event)` is the watcher's `EventSink` for a real bot.
Every text goes through the one renderer (`bot.services.threads.render`: the recipe's language,
the site's template folder first), like `report` and `/train`:
- `incident` of a COMPLETED run (class `completed`): its final charts, then one ✅ line
  (templates/completed.json.j2: the iteration reached, the time since the first submit, the
  attempts, and why it was judged without a file it could not read, in the incident's
  words) that ends the thread: no evidence, no metrics, no mention;
- `incident`: the incident message (templates/incident.json.j2 via
  bot.core.incident.build_incident), the owners mentioned on the thread's first one (the
  recipe's `mentions`), and — when the policy decision offers a
  resubmit — an approval prompt (bot.services.prompts.create_resubmit_prompt) whose
  buttons carry one opaque token; the proposed --mem is the policy's;
- `warning` for a stall: the warning text with "Cancel and resume" / "Cancel" / "Dismiss"
  buttons (approval prompt with `offer_cancel`); `stall_over` (the job trained on past the
  stall): that prompt, still open, marked out of date and rewritten to say so; other
  warnings, notes, held jobs and automatic resubmits: a plain note in the thread (one Slack
  does not take raises, so the outbox keeps it unposted; refused, it backs off as a cluster
  notice does: `_note`);
- `cluster_unreachable` / `cluster_back`: one note in the thread of every active chain on
  that cluster (keyed per chain); a thread Slack refused it raises, so the watcher's outbox
  publishes it again (bot.services.watch.health).
The watcher's own words (the head line of an incident or a stall prompt, and every note) are
in the recipe's language (templates/event.json.j2, `_say`, with the incident's card and the
owners it mentions: bot.services.watch_words; a cluster notice in each chain's):
the template words the facts (the Decision and its `facts`, the JobRecord, the Diagnosis'
detail and hint, `event.facts`); the watcher's English `event.text` (stored and logged) is
shown only for an event without the facts for a sentence, or one whose text stands alone
(`text_only`).
After each event but an incident, when a finished attempt's result is stored
(`chain_changed`: an incident's rewrite, one per tick), and when a run's state or progress
moved (`progress_changed`: its progress at most once every persist_every_s), the thread's
root message is rewritten from the store (state, attempts,
iterations, retries), so the top of the thread always tells where the run stands.
Every post goes through `ctx.sink` (the Slack poster), which is idempotent by key, so a
re-publish after a crash posts nothing twice. Every reply above (note, incident, stall
prompt, ✅ line) is tried through bot.services.threads.say_in_thread (`_post`): one whose run
has no thread yet, or that Slack did not take, stays `pending` in the outbox and is published
again (backing off), its message built only when it is tried, so its approval prompt is asked
once, in the thread that shows it.

A stall warning begins the collection of the job's Python stacks, an NCCL timeout of a recipe
with `nccl_flight_recorder` the reading of its flight recorder: in the background, once per
event, into its thread (bot.services.watch_forensics.EventForensics).

Charts (`ctx.charts`, from the event's in-memory series and sampler): after
an incident its host RSS, progress and loss PNGs (keys `chart:<job>:final:<name>`), after a
memory_leak warning its RSS PNG (`chart:<job>:leak:rss.png`), uploaded into the thread through
`ctx.sink.upload_file`. A chart that fails to draw or upload is logged and dropped, never
retried: `publish` returns normally once the event's text is posted, so the watcher marks the
event posted and a chart can never make it post the incident (or its approval prompt) again.
The progress chart overlays the chain's earlier attempts (at most `KEEP_ATTEMPTS` lines, this
one included), their (time, iteration) points kept from their own incidents in memory only
(at most `KEEP_POINTS` each, forgotten when the chain ends, and for at most `KEEP_CHAINS`
chains, so chains left waiting for a person do not pile up): after a restart it shows only
the attempts that ended since.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from bot.core.arrays import task_retries_through
from bot.core.backoff import Backoffs
from bot.core.incident import build_completion
from bot.core.metrics import MetricSeries
from bot.core.models import QUIET_CLASSES, AttemptTrace, Diagnosis
from bot.core.policy import OFFER_CANCEL_RESUME, OFFER_RESUBMIT, OFFER_RESUBMIT_MEM, task_rows
from bot.core.text import mrkdwn_escape
from bot.services.access import mention_text, prompt_people
from bot.services.after_submit import supersede_prompts
from bot.services.approval_outcomes import decided, rewrite_post
from bot.services.approved_choices import recovered_outcome, stall_over
from bot.services.home import refresh_homes
from bot.services.ports import (
    Blocks,
    BotContext,
    JsonPoster,
    LeaseLost,
    LookupRefused,
    PartlyDeferred,
    PartlyLogged,
    PartlyPosted,
    PostDeferred,
    PostError,
    PostGivenUp,
    PostLogged,
)
from bot.services.probes import create_probe_offer, offers_probe
from bot.services.prompts import Prompt, create_resubmit_prompt
from bot.services.stacks import Forensics
from bot.services.submit import AUTOMATIC_ACTOR
from bot.services.threads import (
    RootTries,
    forget_posts,
    has_thread,
    lang_of,
    note_message,
    refresh_root,
    render,
    say_in_thread,
    say_note,
    section,
    task_bounds,
)
from bot.services.watch.events import WatchEvent
from bot.services.watch.health import BACK, NOTICE, notice_key_of
from bot.services.watch.outbox import event_from_store
from bot.services.watch_forensics import EventForensics
from bot.services.watch_words import EventWords, shown_job
from bot.store import Attempt, Chain

log = logging.getLogger(__name__)

KEEP_ATTEMPTS = 5  # attempts per chain on the progress chart (one colour each)
KEEP_POINTS = 200  # (time, iteration) points remembered per attempt: enough for a line
KEEP_CHAINS = 64  # chains remembered, least recently charted dropped first (≈ 7 MiB at most)
CHART_NAMES = ("rss.png", "progress.png", "loss.png")  # an incident's charts, in this order


class ThreadEvents(EventWords):
    """EventSink posting to run threads through `ctx.sink` (see module doc)."""

    def __init__(self, ctx: BotContext, *, forensics: Forensics | None = None) -> None:
        self.ctx = ctx
        self.forensics = EventForensics(ctx, forensics)
        # chain id -> job id -> its attempt that ended (points, saves, failure), oldest first
        self._progress: dict[int, OrderedDict[str, AttemptTrace]] = {}
        # cluster -> its outage notices' and "answers again" notes' posts whose lookup, or the
        # post itself, Slack refused, by key (each cluster's touched by its own watch job only)
        self._refused: dict[str, Backoffs] = {}
        # cluster -> the backoffs of its watcher's replies not taken (notes, incidents, stall
        # prompts, ✅ lines), by key (`_post`)
        self._reply_tries: dict[str, Backoffs] = {}
        # the roots of thread-less runs tried this tick (`new_tick`): once per run and tick
        self._roots = RootTries()

    def new_tick(self) -> None:
        """A watcher's tick begins: the roots of runs without a thread are tried again, once
        each for all of the run's replies in it (bot.services.threads.RootTries)."""
        self._roots = RootTries()

    def publish(self, event: WatchEvent) -> None:
        try:
            self._reply(event)
        except PostError:  # not posted (yet): its forensics need its thread, not the reply
            self.forensics.begin(event)
            raise
        self.forensics.begin(event)
        if event.kind == "incident" and not _completed(event):
            self._charts(event, "final", CHART_NAMES)
        elif event.kind == "warning" and event.decision is not None and \
                event.decision.class_id == "memory_leak":
            self._charts(event, "leak", ("rss.png",))
        if event.kind == "resubmitted":  # the recipe's prompts this job carries on
            supersede_prompts(self.ctx, event.recipe, self.ctx.clock())
        if event.chain_id is not None and event.kind != "incident":
            # (an incident's: the watcher stores the job's result after it, then tells
            # `chain_changed` or `progress_changed`, the one rewrite its tick costs)
            refresh_root(self.ctx, event.chain_id)
            refresh_homes(self.ctx, event.chain_id, self.ctx.clock())

    def _reply(self, event: WatchEvent) -> None:
        """The event's reply in its thread (its kind's), or a cluster's notice in each."""
        if event.kind in ("cluster_unreachable", "cluster_back"):
            self._cluster_notice(event)
        elif event.kind == "incident" and _completed(event):
            self._charts(event, "final", CHART_NAMES)  # above its line: the thread
            self._completed(event)  # ends in the ✅
        elif event.kind == "incident":
            self._incident(event)
        elif event.kind == "warning" and event.decision is not None and \
                OFFER_CANCEL_RESUME in event.decision.offers:
            self._prompt(event, offer_cancel=True)
        elif event.kind == "stall_over":
            self._stall_over(event)
        else:
            self._note(event, self._say(event))

    def cluster_watched(self, cluster: str) -> None:
        """The watcher polled `cluster` with jobs for the first time: begin placing py-spy
        there, so a stall's stacks need not wait for it."""
        self.forensics.prepare(cluster)

    def chain_changed(self, chain_id: int) -> None:
        """A finished attempt's result is in the store: show it at the top of the thread (and
        forget the progress, the replies' backoffs and, once its root shows its end, the
        failure series of the posts of a chain that has ended: bot.services.threads
        .forget_posts)."""
        chain = self.ctx.store.chains.get(chain_id)
        ended = chain is None or chain.status != "active"
        if ended:
            self._progress.pop(chain_id, None)
            if chain is not None:
                self._forget_notes(chain)
        refresh_root(self.ctx, chain_id)
        refresh_homes(self.ctx, chain_id, self.ctx.clock())
        if ended:
            forget_posts(self.ctx, chain_id)

    def progress_changed(self, chain_id: int) -> None:
        """Only what the chain's root shows moved: its running jobs' iterations (at most once
        every persist_every_s), a single run's state. The root is rewritten; Home is not
        republished for it (it is with the run's events, and when a user opens it): one
        views.publish per viewer and root rewrite would cost more than the root does."""
        refresh_root(self.ctx, chain_id)

    # ------------------------------------------------------------------ kinds

    def _incident(self, event: WatchEvent) -> None:
        self._post(event, "incident", lambda: self._incident_message(event))

    def _incident_message(self, event: WatchEvent) -> tuple[Blocks, str]:
        """The incident's message (its approval prompt and probe offer made, or the open ones
        found again: a re-publish asks once) and its head line."""
        d, dec = event.diagnosis, event.decision
        assert d is not None and dec is not None
        offers_resubmit = bool({OFFER_RESUBMIT, OFFER_RESUBMIT_MEM} & set(dec.offers))
        people = self._incident_people(event)
        if offers_resubmit:
            people += prompt_people(self.ctx.config, event.recipe)
        card = self._incident_blocks(event, d)
        # the figures the card says, which its head line then leaves out: each fact once
        said = self._say(event, card=card[1] if card else None)
        head = f"{mention_text(tuple(dict.fromkeys(people)))}{said}".strip()
        blocks = [section(head), *(card[0] if card else [])]
        # the message a decision (or an expiry) rewrites keeps the card, and so its figures
        shown = card[0] if card else None
        if offers_resubmit and event.chain_id is not None and event.recipe is not None:
            prompt = self._create_prompt(event, head, offer_cancel=False, card=shown)
            blocks += prompt.blocks[1:]  # the prompt's actions; its summary is `head`
        probe = (create_probe_offer(self.ctx, recipe=event.recipe, chain_id=event.chain_id,
                                    job_id=event.job_id or "", now=self.ctx.clock(),
                                    summary=head, card=shown)
                 if offers_probe(dec.facts) and event.chain_id is not None
                 and event.recipe is not None else None)
        if probe is not None:
            blocks = _with_button(blocks, probe)
        return blocks, head

    def _completed(self, event: WatchEvent) -> None:
        self._post(event, "✅ completed line", lambda: self._completed_message(event))

    def _completed_message(self, event: WatchEvent) -> tuple[Blocks, str]:
        """One ✅ line: the iteration reached, the time since the chain's first submit and the
        attempts it took (the root already says COMPLETED); and, as an incident's head line
        does, why the run was judged without a file it could not read (the event's `facts`:
        its log unreadable or missing, its memory samples)."""
        attempts = self.ctx.store.attempts.for_chain(event.chain_id) \
            if event.chain_id is not None else []
        chain = self.ctx.store.chains.get(event.chain_id) if event.chain_id is not None else None
        d, rec = event.diagnosis, event.record
        assert d is not None
        retries = chain.retries_used if chain else 0
        replaced: tuple[str, ...] = ()
        if chain is not None and chain.kind == "array":  # tasks run side by side: this task's
            mine = next((a for a in attempts if a.job_id == event.job_id), None)
            attempts = task_rows(attempts, event.job_id) if event.job_id is not None else []
            earlier = [a for a in attempts if a.job_id != event.job_id and mine is not None
                       and a.attempt_no < mine.attempt_no]
            retries = 0
            if mine is not None:
                through = [*earlier, mine]
                retries = task_retries_through(
                    through, mine.job_id, self.ctx.catalogue,
                    bounds=task_bounds(self.ctx.config, chain, through))
            replaced = tuple(a.shown_id for a in earlier)  # the ids this resubmit replaced
        view = build_completion(
            recipe=event.recipe or "", job_id=shown_job(event),
            last_iter=d.metrics.last_iter, target_iter=d.metrics.target_iter,
            started_at=min((a.submitted_at for a in attempts), default=None),
            ended_at=(rec.end_time if rec and rec.end_time else self.ctx.clock()),
            attempts=len(attempts), retries_used=retries, replaced=replaced)
        try:  # the facts as they are: a reader's reason is a sentence (Text) to translate
            blocks, text = render(self.ctx, "completed", event.recipe,
                                  {**asdict(view), "facts": dict(event.facts)})
        except Exception as exc:  # noqa: BLE001 - the English sentence is never lost
            log.warning("completed template for %s failed (%s)", event.key, exc)
            shown = mrkdwn_escape(event.text)  # the watcher's words: escaped like any value
            blocks, text = [section(shown)], shown
        return blocks, text

    def _prompt(self, event: WatchEvent, *, offer_cancel: bool) -> None:
        if event.chain_id is None or event.recipe is None:
            self._note(event, self._say(event))
            return
        self._post(event, "stall prompt",
                   lambda: self._prompt_message(event, offer_cancel=offer_cancel))

    def _prompt_message(self, event: WatchEvent, *, offer_cancel: bool) -> tuple[Blocks, str]:
        """The warning's approval prompt (made, or the open one found again) and its head."""
        people = prompt_people(self.ctx.config, event.recipe)
        head = f"{mention_text(people)}{self._say(event, prompt=True)}".strip()
        prompt = self._create_prompt(event, head, offer_cancel=offer_cancel)
        return prompt.blocks, head

    def _stall_over(self, event: WatchEvent) -> None:
        """The job trained on past a stall whose prompt is still open: the prompt is out of
        date (its Cancel would stop a healthy run), marked so and rewritten to say it."""
        if event.chain_id is None:
            return
        now = self.ctx.clock()
        for approval in self.ctx.store.approvals.for_chain(event.chain_id, "pending"):
            if approval.payload.get("post_key") != event.facts.get("stall_key"):
                continue
            over = stall_over(self.ctx, approval)
            if over is None or not self.ctx.store.approvals.mark_out_of_date(
                    approval.token, AUTOMATIC_ACTOR, now=now):
                continue
            recipe = approval.payload.get("recipe")
            text, blocks = decided(self.ctx, recipe, approval.payload,
                                   recovered_outcome(approval, over, None))
            rewrite_post(self.ctx, approval, approval.payload.get("post_key"), text, blocks)

    def _note(self, event: WatchEvent, text: str) -> None:
        """Post the plain note `event` (a held job, a warning without buttons, a job Slurm
        does not know, an automatic resubmit, a warning flushed at its job's end …) once in
        its chain's thread, through bot.services.threads.say_note (the one decision every
        kind of note goes through, and its log: a failure series warned of once, naming the
        run, the channel, the thread and Slack's error, and once when it ends). Without a
        chain (or without Slack) it is logged only. A note not posted raises, so the outbox
        keeps it unposted (`pending`) and the watcher publishes it again while it is still
        to say (a held job still held, a resubmit not yet told; one whose condition went, a
        job released, is never published again, so never posted once untrue):
        - Slack refused the post (PostRefused: not_in_channel, channel_not_found,
          is_archived, a scope missing) or its lookup, or its run has no thread yet (its root
          message not posted): tried again after 1, 2, 4, 8, at most 16 chances skipped
          (bot.core.backoff, one Backoffs per cluster like the outage notes'; PostDeferred
          when skipped: Slack is not called), and posted once when Slack takes it (PostLogged
          meanwhile: the outbox logs it at debug);
        - a transient failure (a 5xx, a rate limit outlasting the client's retries): tried
          at the next chance;
        - Slack refused the message itself (MessageRefused: msg_too_long, invalid_blocks …),
          or its run still has no thread after THREADLESS_TRIES tries: given up
          (PostGivenUp: the outbox records it `dropped`, never published again), its warning
          carrying the note's words. (Only a trainbot bug builds a message Slack rejects:
          the warning is its report.)
        The backoffs of a run's notes are forgotten when the run ends (`chain_changed`)."""
        if event.chain_id is None:
            log.info("no thread for %s (chain %s): %s", event.key, event.chain_id, text)
            return
        chain_id = event.chain_id
        self._post(event, "note", lambda: note_message(self.ctx, chain_id, text), words=text)

    def _forget_notes(self, chain: Chain) -> None:
        """Forget the backoffs of the replies to `chain`'s jobs (keyed `cluster:job:…`) and to
        the run itself (`cluster:chain:ID:…`, the read_failed note: bot.services.watch.tick), and
        which of them had their forensics begun: the run has ended, none of them is
        published again; but a reply still `pending` (a completed run's ✅ line, whose run
        ends at its first try: bot.services.watch.tick) keeps its backoff until it is posted
        or given up."""
        refused = self._reply_tries.get(chain.cluster)
        if (refused is None or not refused.by_key) and not self.forensics.begun_any:
            return
        prefixes = (f"{chain.cluster}:chain:{chain.id}:", *(
            f"{chain.cluster}:{a.job_id}:" for a in self.ctx.store.attempts.for_chain(chain.id)))
        if refused is not None:
            refused.forget(lambda key: key.startswith(prefixes) and not self._pending(key))
        self.forensics.forget(prefixes)

    def _pending(self, key: str) -> bool:
        """Whether the watcher's event `key` is still to be published (its outbox row)."""
        row = self.ctx.store.incidents.get(key)
        return row is not None and row.state == "pending"

    def _cluster_notice(self, event: WatchEvent) -> None:
        """One note in every active chain's thread on the cluster, each thread's post tried
        whatever the others' did; an "answers again" note only in the threads that have, or
        may have, its outage's notice (`_told`: one whose notice Slack refused, or that never
        had it, never heard the outage). A thread that has not got it (Slack did not take the
        post, or the run has no thread yet: its root message not posted): PartlyLogged when
        others have it (the notice is said; bot.services.watch.health publishes it again at
        the next tick, and the threads that have it already get nothing twice: the poster's
        key), PostLogged when none has (each thread's failure logged by
        bot.services.threads.say_note: the outbox logs these at debug). A thread where it is
        to be tried again with a backoff (`_notice_in`) and was not tried this time: when no
        thread left was tried, PartlyDeferred or PostDeferred. A thread where it was given up
        (Slack rejected the message itself, or the run still had no thread after
        THREADLESS_TRIES tries) is done with; given up in every thread, it is PostGivenUp
        (the outbox records it `dropped`: said nowhere)."""
        chains = [c for c in self.ctx.store.chains.with_status("active")
                  if c.cluster == event.cluster]
        prefix = _in_thread(event.key)
        refused = self._refused.setdefault(event.cluster, Backoffs())
        if event.kind == BACK:
            notice = notice_key_of(event.key)
            chains = [c for c in chains if self._told(notice, c.id)]
            told = {f"{prefix}{c.id}" for c in chains}
            # its notice's end is told (or tried once) instead; a thread not told any more
            # (its run ended) is not tried
            refused.forget(lambda k: k.startswith(_in_thread(notice))
                           or (k.startswith(prefix) and k not in told))
        else:  # an earlier outage's notice (its end's, if refused, goes on: `_notice_in`)
            refused.forget(lambda k: ":down:" in k and not k.startswith(prefix))
        outcomes = {chain.id: self._notice_in(event, chain, f"{prefix}{chain.id}", refused)
                    for chain in chains} if self.ctx.sink is not None else {}
        unposted = [chain_id for chain_id, outcome in outcomes.items()
                    if outcome in ("later", "deferred")]
        said = [chain_id for chain_id, outcome in outcomes.items() if outcome == "posted"]
        if not chains:
            log.warning("%s", event.text)
        if unposted:
            deferred = all(outcomes[chain_id] == "deferred" for chain_id in unposted)
            # each thread's failure was logged where it came (`_notice_in`): PostLogged, so
            # the outbox does not warn of the same try again
            error = (PartlyDeferred if deferred else PartlyLogged) if said else \
                (PostDeferred if deferred else PostLogged)
            raise error(f"{event.key}: not posted in the threads of chains {unposted}"
                        f"{' (not tried this time)' if deferred else ''}")
        if outcomes and not said:  # given up in every thread (each logged): said nowhere
            raise PostGivenUp(f"{event.key}: given up in the threads of chains "
                              f"{list(outcomes)}")

    def _notice_in(self, event: WatchEvent, chain: Chain, key: str, refused: Backoffs) -> str:
        """Post the cluster notice or "answers again" note `event` in the chain's thread
        under `key`, through bot.services.threads.say_note (the one decision for every kind
        of note, and its log): "posted", "later", "given_up" or "deferred" (not tried).
        Slack refusing to look up the post a try left there (an intent: the bot out of the
        channel, no history scope), or refusing the post itself (PostRefused:
        not_in_channel, channel_not_found, a scope missing), or the run having no thread
        yet, will not change at the next tick: the thread is tried again after 1, then 2, 4,
        8 and at most 16 chances skipped (`refused`, bot.core.backoff.Backoffs, one Backoff
        per post: the notice's chances are failed ticks, its end's every tick,
        bot.services.watch.health), until Slack takes it (the bot back in the channel: the
        post found, or posted, once) or, for a notice, the outage ends (its "answers again"
        note is tried there once, if the thread may have the notice: `_told`). A transient
        failure (a 5xx, a rate limit) is tried again at the next chance. A message Slack
        rejects itself (MessageRefused) is given up there at once. A thread where an
        earlier outage's end is still refused gets no new notice until it has that end: its
        posts keep their order."""
        text = self._say(event, recipe=chain.recipe)
        notice = event.kind == NOTICE
        if notice and any(":back:" in k and k.endswith(f":chain:{chain.id}") and b.refused
                          for k, b in refused.by_key.items()):
            log.debug("%s: not tried before the end of the outage before it", key)
            return "deferred"
        return say_note(self.ctx, chain.id, key, text, refused,
                        what="notice" if notice else "'answers again' note", roots=self._roots)

    def said_in_a_thread(self, key: str) -> bool:
        """Whether a chain's thread has, or may have, the cluster notice `key`: its post there
        is recorded posted, or is an intent (a post Slack may have taken before the bot
        stopped, or whose answer was lost) that the thread writer finds in its thread (then
        recorded posted: `look_up`, the lookup a post reconciles with before sending again)
        or cannot look up, or a writer this bot has not (no Slack) left. An intent Slack does not
        have is not said. So a thread that may have the notice hears the outage ended, and
        one that has not gets it posted once (the writer looks an intent up before it sends
        it again)."""
        prefix = _in_thread(key)
        posts = self.ctx.store.slack_posts
        if posts.posted_under(prefix):
            return True
        return any(self._intent_said(intent.key) for intent in posts.intents_under(prefix))

    def _told(self, notice_key: str, chain_id: int) -> bool:
        """Whether the chain's thread has, or may have, the cluster notice `notice_key`: its
        post there recorded posted, or an intent said as `said_in_a_thread` takes one. A post
        Slack refused leaves no intent (bot.slack.poster): that thread was not told. Nor, from
        the next time on, one whose intent Slack refused to look up (a crash-left notice in a
        channel the bot is out of): it may have the notice, so the note is tried there this
        once, and the intent is dropped as a refused post's is; before, the note was tried
        there at every tick, and its outage's end was never fully posted."""
        key = f"{_in_thread(notice_key)}{chain_id}"
        post = self.ctx.store.slack_posts.get(key)
        return post is not None and (post.posted or self._intent_said(key, drop_refused=True))

    def _intent_said(self, key: str, *, drop_refused: bool = False) -> bool:
        """Whether the post intent `key` may be in its thread: the thread writer finds it (then
        records it posted), cannot look it up, or is not this bot's (no Slack: a writer of an
        earlier process left it, and may have posted it). With `drop_refused`, an intent
        whose lookup the chat refused is dropped (logged): asking again will not tell."""
        sink = self.ctx.sink
        if sink is None:
            return True
        try:
            return sink.look_up(key)
        except LeaseLost:
            raise
        except PostError as exc:
            if drop_refused and isinstance(exc, LookupRefused):
                self.ctx.store.slack_posts.forget_intent(key)
                log.warning("%s may be in its thread and its lookup was refused (%s): taken as "
                            "said this once, its intent dropped (not looked up again)", key, exc)
                return True
            log.warning("%s may be in its thread and cannot be looked up (%s): taken as said",
                        key, exc)
            return True

    def _charts(self, event: WatchEvent, stage: str, names: tuple[str, ...]) -> None:
        """Draw and upload the event's charts (see module doc); a failure is logged only."""
        upload = getattr(self.ctx.sink, "upload_file", None)
        drawer = self.ctx.charts
        chain_id = event.chain_id
        if upload is None or drawer is None or event.series is None or event.diagnosis is None or \
                chain_id is None or not has_thread(self.ctx, chain_id):
            return  # a sink that cannot upload (test recorders), or nowhere to put them
        job = str(event.job_id)
        series = event.series
        chain = self.ctx.store.chains.get(chain_id)
        if chain is not None and chain.kind == "array":
            earlier: OrderedDict[str, AttemptTrace] = OrderedDict()  # side by side: none earlier
        else:
            earlier = self._progress.pop(chain_id, OrderedDict())
        self._progress[chain_id] = earlier  # most recently charted last
        while len(self._progress) > KEEP_CHAINS:
            self._progress.pop(next(iter(self._progress)))
        if stage == "final":  # this attempt, for the next attempts' progress charts
            earlier.pop(job, None)
            earlier[job] = _trace(series, event.diagnosis, job)
            while len(earlier) > KEEP_ATTEMPTS:
                earlier.popitem(last=False)
        lang, override_dir = lang_of(self.ctx.config, event.recipe), self.ctx.config.templates.dir
        try:
            rec = event.record
            charts = drawer.charts_for(
                series, event.diagnosis, job_id=job,
                mem_limit_bytes=rec.mem_limit_bytes if rec else None,
                earlier_attempts=[t for j, t in earlier.items() if j != job],
                sampler=event.sampler, skew=event.skew, names=names, lang=lang,
                override_dir=override_dir)
        except Exception:  # noqa: BLE001 - the event's text is what matters
            log.exception("%s: drawing the %s charts of job %s failed; posted without them",
                          event.key, stage, job)
            return
        for name in names:
            if name not in charts:
                continue  # no data for it (e.g. a log without loss values)
            try:
                upload(chain_id, f"chart:{job}:{stage}:{name}", charts[name], name,
                       drawer.file_title(name, job_id=shown_job(event), stage=stage, lang=lang,
                                         override_dir=override_dir))
            except LeaseLost:
                raise  # nor is the event posted: the replica holding the lease posts it
            except Exception as exc:  # noqa: BLE001 - never re-posts the event (module doc)
                log.warning("%s: uploading %s of job %s failed, not retried: %s",
                            event.key, name, job, exc)

    # ------------------------------------------------------------------ helpers

    def _create_prompt(self, event: WatchEvent, summary: str, *, offer_cancel: bool,
                       card: Blocks | None = None) -> Prompt:
        dec = event.decision
        return create_resubmit_prompt(
            self.ctx, recipe=event.recipe or "", chain_id=event.chain_id or 0,
            job_id=event.job_id or "", now=self.ctx.clock(), summary=summary,
            resume_iter=dec.resume_from if dec else None,
            resume_checkpoint=dec.resume_checkpoint if dec else None,
            checkpoint_unknown=dec.checkpoint_unknown if dec else None,
            mem=dec.mem if dec and OFFER_RESUBMIT_MEM in dec.offers else None,
            exclude=dec.facts.get("exclude") if dec and not offer_cancel else None,
            offer_cancel=offer_cancel, post_key=event.key, card=card,
        )

    def _post(self, event: WatchEvent, what: str, message: Callable[[], tuple[Blocks, str]],
              *, words: str | None = None) -> None:
        """Post the reply `message()` builds for `event` (a `what`: a note, an incident …)
        once in its chain's thread, through bot.services.threads.say_in_thread (the one
        decision every reply the watcher posts goes through, bot.core.backoff.after_try, and
        its log); `words` (the event's English text if not given) is what the log says it
        said. Without a chain (or without Slack) it is logged only. Not posted, it raises, so
        the outbox keeps the event `pending` and the watcher publishes it again (a finished
        job stays watched until its incident is posted; a stall while it is seen; a note
        while it is still to say): PostDeferred when its backoff skipped this chance (Slack
        is not called, nothing is built), PostLogged when it was tried and not taken (Slack
        refused it, a transient failure, or its run has no thread yet: its root message not
        posted), PostGivenUp when it is given up (Slack rejected the message itself, or the
        run still had no thread after THREADLESS_TRIES tries: the outbox records it
        `dropped`). `message` is called only when the post is tried: an approval prompt is
        made once there is a thread to show it in, and a re-publish finds the open one
        (bot.services.prompts), so the thread gets one prompt, once (the poster's key)."""
        chain = self.ctx.store.chains.get(event.chain_id) if event.chain_id is not None \
            else None
        said_words = event.text if words is None else words
        if chain is None or self.ctx.sink is None:
            log.info("no thread for %s (chain %s): %s", event.key, event.chain_id, said_words)
            return
        tries = self._reply_tries.setdefault(event.cluster, Backoffs())
        said = say_in_thread(self.ctx, chain.id, event.key, said_words, tries, message,
                             what=what, roots=self._roots)
        if said == "deferred":
            raise PostDeferred(f"{event.key}: not tried this time (not taken lately)")
        if said == "given_up":
            raise PostGivenUp(f"{event.key}: given up (logged)")
        if said == "later":
            raise PostLogged(f"{event.key}: not posted (logged)")


def _in_thread(key: str) -> str:
    """The start of the keys a cluster's notice `key` is posted under, one per chain's thread
    (the chain's id follows)."""
    return f"{key}:chain:"


def _with_button(blocks: Blocks, element: dict) -> Blocks:
    """`blocks` with the button `element` in their last actions block (a new one if none)."""
    for block in reversed(blocks):
        if block.get("type") == "actions":
            block["elements"] = [*block["elements"], element]
            return blocks
    return [*blocks, {"type": "actions", "block_id": f"probe:{element['value']}",
                      "elements": [element]}]


def _completed(event: WatchEvent) -> bool:
    """A finished run: told as a ✅ resolution line, not as an incident."""
    return event.diagnosis is not None and event.diagnosis.class_id == "completed"


class WebhookEvents:
    """EventSink: each event published by `inner` (the threads), then POSTed as JSON
    (`WatchEvent.to_json`) to `webhook`; a failed POST raises, so the outbox publishes the
    event again next tick (the threads post nothing twice; the receiver dedupes by key).

    A cluster's unreachable notice and its "answers again" note reach the receiver as a
    pair, each once, as the threads have them: the webhook is one more place the notice is
    said (bot.services.watch.health). Its POST of each is recorded in the store (key
    `webhook:<event key>`, an intent before the POST, posted after it) and not made again
    once recorded posted. A notice said in some threads only (PartlyPosted) is POSTed too; a
    notice or note the threads have and the webhook refused (or a bot stopped before POSTing:
    the threads tell a restarted bot it was said) is PartlyPosted: said, and published again
    for the webhook (health posts a partly said notice again at each failed tick, a note at
    the next tick).
    An "answers again" note is POSTed after its outage's notice (`notice_key_of`, from the
    store): POSTed then when the webhook has not got it, however the notice's row ended
    (dropped when the cluster answered), so the receiver never hears an outage ended that it
    was not told of. A notice Slack refused in every thread is not POSTed (neither); without
    threads to tell (no Slack) the receiver is where it is said: a POST it refused or a bot
    stopped in may have reached it, so its end follows (`said_in_a_thread`). A POST a bot
    stopped in, before its record, is made again (the receiver drops the repeat by key)."""

    def __init__(self, inner: ThreadEvents, webhook: JsonPoster) -> None:
        self.inner, self.webhook = inner, webhook

    def publish(self, event: WatchEvent) -> None:
        if event.kind not in (NOTICE, BACK):
            self.inner.publish(event)
            self.webhook.post_json(event.to_json())
            return
        try:
            self.inner.publish(event)
        except PartlyPosted:  # said in some threads: the receiver is told as they were
            self._pair_posted(event)
            raise
        try:
            self._pair_posted(event)
        except PostError as exc:
            if event.kind == NOTICE and not self.inner.said_in_a_thread(event.key):
                raise  # no thread to tell (no Slack, no run): said nowhere yet
            raise PartlyPosted(f"{event.key}: in the threads, not at the webhook: {exc}"
                               ) from exc

    def _pair_posted(self, event: WatchEvent) -> None:
        """POST the cluster notice `event` once; an "answers again" note after its outage's
        notice, which is POSTed first when the webhook has not got it."""
        if event.kind == BACK:
            notice = self.inner.ctx.store.incidents.get(notice_key_of(event.key))
            if notice is not None:
                self._post_once(event_from_store(event.cluster, notice))
        self._post_once(event)

    def _post_once(self, event: WatchEvent) -> None:
        """POST `event` unless its POST is recorded made (an intent: a bot stopped in it,
        made again)."""
        posts, key = self.inner.ctx.store.slack_posts, _at_webhook(event.key)
        made = posts.get(key)
        if made is not None and made.posted:
            return
        now = self.inner.ctx.clock()
        posts.record_intent(key, channel="webhook", kind="webhook", now=now)
        self.webhook.post_json(event.to_json())
        posts.record_posted(key, ts="webhook", now=now)

    def said_in_a_thread(self, key: str) -> bool:
        """Whether a chain's thread has, or may have, the cluster notice `key` (the
        threads'), or the receiver may have it: its POST recorded, made or begun (a bot
        stopped in it; without Slack the webhook is the only place it is said)."""
        return self.inner.said_in_a_thread(key) or \
            self.inner.ctx.store.slack_posts.get(_at_webhook(key)) is not None

    def cluster_watched(self, cluster: str) -> None:
        """The threads' (py-spy placed ahead of a stall)."""
        self.inner.cluster_watched(cluster)

    def new_tick(self) -> None:
        """The threads' (the roots of thread-less runs tried once per tick), when they
        listen."""
        tell = getattr(self.inner, "new_tick", None)
        if tell is not None:
            tell()

    def chain_changed(self, chain_id: int) -> None:
        """A chain's attempts or status changed in the store (a job ended and its result is
        recorded, an array's task started or changed state, a job Slurm never knew was given
        up): the thread's root shows it (`inner`), and the receiver gets the run's `progress`
        object as it now stands, as `progress_changed` sends it: without it a receiver
        following a run saw its ended job RUNNING for good (the job's incident names no
        run's state), and an array's tasks, whose root only this rewrites, never moved."""
        self.inner.chain_changed(chain_id)
        self._post_progress(chain_id)

    def progress_changed(self, chain_id: int) -> None:
        """The thread's root follows the run's progress (`inner`), and the receiver gets it
        as one `progress` object: the run's attempts' states and iterations as the root
        shows them, as often as the root is rewritten (at most once every persist_every_s
        per run, and a bounded number of runs a minute across the workspace's clusters:
        bot.services.watch.chains.ProgressRewriteBudget)."""
        self.inner.progress_changed(chain_id)
        self._post_progress(chain_id)

    def _post_progress(self, chain_id: int) -> None:
        """POST the run's `progress` object (`progress_json`). Its `key` names what it
        shows; a failed POST is not sent again: the next one carries the latest progress
        (the end of a job also comes as its incident, which is sent again)."""
        store = self.inner.ctx.store
        chain = store.chains.get(chain_id)
        if chain is not None:
            self.webhook.post_json(progress_json(chain, store.attempts.for_chain(chain_id)))


def _at_webhook(key: str) -> str:
    """The key the webhook's POST of the cluster notice `key` is recorded under."""
    return f"webhook:{key}"


def progress_json(chain: Chain, attempts: Sequence[Attempt]) -> dict[str, Any]:
    """A run's progress as the webhook's body (`kind` "progress"): its `status` (active,
    completed, stopped), its attempts oldest first (`job_id` as people read it, `state`,
    `last_iter`, `result`) and its `target_iter`; `key` is the same for the same progress,
    so a receiver drops a repeat."""
    rows = [{"job_id": a.shown_id, "state": a.state, "last_iter": a.last_iter,
             "result": a.result} for a in attempts]
    shown = ",".join(f"{r['job_id']}:{r['state']}:{r['last_iter']}:{r['result']}"
                     for r in rows)
    return {"key": f"progress:{chain.id}:{chain.status}:{shown}", "kind": "progress",
            "cluster": chain.cluster, "chain_id": chain.id, "recipe": chain.recipe,
            "status": chain.status, "target_iter": chain.target_iter, "attempts": rows}


def _trace(series: MetricSeries, diagnosis: Diagnosis, job: str) -> AttemptTrace:
    """An attempt as later progress charts draw it: its points (thinned), its checkpoint
    saves and its failure mark."""
    points = _thin([(s.time, float(s.iteration)) for s in series.samples
                    if s.time is not None and s.iteration is not None])
    saves = tuple(w.end_time for w in series.save_windows() if w.end_time is not None)
    end = series.last_time
    failure = (end, diagnosis.class_id) \
        if diagnosis.class_id not in QUIET_CLASSES and end is not None else None
    return AttemptTrace(job, tuple(points), saves[-KEEP_POINTS:], failure)


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most KEEP_POINTS of `points`, evenly spread, the first and the last kept."""
    if len(points) <= KEEP_POINTS:
        return points
    step = -(-len(points) // (KEEP_POINTS - 1))  # ceil
    kept = points[::step]
    return kept if kept[-1] == points[-1] else [*kept, points[-1]]
