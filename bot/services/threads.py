"""Run threads: every Block Kit message of a run's thread comes from a template, rendered in
the recipe's language (`render`: templates/<name>.json.j2, the site's `templates.dir` first)
and posted through the thread writer (`ctx.sink`, bot.services.ports.ThreadWriter): the
root (`open_thread`, the one way it is posted; rewritten in place as attempts change by
`refresh_root`; what it shows: bot.services.root_views) and replies (`thread_message`,
`thread_note`, `post_safely`), each once by its key.

Every thread note, of whatever kind (the watcher's notes, a cluster's outage notice and its
end, a settled cancel's note, `thread_note`'s), and every reply the watcher posts for an
event (an incident, a stall prompt, a completed run's ✅ line), is tried through
`say_in_thread` (a note's through `say_note`): the one place that decides
(bot.core.backoff.after_try) whether it is posted, tried again later (with a backoff) or
given up, and logs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

from bot.config import Config
from bot.core.backoff import THREADLESS_TRIES, Backoffs, Fate, after_try
from bot.core.text import mrkdwn_escape
from bot.services.ports import (
    Blocks,
    BotContext,
    LeaseLost,
    LookupRefused,
    MessageRefused,
    PostError,
    PostRefused,
    RenderError,
    root_key,
)
from bot.services.post_claims import claim_post, post_claim_key, release_post

# what a root shows (bot.services.root_views), its names imported from here too
from bot.services.root_views import array_root_view as array_root_view
from bot.services.root_views import chain_target as chain_target
from bot.services.root_views import prompt_job as prompt_job
from bot.services.root_views import root_view as root_view
from bot.services.root_views import task_bounds as task_bounds
from bot.store import Incident, Store

log = logging.getLogger(__name__)

MAX_SECTION = 3000
# the store's class (its incidents table: the notes' outbox) of a note `thread_note` keeps
# until its thread has it or it is given up
THREAD_NOTE = "thread_note"
# the state of a kept note given up for want of its thread (its run's root refused, without
# a channel, or not posted in THREADLESS_TRIES tries): shown by the run's status as one
# never said (`unsaid_in_thread`), and said once its thread opens after all
# (`say_pending_notes`), then `posted`
THREADLESS = "threadless"
# a kept reply given up for good, what it says no longer holding (`outdate_kept`)
OUTDATED = "outdated"
# what became of a note's try (`say_note`): "deferred" when it was not made (its backoff)
Said = Literal["posted", "later", "given_up", "deferred"]
# what became of a reply's attachment (`attachment_fate`)
AttachmentFate = Literal["follows", "kept", "dropped", "unshared"]
KeptReply = Callable[[str, str, Any], dict[str, Any]]
"""`thread_keeper`'s renderer: (key, template, view) -> the incidents row to keep."""
# the longest file, in bytes of UTF-8, a kept reply keeps for its later post (in the store,
# read at each run of the `prompts` job); a longer one is shared only with a reply posted at
# once. Twice the bound on what a stacks collection sends back, counted in the same unit
# (bot.probes.stacks.MAX_OUTPUT_BYTES, 4 MiB): the dump of a collection the nodes kept within
# it fits (each frame's dump line is shorter than its JSON, whose non-ASCII characters are
# \u escapes longer than their UTF-8, and a group's frames repeat one rank's:
# tests/unit/services/test_stacks_dump_bound)
MAX_KEPT_FILE_BYTES = 8 << 20


@dataclass(frozen=True)
class Attachment:
    """A text file shared in the thread under its reply once the reply is posted (a stall's
    full stack dump), once by `key`; `unshared` (trainbot's mrkdwn, in the thread's
    language), when set, is said in the thread once if the upload fails (the reply having
    announced the file)."""

    key: str
    text: str
    filename: str
    title: str
    unshared: str = ""


def lang_of(config: Config, recipe: str | None, channel: str | None = None) -> str:
    """The recipe's message language; without a configured recipe, the language of the
    recipes whose threads go to `channel` (a channel id) when they agree, else slack.lang."""
    if recipe is not None and recipe in config.recipes:
        return config.lang_for(recipe)
    if channel is not None:
        langs = {config.lang_for(r) for r in config.recipes
                 if config.channel_id_for(r) == channel}
        if len(langs) == 1:
            return langs.pop()
    return config.slack.lang


def render(ctx: BotContext, name: str, recipe: str | None, view: Any, *,
           channel: str | None = None, max_json: int | None = None) -> tuple[Blocks, str]:
    """The `name` template in the recipe's language (`lang_of`, `channel` for a message
    without a recipe), with the site's template folder; trimmed to a message's size, or to
    `max_json` characters of blocks (a view's).

    A site template that fails (a typo in `templates.dir`) is logged and the shipped one is
    used, so a broken override never loses a message or blocks an approval.
    """
    lang = lang_of(ctx.config, recipe, channel)
    override = ctx.config.templates.dir
    if override:
        try:
            return ctx.renderer.render_blocks(name, lang, view, override_dir=override,
                                              max_json=max_json)
        except RenderError as exc:
            log.warning("site template %s/%s failed (%s); using the shipped one", lang, name, exc)
    return ctx.renderer.render_blocks(name, lang, view, max_json=max_json)


