"""The DataLoader probe a leak incident offers: a "Run DataLoader probe" button when the recipe
names its factory (`dataloader_probe` in its config), else the command line to run by hand.

The button is an approval of its own (action `probe`, one choice), authorized, audited and
claimed once like every prompt (bot.services.approvals); approving it changes nothing in the
run. `run_requested_probes` — the scheduler's `probes` job, its side effects fenced with that
job's lease — runs each approved probe on the recipe's cluster (bot.probes.dataloader_srun:
one srun task, with the probe's deadline), posts what it found in the run's thread
(templates/probe_result.json.j2, key `probe:<token>`) and marks the approval done; a replica
that dies meanwhile leaves it approved, and the next holder of the lease runs it. A probe that
fails in trainbot itself is still answered in the thread (it failed, and why), then done.
"""

from __future__ import annotations

import logging
import shlex
from typing import Any

from bot.cluster.errors import ClusterError, said
from bot.config import Config, RecipeConfig
from bot.core.shell_lexer import one_line
from bot.core.text import N_, mrkdwn_escape
from bot.services.access import approvers_now
from bot.services.fencing import read_only
from bot.services.job_placement import job_recipe
from bot.services.ports import Blocks, BotContext, LeaseLost
from bot.services.threads import has_thread, post_safely, render
from bot.slack.views import action_id_for

log = logging.getLogger(__name__)

PROBE_ACTION = "probe"
FACTORY_FIELD = "dataloader_probe.factory"
DEFAULT_WORKERS, DEFAULT_SAMPLES = 2, 160
PROBES_EVERY_S = 10.0  # how soon after a click its probe starts (the scheduler's `probes` job)


def probe_offer(config: Config | None, recipe: str, *,
                job: RecipeConfig | None = None) -> dict[str, Any]:
    """What a leak incident of `recipe` offers: `button` (its config names the factory), the
    `command` to run it by hand with the recipe's values (workdir, env_setup, where its job
    runs: RecipeConfig.placement_flags of `job`, the recipe as the job's sbatch got it
    (bot.services.job_placement.job_recipe), else of the recipe; the factory, else
    MODULE:FACTORY), every word quoted, and the config `field` that enables the button in
    the `recipe` (None: no config names it, as in an offline `trainbot report` without
    --config; the remedy then says how to run the probe by hand, as for an adopted job)."""
    cfg = config.recipes.get(recipe) if config is not None else None
    probe = cfg.dataloader_probe if cfg is not None else None
    argv = ["trainbot", "probe", "dataloader", probe.factory if probe else "MODULE:FACTORY",
            "--workers", str(probe.workers if probe else DEFAULT_WORKERS),
            "--samples", str(probe.samples if probe else DEFAULT_SAMPLES)]
    for directory in probe.path if probe else ():
        argv += ["--path", directory]
    steps = []
    if cfg is not None:
        if cfg.workdir:
            steps.append(f"cd {shlex.quote(cfg.workdir)}")
        if cfg.env_setup:
            steps.append(one_line(cfg.env_setup))
        # where the job runs (its partition, account, qos, left-out nodes), as its submit
        placed = job if job is not None else cfg
        argv = ["srun", "--nodes=1", "--ntasks=1", *placed.placement_flags(), *argv]
    steps.append(shlex.join(argv))  # every word quoted
    return {"button": probe is not None, "command": " && ".join(steps),
            "field": FACTORY_FIELD, "recipe": recipe if cfg is not None else None}


def offers_probe(facts: dict[str, Any] | Any) -> bool:
    """Does a decision's facts call for the probe (a leak no proposed --mem finishes)?"""
    return (facts or {}).get("why") in ("leak_hopeless", "leak_limit_unknown")


def create_probe_offer(ctx: BotContext, *, recipe: str, chain_id: int, job_id: str,
                       now: float, summary: str | None = None,
                       card: Blocks | None = None) -> dict[str, Any] | None:
    """Store the probe's approval and return its button (a Block Kit element, worded by the
    templates), or None when the recipe names no factory. One open offer per job: a
    re-publish reuses it. `summary` and `card`: the message it sits in, its head line and
    the incident card under it (shown again if a click finds the run moved on)."""
    cfg = ctx.config.recipes.get(recipe)
    if cfg is None or cfg.dataloader_probe is None:
        return None
    payload = {"choices": ["probe"], "recipe": recipe, "cluster": cfg.cluster,
               "summary": summary, "job_id": str(job_id), **({"card": card} if card else {})}
    token = next((a.token for a in ctx.store.approvals.for_chain(chain_id, "pending")
                  if a.action == PROBE_ACTION and a.target_job == str(job_id)
                  and a.expires_at > now), None)
    if token is None:
        token = ctx.store.approvals.create(
            action=PROBE_ACTION, payload=payload,
            allowed=approvers_now(ctx.config, recipe).users,
            expires_at=now + ctx.config.policy_for(recipe).approval_expiry_s, now=now,
            target_job=str(job_id), chain_id=chain_id)
    button = {"kind": "probe", "action_id": action_id_for("probe").value, "value": token,
              "style": None, "from_iter": None, "mem": None, "job_id": str(job_id)}
    blocks, _ = render(ctx, "approval", recipe, {"summary": mrkdwn_escape(recipe),
                                                 "block_id": "probe",
                                                 "buttons": [button]})
    return blocks[-1]["elements"][0]


