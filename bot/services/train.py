"""Carry out a parsed `/train` command: authorize, act through the adapters, audit, answer.

Handlers call `first_delivery(ctx, trigger_id, now)`, then `execute(ctx, command, actor=…,
channel=…, now=…)` after their ack and show the returned `Reply` (ephemeral unless it says
otherwise). Every command that touches a job or a
recipe leaves one audit entry (who, what, which job, when, result), refusals included.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bot.cluster.errors import ClusterError, ClusterUnavailable
from bot.config import Config, OverrideType
from bot.core import train_grammar as c
from bot.core.arrays import array_control, recorded_plain
from bot.core.authz import Decision, can_submit
from bot.core.findings import Finding
from bot.core.nodes import left_out_beyond
from bot.core.policy import run_rows
from bot.core.slurm.job_ref import JobIdError, is_job_id
from bot.core.slurm.records import JobRecord
from bot.core.slurm.values import expand_output_pattern
from bot.core.text import N_
from bot.services import ServiceError, UsageProblem
from bot.services import competitors as comp
from bot.services.access import (
    access_for,
    may_control_job,
    recipe_of_job,
    run_of_job,
    run_told_of,
)
from bot.services.after_submit import after_person_submit
from bot.services.fencing import read_only
from bot.services.home import refresh_homes, stop_watching, watched_chain
from bot.services.leases import process_holder
from bot.services.ports import SFTP, Blocks, BotContext, Slurm
from bot.services.preflight import PreflightOptions, PreflightUsageError, run_preflight
from bot.services.runs import exclusion, submit_and_announce
from bot.services.send_job import describe_not_applied
from bot.services.stacks import StackCollector, dump_key, post_stacks
from bot.services.status import StatusReport, job_status
from bot.services.submit import describe_start
from bot.services.threads import (
    attachment_fate,
    code,
    kept_for_thread,
    open_thread,
    render,
)
from bot.store import Attempt

log = logging.getLogger(__name__)

LOG_TAIL_BYTES = 256 * 1024
# How long a command's claim is kept: Slack redelivers an unacked command within minutes.
COMMAND_CLAIM_TTL_S = 3600.0


@dataclass(frozen=True)
class Reply:
    """What the user sees: `text` (and optional blocks), to them only unless `ephemeral=False`."""

    text: str
    blocks: Blocks | None = None
    ephemeral: bool = True
    job_id: str | None = None
    chain_id: int | None = None


def first_delivery(ctx: BotContext, trigger_id: str | None, now: float) -> bool:
    """True for the one delivery of a command invocation (its Slack `trigger_id`) that is
    carried out, claimed in the store shared by the replicas; False for Slack's redelivery of
    it (a late ack), whichever replica it reaches. No trigger id: nothing to match, True."""
    if not trigger_id:
        return True
    return ctx.store.command_claims.claim(trigger_id, process_holder(), now,
                                          COMMAND_CLAIM_TTL_S)


def execute(ctx: BotContext, cmd: c.Command, *, actor: str, channel: str | None,
            now: float) -> Reply:
    """Run one command; user mistakes and cluster trouble come back as a Reply, audited. A
    command naming a job says them in the language of the recipe whose run has the job (the
    one its answer is in; access.recipe_of_job, read from the store before the command runs),
    and audits them under that recipe (an array's id or one of its tasks, `6200_2`: the run
    that records its tasks); a job of no recipe's (adopted, unknown) in the channel's
    (`say`). A job id no job has (0: parse_command refuses it, a command built elsewhere
    may not) is told as the parser tells it, never handed to Slurm's argv builders."""
    verb = c.verb_of(cmd)
    recipe = getattr(cmd, "recipe", None)
    job_id = getattr(cmd, "job_id", None)
    task = getattr(cmd, "array_task", None)
    job = None if job_id is None else str(job_id) if task is None else f"{job_id}_{task}"
    if recipe is None and job is not None:
        recipe = recipe_of_job(ctx.store, job)[0]
    try:
        if job_id is not None and not is_job_id(str(job_id)):
            raise UsageProblem(JobIdError(str(job)).text)
        return _HANDLERS[type(cmd)](ctx, cmd, actor, channel, now)
    except _Refused as exc:
        _audit(ctx, actor, verb, now, "refused", job, recipe, str(exc.reason))
        return Reply(say(ctx, recipe, "refused", channel=channel, reason=exc.reason))
    except UsageProblem as exc:
        _audit(ctx, actor, verb, now, "refused", job, recipe, str(exc))
        return Reply(say(ctx, recipe, "usage", channel=channel, problem=_said(exc),
                         usage=c.USAGE[verb]))
    except ClusterUnavailable as exc:
        _audit(ctx, actor, verb, now, "failed", job, recipe, str(exc))
        return Reply(say(ctx, recipe, "unreachable", channel=channel, error=_said(exc)))
    except (ServiceError, ClusterError) as exc:
        _audit(ctx, actor, verb, now, "failed", job, recipe, str(exc))
        return Reply(say(ctx, recipe, "failed", channel=channel, verb=verb, error=_said(exc)))