# Small text helpers: `section` wraps an already rendered sentence (the head line watch_events
# puts above an incident's blocks); `code` / `cut` shape ephemeral replies (train).


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(text, MAX_SECTION)}}


def code(text: str, limit: int = MAX_SECTION - 8) -> str:
    """Raw text (log lines) in a mrkdwn code block, escaped (mrkdwn_escape); the *end* is
    kept when cut (the last log lines matter), never half an entity."""
    raw = text.replace("```", "ˋˋˋ")
    shown = mrkdwn_escape(raw)
    if len(shown) > limit:
        start, size = len(raw), 0
        while start > 0 and size + len(mrkdwn_escape(raw[start - 1])) <= limit - 1:
            start -= 1
            size += len(mrkdwn_escape(raw[start]))
        shown = mrkdwn_escape("…" + raw[start:])
    return f"```{shown}```"


def _chain_recipe(ctx: BotContext, chain_id: int) -> str | None:
    """The chain's recipe; None for a chain trainbot did not submit (no recipe)."""
    chain = ctx.store.chains.get(chain_id)
    return chain.recipe if chain is not None and not chain.adopted else None


def has_thread(ctx: BotContext, chain_id: int | None) -> bool:
    """Is the chain's root message posted (so replies can go under it)?"""
    if ctx.sink is None or chain_id is None:
        return False
    root = ctx.store.slack_posts.get(root_key(chain_id))
    return root is not None and root.posted


def thread_message(ctx: BotContext, chain_id: int | None, key: str, template: str,
                   view: Any) -> bool:
    """Post `template` rendered with `view` once (by key) in the chain's thread, in its
    recipe's language; False when there is no thread."""
    if not has_thread(ctx, chain_id):
        return False
    assert chain_id is not None
    blocks, fallback = render(ctx, template, _chain_recipe(ctx, chain_id), view)
    return post_safely(ctx, "reply", chain_id, key, blocks, fallback) is not None


def kept_message(ctx: BotContext, chain_id: int | None, key: str, template: str,
                 view: Any) -> dict[str, Any] | None:
    """`thread_message`'s reply, rendered and made ready to keep for the thread as
    `keep_reply` keeps one (the incidents row, class `THREAD_NOTE`, `pending`), for a store
    write that records it in the same transaction as what it tells (ApprovalsRepo.mark_done's
    `keep`), so it is never lost with that write made: posted at once (`say_kept_message`),
    or by the `prompts` job (`say_pending_notes`) when the bot stopped first or Slack did not
    take it. None when there is no thread (nothing is said, as `thread_message`)."""
    keeper = thread_keeper(ctx, chain_id)
    return None if keeper is None else keeper(key, template, view)


def thread_keeper(ctx: BotContext, chain_id: int | None) -> KeptReply | None:
    """`kept_message` for the chain's thread, its reads of the store (the thread, the
    chain's recipe and cluster) made now: the function returned renders a reply (key,
    template, view) into the row to keep without touching the store, so a store write may
    call it inside its own transaction when what the reply says depends on what the write
    finds (ApprovalsRepo.pass_hold's, settle_holds' `keep`). None when there is no thread."""
    if not has_thread(ctx, chain_id):
        return None
    assert chain_id is not None
    chain = ctx.store.chains.get(chain_id)
    recipe = chain.recipe if chain is not None and not chain.adopted else None
    cluster = chain.cluster if chain is not None else None

    def keep(key: str, template: str, view: Any) -> dict[str, Any]:
        blocks, fallback = render(ctx, template, recipe, view)
        return ctx.store.incidents.values(
            key, class_id=THREAD_NOTE, now=ctx.clock(), chain_id=chain_id, state="pending",
            diagnosis={"kind": "reply", "text": fallback, "blocks": blocks,
                       "cluster": cluster})

    return keep


def say_kept_message(ctx: BotContext, key: str) -> bool:
    """Try the reply `key` kept for its thread (`kept_message`) now, as `thread_note` tries
    its note; True once the thread has it."""
    kept = ctx.store.incidents.get(key)
    return kept is not None and _say_kept(ctx, kept)


