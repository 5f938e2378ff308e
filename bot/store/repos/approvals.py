"""Approval tokens behind buttons, accepted at most once before they expire."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from sqlalchemy import and_, delete, exists, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.core.policy import run_latest
from bot.core.takeover import StepBounds
from bot.store import schema as t
from bot.store.repos.base import _Repo, _row
from bot.store.rows import (
    Approval,
    Attempt,
    ClaimResult,
    HoldPass,
)

KeepFor = Callable[[Approval], Mapping[str, Any] | None]
"""What a hold row's thread is told of a write that takes it out of the ledger, made from
the row it finds (`pass_hold`: the hold that keeps the job held; `settle_holds`: the row)."""


class ApprovalsRepo(_Repo):
    """Approval tokens behind buttons: each is accepted at most once, before it expires.

    Authorization (may the clicker approve, by the config running now?) is the caller's job,
    before `claim`; `allowed` records who could approve when the prompt was posted.
    Approvals of a `PASSIVE_ACTIONS` action (a probe) do nothing to their chain's job: one
    approved and under way never makes the chain's other prompts `busy`.
    """

    PASSIVE_ACTIONS = ("probe",)

    def create(
        self,
        *,
        action: str,
        payload: Mapping[str, Any],
        allowed: Iterable[str],
        expires_at: float,
        now: float,
        target_job: str | None = None,
        chain_id: int | None = None,
    ) -> str:
        """Store a pending approval; returns its opaque random token (the button value)."""
        token = secrets.token_urlsafe(16)
        with self._engine.begin() as conn:
            conn.execute(
                insert(t.approvals).values(
                    id=token,
                    action=action,
                    payload_json=json.dumps(payload, sort_keys=True),
                    target_job=None if target_job is None else str(target_job),
                    chain_id=chain_id,
                    allowed_json=json.dumps(sorted(set(allowed))),
                    expires_at=expires_at,
                    state="pending",
                    created_at=now,
                )
            )
        return token

    def get(self, token: str) -> Approval | None:
        return self._one(Approval, select(t.approvals).where(t.approvals.c.id == token))

    def claim(self, token: str, actor: str, now: float, *,
              latest_job: str | None = None, step: str | None = None,
              bounds: StepBounds | None = None) -> ClaimResult:
        """pending → approved, for exactly one caller, only before expiry; with `latest_job`
        only while the chain is where the prompt left it (see `_decide`); `step` (one of
        CLAIM_STEPS) marked in the same transaction when claimed, with the claimer's
        `bounds`, so no reader ever sees the approval approved without it (a hold's yes:
        "hold_approved"; any other acting choice: "claimed"): its time is the click's lease
        until its next step (bot.services.claim_takeover)."""
        return self._decide(token, actor, now, "approved", latest_job, step, bounds)

    def refuse(self, token: str, actor: str, now: float, *,
               latest_job: str | None = None) -> ClaimResult:
        """pending → refused (a 'no' or 'Dismiss'), for exactly one caller, before expiry;
        `latest_job` as for `claim`."""
        return self._decide(token, actor, now, "refused", latest_job)

    def _decide(self, token: str, actor: str, now: float, new_state: str,
                latest_job: str | None, step: str | None = None,
                bounds: StepBounds | None = None) -> ClaimResult:
        """One transaction: the chain check, then the state change.

        With `latest_job` (the job the prompt is about: a failed job's resubmit, the resumed
        job a hold waits for) and a chain, the approval is decided only while `latest_job` is
        still the chain's latest attempt — else it becomes `stale`, for good: the run moved
        on — and while no other approval of the chain is approved and acting on that job
        (approved, not yet done: its sbatch or scancel is under way; `busy`, the approval
        stays pending). The chain's row is locked first, as `AttemptsRepo.record` does, so a
        resubmit recording its attempt and this check take turns. `step`: marked with the
        state change, when it is made."""
        if step is not None and step not in self.CLAIM_STEPS:
            raise ValueError(f"step must be one of {', '.join(self.CLAIM_STEPS)}, not {step!r}")
        with self._engine.begin() as conn:
            found = _row(Approval, conn.execute(
                select(t.approvals).where(t.approvals.c.id == token)).first())
            if found is not None and latest_job is not None and found.chain_id is not None and (
                    found.state == "stale"
                    or (found.state == "pending" and found.expires_at > now)):
                moved = self._chain_moved(conn, found, str(latest_job), actor, now)
                if moved is not None:
                    return moved
            result = conn.execute(
                update(t.approvals)
                .where(
                    and_(
                        t.approvals.c.id == token,
                        t.approvals.c.state == "pending",
                        t.approvals.c.expires_at > now,
                    )
                )
                .values(state=new_state, decided_by=actor, decided_at=now)
            )
            claimed = result.rowcount == 1
            if claimed and step is not None:
                conn.execute(insert(t.prompt_steps).values(token=token, step=step, at=now,
                                                           **_bound_values(bounds)))
            if not claimed:  # mark a stale pending one expired, for the record
                conn.execute(
                    update(t.approvals)
                    .where(
                        and_(
                            t.approvals.c.id == token,
                            t.approvals.c.state == "pending",
                            t.approvals.c.expires_at <= now,
                        )
                    )
                    .values(state="expired")
                )
            row = conn.execute(select(t.approvals).where(t.approvals.c.id == token)).first()
        approval = _row(Approval, row)
        if claimed:
            return ClaimResult(True, "claimed", approval)
        if approval is None:
            return ClaimResult(False, "unknown", None)
        if approval.state == "expired":
            return ClaimResult(False, "expired", approval)
        return ClaimResult(False, "decided", approval)

    @staticmethod
    def _chain_moved(conn: Any, approval: Approval, latest_job: str, actor: str,
                     now: float) -> ClaimResult | None:
        """The stale or busy answer of `_decide`, None when the chain is where the prompt
        left it. Runs inside `_decide`'s transaction."""
        chain_id = approval.chain_id
        conn.execute(select(t.chains.c.id).where(t.chains.c.id == chain_id).with_for_update())
        latest = _row(Attempt, conn.execute(
            select(t.attempts).where(t.attempts.c.chain_id == chain_id)
            .order_by(t.attempts.c.attempt_no.desc()).limit(1)).first())
        if latest is not None and latest.array_task is not None:
            # an array's tasks run side by side: the prompt's task's latest attempt counts
            rows = conn.execute(select(t.attempts).where(t.attempts.c.chain_id == chain_id)
                                .order_by(t.attempts.c.attempt_no)).all()
            attempts = [_row(Attempt, r) for r in rows]
            target = next((a for a in attempts if a.job_id == latest_job), None)
            if target is not None and target.array_task is not None:
                latest = run_latest(attempts, target.array_task)
        if latest is not None and latest.job_id != latest_job:
            if approval.state == "pending":
                conn.execute(
                    update(t.approvals)
                    .where(and_(t.approvals.c.id == approval.id,
                                t.approvals.c.state == "pending"))
                    .values(state="stale", decided_by=actor, decided_at=now)
                )
            row = conn.execute(select(t.approvals).where(t.approvals.c.id == approval.id)).first()
            return ClaimResult(False, "stale", _row(Approval, row), latest=latest)
        if approval.state == "stale":  # cannot happen: a chain's latest attempt only moves on
            return ClaimResult(False, "decided", approval)
        other = _row(Approval, conn.execute(
            select(t.approvals).where(and_(
                t.approvals.c.chain_id == chain_id,
                t.approvals.c.target_job == latest_job,
                t.approvals.c.state == "approved",
                t.approvals.c.id != approval.id,
                t.approvals.c.action.not_in(ApprovalsRepo.PASSIVE_ACTIONS),
            )).limit(1)).first())
        if other is not None:
            return ClaimResult(False, "busy", approval, latest=latest, other=other)
        return None

    def mark_done(self, token: str, *, now: float,
                  keep: Mapping[str, Any] | None = None) -> bool:
        """approved → done once the approved action was carried out; False if not approved.
        `keep`: the incidents row of what the thread is told of it (IncidentsRepo.values: a
        reply kept for its thread, bot.services.threads.kept_message), inserted in the same
        transaction when done (unless a row with its key is there), so a bot that stops
        before posting it leaves it kept, for the `prompts` job to post, never lost with
        the row done; nothing is kept when not done."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "approved"))
                .values(state="done", decided_at=now)
            )
            if result.rowcount == 1:
                _keep_in(conn, keep)
        return result.rowcount == 1

    def release(self, token: str, *, by: str | None = None, at: float | None = None,
                forget: Iterable[str] = (), unless: Iterable[str] = ()) -> bool:
        """approved → pending again, undecided: a claimed choice that did nothing and leaves
        the prompt usable (its resubmit refused by another submit of the run in flight);
        its claim's step goes with it (the next claim marks its own), and the steps of
        `forget` (a cancel's step marked before a scancel that was not sent), in the same
        transaction. With `by` and `at` (the claimer and its claim's `now`), only while the
        claim is still that one, checked in the same transaction: a claim given back since
        (bot.services.claim_takeover) and made again by another click is kept. False if not
        approved (or, so, not by that claim), or (as `release_claim`'s) while one of `unless`
        is marked: the steps that say its choice went on without it (a settle took its cancel
        over)."""
        claimer = [t.approvals.c.decided_by == by] if by is not None else []
        if at is not None:
            claimer.append(t.approvals.c.decided_at == at)
        unless = list(unless)
        if unless:
            steps = t.prompt_steps
            claimer.append(~exists(select(steps.c.token).where(and_(
                steps.c.token == token, steps.c.step.in_(unless)))))
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "approved",
                            *claimer))
                .values(state="pending", decided_by=None, decided_at=None)
            )
            if result.rowcount == 1:
                _forget_claim(conn, token, forget)
        return result.rowcount == 1

    def release_claim(self, token: str, step: str, *, older_than: float,
                      unless: Iterable[str] = ()) -> bool:
        """approved → pending again for a claim whose click died before its next step: only
        while its claim's `step` (one of CLAIM_STEPS) was marked at or before `older_than`
        and none of `unless` (the steps that say its choice went on) is marked, in one
        transaction, its claim's step forgotten with it; True for exactly one caller (a
        claim made again since is younger, and kept)."""
        steps = t.prompt_steps
        claim_old = exists(select(steps.c.token).where(and_(
            steps.c.token == token, steps.c.step == step, steps.c.at <= older_than)))
        went_on = exists(select(steps.c.token).where(and_(
            steps.c.token == token, steps.c.step.in_(list(unless)))))
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "approved",
                            claim_old, ~went_on))
                .values(state="pending", decided_by=None, decided_at=None)
            )
            if result.rowcount == 1:
                _forget_claim(conn, token)
        return result.rowcount == 1

    def mark_out_of_date(self, token: str, actor: str, *, now: float) -> bool:
        """pending → stale, decided by `actor`: the prompt no longer applies, found outside a
        claim (a stall prompt whose job trained on: bot.services.approved_choices.stall_over);
        True for exactly one caller."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "pending"))
                .values(state="stale", decided_by=actor, decided_at=now)
            )
        return result.rowcount == 1

    def settle(self, token: str, *, settled: dict[str, Any], now: float) -> bool:
        """approved → done for a cancel whose unseen end trainbot settled, keeping in its payload
        (`settled`) what it says of it, in the same transaction, so the posts saying it can be
        made (again) after a crash; False if not approved."""
        with self._engine.begin() as conn:
            row = conn.execute(select(t.approvals.c.payload_json).where(and_(
                t.approvals.c.id == token, t.approvals.c.state == "approved"))).first()
            if row is None:
                return False
            payload = {**json.loads(row[0]), "settled": settled}
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "approved"))
                .values(state="done", decided_at=now,
                        payload_json=json.dumps(payload, sort_keys=True))
            )
        return result.rowcount == 1

    def supersede(self, token: str, actor: str, *, took_over: dict[str, Any],
                  now: float) -> bool:
        """pending → stale, decided by `actor`, for a prompt a newer job of its recipe carries
        on (bot.services.after_submit.supersede_prompts): what took over kept in its payload
        (`took_over`) and its step "superseded" marked, in one transaction, so the prompt's
        rewrite is made (again) after a crash or a refused update until "superseded_shown";
        True for exactly one caller."""
        with self._engine.begin() as conn:
            row = conn.execute(select(t.approvals.c.payload_json).where(and_(
                t.approvals.c.id == token, t.approvals.c.state == "pending"))).first()
            if row is None:
                return False
            payload = {**json.loads(row[0]), "took_over": took_over}
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "pending"))
                .values(state="stale", decided_by=actor, decided_at=now,
                        payload_json=json.dumps(payload, sort_keys=True)))
            if result.rowcount != 1:
                return False
            conn.execute(insert(t.prompt_steps).values(token=token, step="superseded", at=now,
                                                       **_bound_values(None)))
        return True

    def superseded_unshown(self) -> list[Approval]:
        """The superseded prompts (step "superseded") whose post was not yet rewritten to say
        so (no step "superseded_shown"), oldest first."""
        steps = t.prompt_steps
        query = (select(t.approvals)
                 .where(t.approvals.c.state == "stale",
                        t.approvals.c.id.in_(select(steps.c.token)
                                             .where(steps.c.step == "superseded")),
                        t.approvals.c.id.not_in(select(steps.c.token)
                                                .where(steps.c.step == "superseded_shown")))
                 .order_by(t.approvals.c.decided_at, t.approvals.c.id))
        return self._all(Approval, query)

    STEPS = ("reminded", "escalated", "cancelling", "cancelling_to_resume", "cancel_unknown",
             "cancel_only_unknown", "cancel_settled", "cancel_announced", "cancel_resuming",
             "releasing", "release_failed_1", "release_failed_2", "hold_approved", "holding",
             "hold_ended", "hold_kept", "held_by_person", "released_by_person", "superseded",
             "superseded_shown", "claimed", "hold_landing", "hold_handed",
             "after_hold_told", "hold_not_landed")
    CLAIM_STEPS = ("hold_approved", "claimed")
    """The steps a claim marks with the approval (`claim`): a hold's yes, any other acting
    choice; forgotten when the claim is released."""
    CANCEL_UNKNOWN_STEPS = ("cancel_unknown", "cancel_only_unknown")

    def mark_step(self, token: str, step: str, *, now: float,
                  bounds: StepBounds | None = None, state: str | None = None,
                  by: str | None = None, at: float | None = None,
                  keep: Mapping[str, Any] | None = None,
                  also: Collection[str] = ()) -> bool | None:
        """Record that a prompt was reminded (`step` "reminded") or escalated ("escalated"), that
        its approved cancel's scancel is about to be sent ("cancelling": a plain cancel;
        "cancelling_to_resume": a cancel and resume), that its scancel's end was not seen
        ("cancel_unknown": a cancel and resume; "cancel_only_unknown": a plain cancel), that
        trainbot took that unknown cancel up
        again ("cancel_settled") or said all of what became of it ("cancel_announced"), that
        its approved cancel and resume's scancel took effect and its resubmit began
        ("cancel_resuming"), that a held competitor's `scontrol release` is about to be sent
        ("releasing") or failed for the Nth time, said in its thread ("release_failed_N",
        bot.services.competitors.MAX_RELEASE_ATTEMPTS - 1 of them), that its yes was claimed by
        a trainbot that sends its `scontrol hold` only after marking "holding"
        ("hold_approved": marked by `claim`, with the yes), that its `scontrol hold`
        may be sent from now ("holding": by the hold, or taken by its release first so none
        is) and that it was over ("hold_ended"), that the hold's own yes sends it from now
        ("hold_landing": marked only by the yes that marked "holding", with it, before its
        `scontrol hold`, which may land in Slurm before "hold_ended" is marked), that it was
        let go to another run's hold ("hold_kept", by `pass_hold`), that another run's hold
        was handed to it while its own was landing ("hold_handed", by `pass_hold`), that its
        thread was told its release went through after a person's `/train hold`
        ("after_hold_told", with the kept reply), that its hold was found over with the job
        no longer waiting, not seen to land ("hold_not_landed", with "hold_ended"), that a
        person's `/train hold` or `/train release` took
        it out of trainbot's holds ("held_by_person" | "released_by_person", by
        `settle_holds`), that a newer job superseded it
        ("superseded", marked by `supersede`) and that its post says so ("superseded_shown"):
        True
        for exactly one caller, so no replica follows a prompt up, or settles its cancel,
        twice. `bounds`: what the marker counts the step's remote calls at, kept with it for
        its takeover (`bounds_of`). With `state` (the approval's state the marker read, e.g.
        "approved": a settle's, a failed release's), only while the approval is still in it
        and, with `by` and `at` (the approval's `decided_by` and `decided_at` as the marker
        read them: its claim), still that claim, as `release`'s by/at check its claimer;
        checked in the same transaction (its row locked: FOR UPDATE on PostgreSQL; SQLite's
        BEGIN IMMEDIATE already serialises writers): a settle that read the prompt just
        before its click released it (pending again), or released it and another click
        claimed it again, or a failed release that read a hold a person's `/train
        hold|release` settled just after (`settle_holds`), or the release claim of a hold the
        holds tick listed before that settle, marks nothing: None then (not
        there, not in `state`, or not that claim), told apart from a step marked before
        (False). `by` and `at` go with `state` only. `keep`: what the thread is told of the
        step (as `mark_done`'s: a failed release's "tries again in N minutes"), inserted in
        the same transaction when the step is marked, nothing kept when not. `also`: steps
        marked with it in the same transaction (none of them when it is not marked: a yes's
        "holding" and "hold_landing", so no run letting go of the job sees the one without
        the other)."""
        if step not in self.STEPS or not set(also) <= set(self.STEPS):
            raise ValueError(f"step must be one of {', '.join(self.STEPS)}, not {step!r}")
        if state is None and (by is not None or at is not None):
            raise ValueError("mark_step: by and at check the claim with state, not alone")
        try:
            with self._engine.begin() as conn:
                if state is not None:
                    row = conn.execute(select(t.approvals.c.state, t.approvals.c.decided_by,
                                              t.approvals.c.decided_at)
                                       .where(t.approvals.c.id == token)
                                       .with_for_update()).first()
                    if row is None or row[0] != state or (by is not None and row[1] != by) \
                            or (at is not None and row[2] != at):
                        return None
                for marked in (step, *also):
                    conn.execute(insert(t.prompt_steps).values(
                        token=token, step=marked, at=now,
                        **_bound_values(bounds if marked == step else None)))
                _keep_in(conn, keep)
        except IntegrityError:  # done before, or by another replica just now
            return False
        return True

    def take_over_step(self, token: str, step: str, *, older_than: float, now: float,
                       bounds: StepBounds | None = None, state: str | None = None) -> bool:
        """Take over `token`'s `step` its marker did not finish (it died): when the step was
        marked (or last taken over) at or before `older_than`, it is marked again at `now`
        with the taker's `bounds`, True for exactly one caller; the step's time is the lease
        of whoever carries it out, its bounds how long that one may take. With `state` (as
        `mark_step`'s), only while the approval is still in it, checked in the same
        transaction, its row locked: a held competitor's release retried after a person's
        `/train hold|release` took the hold out of the ledger (`settle_holds`) takes nothing."""
        with self._engine.begin() as conn:
            if state is not None and _state_now(conn, token) != state:
                return False
            result = conn.execute(
                update(t.prompt_steps)
                .where(and_(t.prompt_steps.c.token == token, t.prompt_steps.c.step == step,
                            t.prompt_steps.c.at <= older_than))
                .values(at=now, **_bound_values(bounds))
            )
        return result.rowcount == 1

    def bounds_of(self, token: str, step: str) -> StepBounds | None:
        """The bounds `token`'s `step` was marked (or last taken over) with; None when the
        step is not marked, or was marked without them (before they were kept); its post
        bound None when marked before that was kept (schema version 22)."""
        steps = t.prompt_steps
        with self._engine.begin() as conn:
            row = conn.execute(select(steps.c.command_at_most_s, steps.c.lookup_at_most_s,
                                      steps.c.post_at_most_s)
                               .where(and_(steps.c.token == token, steps.c.step == step))
                               ).first()
        if row is None or row[0] is None or row[1] is None:
            return None
        return StepBounds(command_at_most_s=row[0], lookup_at_most_s=row[1],
                          post_at_most_s=row[2])

    def steps(self, token: str) -> dict[str, float]:
        """The follow-up steps `token`'s prompt went through: step -> when."""
        with self._engine.begin() as conn:
            rows = conn.execute(select(t.prompt_steps.c.step, t.prompt_steps.c.at)
                                .where(t.prompt_steps.c.token == token)).all()
        return {step: at for step, at in rows}

    def expire(self, token: str, *, now: float) -> bool:
        """pending → expired once its time is up: True for exactly one caller."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "pending",
                            t.approvals.c.expires_at <= now))
                .values(state="expired")
            )
        return result.rowcount == 1

    def approved(self, action: str) -> list[Approval]:
        """The approvals of `action` approved and not yet done, oldest first (probes a
        person asked for, waiting for their run)."""
        query = (select(t.approvals).where(t.approvals.c.state == "approved",
                                           t.approvals.c.action == action)
                 .order_by(t.approvals.c.decided_at, t.approvals.c.id))
        return self._all(Approval, query)

    def cancels_unknown(self) -> list[Approval]:
        """The approved prompts whose scancel's end was not seen (step "cancel_unknown" or
        "cancel_only_unknown") and that are not done yet: their job may or may not have been
        cancelled, oldest first."""
        return self.approved_in_steps(self.CANCEL_UNKNOWN_STEPS)

    def approved_in_steps(self, steps_: Iterable[str]) -> list[Approval]:
        """The approved prompts, not done yet, that went through one of `steps_`, oldest
        first (e.g. "cancel_resuming": cancel and resumes whose click may have died)."""
        marked = t.prompt_steps.c.step.in_(list(steps_))
        query = (select(t.approvals)
                 .where(t.approvals.c.state == "approved",
                        t.approvals.c.id.in_(select(t.prompt_steps.c.token).where(marked)))
                 .order_by(t.approvals.c.decided_at, t.approvals.c.id))
        return self._all(Approval, query)

    def cancels_unannounced(self) -> list[Approval]:
        """The settled unknown cancels (done, step "cancel_settled") whose outcome was not yet
        all said (no step "cancel_announced"), oldest first."""
        steps = t.prompt_steps
        query = (select(t.approvals)
                 .where(t.approvals.c.state == "done",
                        t.approvals.c.id.in_(select(steps.c.token)
                                             .where(steps.c.step == "cancel_settled")),
                        t.approvals.c.id.not_in(select(steps.c.token)
                                                .where(steps.c.step == "cancel_announced")))
                 .order_by(t.approvals.c.decided_at, t.approvals.c.id))
        return self._all(Approval, query)

    def pending(self) -> list[Approval]:
        """Every pending approval of every action, oldest first (the prompts' follow-up)."""
        query = (select(t.approvals).where(t.approvals.c.state == "pending")
                 .order_by(t.approvals.c.created_at, t.approvals.c.id))
        return self._all(Approval, query)

    def expire_due(self, now: float) -> list[str]:
        """Mark every pending approval past its expiry expired; returns their tokens."""
        with self._engine.begin() as conn:
            due = [
                r[0]
                for r in conn.execute(
                    select(t.approvals.c.id).where(
                        and_(t.approvals.c.state == "pending", t.approvals.c.expires_at <= now)
                    )
                ).all()
            ]
            if due:
                conn.execute(
                    update(t.approvals)
                    .where(and_(t.approvals.c.id.in_(due), t.approvals.c.state == "pending"))
                    .values(state="expired")
                )
        return due

    def join_hold(self, token: str, *, now: float) -> Approval | None:
        """A yes on hold prompt `token` whose job Slurm shows held already: when another
        approved hold of the same job (action, target job and payload cluster) has its hold
        out and landed (`_hold_kept_out`), `token` shares it (its "holding" and "hold_ended"
        steps marked: nothing is sent, its hold is the one already out) and that other hold
        is returned; None (nothing marked) when none has: the job is held by someone else,
        or by no hold of trainbot's yet (one still on its way, `hold_on_its_way`, may fail
        and leave a hold shared with it claiming a hold nobody placed). One
        transaction, the job's approval rows locked as `pass_hold` and `settle_holds` lock
        them, so a hold joined is never one being let go."""
        with self._engine.begin() as conn:
            mine, others = self._holds_beside(conn, token)
            if mine is None or mine[0].state != "approved" or "holding" in mine[1]:
                return None
            out = next((a for a, steps in others if _hold_kept_out(steps)), None)
            if out is not None:
                for step in ("holding", "hold_ended"):
                    conn.execute(insert(t.prompt_steps).values(token=token, step=step, at=now,
                                                               **_bound_values(None)))
        return out

    def pass_hold(self, token: str, *, now: float, keep: KeepFor | None = None,
                  passing_over: Collection[str] = ()) -> HoldPass:
        """Hold `token` (approved, its release claimed: "releasing") is no longer needed:
        when another approved hold of the same job still has its hold out and landed
        (`_hold_kept_out`: its release not claimed, its `scontrol hold` over), `token` is done
        without a release (step "hold_kept"): "kept", by that other hold, which releases the
        job once it no longer needs it; "last" (nothing changed) when `token` is the last: it
        releases the job; "gone" (nothing changed) when `token` is no longer approved: a
        person's `/train hold|release` took it out of the ledger after its release was
        claimed (`settle_holds`), so it releases nothing (a release would drop their hold).
        Failing a landed one, a hold whose own yes is sending its `scontrol hold`
        ("hold_landing" without "hold_ended", `_hold_landing`) is handed the job, marked
        "hold_handed" in the same transaction: that hold may have landed in Slurm before its
        yes marks it over, and a release now would undo it while its thread says "held"; its
        yes, should its hold fail, keeps the job it was handed while Slurm shows it held
        (`end_failed_hold`); never by a hold with nothing to hand (`_may_hand`). A hold whose
        "holding" its release took before it was sent (no "hold_landing") is never handed
        the job: it is done with nothing to release; the job is released now. One
        transaction, the job's approval rows locked (FOR UPDATE on PostgreSQL; SQLite's
        BEGIN IMMEDIATE already serialises writers): of two holds let go at once, each having
        claimed its release first, neither is seen out by the other, so the job is released,
        never left held with no hold in the ledger. `keep`: what `token`'s thread is told of
        it, made from the other hold (a function that reads no store: bot.services.threads
        .thread_keeper), kept in the same transaction when done (as `mark_done`'s).
        `passing_over`: the resumed jobs read no longer waiting by the caller (a holds tick's
        one read of them all): a hold for one of them is never handed the job, which it no
        longer needs (released by it in the same tick)."""
        with self._engine.begin() as conn:
            mine, others = self._holds_beside(conn, token)
            if mine is None or mine[0].state != "approved":
                return HoldPass("gone")
            takers = [(a, steps) for a, steps in others
                      if a.payload.get("for_job") not in passing_over]
            landing = takers if _may_hand(mine[1]) else []
            taker = next(((a, steps) for a, steps in takers if _hold_kept_out(steps)),
                         next(((a, steps) for a, steps in landing if _hold_landing(steps)),
                              None))
            out = None if taker is None else taker[0]
            if taker is not None:
                conn.execute(update(t.approvals).where(and_(
                    t.approvals.c.id == token, t.approvals.c.state == "approved"))
                    .values(state="done", decided_at=now))
                conn.execute(insert(t.prompt_steps).values(token=token, step="hold_kept", at=now,
                                                           **_bound_values(None)))
                if "hold_ended" not in taker[1] and "hold_handed" not in taker[1]:
                    conn.execute(insert(t.prompt_steps).values(
                        token=taker[0].id, step="hold_handed", at=now, **_bound_values(None)))
                _keep_in(conn, None if keep is None else keep(taker[0]))
        return HoldPass("last") if out is None else HoldPass("kept", out)

    def end_failed_hold(self, token: str, *, now: float,
                        handed_held: bool | None = None) -> bool:
        """The `scontrol hold` of hold `token`'s yes failed: its row done and its hold marked
        over ("hold_ended"), in one transaction (the job's rows locked, as `pass_hold` locks
        them), so no run's `pass_hold` finds it over and approved in between; True then
        (nothing held, nothing to release). Unless another run's hold was handed to it while
        its own was landing ("hold_handed", `pass_hold`): that hold may have been undone
        since (it was seen over as the job started, a person released it), so nothing is
        changed (False) until the caller read the job (`handed_held`): held, or not read
        (True), the job is `token`'s to release, its row approved, its hold marked over
        (False); not held (False), it is done as above (True)."""
        with self._engine.begin() as conn:
            mine, _others = self._holds_beside(conn, token)
            if mine is None:
                return True
            handed = mine[0].state == "approved" and "hold_handed" in mine[1]
            if handed and handed_held is None:
                return False
            kept = handed and bool(handed_held)
            if not kept:
                conn.execute(update(t.approvals).where(and_(
                    t.approvals.c.id == token, t.approvals.c.state == "approved"))
                    .values(state="done", decided_at=now))
            if "hold_ended" not in mine[1]:
                conn.execute(insert(t.prompt_steps).values(token=token, step="hold_ended",
                                                           at=now, **_bound_values(None)))
        return not kept

    def settle_holds(self, action: str, target_jobs: Iterable[str], *, cluster: str,
                     now: float, landed_only: bool, step: str,
                     keep: KeepFor | None = None) -> list[Approval]:
        """Take jobs `target_jobs` of `cluster` (a job, or an array's id and its tasks' own
        ids) out of the `action` holds' ledger, a person having held or released them
        themselves: every approved one whose hold was sent
        ("holding", or one from before the steps) done, in one transaction (the job's rows
        locked, as `join_hold` and `pass_hold` lock them, so no yes joins a hold taken out
        meanwhile); with `landed_only`, only those whose hold is over ("hold_ended", or one
        from before the steps): one still on its way stays, released once it has landed. A
        yes still reading Slurm ("hold_approved" alone) is left to find the job held.
        Each one done is marked `step` in the same transaction ("held_by_person" |
        "released_by_person": what took it out, for a release of trainbot's still on its way
        to read), and what its thread is told of it (`keep`, made from the row: a function
        that reads no store, as `pass_hold`'s) kept. Returns those done."""
        with self._engine.begin() as conn:
            settled = [a for a, steps in self._holds_on(conn, action, list(target_jobs), cluster)
                       if a.state == "approved" and _hold_sent(steps)
                       and (not landed_only or "hold_ended" in steps
                            or "hold_approved" not in steps)]
            for approval in settled:
                conn.execute(update(t.approvals).where(and_(
                    t.approvals.c.id == approval.id, t.approvals.c.state == "approved"))
                    .values(state="done", decided_at=now))
                conn.execute(insert(t.prompt_steps).values(token=approval.id, step=step,
                                                           at=now, **_bound_values(None)))
                _keep_in(conn, None if keep is None else keep(approval))
        return settled

    def hold_on_its_way(self, token: str) -> Approval | None:
        """Another approved hold of the job of hold prompt `token` (as `join_hold` finds
        them) whose `scontrol hold` was sent and is not over ("holding" without
        "hold_ended"), its release not claimed: trainbot's hold of the job may or may not
        land. None when there is none."""
        with self._engine.begin() as conn:
            _mine, others = self._holds_beside(conn, token)
        return next((a for a, steps in others
                     if _hold_out(steps) and "holding" in steps and "hold_ended" not in steps),
                    None)

    def hold_being_released(self, token: str) -> Approval | None:
        """Another approved hold of the job of hold prompt `token` (its action, target job
        and payload cluster, as `join_hold` finds them) whose hold was sent and whose release
        is claimed ("releasing"): trainbot's hold of the job is being let go right now. None
        when there is none."""
        with self._engine.begin() as conn:
            _mine, others = self._holds_beside(conn, token)
        return next((a for a, steps in others if "releasing" in steps and _hold_sent(steps)),
                    None)

    def _holds_beside(self, conn: Any, token: str) -> tuple[
            tuple[Approval, dict[str, float]] | None, list[tuple[Approval, dict[str, float]]]]:
        """`token`'s row with its steps, and the other approved ones of its action on its
        target job and payload cluster with theirs (`_holds_on`, rows locked)."""
        found = _row(Approval, conn.execute(
            select(t.approvals).where(t.approvals.c.id == token)).first())
        if found is None or found.target_job is None:
            return None, []
        rows = self._holds_on(conn, found.action, [found.target_job],
                              found.payload.get("cluster"))
        mine = next((r for r in rows if r[0].id == token), None)
        return mine, [r for r in rows if r[0].id != token and r[0].state == "approved"]

    @staticmethod
    def _holds_on(conn: Any, action: str, target_jobs: list[str],
                  cluster: str | None) -> list[tuple[Approval, dict[str, float]]]:
        """Every `action` approval on one of `target_jobs` whose payload names `cluster`, with
        its steps; all the jobs' rows locked first, in id order (FOR UPDATE on PostgreSQL)."""
        rows = conn.execute(
            select(t.approvals).where(and_(t.approvals.c.action == action,
                                           t.approvals.c.target_job.in_(target_jobs)))
            .order_by(t.approvals.c.id).with_for_update()).all()
        approvals = [a for a in (_row(Approval, r) for r in rows)
                     if a.payload.get("cluster") == cluster]
        steps: dict[str, dict[str, float]] = {a.id: {} for a in approvals}
        if approvals:
            for tok, step, at in conn.execute(
                    select(t.prompt_steps.c.token, t.prompt_steps.c.step, t.prompt_steps.c.at)
                    .where(t.prompt_steps.c.token.in_(list(steps)))).all():
                steps[tok][step] = at
        return [(a, steps[a.id]) for a in approvals]

    def with_state(self, action: str, state: str) -> list[Approval]:
        """Every approval of `action` in `state`, oldest first, across all chains.

        E.g. `with_state("hold_competitor", "approved")`: exactly the jobs trainbot holds now
        (served by the `ix_approvals_action_state` index, schema version 3).
        """
        query = (
            select(t.approvals)
            .where(and_(t.approvals.c.action == action, t.approvals.c.state == state))
            .order_by(t.approvals.c.created_at, t.approvals.c.id)
        )
        return self._all(Approval, query)

    def for_chain(self, chain_id: int, state: str | None = None) -> list[Approval]:
        query = select(t.approvals).where(t.approvals.c.chain_id == chain_id)
        if state is not None:
            query = query.where(t.approvals.c.state == state)
        return self._all(Approval, query.order_by(t.approvals.c.created_at))


def _forget_claim(conn: Any, token: str, also: Iterable[str] = ()) -> None:
    """Delete `token`'s claim steps (ApprovalsRepo.CLAIM_STEPS) and those of `also`, in
    `conn`'s transaction."""
    conn.execute(delete(t.prompt_steps).where(and_(
        t.prompt_steps.c.token == token,
        t.prompt_steps.c.step.in_([*ApprovalsRepo.CLAIM_STEPS, *also]))))


def _keep_in(conn: Any, keep: Mapping[str, Any] | None) -> None:
    """Insert `keep`, the incidents row of a reply kept for its thread
    (bot.services.threads.kept_message), in `conn`'s transaction, unless a row with its key
    is there (said or kept before)."""
    if keep is not None and conn.execute(
            select(t.incidents.c.id).where(t.incidents.c.key == keep["key"])).first() is None:
        conn.execute(insert(t.incidents).values(**keep))


def _state_now(conn: Any, token: str) -> str | None:
    """`token`'s state, read in `conn`'s transaction with its row locked (FOR UPDATE on
    PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers); None when not there."""
    row = conn.execute(select(t.approvals.c.state).where(t.approvals.c.id == token)
                       .with_for_update()).first()
    return None if row is None else str(row[0])


def _hold_out(steps: Mapping[str, float]) -> bool:
    """Does an approved hold with these steps have its hold out, trainbot's to release: its
    hold was sent (`_hold_sent`) and its release is not claimed ("releasing")."""
    return "releasing" not in steps and _hold_sent(steps)


def _hold_kept_out(steps: Mapping[str, float]) -> bool:
    """May an approved hold with these steps be handed a job another hold lets go of
    (`pass_hold`): its hold is out (`_hold_out`) and over, never to end with nothing to
    release: "hold_ended" (its `scontrol hold` went through, or it shares one that did:
    `join_hold`), or it is from before the steps (neither "holding" nor "hold_approved")."""
    return _hold_out(steps) and ("hold_ended" in steps
                                 or ("holding" not in steps and "hold_approved" not in steps))


def _hold_landing(steps: Mapping[str, float]) -> bool:
    """Is an approved hold with these steps one whose own yes is sending its `scontrol hold`,
    which may have landed in Slurm though not yet marked over: "hold_landing" without
    "hold_ended", its release not claimed (`_hold_out`)?"""
    return _hold_out(steps) and "hold_landing" in steps and "hold_ended" not in steps


def _may_hand(steps: Mapping[str, float]) -> bool:
    """May a hold let go of with these steps (over: `hold_over`) hand the job to a hold still
    landing (`pass_hold`)? Not when it was found over with the job no longer waiting
    ("hold_not_landed"): Slurm holds no job that runs or ended, so it holds nothing to hand.
    One over by age (its end not seen) may have landed: handed, the job is never released
    under a landing hold, and that hold, should it fail, keeps it only if Slurm shows it
    held (`end_failed_hold`)."""
    return "hold_not_landed" not in steps


def _hold_sent(steps: Mapping[str, float]) -> bool:
    """May an approved hold with these steps have sent its `scontrol hold`: "holding"
    marked, or it is from before the steps (no "hold_approved": its hold went out
    unmarked)? A yes still reading Slurm ("hold_approved" alone) has sent none."""
    return "holding" in steps or "hold_approved" not in steps


def _bound_values(bounds: StepBounds | None) -> dict[str, float | None]:
    """A prompt_steps row's bound columns for `bounds` (None: not kept, NULL)."""
    return {"command_at_most_s": None if bounds is None else bounds.command_at_most_s,
            "lookup_at_most_s": None if bounds is None else bounds.lookup_at_most_s,
            "post_at_most_s": None if bounds is None else bounds.post_at_most_s}