def _said(exc: Exception) -> Any:
    """What an error says: its sentence (a bot.core.text.Text the renderer translates) when
    it was raised with one, else its English text."""
    return exc.args[0] if len(exc.args) == 1 and not isinstance(exc.args[0], str) else str(exc)


def say(ctx: BotContext, recipe: str | None, kind: str, /, *, channel: str | None = None,
        **values: Any) -> str:
    """A reply's sentence of `kind` (templates/train_reply.json.j2), in the recipe's language
    (without one: the language of the recipes posting to `channel`, else slack.lang), through
    the one renderer."""
    return render(ctx, "train_reply", recipe, {"kind": kind, **values}, channel=channel)[1]


class _Refused(Exception):
    def __init__(self, decision: Decision):
        super().__init__(str(decision.reason))
        self.reason = decision.reason


def _audit(ctx: BotContext, actor: str, verb: str, now: float, result: str,
           job: str | None = None, recipe: str | None = None, detail: Any = None) -> None:
    ctx.store.audit.record(actor=actor, action=f"command.{verb}", now=now, result=result,
                           job_id=job, recipe=recipe, detail=detail)


# --------------------------------------------------------------------------------------------
# commands


def _help(ctx: BotContext, cmd: c.Help, actor: str, channel: str | None, now: float) -> Reply:
    return Reply(help_text(ctx, cmd, channel))


def help_text(ctx: BotContext, cmd: c.Help, channel: str | None) -> str:
    """`/train help [COMMAND]`: every command's usage and what it is for (or one command's),
    and the configured recipes, in the channel's language."""
    if cmd.topic:
        return say(ctx, None, "help_topic", channel=channel, usage=c.USAGE[cmd.topic],
                   what=c.HELP_LINES[cmd.topic])
    return say(ctx, None, "help", channel=channel,
               commands=[(c.USAGE[v], c.HELP_LINES[v]) for v in c.USAGE],
               recipes=", ".join(sorted(ctx.config.recipes)))


def command_error_text(ctx: BotContext, exc: c.CommandError, channel: str | None) -> str:
    """A `/train` text that does not parse: what is wrong and the right form (or the
    commands), in the channel's language."""
    return say(ctx, None, "bad_command", channel=channel, problem=exc.problem,
               usage=exc.usage, commands=", ".join(f"`{v}`" for v in c.USAGE))


def _status(ctx: BotContext, cmd: c.Status, actor: str, channel: str | None,
            now: float) -> Reply:
    report = job_status(ctx.config, cmd.target, store=ctx.store, slurm_for=ctx.clusters.slurm)
    _audit(ctx, actor, "status", now, "ok", cmd.target if cmd.is_job else None,
           None if cmd.is_job else cmd.target)
    recipe = None if cmd.is_job else cmd.target
    return Reply(say(ctx, recipe, "status", channel=channel, **status_view(report)))


def status_view(report: StatusReport) -> dict[str, Any]:
    """The values train_reply's `status` shows: title, table rows (job, recipe, state with a
    pending job's reason, attempt), the clusters that did not answer, the note, and what the
    shown runs' threads never got (the run's job, the reply's text)."""
    rows = []
    for row in report.rows:
        attempt = str(row.attempt.attempt_no) if row.attempt is not None else "-"
        reason = f" ({row.record.reason})" if row.record is not None and \
            row.record.reason and row.record.is_pending else ""
        rows.append([row.label, row.recipe or "-", row.state_text, reason, attempt])
    return {"title": report.title, "rows": rows, "unreachable": dict(report.unreachable),
            "note": report.note, "unsaid": [list(pair) for pair in report.unsaid],
            "waiting": [list(pair) for pair in report.waiting]}