def thread_note(ctx: BotContext, chain_id: int | None, key: str, text: str) -> bool:
    """Say `text` (trainbot's mrkdwn, already in the thread's language) once (by key) in the
    chain's thread: kept in the store (class `THREAD_NOTE`, `pending`) and tried now through
    `say_note` (the context's `notes` backoffs); True once the thread has it. One not posted
    (Slack refused it, a transient failure, no thread yet: its run's root not posted) stays
    `pending` and is tried again by the `prompts` job (`say_pending_notes`) once its backoff
    allows; one given up is shown by the run's status (`unsaid_in_thread`): `dropped` when
    Slack rejected the message itself, THREADLESS when its run had no thread (its root
    refused, no channel, or still not posted after THREADLESS_TRIES tries), said once the
    thread opens after all. Without a thread writer (no Slack): False, nothing kept."""
    if ctx.sink is None or chain_id is None:
        return False
    return _say_kept(ctx, _keep(ctx, chain_id, key, {"kind": "note", "text": text}))


def keep_reply(ctx: BotContext, chain_id: int, key: str, blocks: Blocks, text: str, *,
               attachment: Attachment | None = None,
               unkept: tuple[Blocks, str] | None = None) -> None:
    """Keep the reply `blocks` (`text`: its fallback) for the chain's thread, not tried now:
    kept in the store as `thread_note`'s notes are (class `THREAD_NOTE`, `pending`), posted
    once (by key) under the run's root by the `prompts` job (`say_pending_notes`) once the
    thread is there (a run whose root another try is posting: `Rooted.claimed`), and its
    `attachment` shared after it (kept with it, so a bot restarted since shares it too; one
    longer than MAX_KEPT_FILE_BYTES in UTF-8 is not kept: logged, and the reply kept is
    `unkept`, its blocks and fallback, when given: one that does not announce the file)."""
    said: dict[str, Any] = {"kind": "reply", "text": text, "blocks": blocks}
    size = len(attachment.text.encode()) if attachment is not None else 0
    if attachment is not None and size <= MAX_KEPT_FILE_BYTES:
        said["file"] = asdict(attachment)
    elif attachment is not None:
        if unkept is not None:
            said.update(blocks=unkept[0], text=unkept[1])
        log.warning("%s: %s (%d bytes) is too long to keep for the reply's later post: the "
                    "reply goes without it", key, attachment.filename, size)
    _keep(ctx, chain_id, key, said)


def post_or_keep(ctx: BotContext, chain_id: int, key: str, blocks: Blocks, text: str, *,
                 attachment: Attachment | None = None,
                 unkept: tuple[Blocks, str] | None = None) -> bool:
    """Post the reply `blocks` now (`post_safely`), then share its `attachment`
    (`share_attachment`); one not taken (a 5xx, Slack refusing it) is kept for the thread
    with its attachment (`keep_reply`), tried again by the `prompts` job with the kept notes'
    backoff (bot.core.backoff.after_try), so a reply that nothing else tries again (the
    stacks of a stall whose prompt is posted) is not lost; `unkept`: the reply kept instead
    when the attachment is too long to keep (`keep_reply`). True when posted now."""
    if post_safely(ctx, "reply", chain_id, key, blocks, text) is not None:
        if attachment is not None:
            share_attachment(ctx, chain_id, attachment)
        return True
    keep_reply(ctx, chain_id, key, blocks, text, attachment=attachment, unkept=unkept)
    return False


def share_attachment(ctx: BotContext, chain_id: int, attachment: Attachment) -> None:
    """Share `attachment` once (by its key) in the chain's thread, through the thread
    writer's upload (its attempts and deadline: a post's); a failed upload is logged and
    only loses the file, its reply being posted: the thread is told so once
    (`attachment.unshared`, a `thread_note` keyed `<key>:unshared`) when the reply announced
    the file. Once that note is kept (before it is posted) the file is given up: a bot stopped
    before its reply was recorded posted (`_say_kept`) does not share it after all, so the
    thread never says it could not be shared and then shares it."""
    upload = getattr(ctx.sink, "upload_file", None)  # test recorders cannot upload
    if upload is None or _unshared_said(ctx, attachment):
        return
    try:
        upload(chain_id, attachment.key, attachment.text.encode(), attachment.filename,
               attachment.title)
    except LeaseLost:
        raise
    except Exception as exc:  # noqa: BLE001 - the reply is posted; the file is extra
        log.warning("%s: uploading %s failed: %s", attachment.key, attachment.filename, exc)
        if attachment.unshared:
            thread_note(ctx, chain_id, _unshared_key(attachment.key), attachment.unshared)


def attachment_fate(ctx: BotContext, key: str, attachment_key: str) -> AttachmentFate:
    """What became of the attachment `attachment_key`, given with the reply `key` to
    `post_or_keep`: "unshared" (its upload failed: the thread was told so), "dropped" (the
    reply kept for later without it: too long to keep), "kept" (kept with its reply, to be
    shared after it: whether Slack takes it is not known yet; if not, the thread is told),
    else "follows" (shared)."""
    if ctx.store.incidents.get(_unshared_key(attachment_key)) is not None:
        return "unshared"
    kept = ctx.store.incidents.get(key)
    if kept is not None and kept.class_id == THREAD_NOTE and kept.state == "pending":
        return "kept" if "file" in kept.diagnosis else "dropped"
    return "follows"


