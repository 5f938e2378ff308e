"""What the policy decides: `Decision` (plain data the watcher carries out), its kinds, the
buttons it may offer, and where a resubmit resumes in words (`resume_start`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypedDict

from bot.core.text import N_, Text


class DecisionKind(StrEnum):
    """What the watcher does with a decision."""

    RESUBMIT_NOW = "resubmit_now"  # submit (after not_before) without asking
    PROPOSE_RESUBMIT = "propose_resubmit"  # incident with a Resubmit button
    PROPOSE_MEM_RESUBMIT = "propose_mem_resubmit"  # incident with "Resubmit with --mem=…"
    ASK_HUMAN = "ask_human"  # the chain stops here until a person decides
    STOP = "stop"  # explain; never resubmitted
    WARN = "warn"  # early warning in the thread (may offer cancel + resume)
    NOTE = "note"  # gentle note, not an incident
    NONE = "none"  # nothing to do


#: Why the checkpoint a resume starts from is unknown: `not_looked_up` (`trainbot report` from a
#: log whose saves name none), `lookup_failed` (the watcher's lookup failed or was late) or
#: `no_recipe` (a job trainbot did not submit: no recipe names its checkpoint dir).
CheckpointUnknown = Literal["not_looked_up", "lookup_failed", "no_recipe"]

#: The decision's fact `checkpoint_lookup` that says a resume's checkpoint is unknown, and why.
_UNKNOWN_BY_LOOKUP: dict[str, CheckpointUnknown] = {"failed": "lookup_failed",
                                                    "no_recipe": "no_recipe"}


def checkpoint_unknown_of(lookup: object) -> CheckpointUnknown | None:
    """Why the checkpoint is unknown, from a decision's fact `checkpoint_lookup` ("failed": the
    lookup failed or was late; "no_recipe": there was nowhere to look); None: it is known,
    or there is none ("done", no fact)."""
    return _UNKNOWN_BY_LOOKUP.get(lookup) if isinstance(lookup, str) else None


def lookup_fact(unknown: CheckpointUnknown | None) -> dict[str, str]:
    """The fact `checkpoint_lookup` a decision stores for a checkpoint unknown for `unknown`
    (`checkpoint_unknown_of` reads it back); none when it is known."""
    for fact, why in _UNKNOWN_BY_LOOKUP.items():
        if why == unknown:
            return {"checkpoint_lookup": fact}
    return {}


#: What a decision about a job with no recipe (one trainbot did not submit: fact `by_hand`)
#: says in place of a resubmit trainbot would make or offer: a person makes it.
RESUBMIT_BY_HAND = ("trainbot did not submit this job, so it resubmits nothing: resubmit it "
                    "yourself")

#: Button ids a decision may offer (the Slack layer maps them to action ids).
OFFER_RESUBMIT = "resubmit"
OFFER_RESUBMIT_MEM = "resubmit_mem"
OFFER_CANCEL_RESUME = "cancel_resume"
OFFER_DISMISS = "dismiss"


def resubmit_offers(*, by_hand: bool, mem: bool = False) -> tuple[str, ...]:
    """The buttons of a decision that names a resubmit: the resubmit (the one with --mem
    first, `mem`) and Dismiss; Dismiss alone when the resubmit is a person's to make
    (`by_hand`: a job with no recipe; a button resubmits a recipe, so none could make it)."""
    if by_hand:
        return (OFFER_DISMISS,)
    if mem:
        return (OFFER_RESUBMIT_MEM, OFFER_RESUBMIT, OFFER_DISMISS)
    return (OFFER_RESUBMIT, OFFER_DISMISS)


class DecisionBase(TypedDict):
    """The fields every decision about one failed attempt shares (passed as `**base`)."""

    class_id: str
    resume_from: int | None
    resume_checkpoint: str | None
    work_lost_iters: int | None


@dataclass(frozen=True)
class Decision:
    """Plain data: what to do and why. `charged` says whether carrying out the resubmit
    spends one unit of the chain's retry budget; `key` deduplicates warnings per chain;
    `facts` is `reason` as data (module doc). A resume starts from the checkpoint named
    `resume_checkpoint` (None: none, from the start), at iteration `resume_from` when its name
    has one (a pointer naming `final` has none)."""

    kind: DecisionKind
    reason: str
    class_id: str
    charged: bool = False
    not_before: float | None = None
    resume_from: int | None = None
    resume_checkpoint: str | None = None
    work_lost_iters: int | None = None
    mem: str | None = None  # suggested --mem as Slurm writes it ("600G")
    mem_bytes: int | None = None
    offers: tuple[str, ...] = ()
    stop_chain: bool = False
    key: str | None = None
    projected_oom_iter: int | None = None
    facts: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def resubmits(self) -> bool:
        """Does this decision resubmit (now or on approval)?"""
        return self.kind in (
            DecisionKind.RESUBMIT_NOW,
            DecisionKind.PROPOSE_RESUBMIT,
            DecisionKind.PROPOSE_MEM_RESUBMIT,
        )

    @property
    def by_hand(self) -> bool:
        """Is the resubmit it names left to a person (fact `by_hand`: a job with no recipe,
        which trainbot neither resubmits nor offers a button for)?"""
        return bool(self.facts.get("by_hand"))

    @property
    def checkpoint_unknown(self) -> CheckpointUnknown | None:
        """Why the checkpoint its resume starts from is unknown: looking it up failed or was
        late, or the job has no recipe to look it up by (fact `checkpoint_lookup`); None: it
        is known, or there is none."""
        return checkpoint_unknown_of(self.facts.get("checkpoint_lookup"))

    def to_json(self) -> dict[str, Any]:
        """The decision as stored (the incidents table's JSON) and sent (a webhook's body):
        its fields and all its `facts` (a failed checkpoint lookup, an automatic resubmit
        withheld, … : what a reader of the stored row says). `exclude` and `array_task`, which
        a resubmit acts on, are also kept beside them, where versions before `facts` was
        stored read them."""
        return {
            "kind": str(self.kind), "reason": self.reason, "class_id": self.class_id,
            "charged": self.charged, "not_before": self.not_before,
            "resume_from": self.resume_from, "resume_checkpoint": self.resume_checkpoint,
            "work_lost_iters": self.work_lost_iters,
            "mem": self.mem, "mem_bytes": self.mem_bytes, "offers": list(self.offers),
            "stop_chain": self.stop_chain, "key": self.key,
            "projected_oom_iter": self.projected_oom_iter,
            "exclude": self.facts.get("exclude"),  # the faulty node a resubmit leaves out
            "array_task": self.facts.get("array_task"),  # the one task a resubmit reruns
            "facts": dict(self.facts),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """A stored decision read back, with its facts (a row written before they were stored
        has only `exclude` and `array_task`). Fails closed: a missing or unknown `kind` (a row
        written by another version, a damaged one) is `ask_human`, never an action."""
        try:
            kind = DecisionKind(str(data.get("kind") or ""))
        except ValueError:
            kind = DecisionKind.ASK_HUMAN
        stored = data.get("facts")
        facts = dict(stored) if isinstance(stored, Mapping) else {}
        facts.pop("exclude", None)
        facts.pop("array_task", None)
        if data.get("exclude"):
            facts["exclude"] = data["exclude"]
        if isinstance(data.get("array_task"), int):
            facts["array_task"] = data["array_task"]
        return cls(
            kind=kind, reason=str(data.get("reason") or ""),
            class_id=str(data.get("class_id") or ""), charged=bool(data.get("charged")),
            not_before=data.get("not_before"), resume_from=data.get("resume_from"),
            resume_checkpoint=data.get("resume_checkpoint"),
            work_lost_iters=data.get("work_lost_iters"), mem=data.get("mem"),
            mem_bytes=data.get("mem_bytes"), offers=tuple(data.get("offers") or ()),
            stop_chain=bool(data.get("stop_chain")), key=data.get("key"),
            projected_oom_iter=data.get("projected_oom_iter"), facts=facts,
        )


def resume_start(resume_from: int | None, resume_checkpoint: str | None = None,
                 unknown: CheckpointUnknown | None = None, *, brief: bool = False) -> Text:
    """Where a resume starts, the one phrase every message says it with (the decision and the
    watcher's log in English, the threads, buttons, dialogs and the Home tab through the
    templates' `msg` filter): `from iteration 3,000`, else `from checkpoint `final`` (a
    checkpoint whose name has no iteration), else the last complete checkpoint, unknown and
    why (`unknown`), else `from scratch (no complete checkpoint)`. `brief`: for a button (75
    characters), an unknown checkpoint is only `(checkpoint unknown)` (`trainbot report`'s,
    not looked up: `from the checkpoint the bot looks up`) and none `from scratch`.
    A caller that needs a verb adds it ("resubmitting from …", "Cancel 123 and resume from …")."""
    if resume_from is not None:
        return N_("from iteration %(iter)s", iter=f"{resume_from:,}")
    if resume_checkpoint:
        return N_("from checkpoint `%(name)s`", name=resume_checkpoint)
    if unknown == "not_looked_up" and brief:  # `trainbot report`: the bot looks it up
        return N_("from the checkpoint the bot looks up")
    if unknown and brief:
        return N_("(checkpoint unknown)")
    if brief:
        return N_("from scratch")
    if unknown == "lookup_failed":
        return N_("from the last complete checkpoint (unknown: looking it up failed)")
    if unknown == "no_recipe":
        return N_("from the last complete checkpoint (unknown: no recipe names its checkpoint "
                  "dir)")
    if unknown:  # not_looked_up: `trainbot report`, offline, whose message the bot would post
        return N_("from the last complete checkpoint, which the bot looks up when it posts this "
                  "(`trainbot report` cannot)")
    return N_("from scratch (no complete checkpoint)")