def _submit(ctx: BotContext, cmd: c.Submit | c.Resume, actor: str, channel: str | None,
            now: float) -> Reply:
    verb = c.verb_of(cmd)
    require_recipe(ctx.config, cmd.recipe)
    decision = can_submit(access_for(ctx.config, cmd.recipe), actor, channel, verb)
    if not decision:
        raise _Refused(decision)
    chain_id = None
    extra: dict[str, OverrideType] = {}
    if isinstance(cmd, c.Resume):
        chain_id = _resumable_chain(ctx, cmd.recipe)
        overrides: dict[str, str] = {}
        if chain_id is not None:  # the nodes the run left out stay out, as in its resubmits
            overrides, extra = exclusion(ctx.config, cmd.recipe, None,
                                         run_rows(ctx.store.attempts.for_chain(chain_id), None))
    else:
        overrides = dict(cmd.overrides)
    result = submit_and_announce(ctx, cmd.recipe, actor=actor, now=now, overrides=overrides,
                                 chain_id=chain_id, channel=channel, reconcile_unknown=True,
                                 extra_overridable=extra)
    recipe = ctx.config.recipe(cmd.recipe)
    proposals = after_person_submit(ctx, cmd.recipe, result, now)
    _audit(ctx, actor, verb, now, "ok", result.job_id, cmd.recipe,
           {"chain_id": result.chain_id, "hold_proposals": [p.competitor for p in proposals]})
    return Reply(
        say(ctx, cmd.recipe, "submitted", recipe=cmd.recipe, job=result.job_id,
            attempt=result.attempt_no,
            start=describe_start(result, ctx.config.recipe(cmd.recipe)),
            array=result.array if result.attempt_no == 0 else None,
            asked=", ".join(str(p.competitor) for p in proposals),
            missed=describe_not_applied(result.not_applied),
            left_out=(left_out_beyond(recipe.exclude, str(result.overrides.get("exclude")))
                      if isinstance(cmd, c.Resume) and "exclude" in result.overrides else None)),
        job_id=result.job_id,
        chain_id=result.chain_id,
    )


def _resumable_chain(ctx: BotContext, recipe: str) -> int | None:
    """The recipe's latest chain to resume into; refuses while its last job still runs."""
    chain = ctx.store.chains.latest_for_recipe(recipe)
    if chain is None or chain.status != "active":
        return None
    last = ctx.store.attempts.latest(chain.id)
    if last is not None:
        rec = ctx.clusters.slurm(chain.cluster).job(int(last.job_id))
        if rec is not None and (rec.is_pending or rec.is_running):
            raise UsageProblem(N_(
                "%(recipe)s is still %(state)s as job %(job)s; cancel it first "
                "(`/train cancel %(job)s`) or check `/train status %(recipe)s`",
                recipe=recipe, state=rec.state, job=last.job_id))
    return chain.id


def _find_job(ctx: BotContext, job_id: int) -> tuple[str, str | None, Attempt | None]:
    """(cluster, recipe or None, attempt or None) of a job id: a recorded job's, a watched
    one's (no recipe), or that of the run whose thread told of the job though it does not
    record it (a lost submit's, access.run_told_of: its recipe, no attempt). The recipe is the
    one the job's run has (access.recipe_of_job): an adopted job's is None, but for a lost
    submit's job, adopted or not, the recipe of the run whose thread told of it."""
    attempt = ctx.store.attempts.get_by_job(str(job_id))
    chain = run_of_job(ctx.store, str(job_id))  # also an array's, by its tasks (no attempt)
    if chain is not None:
        return chain.cluster, recipe_of_job(ctx.store, str(job_id))[0], attempt
    for watched in ctx.store.watched_jobs.list():
        if watched.job_id == str(job_id):
            return watched.cluster, None, None
    told = run_told_of(ctx.store, str(job_id))
    if told is not None:
        return told.cluster, told.recipe or None, None
    clusters = sorted(ctx.config.clusters)
    if len(clusters) == 1:
        return clusters[0], None, None
    raise UsageProblem(N_(
        "job %(job)s was not submitted or watched by trainbot, and there are several "
        "clusters (%(clusters)s); `/train watch %(job)s` it first",
        job=job_id, clusters=", ".join(clusters)))


