"""Fault: a click on a prompt whose run has moved on (a stale button), for every button kind.

Through the real Bolt app and the Slack stand-in: a run is resumed (`/train resume`, or another
prompt's approval) while an older prompt is still on screen; clicking any of the older prompt's
buttons starts, cancels and holds nothing, answers "out of date" naming the run's latest job and
its state, and rewrites the prompt (chat.update) to say so. The same for a hold prompt whose
competitor already started or left the queue, and for a click that arrives while another prompt
of the same run is submitting.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes import FakeClusters, FakeSlurm, make_config, present, writer
from slack_bolt import App
from support.bolt_driver import SyncExecutor
from support.click_world import APPROVER, ClickWorld

from bot.app import build_app
from bot.cluster.errors import ClusterError
from bot.services.approvals import handle_click
from bot.services.ports import BotContext
from bot.services.probes import create_probe_offer
from bot.slack.views import ActionId

NOW = 1_732_871_000.0


@pytest.fixture
def slurm() -> FakeSlurm:
    return FakeSlurm()


@pytest.fixture
def services(slack_context, store, slurm: FakeSlurm) -> BotContext:
    config = make_config(dataloader_probe={"factory": "mydata.datasets:build_train"})
    return slack_context(store, config, FakeClusters(slurm))


@pytest.fixture
def app(services: BotContext, slack_client) -> App:
    return build_app(services.config, services, client=slack_client,
                     listener_executor=SyncExecutor(), token_verification_enabled=False)


class World(ClickWorld):
    def hold_prompt(self) -> tuple[str, str]:
        """Approved Resubmit of 88154 -> job 88887, and the "Hold 88017?" prompt it asks."""
        self.slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
                       submit_time=1000.0)
        token, ts = self.prompt(self.run(), resume_iter=3000)
        self.click(ActionId.RESUBMIT, token, ts)
        [hold] = [m for m in self.slack.all_messages() if "Hold 88017" in m["text"]]
        return hold["blocks"][1]["elements"][0]["value"], hold["ts"]

    def actions(self) -> tuple[int, list, list]:
        return len(self.slurm.submits()), self.slurm.acted("cancel"), self.slurm.acted("hold")


@pytest.fixture
def world(app, urls, services, slack, slurm) -> World:
    return World(app, urls, services, slack, slurm, run_at=NOW, prompt_at=NOW)


# Each stale scenario: build the prompt, move the run on past it; returns (token, ts, the
# run's latest job, its state).
Scenario = Callable[[World], tuple[str, str, str, str]]


def incident_prompt_then_resume(world: World) -> tuple[str, str, str, str]:
    """88154 died; its incident prompt is up; someone runs `/train resume mix` (88887)."""
    token, ts = world.prompt(world.run(), resume_iter=3000, mem="1900G")
    assert world.train("resume mix").startswith("mix: submitted job 88887 (attempt 2)")
    return token, ts, "88887", "PENDING"


def stall_prompt_then_cancel_and_resume(world: World) -> tuple[str, str, str, str]:
    """88154 stalls (its Cancel-and-resume prompt is up); a person cancels it by hand and
    runs `/train resume mix` (88887), which then starts running."""
    token, ts = world.prompt(world.run(state="RUNNING"), offer_cancel=True)
    world.train("cancel 88154", user="U0OWNER")
    assert world.train("resume mix").startswith("mix: submitted job 88887 (attempt 2)")
    world.services.store.attempts.update(
        present(world.services.store.attempts.get_by_job("88887")).id, state="RUNNING")
    world.slurm.set(88887, state="RUNNING")
    return token, ts, "88887", "RUNNING"


def hold_prompt_then_resume(world: World) -> tuple[str, str, str, str]:
    """The "Hold 88017 until 88887 starts?" prompt is up; 88887 dies before anyone answers,
    and `/train resume mix` submits 88888."""
    token, ts = world.hold_prompt()
    world.slurm.set(88887, state="FAILED")
    assert world.train("resume mix").startswith("mix: submitted job 88888 (attempt 3)")
    return token, ts, "88888", "PENDING"


def probe_offer_then_resume(world: World) -> tuple[str, str, str, str]:
    """88154 died of a leak; its "Run DataLoader probe" offer is up; someone runs
    `/train resume mix` (88887)."""
    chain_id = world.run()
    button = create_probe_offer(world.services, recipe="mix", chain_id=chain_id,
                                job_id="88154", now=NOW, summary="88154: host_oom")
    assert button is not None
    ts = writer(world.services).post_reply(chain_id, "probe-offer", [{
        "type": "actions", "block_id": "probe", "elements": [button]}], "88154: host_oom")
    assert world.train("resume mix").startswith("mix: submitted job 88887 (attempt 2)")
    return button["value"], ts, "88887", "PENDING"


SCENARIOS: dict[ActionId, Scenario] = {
    ActionId.RESUBMIT: incident_prompt_then_resume,
    ActionId.RESUBMIT_MEM: incident_prompt_then_resume,
    ActionId.DISMISS: incident_prompt_then_resume,
    ActionId.CANCEL_RESUME: stall_prompt_then_cancel_and_resume,
    ActionId.CANCEL: stall_prompt_then_cancel_and_resume,
    ActionId.HOLD_COMPETITOR: hold_prompt_then_resume,
    ActionId.KEEP_COMPETITOR: hold_prompt_then_resume,
    ActionId.RUN_PROBE: probe_offer_then_resume,
}


def test_every_button_kind_has_a_stale_click_scenario() -> None:
    assert set(SCENARIOS) == set(ActionId)


@pytest.mark.parametrize("action", list(ActionId), ids=lambda a: a.name.lower())
def test_a_stale_click_does_nothing_and_says_out_of_date(world: World, action: ActionId) -> None:
    token, ts, latest, state = SCENARIOS[action](world)
    before = world.actions()
    answer = world.click(action, token, ts)
    want = f"Out of date: job {latest} is now the latest ({state}); nothing was done."
    assert world.actions() == before  # no sbatch, no scancel, no hold
    assert [a["text"] for a in answer] == [want]
    assert world.prompt_text(ts) == want  # the prompt itself now says so
    # and again: the prompt stays out of date, whoever clicks
    assert [a["text"] for a in world.click(action, token, ts, user="U0APPR")] == [want]
    assert world.actions() == before
    clicks = [e for e in world.services.store.audit.recent(50) if e.action == "approval.click"]
    assert [e.result for e in clicks[:2]] == ["stale", "stale"]
    assert present(world.services.store.approvals.get(token)).state == "stale"


@pytest.mark.parametrize(("state", "want"), [
    ("RUNNING", "Out of date: 88017 already started (RUNNING); nothing was held."),
    ("COMPLETED", "Out of date: 88017 is no longer queued (COMPLETED); nothing was held."),
    (None, "Out of date: 88017 is no longer queued (unknown to Slurm); nothing was held."),
])
def test_a_hold_whose_competitor_started_or_left_holds_nothing(world: World, state: str | None,
                                                               want: str) -> None:
    token, ts = world.hold_prompt()
    if state is None:
        del world.slurm.records[88017]
    else:
        world.slurm.set(88017, state=state)
    answer = world.click(ActionId.HOLD_COMPETITOR, token, ts)
    assert world.slurm.acted("hold") == []
    assert [a["text"] for a in answer] == [want]
    assert world.prompt_text(ts) == want
    assert present(world.services.store.approvals.get(token)).state == "done"  # nothing to release


def test_a_click_while_another_prompt_of_the_run_submits_does_nothing(world: World) -> None:
    """Two prompts about 88154 (a resubmit and one with --mem): the second is clicked while
    the first one's sbatch is under way; one job is submitted, the second click is told why."""
    chain_id = world.run()
    first, _ = world.prompt(chain_id, resume_iter=3000)
    second, _ = world.prompt(chain_id, resume_iter=3000, mem="1900G")
    answers = []
    real_submit = world.slurm.submit

    def submit_while_clicked(spec, **kw):  # noqa: ANN001, ANN202 - FakeSlurm.submit's shape
        answers.append(handle_click(world.services, second, ActionId.RESUBMIT_MEM, "U0APPR",
                                    NOW + 2))
        return real_submit(spec, **kw)

    world.slurm.submit = submit_while_clicked  # type: ignore[method-assign]
    assert handle_click(world.services, first, ActionId.RESUBMIT, APPROVER, NOW + 1).status \
        == "done"
    [busy] = answers
    assert (busy.status, busy.update_text) == ("busy", None)  # the prompt is left as it is
    assert busy.ephemeral == ("Out of date: <@W0LEAD> is already acting on job 88154 from "
                              "another prompt; nothing was done.")
    assert len(world.slurm.submits()) == 1
    # once that submit is recorded, the second prompt is out of date for good
    late = handle_click(world.services, second, ActionId.RESUBMIT_MEM, "U0APPR", NOW + 3)
    assert late.ephemeral == ("Out of date: job 88887 is now the latest (PENDING); nothing "
                              "was done.")
    assert len(world.slurm.submits()) == 1


def test_a_failed_resubmit_leaves_the_runs_other_prompts_usable(world: World) -> None:
    chain_id = world.run()
    first, _ = world.prompt(chain_id, resume_iter=3000)
    second, _ = world.prompt(chain_id, resume_iter=3000, mem="1900G")
    world.slurm.submit_error = ClusterError("sbatch: error: Slurm temporarily unable")
    assert handle_click(world.services, first, ActionId.RESUBMIT, APPROVER, NOW + 1).status \
        == "failed"
    world.slurm.submit_error = None
    assert handle_click(world.services, second, ActionId.RESUBMIT_MEM, APPROVER,
                        NOW + 2).status == "done"
    assert len(world.slurm.submits()) == 2  # the failed one and this one
