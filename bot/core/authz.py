"""Who may do what (pure): submit/resume a recipe, approve its actions, control its jobs.

Rules (the config describes the people; `access_for` in bot.services.access builds these):
- submit / resume / preflight a recipe: in the recipe's channel when it has one (from any
  channel or DM when it has none); by its submitters, its owners and its approvers, or by
  anyone when its submitters list is empty.
- approve a button: the recipe's approvers (else slack.approvers).
- cancel / hold / release / logs / stacks / watch of a job: the team of the run chain that owns
  the job (recipe owners and submitters) or an approver. A job trainbot did not submit:
  approvers only (watching posts its log's evidence in a channel, as `/train logs` shows it).
- stop watching a job trainbot adopted (`/train watch`): who adopted it, or an approver.
Every refusal says who can, as Slack mentions and group names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bot.core.text import N_, Mrkdwn, Text


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

    def describe(self) -> Text | str:
        """`<@U1>, <@U2> or group leads` (a sentence part the renderer translates; the
        mentions are mrkdwn the renderer keeps)."""
        parts: list[Text | str] = [N_("group %(name)s", name=n) if not _is_user_id(n)
                                   else Mrkdwn(f"<@{n}>") for n in self.names]
        if not parts:
            return N_("nobody")
        if len(parts) == 1:
            return parts[0]
        return N_("%(names)s or %(last)s", names=parts[:-1], last=parts[-1])


@dataclass(frozen=True)
class RecipeAccess:
    """The people and channel rules of one recipe."""

    recipe: str
    submitters: People = field(default_factory=People)  # empty: anyone (in `channel` if set)
    owners: People = field(default_factory=People)
    approvers: People = field(default_factory=People)
    channel: str | None = None  # channel id where submit/resume are allowed; None = any


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: Text | str = ""  # why not: a sentence naming who can

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED = Decision(True)

# What a refusal says the person may not do, by the verb asked for (a noun in some languages).
_ACTIONS: dict[str, Text] = {
    "submit": N_("submit"), "resume": N_("resume"), "preflight": N_("preflight"),
    "cancel": N_("cancel"), "hold": N_("hold"), "release": N_("release"),
    "read the log of": N_("read the log of"), "read the stacks of": N_("read the stacks of"),
    "watch": N_("watch"),
}


def _action(verb: str) -> Text | str:
    return _ACTIONS.get(verb, verb)


_USER_ID_RE = re.compile(r"^[UW][A-Z0-9]{2,}$")


def _is_user_id(name: str) -> bool:
    return bool(_USER_ID_RE.match(name))


def can_submit(access: RecipeAccess, user: str, channel: str | None, verb: str) -> Decision:
    """May `user` submit/resume/preflight the recipe from `channel`?"""
    if access.channel is not None and channel != access.channel:
        return Decision(False, N_("`%(verb)s %(recipe)s` is only accepted in <#%(channel)s>",
                                  verb=verb, recipe=access.recipe, channel=access.channel))
    if not access.submitters:
        return ALLOWED
    team = access.submitters | access.owners | access.approvers
    if user in team:
        return ALLOWED
    return Decision(False, N_("you may not %(action)s %(recipe)s; ask %(who)s",
                              action=_action(verb), recipe=access.recipe, who=team.describe()))


def approvers_for(access: RecipeAccess | None, fallback: People) -> People:
    """Who approves the recipe's actions: its approvers, else `fallback` (slack.approvers);
    `access` None (a recipe no longer configured): `fallback`."""
    return access.approvers if access is not None and access.approvers else fallback


def can_approve(access: RecipeAccess | None, user: str, fallback: People) -> Decision:
    """May `user` approve an action on the recipe's jobs (`fallback`: slack.approvers)?"""
    approvers = approvers_for(access, fallback)
    if not approvers:
        if access is None:
            return Decision(False, N_("nobody may approve this: set slack.approvers"))
        return Decision(False, N_("nobody may approve this: set recipes.%(recipe)s.approvers "
                                  "or slack.approvers", recipe=access.recipe))
    if user in approvers:
        return ALLOWED
    return Decision(False, N_("only %(who)s can approve this", who=approvers.describe()))


def can_control_job(
    access: RecipeAccess | None, user: str, job_id: int | str, verb: str, fallback: People,
    *, told_by_thread: bool = False,
) -> Decision:
    """May `user` cancel/hold/release/read the job? `access` is None for a job trainbot did
    not submit (then only the default approvers may). `told_by_thread`: a job the recipe's
    run does not record, which its thread told about (a lost submit's, found below a later
    attempt); the run's people may act on it as on its own jobs."""
    if access is None:
        if user in fallback:
            return ALLOWED
        if not fallback:
            return Decision(False, N_("job %(job)s was not submitted by trainbot; only nobody "
                                      "(set slack.approvers) can %(action)s it", job=job_id,
                                      action=_action(verb)))
        return Decision(False, N_("job %(job)s was not submitted by trainbot; only %(who)s can "
                                  "%(action)s it", job=job_id, who=fallback.describe(),
                                  action=_action(verb)))
    team = access.owners | access.submitters | (access.approvers or fallback)
    if user in team:
        return ALLOWED
    if told_by_thread:
        return Decision(False, N_(
            "job %(job)s is not recorded by trainbot; %(recipe)s's thread told about it as a "
            "submit of that run, so only %(who)s can %(action)s it", job=job_id,
            recipe=access.recipe, who=team.describe(), action=_action(verb)))
    return Decision(False, N_("job %(job)s belongs to %(recipe)s; only %(who)s can %(action)s it",
                              job=job_id, recipe=access.recipe, who=team.describe(),
                              action=_action(verb)))


def can_unwatch(watched_by: str | None, user: str, job_id: int | str,
                fallback: People) -> Decision:
    """May `user` stop trainbot watching job `job_id`, which it adopted for `watched_by`
    (None: adopted before trainbot recorded who)? That person, or the default approvers."""
    if user == watched_by or user in fallback:
        return ALLOWED
    who = People.of([watched_by], {}) | fallback if watched_by else fallback
    return Decision(False, N_("job %(job)s is watched for %(who)s; only they can stop watching "
                              "it", job=job_id, who=who.describe()))