@dataclass(frozen=True)
class _Target:
    """The job a command names, found: its cluster, recipe, attempt, Slurm's raw id (an array
    task's own id) and the id people read (`123_4`)."""

    cluster: str
    recipe: str | None
    attempt: Attempt | None
    job_id: int
    display: str


def _target(ctx: BotContext, job_id: int, array_task: int | None) -> _Target:
    """The job `job_id`, or task `array_task` of array `job_id` (found through squeue/sacct of
    the array: its own raw id, under which trainbot acts on and records it)."""
    if array_task is None:
        cluster, recipe, attempt = _find_job(ctx, job_id)
        return _Target(cluster, recipe, attempt, job_id, str(job_id))
    cluster, recipe, _ = _find_job(ctx, job_id)
    rec = _array_task(ctx.clusters.slurm(cluster).array_tasks(job_id), job_id, array_task,
                      cluster)
    cluster, recipe, attempt = _find_job(ctx, rec.job_id)
    return _Target(cluster, recipe, attempt, rec.job_id, rec.display_id)


def _authorize_job(ctx: BotContext, job_id: int, actor: str, verb: str,
                   array_task: int | None = None) -> _Target:
    target = _target(ctx, job_id, array_task)
    _refuse_unless_may(ctx, actor, target.job_id, verb, target.display)
    return target


def _refuse_unless_may(ctx: BotContext, actor: str, job_id: int, verb: str, shown: str) -> None:
    """_Refused unless `actor` may `verb` job `job_id` (Slurm's raw id), named `shown` as the
    person wrote it (`6200_2`): access.may_control_job."""
    decision = may_control_job(ctx.config, ctx.store, actor, job_id, verb, shown=shown)
    if not decision:
        raise _Refused(decision)


def _control(ctx: BotContext, cmd: c.JobControl, actor: str, channel: str | None,
             now: float) -> Reply:
    target = _authorize_job(ctx, cmd.job_id, actor, cmd.verb, cmd.array_task)
    cluster, recipe, job_id = target.cluster, target.recipe, target.job_id
    slurm = ctx.clusters.slurm(cluster)
    tasks = (_array_tasks(slurm, job_id, cmd.verb)
             if cmd.array_task is None and not _plain_job(ctx, target) else {})
    whole = array_control(job_id, tasks.values()) if tasks else None
    getattr(slurm, cmd.verb)(job_id)
    if cmd.verb == "cancel":
        comp.release_held_for(ctx, job_id, now, "cancelled", cluster)
    else:  # a competitor trainbot holds is the person's to hold or release from now on,
        # and so is a task of the array whose own id the person named (its waiting tasks)
        comp.taken_by_person(ctx, cluster, job_id, actor, cmd.verb, now, tasks=tasks)
    _audit(ctx, actor, cmd.verb, now, "ok", target.display, recipe,
           asdict(whole) if whole is not None else None)
    raw = None if target.display == str(job_id) else job_id  # an array task's, after it
    return Reply(say(ctx, recipe, "controlled", channel=channel, verb=cmd.verb,
                     job=target.display, raw=raw, array=asdict(whole) if whole else None,
                     actor=actor), ephemeral=False, job_id=str(job_id))


def _plain_job(ctx: BotContext, target: _Target) -> bool:
    """Whether the store, as the command found the job (`_target`), settles that it is a
    plain job, no array's (bot.core.arrays.recorded_plain: an adopted job of no array). Its
    control then asks Slurm nothing more than the action: no array tasks to read. A recipe's
    run may be an array its batch script asked for (`#SBATCH --array`), and a job the store
    does not record (an approver's control of a job trainbot never saw) may be an array's:
    Slurm is asked (`_array_tasks`)."""
    attempt = target.attempt
    if attempt is None:
        return False
    chain = ctx.store.chains.get(attempt.chain_id)
    return recorded_plain(chain.kind if chain is not None else None, attempt.array_task)


