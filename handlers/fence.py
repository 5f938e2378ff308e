"""The fence around the Slack listeners' work at a stop.

Bolt runs the lazy listeners (the `/train` work, button clicks) on daemon threads, which the
interpreter kills wherever they are when `trainbot run` exits. At a stop (bot.app.run) the
fence first refuses new work: a listener admitted after that does nothing and tells the person
that trainbot is restarting. Then the stop waits, for a bounded time, for the work already
admitted to end, before it closes the SSH connections (after which no session is opened again:
bot.cluster.sessions.ClusterSessions.close) and the store.

A listener still under way then fails at its next read or write of the store (StoreClosed).
It answers that trainbot is stopping (`stopped_by_close`), not with the internal-error
reply, and does nothing more; the answer says nothing was done only when its work had set no
side effect going (`SideEffects`: an SSH command not said to only read, a Slurm action, a
post sent to a run's thread, a Home tab publish) and committed no store step a retry would
meet (a prompt claimed or dismissed, a submit kept in flight: bot.services.ports.StoreStep),
else which one, and what it means for trying again. A /train command that ran only commands
said to read (which include trainbot's writes to its own cache dir: a preflight's py-spy
placement) is told that nothing that changes the person's jobs was done.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from bot.services.fencing import SLACK_WRITES, fenced_context
from bot.services.ports import BotContext, StoreStep, on_sending
from bot.store import StoreClosed

log = logging.getLogger(__name__)


class ListenerFence:
    """Counts the listener work under way; `stop()` refuses new work and waits for it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._stopping = False
        self._in_flight = 0

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @contextmanager
    def admitted(self) -> Iterator[bool]:
        """True (and counted as under way until the block ends) unless the bot is stopping:
        then False, and the listener does nothing but say that trainbot is restarting."""
        with self._changed:
            admitted = not self._stopping
            if admitted:
                self._in_flight += 1
        try:
            yield admitted
        finally:
            if admitted:
                with self._changed:
                    self._in_flight -= 1
                    self._changed.notify_all()

    def refuse(self) -> None:
        """From now on, no listener work is admitted."""
        with self._changed:
            self._stopping = True

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the work admitted before `refuse()` to end. True if it
        all ended; else logged (the process ends without it: its SSH sessions are closed and
        none is opened again)."""
        with self._changed:
            ended = self._changed.wait_for(lambda: self._in_flight == 0,
                                           timeout=max(0.0, timeout_s))
            left = self._in_flight
        if not ended:
            log.warning("%d Slack handler(s) still under way; stopping without them (no new "
                        "SSH session is opened for them)", left)
        return ended


class SideEffects:
    """The side effects one listener's work set going, in order (`started`): its context
    (`context`) is the bot's with the cluster sessions, the run threads' writer and the Home
    tab publisher wrapped as a scheduled job's are (bot.services.fencing), each side effect
    noted as it starts, nothing refused; and the store steps its services committed that a
    retry would meet (`steps`: bot.services.ports.StoreStep, noted through the context's
    `steps`)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.steps: list[StoreStep] = []
        # the programs of the commands run that their caller says only read (`read_only`),
        # which includes trainbot's writes to its own cache dir (a py-spy placement)
        self.reads: list[str] = []
        # each Slack write's own note: how many writes of a kind went out and were not refused
        # (two of a kind may be in flight at once; one refused takes back only its own)
        self._writes: dict[str, int] = {}
        self._lock = threading.Lock()

    def context(self, ctx: BotContext) -> BotContext:
        return replace(fenced_context(ctx, self), steps=self)

    def noted(self, step: StoreStep) -> None:
        with self._lock:
            self.steps.append(step)

    def undone(self, step: StoreStep) -> None:
        """`step`, noted before, is undone (a row in flight removed again, a prompt's claim
        released): no longer what the command left."""
        with self._lock:
            if step in self.steps:
                self.steps.remove(step)

    def started_now(self) -> list[str]:
        """A copy of `started` for a stop's reply: the work's other threads may still note a
        side effect or take a refused write's back while the reply is made."""
        with self._lock:
            return list(self.started)

    def left(self, now: float) -> list[dict[str, Any]]:
        """The store steps for the stop's reply, each with how long until it is undone
        (`wait_s`, None: unknown): a claimed prompt is given back once the submit it kept in
        flight is settled too (bot.services.approvals.claim_given_back_at), or the resubmit
        its cancel and resume's scancel left to come (`resubmit_due`, not said once that
        resubmit's own row in flight is)."""
        with self._lock:
            steps = list(self.steps)
        settled = max((s.until for s in steps if s.kind in ("in_flight", "resubmit_due")
                       and s.until is not None), default=None)
        kept = any(s.kind == "in_flight" for s in steps)
        shown = []
        for step in steps:
            if step.kind == "resubmit_due" and kept:
                continue
            until = step.until
            if step.kind == "claimed" and until is not None and settled is not None:
                until = max(until, settled)
            shown.append({"kind": step.kind,
                          "wait_s": max(until - now, 0.0) if until is not None else None})
        return shown

    @contextmanager
    def acting(self, what: str, *, read: bool = False) -> Iterator[None]:
        """Notes `what` as started, but not a command its caller says only reads (`read`:
        a probe, a lost submit's lookup, a py-spy dump, and the placing of trainbot's py-spy,
        whose mkdir, SFTP write, chmod and mv write only in trainbot's own cache directory on
        the cluster: noted in `reads`, so that a stop's reply says nothing that changes the
        person's jobs was done, not that nothing was), and a Slack write only once its
        request goes out (bot.services.ports.sending: one the closed store refused before
        it sent nothing), and no longer once Slack refused it (bot.services.ports.sent_refused:
        the store's close may land as the writer records the refusal). Each write is
        counted on its own: a refusal takes back only its write's note, so a write of the
        same kind in flight beside it (another thread's) or gone through before stays
        started."""
        if read:
            with self._lock:
                if what not in self.reads:
                    self.reads.append(what)
            yield
        elif what in SLACK_WRITES:
            live = False  # this write's request went out, and Slack has not refused it

            def went_out() -> None:
                nonlocal live
                with self._lock:
                    if not live:
                        live = True
                        self._writes[what] = self._writes.get(what, 0) + 1
                        self._note(what)

            def refused() -> None:
                nonlocal live
                with self._lock:
                    if live:
                        live = False
                        self._writes[what] -= 1
                        if not self._writes[what] and what in self.started:
                            self.started.remove(what)

            with on_sending(went_out, refused):
                yield
        else:
            with self._lock:
                self._note(what)
            yield

    def _note(self, what: str) -> None:
        if what not in self.started:
            self.started.append(what)

    def heartbeat(self, what: str = "the next step") -> None:
        """A read: nothing to note."""


def stopped_by_close(exc: BaseException) -> bool:
    """Whether `exc` is the store's refusal after its close (StoreClosed: trainbot is
    stopping), or was raised while handling it."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StoreClosed):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
