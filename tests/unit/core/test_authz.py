"""Who may submit, approve and control jobs; refusals name who can."""

from __future__ import annotations

from bot.core.authz import (
    People,
    RecipeAccess,
    can_approve,
    can_control_job,
    can_submit,
    can_unwatch,
)

GROUPS = {"robots": ["U0ALICE", "U0BOB"], "leads": ["W0LEAD"]}
MIX = RecipeAccess(
    recipe="mix",
    submitters=People.of(["robots"], GROUPS),
    owners=People.of(["U0OWNER"], GROUPS),
    approvers=People.of(["leads", "U0APPR"], GROUPS),
    channel="C0TRAIN",
)
OPEN = RecipeAccess(recipe="open", approvers=People.of(["U0APPR"], GROUPS))
DEFAULT = People.of(["leads"], GROUPS)


def test_people_describe_mentions_users_and_names_groups() -> None:
    assert str(People.of(["leads", "U0APPR"], GROUPS).describe()) == "group leads or <@U0APPR>"
    assert str(People.of(["a", "b", "U0X"], {}).describe()) == "group a, group b or <@U0X>"
    assert str(People().describe()) == "nobody"


def test_submitters_owners_and_approvers_may_submit_in_the_recipe_channel() -> None:
    for user in ("U0ALICE", "U0BOB", "U0OWNER", "W0LEAD", "U0APPR"):
        assert can_submit(MIX, user, "C0TRAIN", "resume")


def test_outsider_refused_with_who_can() -> None:
    decision = can_submit(MIX, "U0EVE", "C0TRAIN", "resume")
    assert not decision
    assert str(decision.reason).startswith("you may not resume mix; ask ")
    for who in ("group robots", "<@U0OWNER>", "group leads", "<@U0APPR>"):
        assert who in str(decision.reason)


def test_wrong_channel_refused_naming_the_channel() -> None:
    decision = can_submit(MIX, "U0ALICE", "C0OTHER", "submit")
    assert not decision
    assert str(decision.reason) == "`submit mix` is only accepted in <#C0TRAIN>"


def test_empty_submitters_means_anyone_anywhere_without_channel() -> None:
    assert can_submit(OPEN, "U0EVE", "C0ANY", "submit")


def test_approve_only_by_approvers() -> None:
    assert can_approve(MIX, "W0LEAD", DEFAULT)
    decision = can_approve(MIX, "U0ALICE", DEFAULT)
    assert not decision and str(decision.reason) == "only group leads or <@U0APPR> can approve this"


def test_approve_falls_back_to_default_and_says_when_nobody_can() -> None:
    bare = RecipeAccess(recipe="bare")
    assert can_approve(bare, "W0LEAD", DEFAULT)
    decision = can_approve(bare, "W0LEAD", People())
    assert not decision
    assert "set recipes.bare.approvers or slack.approvers" in str(decision.reason)


def test_job_control_by_team_or_approver() -> None:
    for user in ("U0ALICE", "U0OWNER", "W0LEAD", "U0APPR"):
        assert can_control_job(MIX, user, 88017, "cancel", DEFAULT)
    decision = can_control_job(MIX, "U0EVE", 88017, "cancel", DEFAULT)
    assert not decision
    assert str(decision.reason).startswith("job 88017 belongs to mix; only ")
    assert str(decision.reason).endswith(" can cancel it")


def test_foreign_job_only_by_default_approvers() -> None:
    assert can_control_job(None, "W0LEAD", 5, "hold", DEFAULT)
    decision = can_control_job(None, "U0ALICE", 5, "hold", DEFAULT)
    assert str(decision.reason) == \
        "job 5 was not submitted by trainbot; only group leads can hold it"
    nobody = can_control_job(None, "U0ALICE", 5, "hold", People())
    assert "nobody (set slack.approvers)" in str(nobody.reason)


def test_approvers_are_the_recipes_else_the_fallback_the_same_for_prompts_and_clicks():
    from bot.core.authz import approvers_for

    leads = People.of(["leads"], {"leads": ["W0LEAD"]})
    fallback = People.of(["U0OPS"], {})
    own = RecipeAccess("mix", approvers=leads)
    assert approvers_for(own, fallback) is leads
    assert approvers_for(RecipeAccess("mix"), fallback) is fallback
    assert approvers_for(None, fallback) is fallback
    assert can_approve(own, "W0LEAD", fallback) and not can_approve(own, "U0OPS", fallback)


def test_who_adopted_a_job_or_an_approver_may_stop_watching_it():
    approvers = People.of(["leads"], {"leads": ["U0APPR"]})
    assert can_unwatch("U0BOB", "U0BOB", 6100, approvers)
    assert can_unwatch("U0BOB", "U0APPR", 6100, approvers)
    refused = can_unwatch("U0BOB", "U0ALICE", 6100, approvers)
    assert not refused
    assert str(refused.reason) == ("job 6100 is watched for <@U0BOB> or group leads; only they can "
                              "stop watching it")
    assert not can_unwatch(None, "U0ALICE", 6100, approvers)  # adopted before v12: approvers
    assert can_unwatch(None, "U0APPR", 6100, approvers)


def test_the_submitters_docs_say_what_an_empty_list_allows() -> None:
    """Empty submitters: anyone, in the recipe's channel when it has one, else from any channel
    or DM (the schema and authz's doc said "anyone in the recipe's channel" for both)."""
    import bot.core.authz
    from bot.config.models.recipes import RecipeConfig

    in_channel = RecipeAccess(recipe="mix", channel="C0TRAIN")
    assert can_submit(in_channel, "U0EVE", "C0TRAIN", "submit")
    assert not can_submit(in_channel, "U0EVE", "D0SOMEDM", "submit")
    assert can_submit(OPEN, "U0EVE", "D0SOMEDM", "submit")
    described = RecipeConfig.model_fields["submitters"].description or ""
    assert "empty = anyone: in the recipe's `channel` when it has one, else in any channel " \
        "or DM" in described
    doc = " ".join((bot.core.authz.__doc__ or "").split())
    assert "in the recipe's channel when it has one (from any channel or DM when it has " \
        "none)" in doc and "anyone when its submitters list is empty" in doc