def _array_tasks(slurm: Slurm, job_id: int, verb: str) -> Mapping[int, JobRecord]:
    """When `job_id` is an array's own id (`/train cancel|hold|release 6101`), its tasks'
    records by their own ids as the action finds them, just before it: `scancel 6101`
    cancels every task still running or waiting, `scontrol hold|release 6101` holds or
    releases every task still waiting; the reply says so as people see them (`6101_[0-3]`,
    bot.core.arrays.array_control), and the holds trainbot keeps of the waiting ones are the
    person's to hold or release from then on (bot.services.hold_ledger.taken_by_person).
    Empty for any other job, or when the tasks cannot be read: the action goes ahead, its
    reply names the id alone as before. Not asked of a job the store settles is no array's
    (`_plain_job`); for another, Slurm.array_tasks asks sacct only when squeue does not list
    the id as a plain job."""
    try:
        return slurm.array_tasks(job_id)
    except (ClusterUnavailable, ClusterError) as exc:
        log.warning("job %s: its array tasks could not be read before the %s (%s); "
                    "the reply names the id alone", job_id, verb, exc)
        return {}


def _logs(ctx: BotContext, cmd: c.Logs, actor: str, channel: str | None, now: float) -> Reply:
    target = _authorize_job(ctx, cmd.job_id, actor, "read the log of", cmd.array_task)
    cluster, recipe = target.cluster, target.recipe
    rec = ctx.clusters.slurm(cluster).job(target.job_id)
    path = _log_path(ctx, recipe, target.job_id, rec)
    if path is None:
        raise UsageProblem(N_("no log path known for job %(job)s (Slurm no longer knows it "
                              "and its recipe has no log_path)", job=target.display))
    text = read_tail(ctx.clusters.sftp(cluster), path, cmd.lines)
    _audit(ctx, actor, "logs", now, "ok", target.display, recipe, {"path": path})
    return Reply(say(ctx, recipe, "log_tail", channel=channel, lines=cmd.lines, path=path,
                     text=code(text),
                     empty=not text))


def _log_path(ctx: BotContext, recipe: str | None, job_id: int,
              rec: JobRecord | None) -> str | None:
    if rec is not None and rec.stdout_path:
        return str(rec.stdout_path)
    if recipe is None or ctx.config.recipe(recipe).log_path is None:
        return None
    cfg = ctx.config.recipe(recipe)
    return expand_output_pattern(cfg.log_path or "", job_id=job_id,
                                 name=cfg.job_name or recipe, workdir=cfg.workdir)


def read_tail(sftp: SFTP, path: str, lines: int) -> str:
    """The last `lines` lines of a remote file (reads at most LOG_TAIL_BYTES)."""
    try:
        size = sftp.stat(path).st_size or 0
        with sftp.open(path, "rb") as f:
            f.seek(max(0, size - LOG_TAIL_BYTES))
            data = f.read(LOG_TAIL_BYTES)
    except FileNotFoundError:
        raise UsageProblem(N_("the log `%(path)s` does not exist (yet)", path=path)) from None
    except OSError as exc:
        raise ServiceError(N_("cannot read `%(path)s`: %(error)s", path=path,
                              error=str(exc))) from None
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def _refuse_unless_may_watch(ctx: BotContext, actor: str, cluster: str, job_id: int,
                             shown: str) -> None:
    """_refuse_unless_may(…, "watch", …), except for who adopted the job with `/train watch`
    (its chain's watched_by, who sees it on the Home tab and may stop watching it): told that
    it is already watched, never refused."""
    watched = ctx.store.watched_jobs.get(cluster, str(job_id))
    chain = (ctx.store.chains.get(watched.chain_id)
             if watched is not None and watched.chain_id is not None else None)
    if chain is None or chain.watched_by != actor:
        _refuse_unless_may(ctx, actor, job_id, "watch", shown)


