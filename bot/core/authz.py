"""Who may do what (pure): submit/resume a recipe, approve its actions, control its jobs.

Rules (the config describes the people; `access_for` in bot.services.access builds these):
- submit / resume / preflight a recipe: in the recipe's channel when it has one; by its
  submitters (anyone in the channel when the list is empty), its owners and its approvers.
- approve a button: the recipe's approvers (else slack.approvers).
- cancel / hold / release / logs of a job: the team of the run chain that owns the job (recipe
  owners and submitters) or an approver. A job trainbot did not submit: approvers only.
- stop watching a job trainbot adopted (`/train watch`): who adopted it, or an approver.
Every refusal says who can, as Slack mentions and group names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class People:
    """A list of Slack user ids and group names as configured, and who it expands to."""

    names: tuple[str, ...] = ()  # as written in the config: U… ids and group names
    users: frozenset[str] = frozenset()  # expanded user ids

    @classmethod
    def of(cls, names: Iterable[str], groups: Mapping[str, Iterable[str]]) -> People:
        names = tuple(names)
        users: set[str] = set()
        for name in names:
            users.update(groups.get(name, [name]))
        return cls(names, frozenset(users))

    def __contains__(self, user: object) -> bool:
        return user in self.users

    def __bool__(self) -> bool:
        return bool(self.names)

    def __or__(self, other: People) -> People:
        names = tuple(dict.fromkeys(self.names + other.names))
        return People(names, self.users | other.users)

    def describe(self) -> str:
        """`<@U1>, <@U2> or group leads`."""
        parts = [f"group {n}" if not _is_user_id(n) else f"<@{n}>" for n in self.names]
        if not parts:
            return "nobody"
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


@dataclass(frozen=True)
class RecipeAccess:
    """The people and channel rules of one recipe."""

    recipe: str
    submitters: People = field(default_factory=People)  # empty: anyone in the channel
    owners: People = field(default_factory=People)
    approvers: People = field(default_factory=People)
    channel: str | None = None  # channel id where submit/resume are allowed; None = any


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED = Decision(True)


_USER_ID_RE = re.compile(r"^[UW][A-Z0-9]{2,}$")


def _is_user_id(name: str) -> bool:
    return bool(_USER_ID_RE.match(name))


def can_submit(access: RecipeAccess, user: str, channel: str | None, verb: str) -> Decision:
    """May `user` submit/resume/preflight the recipe from `channel`?"""
    if access.channel is not None and channel != access.channel:
        return Decision(
            False, f"`{verb} {access.recipe}` is only accepted in <#{access.channel}>"
        )
    if not access.submitters:
        return ALLOWED
    team = access.submitters | access.owners | access.approvers
    if user in team:
        return ALLOWED
    return Decision(
        False, f"you may not {verb} {access.recipe}; ask {team.describe()}"
    )


def approvers_for(access: RecipeAccess | None, fallback: People) -> People:
    """Who approves the recipe's actions: its approvers, else `fallback` (slack.approvers);
    `access` None (a recipe no longer configured): `fallback`."""
    return access.approvers if access is not None and access.approvers else fallback


def can_approve(access: RecipeAccess | None, user: str, fallback: People) -> Decision:
    """May `user` approve an action on the recipe's jobs (`fallback`: slack.approvers)?"""
    approvers = approvers_for(access, fallback)
    if not approvers:
        where = f"recipes.{access.recipe}.approvers or " if access is not None else ""
        return Decision(False, f"nobody may approve this: set {where}slack.approvers")
    if user in approvers:
        return ALLOWED
    return Decision(False, f"only {approvers.describe()} can approve this")


def can_control_job(
    access: RecipeAccess | None, user: str, job_id: int | str, verb: str, fallback: People
) -> Decision:
    """May `user` cancel/hold/release/read the job? `access` is None for a job trainbot did
    not submit (then only the default approvers may)."""
    if access is None:
        if user in fallback:
            return ALLOWED
        who = fallback.describe() if fallback else "nobody (set slack.approvers)"
        return Decision(
            False, f"job {job_id} was not submitted by trainbot; only {who} can {verb} it"
        )
    team = access.owners | access.submitters | (access.approvers or fallback)
    if user in team:
        return ALLOWED
    return Decision(
        False, f"job {job_id} belongs to {access.recipe}; only {team.describe()} can {verb} it"
    )


def can_unwatch(watched_by: str | None, user: str, job_id: int | str,
                fallback: People) -> Decision:
    """May `user` stop trainbot watching job `job_id`, which it adopted for `watched_by`
    (None: adopted before trainbot recorded who)? That person, or the default approvers."""
    if user == watched_by or user in fallback:
        return ALLOWED
    who = People.of([watched_by], {}) | fallback if watched_by else fallback
    return Decision(False, f"job {job_id} is watched for {who.describe()}; only they can "
                           "stop watching it")