def run_requested_probes(ctx: BotContext, now: float) -> int:
    """Run every approved probe (module doc); how many were run."""
    ran = 0
    for approval in ctx.store.approvals.approved(PROBE_ACTION):
        try:
            _run_one(ctx, approval, now)
            ran += 1
        except LeaseLost:
            raise  # another replica runs the job now
        except Exception as exc:  # noqa: BLE001 - one probe's failure never stops the others
            log.exception("DataLoader probe %s failed", approval.token)
            _tell_failed(ctx, approval, exc, now)
            ctx.store.approvals.mark_done(approval.token, now=now)
    return ran


def _view(approval: Any, recipe: Any, error: Any, factory: str | None = None
          ) -> dict[str, Any]:
    """The thread's view of a probe with no result, and why (`error`)."""
    return {"recipe": recipe, "job_id": approval.target_job, "workers": [], "error": error,
            "host": None, "factory": factory, "leaking": None, "conclusive": None,
            "slope_mb": None, "grows": None}


def _tell_failed(ctx: BotContext, approval: Any, exc: Exception, now: float) -> None:
    """Who clicked the probe is told in the run's thread that it failed (an error of
    trainbot's own: a report it could not read, a template it could not fill), as a probe
    that could not run is, and it is audited; a failure to tell is logged, never raised."""
    recipe_name = approval.payload.get("recipe")
    error = N_("trainbot failed on it (`%(error)s`); the bot's log has the details",
               error=type(exc).__name__)
    try:
        _post(ctx, approval, recipe_name, _view(approval, recipe_name, error))
        ctx.store.audit.record(actor="trainbot", action="probe.dataloader", now=now,
                               recipe=recipe_name, job_id=approval.target_job,
                               result="failed", detail={"token": approval.token,
                                                        "leaking": None, "error": str(error)})
    except LeaseLost:
        raise
    except Exception:  # noqa: BLE001 - the failure itself is logged above
        log.exception("telling DataLoader probe %s failed did not work either", approval.token)


def _post(ctx: BotContext, approval: Any, recipe_name: Any, view: dict[str, Any]) -> None:
    """Post `view` in the run's thread (key `probe:<token>`); a warning when it is not."""
    view["actor"] = approval.decided_by
    key = f"probe:{approval.token}"
    posted = None
    if has_thread(ctx, approval.chain_id):
        blocks, text = render(ctx, "probe_result", recipe_name, view)
        posted = post_safely(ctx, "reply", approval.chain_id, key, blocks, text)
    if posted is None:
        log.warning("%s: DataLoader probe of %s not posted: %s", key, recipe_name, view)


def _run_one(ctx: BotContext, approval: Any, now: float) -> None:
    payload = approval.payload
    recipe_name = payload.get("recipe")
    cfg = ctx.config.recipes.get(recipe_name)
    if cfg is None or cfg.dataloader_probe is None:
        view = _view(approval, recipe_name,
                     f"recipe {recipe_name!r} names no {FACTORY_FIELD} any more")
    else:
        from bot.probes.dataloader_srun import run_dataloader_probe

        try:
            # placed where the probed job's sbatch ran it (its overrides, left-out nodes)
            placed = job_recipe(ctx.config, ctx.store, recipe_name, approval.target_job)
            view = run_dataloader_probe(read_only(ctx.clusters.runner(cfg.cluster)),
                                        recipe_name, cfg, cfg.dataloader_probe,
                                        job_id=approval.target_job, placed=placed)
        except LeaseLost:
            raise
        except ClusterError as exc:
            view = _view(approval, recipe_name, said(exc), cfg.dataloader_probe.factory)
    _post(ctx, approval, recipe_name, view)
    ctx.store.approvals.mark_done(approval.token, now=now)
    ctx.store.audit.record(actor="trainbot", action="probe.dataloader", now=now,
                           recipe=recipe_name, job_id=approval.target_job,
                           result="failed" if view.get("error") else "ok",
                           detail={"token": approval.token, "leaking": view.get("leaking"),
                                   "error": None if view.get("error") is None
                                   else str(view["error"])})