def _watch(ctx: BotContext, cmd: c.Watch, actor: str, channel: str | None, now: float) -> Reply:
    """Watch a job, an array task (`123_4`, under its own raw id) or a whole array (`123`:
    one thread, a row per task; the watcher's tick adds the tasks that start later). A job
    trainbot did not submit is adopted: a chain of its own (no recipe), its thread opened in
    this channel. Who may read the job's log may watch it (its thread posts the log's
    evidence): the run's team, for a job trainbot did not submit the approvers."""
    cluster, recipe, attempt = _find_job(ctx, cmd.job_id)
    slurm = ctx.clusters.slurm(cluster)
    if cmd.array_task is None:
        _refuse_unless_may_watch(ctx, actor, cluster, cmd.job_id, str(cmd.job_id))
        rec = slurm.job(cmd.job_id)
        if rec is None:
            raise UsageProblem(N_("Slurm on %(cluster)s does not know job %(job)s",
                                  cluster=cluster, job=cmd.job_id))
        if attempt is None and rec.array_job_id == rec.job_id:
            run = run_of_job(ctx.store, str(rec.job_id))
            if run is not None and run.recipe:  # a recipe's run records the array's tasks
                _audit(ctx, actor, "watch", now, "unchanged", str(rec.job_id), run.recipe)
                return Reply(say(ctx, run.recipe, "array_of_run", channel=channel,
                                 job=rec.job_id, recipe=run.recipe,
                                 watched=run.status == "active"),
                             job_id=str(rec.job_id), chain_id=run.id)
            return _watch_array(ctx, cluster, slurm.array_tasks(rec.job_id), rec, actor,
                                channel, now)
    else:
        rec = _array_task(slurm.array_tasks(cmd.job_id), cmd.job_id, cmd.array_task, cluster)
        _refuse_unless_may_watch(ctx, actor, cluster, rec.job_id, rec.display_id)
        _, recipe, attempt = _find_job(ctx, rec.job_id)
    job = str(rec.job_id)
    chain_id = attempt.chain_id if attempt else None
    if ctx.store.watched_jobs.get(cluster, job) is not None:
        _audit(ctx, actor, "watch", now, "unchanged", rec.display_id, recipe)
        return Reply(say(ctx, recipe, "already_watched", channel=channel, job=rec.display_id))
    if chain_id is None:  # adopted: a chain (and a thread) of its own
        chain_id = ctx.store.chains.create(recipe="", cluster=cluster, job_name=rec.name or "",
                                           now=now, channel=channel, kind="adopted",
                                           watched_by=actor).id
        ctx.store.attempts.record(chain_id=chain_id, job_id=job, now=now, state=rec.state or "",
                                  display_id=None if rec.display_id == job else rec.display_id)
    ctx.store.watched_jobs.add(cluster, job, now=now, chain_id=chain_id,
                               adopted=attempt is None)
    open_thread(ctx, chain_id, channel)
    refresh_homes(ctx, chain_id, now)  # on the adopter's (and its controllers') Home tabs
    _audit(ctx, actor, "watch", now, "ok", rec.display_id, recipe)
    return Reply(say(ctx, recipe, "watching", channel=channel, job=rec.display_id,
                     name=rec.name,
                     state=rec.state, raw=None if rec.display_id == job else job,
                     cluster=cluster), job_id=job, chain_id=chain_id)


def _unwatch(ctx: BotContext, cmd: c.Unwatch, actor: str, channel: str | None,
             now: float) -> Reply:
    """Stop watching a job or a whole array adopted with `/train watch`: the Home tab's Stop
    watching (bot.services.home.stop_watching: the same authorization, audit and thread
    note). A run trainbot submitted, or one task of an array watched as a whole, is not
    unwatched alone."""
    shown = str(cmd.job_id) if cmd.array_task is None else f"{cmd.job_id}_{cmd.array_task}"
    chain = watched_chain(ctx, cmd.job_id, cmd.array_task)
    if chain is None:
        raise UsageProblem(N_("trainbot does not watch %(job)s", job=shown))
    if not chain.adopted:
        raise UsageProblem(N_("%(job)s is a run of recipe %(recipe)s that trainbot submitted: "
                              "it is watched until it ends (`/train cancel %(job)s` ends it)",
                              job=shown, recipe=chain.recipe))
    if chain.kind == "array" and (cmd.array_task is not None
                                  or chain.array_job_id != cmd.job_id):
        raise UsageProblem(N_("%(job)s is a task of array %(array)s, which is watched as a "
                              "whole: `/train unwatch %(array)s` stops watching the array",
                              job=shown, array=chain.array_job_id))
    return Reply(stop_watching(ctx, chain.id, actor, now, channel=channel), job_id=shown,
                 chain_id=chain.id)