def _unshared_key(attachment_key: str) -> str:
    """The key of the note saying the attachment `attachment_key` could not be shared."""
    return f"{attachment_key}:unshared"


def _unshared_said(ctx: BotContext, attachment: Attachment) -> bool:
    """Whether the thread was told `attachment` could not be shared (its note kept or posted):
    the file is given up."""
    return ctx.store.incidents.get(_unshared_key(attachment.key)) is not None


def kept_for_thread(ctx: BotContext, key: str) -> bool:
    """Whether the reply `key` is kept for its thread (`keep_reply`, `thread_note`) and not
    posted yet: the `prompts` job posts it (the store's: a bot restarted since posts it too)."""
    kept = ctx.store.incidents.get(key)
    return kept is not None and kept.class_id == THREAD_NOTE and kept.state == "pending"


def outdate_kept(ctx: BotContext, key: str) -> bool:
    """Give up for good the reply `key` kept for its thread and not posted yet (`pending`,
    or THREADLESS): what it says no longer holds (a failed release's "tries again", its
    hold over since), so `say_pending_notes` never posts it after what followed. OUTDATED,
    not `dropped`: nothing is left unsaid (`unsaid_in_thread`). True when it was kept."""
    return any(ctx.store.incidents.set_state_from(key, state, OUTDATED)
               for state in ("pending", THREADLESS))


def given_up_for_thread(ctx: BotContext, key: str) -> bool:
    """Whether the reply `key` kept for its thread (`keep_reply`, `thread_note`) was given up
    (`_say_kept`: `dropped`, never tried again, or THREADLESS, said only once its thread
    opens; `say_in_thread` logged it with what it said)."""
    kept = ctx.store.incidents.get(key)
    return kept is not None and kept.class_id == THREAD_NOTE and \
        kept.state in ("dropped", THREADLESS)


class Unsaid(NamedTuple):
    """A reply its thread was to be told and was not (`unsaid_in_thread`)."""

    text: str
    waits_for_thread: bool  # THREADLESS: said once its thread opens; else dropped for good


def unsaid_in_thread(store: Store, chain_id: int) -> list[Unsaid]:
    """What the chain's thread was to be told and never was, oldest first: the text of each
    reply kept for it (`keep_reply`'s fallback, `thread_note`'s mrkdwn, in the thread's
    language) and given up by `_say_kept` (`dropped`: Slack rejected the message itself;
    THREADLESS, waiting for its thread: its run's root never came: refused, no channel, or
    not posted in THREADLESS_TRIES tries, about 35 min, a Slack failing it at each), until
    said (a THREADLESS one once its thread opens after all). `/train status` and `trainbot
    status` show them with the run's job (bot.services.status), so what a user was to be told
    (a submit's "submitted" note) is not lost with only a log line."""
    return [Unsaid(str(note.diagnosis["text"]), note.state == THREADLESS)
            for note in store.incidents.for_chain(chain_id)
            if note.class_id == THREAD_NOTE and note.state in ("dropped", THREADLESS)
            and note.diagnosis.get("text")]


def _keep(ctx: BotContext, chain_id: int, key: str, said: dict[str, Any]) -> Incident:
    """The kept reply `key` (`said`: its text, a rendered reply's blocks) of the chain's
    thread, recorded `pending` unless it was before."""
    chain = ctx.store.chains.get(chain_id)
    kept, _ = ctx.store.incidents.record(
        key, class_id=THREAD_NOTE, now=ctx.clock(), chain_id=chain_id, state="pending",
        diagnosis={**said, "cluster": chain.cluster if chain is not None else None})
    return kept


def say_pending_notes(ctx: BotContext) -> None:
    """Try again each note `thread_note` kept `pending` whose backoff allows it (the
    `prompts` job's runs are its chances: bot.app.schedule_prompts); a run's notes waiting
    for its thread try its root once in the run (RootTries). A note given up for want of its
    thread (THREADLESS) is tried again, as a pending one, once its thread is open (another
    reply opened it), never to open it: its root is not tried for it. Oldest first."""
    pending = ctx.store.incidents.of_class(THREAD_NOTE, ("pending", THREADLESS))
    pending = [note for note in pending
               if note.state == "pending" or has_thread(ctx, note.chain_id)]
    keys = {note.key for note in pending}
    ctx.notes.forget(lambda key: key not in keys)  # posted or given up elsewhere
    roots = RootTries()
    for note in pending:
        _say_kept(ctx, note, roots)