def _watch_array(ctx: BotContext, cluster: str, tasks: Mapping[int, JobRecord],
                 array: JobRecord, actor: str, channel: str | None, now: float) -> Reply:
    """Adopt the whole array `array.job_id`: one "array" chain, an attempt row and a watched
    row per started task, the array's own id watched for the tasks still to start."""
    array_id = array.job_id
    shown = str(array_id)
    for watched in ctx.store.watched_jobs.list(cluster):
        chain = ctx.store.chains.get(watched.chain_id) if watched.chain_id else None
        if chain is not None and chain.kind == "array" and chain.array_job_id == array_id \
                and chain.status == "active":
            _audit(ctx, actor, "watch", now, "unchanged", shown)
            return Reply(say(ctx, None, "array_already_watched", channel=channel, job=shown))
    chain = ctx.store.chains.create(recipe="", cluster=cluster, job_name=array.name or "",
                                    now=now, channel=channel, kind="array",
                                    array_job_id=array_id, watched_by=actor)
    started = sorted((r for r in tasks.values() if r.array_task_id is not None),
                     key=lambda r: r.array_task_id or 0)
    for rec in started:
        ctx.store.attempts.record(chain_id=chain.id, job_id=str(rec.job_id), now=now,
                                  state=rec.state or "", display_id=rec.display_id)
        ctx.store.watched_jobs.add(cluster, str(rec.job_id), now=now, chain_id=chain.id,
                                   adopted=True)
    if all(r.job_id != array_id for r in started):  # the tasks still to start
        ctx.store.watched_jobs.add(cluster, shown, now=now, chain_id=chain.id, adopted=True)
    open_thread(ctx, chain.id, channel)
    refresh_homes(ctx, chain.id, now)
    _audit(ctx, actor, "watch", now, "ok", shown, None, {"tasks": len(started)})
    waiting = any(r.array_task_id is None and not r.is_finished for r in tasks.values())
    return Reply(say(ctx, None, "watching_array", channel=channel, job=shown,
                     name=array.name,
                     tasks=len(started), waiting=waiting, cluster=cluster),
                 job_id=shown, chain_id=chain.id)


def _array_task(tasks: Mapping[int, JobRecord], array_job_id: int, task: int,
                cluster: str) -> JobRecord:
    """Task `task` of array `array_job_id` (its own record, under its own job id), or the
    UsageProblem that says why it cannot be watched yet."""
    for rec in tasks.values():
        if rec.array_task_id == task:
            return rec
    if not tasks:
        raise UsageProblem(N_("Slurm on %(cluster)s does not know job array %(job)s",
                              cluster=cluster, job=array_job_id))
    if any(rec.array_task_id is None and not rec.is_finished for rec in tasks.values()):
        raise UsageProblem(N_("task %(task)s of array %(job)s has not started yet (still "
                              "pending); watch %(job)s_%(task)s once it runs",
                              task=task, job=array_job_id))
    raise UsageProblem(N_("array %(job)s on %(cluster)s has no task %(task)s",
                          job=array_job_id, cluster=cluster, task=task))


def _stacks(ctx: BotContext, cmd: c.Stacks, actor: str, channel: str | None,
            now: float) -> Reply:
    """The job's Python stacks, grouped, to the asker; in the run's thread too, with the full
    dump attached, when the job has one (a post Slack did not take is kept for the thread:
    the asker's answer says it is not there yet). The asker's answer says where the full
    dump is, as far as is known when it is given: following in a file in the run's thread
    (shared), kept with the post kept for later, to be shared after it (whether Slack takes
    it is not known yet: the thread says so if not), too large to keep with the post kept
    for later, not shared (Slack refused the upload: the thread says so too), or nowhere (no
    thread)."""
    target = _authorize_job(ctx, cmd.job_id, actor, "read the stacks of", cmd.array_task)
    cluster, recipe, attempt, job = target.cluster, target.recipe, target.attempt, target.job_id
    report = StackCollector(ctx.config, ctx.clusters, ctx.clock,
                            placements=ctx.pyspy).collect(cluster, str(job))
    chain_id = attempt.chain_id if attempt is not None else None
    key = f"stacks:{cluster}:{job}:{now:.0f}"
    in_thread = post_stacks(ctx, chain_id, key, report, recipe)
    _audit(ctx, actor, "stacks", now, "ok" if report.problem is None else "failed",
           target.display, recipe,
           {"cause": report.problem.cause} if report.problem is not None else None)
    file_in = "none" if not in_thread else \
        f"thread_{attachment_fate(ctx, key, dump_key(key))}" if report.dump else ""
    blocks, text = render(ctx, "stacks", recipe, {
        **report.to_view(), "file_in": file_in,
        "thread_pending": in_thread and kept_for_thread(ctx, key)},
        channel=channel)
    return Reply(text, blocks, job_id=str(job), chain_id=chain_id if in_thread else None)