def _say_kept(ctx: BotContext, note: Incident, roots: RootTries | None = None) -> bool:
    """Try the kept note `note` (`thread_note`'s, or a rendered reply `keep_reply` kept),
    share the reply's kept attachment once it is posted, then record what became of it: the
    row stays `pending` until the file is shared, so a bot stopped during the upload shares it
    at its next try (the reply and the file each posted once, by key): True once posted. One
    given up is `dropped` when its run's thread was open (Slack rejected the message
    itself), else THREADLESS. The try is claimed by its key (bot.services.post_claims, for
    its root's, its own and its file's worst case): of two tries at once (a handler's
    `thread_note` in Slack's 429 waits and the `prompts` job's, here or on another replica),
    the one that finds it claimed tries nothing (False), as Slack has no copy to find yet."""
    if note.state not in ("pending", THREADLESS) or note.chain_id is None:
        return note.state == "posted"
    backoff = ctx.notes.by_key.get(note.key)
    if ctx.sink is None or (backoff is not None and backoff.skip > 0):
        return _try_kept(ctx, note, roots or RootTries())  # not tried this chance: no claim
    what = f"chain {note.chain_id}: the kept reply {note.key}'s try"
    posts = 1 + (not has_thread(ctx, note.chain_id)) + ("file" in note.diagnosis)
    holder = claim_post(ctx, note.key, what, posts=posts)  # its root, itself, its file
    if holder is None:
        log.debug("%s is another's, posting it now: not tried here", what)
        return False
    try:
        kept = ctx.store.incidents.get(note.key)  # as the last try left it
        if kept is None or kept.state not in ("pending", THREADLESS):
            return kept is not None and kept.state == "posted"
        return _try_kept(ctx, kept, roots or RootTries())
    finally:
        release_post(ctx, note.key, holder, what)


def _try_kept(ctx: BotContext, note: Incident, roots: RootTries) -> bool:
    """`_say_kept`'s try, its claim held."""
    assert note.chain_id is not None
    text, blocks = str(note.diagnosis.get("text") or ""), note.diagnosis.get("blocks")
    said = say_note(ctx, note.chain_id, note.key, text, ctx.notes, roots=roots) \
        if blocks is None else \
        say_in_thread(ctx, note.chain_id, note.key, text, ctx.notes, lambda: (blocks, text),
                      what="reply", roots=roots)
    file = note.diagnosis.get("file")
    if said == "posted" and isinstance(file, dict):
        share_attachment(ctx, note.chain_id, Attachment(**file))
    if said == "posted":
        ctx.store.incidents.set_state_from(note.key, note.state, "posted")
    elif said == "given_up":
        given_up = "dropped" if roots.opened(note.chain_id) else THREADLESS
        ctx.store.incidents.set_state_from(note.key, note.state, given_up)
    return said == "posted"


def say_note(ctx: BotContext, chain_id: int, key: str, text: str, tries: Backoffs, *,
             what: str = "note", roots: RootTries | None = None) -> Said:
    """Post the note `text` (trainbot's mrkdwn in the thread's language, through the note
    template) once (by key) in the chain's thread, through `say_in_thread`."""
    return say_in_thread(ctx, chain_id, key, text, tries,
                         lambda: note_message(ctx, chain_id, text), what=what, roots=roots)


def note_message(ctx: BotContext, chain_id: int, text: str) -> tuple[Blocks, str]:
    """The note template with `text` (trainbot's mrkdwn), in the chain's recipe's language."""
    return render(ctx, "note", _chain_recipe(ctx, chain_id), {"text": text})


def say_in_thread(ctx: BotContext, chain_id: int, key: str, words: str, tries: Backoffs,
                  message: Callable[[], tuple[Blocks, str]], *, what: str,
                  roots: RootTries | None = None) -> Said:
    """Post the reply `message()` builds (its blocks and fallback text; `words`: what it
    says, for the log) once (by key) in the chain's thread, unless its backoff in `tries`
    (the caller's, one per key across its chances) says to skip this chance; `message` is
    called only when the post is tried (the thread there), so what it creates (an approval
    prompt's token) is not made for a post that waits for its thread. Decide, for every
    kind of reply alike (bot.core.backoff.after_try), what is left to do:
    - "deferred": not tried this time (Slack is not called);
    - "posted": the thread has it;
    - "later": not posted, tried again once its backoff allows: a transient failure (a 5xx,
      a rate limit outlasting the client's retries), or its run's root claimed by another
      try (`Rooted.claimed`: never given up for it), at the next chance; Slack refusing the
      post or its lookup (PostRefused, LookupRefused: the bot out of the channel, the
      channel gone or archived, a scope missing), or no thread yet (its run's root message
      not posted, or its try failed for now: tried first, `open_thread`, once per tick for
      all of its replies: `roots`, the caller's tick's, else this reply's own), after 1, 2,
      4, 8, at most 16 chances skipped;
    - "given_up": never tried again: Slack rejected the message itself (MessageRefused:
      msg_too_long, invalid_blocks …, which no later try changes); its run's root message,
      refused by Slack, refused again when tried for it, or with no channel to go to
      (`open_thread`: that thread will not come by itself, and waiting for it would hold the
      run back: its job's result, its chain's status, its automatic resubmit); or still no
      thread after THREADLESS_TRIES tries (its root not there, or failed at each of them).
    Logged here, for every kind (`what` names it: "note", "notice", "incident" …): a
    failure series once, at its first try, naming the run, the channel, the thread and
    Slack's error (its later tries at debug); and once when it ends: posted after failures,
    or given up (with its reason and its `words`, for whoever reads the log)."""
    if not tries.due(key):
        log.debug("%s: not tried this time (Slack did not take it lately)", key)
        return "deferred"
    chain = ctx.store.chains.get(chain_id)
    run = f"chain {chain_id}" + (f" ({chain.job_name})" if chain is not None else "")
    rooted = (roots or RootTries()).open(ctx, chain_id)
    threaded = rooted.open
    root = ctx.store.slack_posts.get(root_key(chain_id)) if threaded else None
    where = f"in {root.channel} (thread {root.ts})" if root is not None else "(no thread)"
    error = _post_reply(ctx, chain_id, key, *message()) if threaded else None
    fate: Fate = post_fate(error) if threaded else \
        "root_refused" if rooted.refused is not None else \
        "channelless" if rooted.no_channel is not None else \
        "failed" if rooted.claimed else "threadless"
    after = after_try(tries, key, fate)
    if after.outcome == "posted":
        if after.recovered:
            log.warning("%s: the %s %s is posted %s, after %d failed tr%s", run, what, key,
                        where, after.failed, "y" if after.failed == 1 else "ies")
        return "posted"
    if after.outcome == "given_up":
        if fate == "rejected":
            log.warning("%s: Slack refused the %s %s itself %s (%s): given up, not tried "
                        "again; it said: %s", run, what, key, where, error, words)
        elif fate == "root_refused":
            log.warning("%s: the %s %s is given up: its run has no thread, Slack refused its "
                        "root message (%s); the run's next reply tries the root again; it "
                        "said: %s", run, what, key, rooted.refused, words)
        elif rooted.no_channel is not None:
            log.warning("%s: the %s %s is given up: its run has no thread and no channel to "
                        "post its root message in: set %s; it said: %s", run, what, key,
                        rooted.no_channel, words)
        else:
            log.warning("%s: the %s %s is given up after %d tries: its run has no thread (its "
                        "root message %s); it said: %s", run, what, key, after.failed,
                        _unposted(rooted, "was never posted"), words)
        return "given_up"
    level = logging.WARNING if after.first_failure else logging.DEBUG
    if fate == "threadless":
        log.log(level, "%s: the %s %s waits for its thread (its run's root message %s): "
                "tried again after %d chance(s), given up after %d tries", run, what, key,
                _unposted(rooted, "is not posted"), after.skip, THREADLESS_TRIES)
    elif fate == "failed" and not threaded:
        log.log(level, "%s: the %s %s waits for its thread (its run's root message is being "
                "posted by another try): tried again at the next chance", run, what, key)
    elif fate == "failed":
        log.log(level, "%s: could not post the %s %s %s: %s; tried again at the next chance",
                run, what, key, where, error)
    elif isinstance(error, LookupRefused):
        log.log(level, "%s: the %s %s may be %s and Slack refused to look it up (%s): not "
                "tried the next %d time(s) it is due", run, what, key, where, error, after.skip)
    else:
        log.log(level, "%s: Slack refused the %s %s %s (%s): not tried the next %d time(s) it "
                "is due", run, what, key, where, error, after.skip)
    return "later"


def _unposted(rooted: Rooted, not_there: str) -> str:
    """Why a run's root message is not there, as `say_in_thread`'s log says it: its try
    failed (a 5xx, a rate limit outlasting the client's retries), else `not_there`."""
    return "could not be posted: Slack failed its try" if rooted.failed else not_there


@dataclass(frozen=True)
class Rooted:
    """What `open_thread` left of a run's thread: `open` once its root message is posted;
    else, when that thread will not come by itself, why: `refused` (Slack's refusal of the
    root) or `no_channel` (the configuration key that gives the run a channel); neither: a
    transient failure (logged: `failed`), or no root to post yet (no attempt in the store);
    `claimed`: another try (this replica's or another's) is posting it now, not tried here.
    A claimed or failed root is one whose thread may come at the next chance. A claimed
    one's replies wait for it at every chance, never given up for it (the claim
    lapses by its hold); a failed one counts toward bot.core.backoff.THREADLESS_TRIES as a
    root not there does (its replies tried again after 1, 2, 4 … chances, given up after
    that many tries: a Slack that keeps failing it is not tried at every chance for ever)."""

    open: bool
    refused: PostRefused | None = None
    no_channel: str | None = None
    claimed: bool = False
    failed: bool = False