def _history(ctx: BotContext, cmd: c.History, actor: str, channel: str | None,
             now: float) -> Reply:
    require_recipe(ctx.config, cmd.recipe)
    chains = ctx.store.chains.for_recipe(cmd.recipe, limit=5)
    _audit(ctx, actor, "history", now, "ok", None, cmd.recipe)
    if not chains:
        return Reply(say(ctx, cmd.recipe, "never_run", recipe=cmd.recipe))
    runs = [{"chain": chain.id, "status": chain.status, "retries": chain.retries_used,
             "rows": [[a.job_id, _n(a.start_iter), _n(a.last_iter), a.result or a.state,
                       a.cause or ""] for a in ctx.store.attempts.for_chain(chain.id)]}
            for chain in chains]
    return Reply(say(ctx, cmd.recipe, "history", recipe=cmd.recipe, runs=runs))


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _preflight(ctx: BotContext, cmd: c.Preflight, actor: str, channel: str | None,
               now: float) -> Reply:
    require_recipe(ctx.config, cmd.recipe)
    decision = can_submit(access_for(ctx.config, cmd.recipe), actor, channel, "preflight")
    if not decision:
        raise _Refused(decision)
    cluster = ctx.config.recipe(cmd.recipe).cluster
    try:
        report = run_preflight(ctx.config, cmd.recipe, read_only(ctx.clusters.runner(cluster)),
                               PreflightOptions(recipe_overrides=tuple(cmd.override_strings())))
    except PreflightUsageError as exc:
        raise UsageProblem(exc.text) from None
    _audit(ctx, actor, "preflight", now, str(report.level), None, cmd.recipe)
    return Reply(say(ctx, cmd.recipe, "preflight", recipe=cmd.recipe,
                     level=_PREFLIGHT_WORDS[report.level],
                     findings=preflight_rows(report.sections)))


def preflight_rows(sections: Mapping[str, Sequence[Finding]]) -> list[list[Any]]:
    """A preflight report's findings as the reply lists them: section, level, what was found
    and (unless it passed) the fix, each a sentence the renderer translates."""
    return [[_PREFLIGHT_WORDS.get(name, name), _PREFLIGHT_WORDS[f.level], f.text,
             f.fix_text if f.level != "pass" else ""]
            for name, found in sections.items() for f in found]


# A preflight report's sections and levels, as the reply names them.
_PREFLIGHT_WORDS = {"launcher": N_("launcher"), "toolchain": N_("toolchain"),
                    "memory": N_("memory"), "forensics": N_("forensics"),
                    "pass": N_("pass"), "warn": N_("warn"), "fail": N_("fail")}


def require_recipe(config: Config, recipe: str) -> None:
    """UsageProblem naming the known recipes when `recipe` is not configured."""
    if recipe in config.recipes:
        return
    known = ", ".join(sorted(config.recipes)) or N_("none configured")
    close = difflib.get_close_matches(recipe, list(config.recipes), n=1, cutoff=0.6)
    if close:
        raise UsageProblem(N_("no recipe %(recipe)r (known: %(known)s) — did you mean "
                              "%(close)r?", recipe=recipe, known=known, close=close[0]))
    raise UsageProblem(N_("no recipe %(recipe)r (known: %(known)s)", recipe=recipe,
                          known=known))


_Handler = Callable[[BotContext, Any, str, str | None, float], Reply]

_HANDLERS: dict[type, _Handler] = {
    c.Help: _help,
    c.Status: _status,
    c.Submit: _submit,
    c.Resume: _submit,
    c.JobControl: _control,
    c.Logs: _logs,
    c.Watch: _watch,
    c.Unwatch: _unwatch,
    c.Stacks: _stacks,
    c.History: _history,
    c.Preflight: _preflight,
}