class RootTries:
    """The roots of thread-less runs tried during one tick (a watcher's, a `prompts` job's
    run), by chain id, with what each try left (`open_thread`): a run's several replies
    waiting for its thread try its root once in the tick, and the later ones read what that
    try left. A thread opened stays open (`has_thread`); a failed try is the tick's answer
    for all of its run's replies."""

    def __init__(self) -> None:
        self._tried: dict[int, Rooted] = {}

    def open(self, ctx: BotContext, chain_id: int) -> Rooted:
        """The run's thread, its root tried (`open_thread`) unless it was this tick."""
        tried = self._tried.get(chain_id)
        if tried is None or (not tried.open and has_thread(ctx, chain_id)):
            tried = self._tried[chain_id] = open_thread(ctx, chain_id)
        return tried

    def opened(self, chain_id: int) -> bool:
        """Whether the run's thread was open at its last try this tick."""
        tried = self._tried.get(chain_id)
        return tried is not None and tried.open


def _thread_channel(ctx: BotContext, chain_id: int) -> tuple[str | None, str]:
    """The channel the chain's thread goes to as configured now, and the key that sets it: a
    configured recipe's (`recipes.<name>.channel`, else `slack.default_channel`, else the
    one it was started in); a run without one (adopted, its recipe no longer configured):
    the one it was started in, else `slack.default_channel`'s."""
    chain = ctx.store.chains.get(chain_id)
    recipe = _chain_recipe(ctx, chain_id)
    started = chain.channel if chain is not None else None
    if recipe is not None and recipe in ctx.config.recipes:
        return ctx.config.channel_id_for(recipe) or started, f"recipes.{recipe}.channel"
    default = ctx.config.slack.default_channel
    return started or (ctx.config.slack.channels.get(default) if default else None), \
        "slack.default_channel"


def _post_reply(ctx: BotContext, chain_id: int, key: str, blocks: Blocks,
                fallback: str) -> PostError | None:
    """Post `blocks` once (by key) in the thread of `chain_id`, which has one (`has_thread`):
    None once it is there, else the chat's refusal (`say_in_thread` reads it)."""
    assert ctx.sink is not None
    try:
        ctx.sink.post_reply(chain_id, key, blocks, fallback)
    except PostError as exc:
        return exc
    return None


def post_fate(error: PostError | None) -> Fate:
    """What became of a post (`_post_reply`'s answer) as bot.core.backoff reads it: taken
    (None); rejected (MessageRefused: the message itself); refused (PostRefused, or its
    lookup refused: the bot out of the channel, the channel gone or archived, a scope
    missing); else failed (transient: a 5xx, a rate limit outlasting the client's
    retries)."""
    if error is None:
        return "taken"
    if isinstance(error, MessageRefused):
        return "rejected"
    return "refused" if isinstance(error, (LookupRefused, PostRefused)) else "failed"


def post_safely(ctx: BotContext, kind: str, chain_id: int, key: str,
                blocks: Blocks, text: str) -> str | None:
    """Post a reply (`kind`: "reply"; a run's root is `open_thread`'s); a Slack failure is
    logged (`_in_series`), never undoes the action that was already taken on the cluster
    (the post is retried by its key next time)."""
    if ctx.sink is None:
        return None
    what = f"post {kind} {key}"
    try:
        ts = ctx.sink.post_reply(chain_id, key, blocks, text)
    except PostError as exc:
        _in_series(ctx, chain_id, key, what, exc)
        return None
    _in_series(ctx, chain_id, key, what, None)
    return ts


def _in_series(ctx: BotContext, chain_id: int, key: str, what: str,
               error: PostError | None) -> None:
    """Log a try of `what` (`post_safely`'s post, `refresh_root`'s rewrite, under `key`) as
    one failure series per key, decided as every reply's is (bot.core.backoff.after_try,
    over the context's `posts`): its first failure a warning, the failures after it at
    debug, and one warning when it ends: gone through after failures, or given up (Slack
    rejected the message itself). A caller that tries again every tick (a root's rewrite
    while Slack is down) thus warns once, not at every try. A key never tried again (a post
    whose action is not retried) is kept until its run ends (`forget_posts`)."""
    if error is None and key not in ctx.posts.get(chain_id, Backoffs()).by_key:
        return  # taken, with no failure before it: nothing to say, nothing kept
    tries = ctx.posts.setdefault(chain_id, Backoffs())
    after = after_try(tries, key, post_fate(error))
    if not tries.by_key:
        del ctx.posts[chain_id]  # none of the run's left to try
    if after.recovered:
        log.warning("chain %s: %s went through after %d failed tr%s", chain_id, what,
                    after.failed, "y" if after.failed == 1 else "ies")
    elif after.outcome == "given_up":
        log.warning("chain %s: could not %s: %s", chain_id, what, error)
    elif after.outcome == "later":
        log.log(logging.WARNING if after.first_failure else logging.DEBUG,
                "chain %s: could not %s: %s", chain_id, what, error)


def forget_posts(ctx: BotContext, chain_id: int) -> None:
    """Forget the failure series of `chain_id`'s posts and root rewrites (`_in_series`): its
    run has ended, so its root is not rewritten again and a post of it not taken (one whose
    action is not tried again) would otherwise be kept for the process's life."""
    ctx.posts.pop(chain_id, None)


def _root_message(ctx: BotContext, chain_id: int) -> tuple[Blocks, str] | None:
    """The chain's root message rendered: an array's (a row per task) or a run's."""
    array = array_root_view(ctx, chain_id)
    if array is not None:
        return render(ctx, "array_root", array.recipe, array)  # an array recipe's language
    view = root_view(ctx, chain_id)
    if view is None:
        return None
    return render(ctx, "root", None if view.adopted else view.recipe, view)


def open_thread(ctx: BotContext, chain_id: int, channel: str | None = None) -> Rooted:
    """The one way a run's root message (the root template, or an array's) is posted: once,
    by its key, unless the thread is there. Where: a root whose post was begun and not
    confirmed (a 5xx, a rate limit outlasting the client's retries, a bot stopped in it:
    its intent kept, with its channel) in that channel, where the poster first looks for
    the earlier send; a new root, or one Slack refused (kept `refused`: the bot out of the
    channel, the channel gone), in `channel` (the submit's: its recipe's, else the one it
    was typed in), else in the run's channel now (`_thread_channel`; a refused one's, else),
    so a thread fixed meanwhile (the bot invited back) opens now. What it left (Rooted):
    open, or why not (Slack's refusal; no channel to go to: that thread will not come by
    itself); a failure is logged as one series (`_in_series`).

    Its try is claimed in the store first (`_claim_root`), so one replica, one thread at a
    time tries it and the run gets one root: a submit's announcement and a watcher's reply
    (or two replicas) at the same moment would each post it. A root claimed by another try
    is not tried, nor waited for (`claimed`): a reply tries it at its next chance, a
    submit's note is kept for the thread (`keep_reply`)."""
    if ctx.sink is None:
        return Rooted(False)
    holder = _claim_root(ctx, chain_id)
    if holder is None:
        threaded = has_thread(ctx, chain_id)
        return Rooted(threaded, claimed=not threaded)
    try:
        return _post_root(ctx, chain_id, channel)
    finally:
        release_post(ctx, root_key(chain_id), holder, f"chain {chain_id}: its root's try")


def _root_claim_key(chain_id: int) -> str:
    return post_claim_key(root_key(chain_id))


def _claim_root(ctx: BotContext, chain_id: int) -> str | None:
    """Claim the try of the run's root message (bot.services.post_claims.claim_post: one
    try at a time, for one post's worst case; a provably dead holder's claim taken over at
    once, so the restarted bot's startup announcement posts the root instead of waiting for
    the dead try's claim to lapse): the claim's holder, or None when the thread is there or
    another try holds the claim."""
    assert ctx.sink is not None
    if has_thread(ctx, chain_id):
        return None
    return claim_post(ctx, root_key(chain_id), f"chain {chain_id}: its root's")


def _post_root(ctx: BotContext, chain_id: int, channel: str | None) -> Rooted:
    """`open_thread`'s try, its claim held."""
    assert ctx.sink is not None
    if has_thread(ctx, chain_id):
        return Rooted(True)
    root = ctx.store.slack_posts.get(root_key(chain_id))
    if root is not None and not root.refused:
        channel = root.channel
    elif channel is None:
        channel, setting = _thread_channel(ctx, chain_id)
        channel = channel or (root.channel if root is not None else None)
        if channel is None:
            return Rooted(False, no_channel=setting)
    message = _root_message(ctx, chain_id)
    if message is None:
        return Rooted(False)
    key, what = root_key(chain_id), f"post the root message in {channel}"
    try:
        ctx.sink.post_root(chain_id, channel, *message)
    except PostError as exc:
        _in_series(ctx, chain_id, key, what, exc)
        if isinstance(exc, PostRefused):
            return Rooted(False, refused=exc)
        return Rooted(False, failed=True)
    _in_series(ctx, chain_id, key, what, None)
    return Rooted(True)


def refresh_root(ctx: BotContext, chain_id: int) -> bool:
    """Rewrite the root in place (chat.update) from the store: new job, state, attempts.

    The sink skips an unchanged root. Sinks that can only post (test recorders) are left
    alone. False when there is no thread or Slack refused the update (retried next time;
    logged as one failure series: `_in_series`).
    """
    update = getattr(ctx.sink, "update_root", None)
    if update is None or not has_thread(ctx, chain_id):
        return False
    message = _root_message(ctx, chain_id)
    if message is None:
        return False
    blocks, text = message
    key, what = f"update:{root_key(chain_id)}", "update the root message"
    try:
        update(chain_id, blocks, text)
    except PostError as exc:
        _in_series(ctx, chain_id, key, what, exc)
        return False
    _in_series(ctx, chain_id, key, what, None)
    return True
