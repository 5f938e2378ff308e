"""Slurm through the SSH runner: submit, read job state, hold / release / requeue / cancel.

Thin on purpose: argv comes from the pure builders in `bot.core.slurm`, text goes back to
its pure parsers; this class only runs commands and turns failures into errors.

Rules it keeps:
- `jobs(ids)` makes exactly one squeue and one sacct call for any number of jobs;
  `memory(ids)` exactly one sstat call.
- A controller or database that does not answer raises `ClusterUnavailable`, never an empty
  result: an empty dict would read as "job not found" and could make the bot resubmit.
- squeue is read with `--Format=…` and its filters (`--jobs=…`) unless `use_json=True`:
  `squeue --json` ignores every filter and dumps every job of the cluster, which on a busy
  cluster is megabytes per watcher tick and load on slurmctld. sacct is read with
  `--parsable2` unless `sacct_json=True`, because 22.05's `sacct --json` reports `exit 3` as
  return code 0 (real output in tests/fixtures/slurm/sacct.json); from 23.02 on its StdOut
  and StdErr too (the release asked once per client, `slurm_release()`), so a finished job's log
  is found after squeue forgot it.
- With `check_json` (the config's `use_json`), the Slurm version is asked before the first
  read and JSON is refused, with the reason logged, on releases whose JSON is known wrong
  (`bot.core.slurm.version.choose_parsers`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.cluster.errors import (
    ChannelClosed,
    ClusterUnavailable,
    CommandFailed,
    CommandTimedOut,
    OutcomeUnknown,
    OutputTooLarge,
    brief_command,
    said,
    submit_advice,
)
from bot.core.slurm.competitors import filter_competitors
from bot.core.slurm.errors import SlurmParseError, SlurmReportedError
from bot.core.slurm.records import JobRecord, merge_records
from bot.core.slurm.sacct import (
    parse_sacct_json,
    parse_sacct_parsable,
    sacct_argv,
    sacct_fields,
)
from bot.core.slurm.sbatch import SubmitSpec, parse_sbatch_output, sbatch_argv
from bot.core.slurm.scancel import scancel_argv, scancel_status
from bot.core.slurm.scontrol import scontrol_argv
from bot.core.slurm.squeue import parse_squeue_json, parse_squeue_parsable, squeue_argv
from bot.core.slurm.sstat import StepMemory, parse_sstat, sstat_argv, sstat_missing
from bot.core.slurm.version import (
    ParserChoice,
    SlurmInfo,
    choose_parsers,
    parse_version,
    sinfo_version_argv,
)
from bot.core.takeover import scancel_limits
from bot.core.text import N_

if TYPE_CHECKING:
    from bot.services.ports import CommandOutput, Runner

log = logging.getLogger(__name__)

# stderr of a Slurm client whose controller (slurmctld) or database (slurmdbd) is not there.
UNAVAILABLE_RE = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|"
    r"Connection timed out|Problem talking to the database|slurm_persist_conn_open|"
    r"Zero Bytes were transmitted or received|Communication connection failure|"
    r"Transport endpoint is not connected|No route to host|Network is unreachable|"
    r"backup controller in standby|Unable to establish controller|"
    r"Slurmctld\b.*not responding",
    re.IGNORECASE,
)
# A client whose request may have reached the controller, whose answer did not come back
# (`slurm_submit_batch_job error: Socket timed out on send/recv operation`): for a command
# that changes something, an OutcomeUnknown (sbatch may still have queued the job).
_UNANSWERED_RE = re.compile(r"Socket timed out on send/recv", re.IGNORECASE)
# squeue given a single id the controller no longer (or never) knew: the job is simply absent.
_INVALID_JOB_RE = re.compile(r"Invalid job id specified", re.IGNORECASE)
# `scontrol release` of a job that has nothing left to release, measured on 22.05.8 and 24.11.5
# (docs/architecture.md, "scontrol release"): a pending or running job that is not held exits 0
# silently; a finished one exits 1 with "Job has already finished for job N" (and
# "slurm_suspend error: Job has already finished"); one Slurm no longer knows exits 1 with
# "Invalid job id specified for job N". Neither is held, so the release has nothing to undo.
_NOTHING_TO_RELEASE_RE = re.compile(
    r"Job has already finished|Invalid job id specified", re.IGNORECASE)
# `scontrol hold|release ARRAY` answers task by task once a task of the array has ended,
# measured on 22.05: exit 1, "658_0: Job has already finished" then "658_1-3: No error". The
# tasks still there were acted on (a hold reaches those that wait): an answer, not a failure,
# when every line is one of those two and at least one task said "No error".
_ARRAY_PARTLY_ENDED_RE = re.compile(
    r"\A(?=[\s\S]*: No error\s*(?:\n|\Z))"
    r"(?:[^\s:]+: (?:No error|Job has already finished)[ \t]*(?:\n|\Z))+\Z")
# The probe's `squeue --json` failing for lack of the openapi plugin (no JSON support).
# sstat's per-job complaints: an answer about that job, not a failure of the call.
_SSTAT_PER_JOB_RE = re.compile(
    r"No steps running for job|couldn't get steps for job", re.IGNORECASE)
_NO_JSON_RE = re.compile(r"unrecognized option|invalid option|plugin|not supported", re.I)


class SlurmClient:
    """One cluster's Slurm, reached through a `Runner` (bot.cluster.ssh).

    `use_json`: read squeue's JSON (True) or its filtered `--Format` columns (False, None:
    the default; see the module doc). Tests run both paths against the real cluster.
    `probe()` still says whether `squeue --json` works (`trainbot doctor` reports it).
    `sacct_json`: read sacct's JSON instead of `--parsable2` (see the module docstring).
    `check_json`: probe the version before the first read and drop both JSON paths where the
    release's JSON is known wrong (`parsers.refusal` says why).
    """

    def __init__(
        self,
        runner: Runner,
        *,
        use_json: bool | None = None,
        sacct_json: bool = False,
        check_json: bool = False,
        timeout: float | None = None,
    ):
        self.runner = runner
        self.use_json = use_json
        self.sacct_json = sacct_json
        self.check_json = check_json
        self.timeout = timeout
        self._info: SlurmInfo | None = None
        self._release: tuple[int, ...] | None = None
        self._release_asked = False
        self.parsers: ParserChoice | None = None

    # ---- plumbing ---------------------------------------------------------------------------

    def _run(self, argv: Sequence[str], *, effects: bool, stdin: str | None = None,
             allow: re.Pattern[str] | None = None,
             env: Mapping[str, str] | None = None,
             timeout: float | None = None) -> CommandOutput:
        """Run argv; controller silence -> ClusterUnavailable, other failures -> CommandFailed.

        `effects`: the command changes something on the cluster (sbatch, scancel, scontrol
        hold / release / requeue), so an end trainbot did not see is an OutcomeUnknown: it
        may or may not have taken effect. That is a channel closed before the exit status
        came (the runner's ChannelClosed) and, for such a command, one that outlived its
        timeout, or one cut for flooding its output (the runner's OutputTooLarge; a read's stays
        that error). A read's are a ReadCutOff (its channel closed first) or a plain
        ClusterUnavailable (past its timeout: the controller is overloaded or down), both
        saying nothing about the jobs and safe to ask again. Never a CommandFailed.

        Such a command whose client says its request's answer did not come (`Socket timed
        out on send/recv operation`: Slurm may have carried it out) is an OutcomeUnknown too;
        a read's is a ClusterUnavailable.

        `allow` names stderr that is an answer rather than a failure (e.g. an unknown job id).
        `env` values reach the command's environment only (never its argv, so never an error).
        `timeout`: this command's, when not the client's (`self.timeout`, else the runner's).
        """
        try:
            result = self.runner.run(argv, stdin=stdin,
                                     timeout=self.timeout if timeout is None else timeout,
                                     check=False, env=env or None)
        except CommandTimedOut as exc:
            what = N_("`%(command)s` did not answer within %(timeout)s s: the Slurm controller "
                      "is overloaded or down", command=brief_command(argv),
                      timeout=f"{exc.timeout:g}")
            if effects:
                raise OutcomeUnknown.timed_out(argv, exc, what=what) from exc
            raise ClusterUnavailable(what) from exc
        except ChannelClosed as exc:
            if effects:
                raise
            raise exc.as_read() from exc  # a read cut off: nothing changed, ask again
        except OutputTooLarge as exc:
            if effects:  # cut before its end: it may have taken effect
                raise OutcomeUnknown.flooded(exc) from exc
            raise
        if result.exit_code == 0:
            return result
        stderr = result.stderr.strip()
        if effects and _UNANSWERED_RE.search(stderr):
            raise OutcomeUnknown(argv, N_(
                "%(what)s; it may or may not have taken effect", what=N_(
                    "Slurm did not answer `%(command)s` in time (exit %(code)s): %(stderr)s",
                    command=brief_command(argv), code=result.exit_code, stderr=_tail(stderr))))
        if UNAVAILABLE_RE.search(stderr):
            raise ClusterUnavailable(N_(
                "Slurm did not answer `%(command)s` (exit %(code)s): %(stderr)s. Check "
                "slurmctld/slurmdbd on the cluster; nothing was concluded about the jobs.",
                command=brief_command(argv), code=result.exit_code, stderr=_tail(stderr)))
        if allow is not None and allow.search(stderr):
            return result
        raise CommandFailed(list(argv), result.exit_code, result.stderr, result.stdout)

    def probe(self) -> SlurmInfo:
        """Slurm version and JSON support, asked once per client and cached; sets `parsers`
        (and turns JSON off where the release's JSON is known wrong)."""
        if self._info is None:
            argv = sinfo_version_argv()
            version = self._run(argv, effects=False).stdout.strip()
            try:
                release = parse_version(version)
            except SlurmParseError as exc:
                raise exc.in_answer_to(argv) from exc
            self._release, self._release_asked = release, True
            self.parsers = choose_parsers(
                release, want_json=bool(self.use_json) or self.sacct_json)
            if self.parsers.refusal:
                log.warning("not reading --json: %s", self.parsers.refusal)
                self.use_json, self.sacct_json = False, False
            if self.parsers.warning:
                log.warning("%s", self.parsers.warning)
            if self.use_json is not None:
                has_json = self.use_json
            else:
                has_json = self._probe_json()
            self._info = SlurmInfo(version=version, has_json=has_json)
            log.info("slurm %s, squeue --json %s", version, "works" if has_json else "unused")
        return self._info

    def slurm_release(self) -> tuple[int, ...] | None:
        """The cluster's Slurm release, (24, 11, 5): `sinfo --version` asked once per client
        (cached; `probe` asks it too). None when it cannot be read: then only what every
        release has is asked for (a wrong guess would fail every sacct call on 22.05)."""
        if not self._release_asked:
            try:  # ClusterUnavailable goes up (asked again next time); the rest is an answer
                answer = self._run(sinfo_version_argv(), effects=False)
                self._release = parse_version(answer.stdout)
            except (CommandFailed, SlurmParseError) as exc:
                log.warning("cannot tell the Slurm release (%s); sacct is not asked for "
                            "StdOut/StdErr", exc)
            self._release_asked = True
        return self._release

    def _check_version(self) -> None:
        if self.check_json and self._info is None:
            self.probe()

    def _probe_json(self) -> bool:
        try:
            result = self._run(squeue_argv(json=True), effects=False)
        except CommandFailed as exc:
            if _NO_JSON_RE.search(exc.stderr):
                return False
            raise
        try:
            json.loads(result.stdout)
        except json.JSONDecodeError:
            return False
        return True

    def _json(self) -> bool:
        self._check_version()
        return bool(self.use_json)

    # ---- reading ----------------------------------------------------------------------------

    def jobs(self, ids: Iterable[int]) -> dict[int, JobRecord]:
        """One record per job id that squeue or sacct knows; unknown ids are simply absent.
        An array's id brings every task of the array too, each under its own raw id (what
        squeue and sacct list for it): the watcher finds a watched array's new tasks there.

        Exactly one squeue and one sacct call, however many ids. Raises ClusterUnavailable
        when either command cannot reach Slurm.
        """
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        live = self._squeue(wanted)
        acct = self._sacct(wanted)
        merged = merge_records(live, acct)
        arrays = set(wanted)
        return {job_id: rec for job_id, rec in merged.items()
                if job_id in arrays or rec.array_job_id in arrays}

    def job(self, job_id: int) -> JobRecord | None:
        """`jobs([job_id])` for one id; None when neither squeue nor sacct knows it."""
        return self.jobs([job_id]).get(job_id)

    def array_tasks(self, array_job_id: int) -> dict[int, JobRecord]:
        """The tasks of array `array_job_id` by their own ids (the pending remainder too);
        empty when Slurm knows no such array. squeue and sacct given the array's id list
        every task of it. squeue is asked first: when it lists the id as a job of no array
        (a plain job), that is the answer, empty, and sacct is not asked; it is when squeue
        lists a task of the array (sacct has those that ended) or does not know the id."""
        live = self._squeue([array_job_id])
        if array_job_id in live and not any(rec.array_job_id == array_job_id
                                            for rec in live.values()):
            return {}
        merged = merge_records(live, self._sacct([array_job_id]))
        return {job_id: rec for job_id, rec in merged.items()
                if rec.array_job_id == array_job_id}

    def _squeue(self, ids: Sequence[int]) -> dict[int, JobRecord]:
        if self._json():
            argv = squeue_argv(json=True)
            text = self._run(argv, effects=False).stdout
            records = self._parse(parse_squeue_json, argv, text, self._version_hint(), jobs=ids)
            wanted = set(ids)
            return {k: v for k, v in records.items() if k in wanted or v.array_job_id in wanted}
        argv = squeue_argv(json=False, job_ids=ids)
        result = self._run(argv, effects=False, allow=_INVALID_JOB_RE)
        if result.exit_code != 0:  # "Invalid job id specified": the controller forgot it
            return {}
        return self._parse(parse_squeue_parsable, argv, result.stdout, jobs=ids)

    def _sacct(self, ids: Sequence[int]) -> dict[int, JobRecord]:
        self._check_version()
        if self.sacct_json:
            argv = sacct_argv(ids, json=True)
        else:
            argv = sacct_argv(ids, fields=sacct_fields(self.slurm_release()))
        parser = parse_sacct_json if self.sacct_json else parse_sacct_parsable
        return self._parse(parser, argv, self._run(argv, effects=False).stdout, jobs=ids)

    def _version_hint(self) -> str | None:
        return self._info.version if self._info is not None else None

    @staticmethod
    def _parse(parser, argv: Sequence[str], text: str, *args: object,  # noqa: ANN001
               jobs: Sequence[int] = ()) -> dict[int, JobRecord]:
        """`parser`'s records in `text`, Slurm's answer to `argv` (asked about `jobs`)."""
        try:
            return parser(text, *args)
        except SlurmReportedError as exc:
            # squeue --json with slurmctld down exits 0 and lists the failure in "errors".
            raise ClusterUnavailable(N_(
                "Slurm did not answer `%(command)s`: %(error)s. Check slurmctld/slurmdbd on the "
                "cluster; nothing was concluded about the jobs.", command=brief_command(argv),
                error=said(exc))) from exc
        except SlurmParseError as exc:
            raise exc.in_answer_to(argv, jobs) from exc

    def memory(self, job_ids: Iterable[int]) -> dict[int, StepMemory]:
        """Host memory (MaxRSS/AveRSS of the largest running step) per running job.

        Exactly one `sstat --allsteps` call, however many ids. A job with no running step
        (pending, finished, unknown) is simply absent. Raises ClusterUnavailable when Slurm
        does not answer, including the 22.05 case where sstat exits 0 and says only
        "couldn't get steps for job N" for EVERY id (what a dead slurmctld looks like; callers
        pass ids squeue has just reported running, so a whole batch of unknown ids is not an
        answer). Raises CommandFailed for anything else sstat refuses.
        """
        wanted = sorted(set(job_ids))
        if not wanted:
            return {}
        argv = sstat_argv(wanted)
        result = self._run(argv, effects=False, allow=_SSTAT_PER_JOB_RE)
        try:
            found = parse_sstat(result.stdout)
        except SlurmParseError as exc:
            raise exc.in_answer_to(argv, wanted) from exc
        no_steps, unknown = sstat_missing(result.stderr)
        if not found and (UNAVAILABLE_RE.search(result.stderr)
                          or (not no_steps and set(wanted) <= unknown)):
            raise ClusterUnavailable(N_(
                "Slurm did not answer `%(command)s`: sstat could not get the steps of any of "
                "%(n)s running job(s) (%(stderr)s). Check slurmctld on the cluster; nothing was "
                "concluded about the jobs.", command=brief_command(argv), n=len(wanted),
                stderr=_tail(result.stderr)))
        return {job_id: found[job_id] for job_id in wanted if job_id in found}

    def pending_competitors(
        self,
        *,
        user: str | None = None,
        account: str | None = None,
        partition: str | None = None,
        qos: str | None = None,
        exclude: Iterable[int] = (),
    ) -> list[JobRecord]:
        """Pending (incl. held) jobs of that user/account on that partition/QOS, the job
        Slurm would start first (highest priority, then oldest) first. One squeue call."""
        if user is None and account is None:
            raise ValueError("pending_competitors needs a user or an account to look for")
        if self._json():
            argv = squeue_argv(json=True)
            text = self._run(argv, effects=False).stdout
            records = self._parse(parse_squeue_json, argv, text, self._version_hint())
        else:
            argv = squeue_argv(json=False, user=user, account=account, partition=partition,
                               qos=qos, states="PENDING")
            records = self._parse(parse_squeue_parsable, argv,
                                  self._run(argv, effects=False).stdout)
        return filter_competitors(records.values(), user=user, account=account,
                                  partition=partition, qos=qos, exclude=exclude)

    # ---- acting -----------------------------------------------------------------------------

    def submit(self, spec: SubmitSpec, *, script: str | None = None) -> int:
        """Submit with `sbatch --parsable` and return the job id.

        Exactly one of `script` (text, sent on stdin) or `spec.script_path` (a file on the
        cluster). Every value travels as one argv word: nothing is ever interpreted by a
        shell. `spec.env` goes as the command's environment, so its values (tokens) are in
        no argv, no process list and no CommandFailed.

        Raises ClusterUnavailable saying to look for the job's name in squeue before
        submitting again; an end of sbatch trainbot did not see (its channel closed before
        the answer, or it outlived its timeout) stays an OutcomeUnknown (ChannelClosed, what
        its caller reconciles with Slurm first), with the same advice; so does an answer of
        sbatch's, exit 0, without a job id trainbot can read (a site's sbatch wrapper printing
        its own words): the job is most likely queued, under an id only its name can find.
        """
        if (script is None) == (spec.script_path is None):
            raise ValueError("submit needs exactly one of script (text) or script_path")
        advice = submit_advice(spec.job_name)
        argv = sbatch_argv(spec)
        try:
            result = self._run(argv, effects=True, stdin=script, env=spec.env)
        except OutcomeUnknown as exc:
            raise exc.advised(advice) from exc
        except ClusterUnavailable as exc:
            raise ClusterUnavailable(N_("%(first)s %(then)s", first=said(exc), then=advice)
                                     ) from exc
        try:
            return parse_sbatch_output(result.stdout)
        except SlurmParseError as exc:  # it exited 0: most likely queued, its id unread
            raise OutcomeUnknown(argv, N_(
                "`%(command)s` exited 0 but trainbot cannot read a job id in what it printed "
                "(%(error)s)", command=brief_command(argv), error=said(exc)),
                advice=advice) from exc

    def hold(self, job_id: int) -> None:
        """`scontrol hold`: priority 0, reason JobHeldUser (JobHeldAdmin if we are admin). An
        array's own id holds every task of it that waits; that some of its tasks had ended
        already is no failure (`_ARRAY_PARTLY_ENDED_RE`)."""
        self._run(scontrol_argv("hold", job_id), effects=True, allow=_ARRAY_PARTLY_ENDED_RE)

    def release(self, job_id: int) -> None:
        """`scontrol release`. A job with no hold left to release (pending or running and not
        held: Slurm says nothing; finished, or no longer known: Slurm says so, exit 1) is
        released already, not a failure: trainbot releases holds whose outcome it did not see,
        and a job that ended while held is no one's problem. An array's own id releases every
        task of it that waits; that some of its tasks had ended already (`_ARRAY_PARTLY_ENDED_RE`,
        exit 1 too) is logged as such, not as a job with no hold left."""
        result = self._run(scontrol_argv("release", job_id), effects=True,
                           allow=_NOTHING_TO_RELEASE_RE)
        if result.exit_code == 0:
            return
        if _ARRAY_PARTLY_ENDED_RE.search(result.stderr.strip()):
            log.info("array %s: its tasks still there released, those that had ended left as "
                     "they were: %s", job_id, _tail(result.stderr))
        else:
            log.info("job %s had no hold left to release: %s", job_id, _tail(result.stderr))

    def requeue(self, job_id: int) -> None:
        """Put a running/finished batch job back to pending (it restarts, restart_count+1)."""
        self._run(scontrol_argv("requeue", job_id), effects=True)

    def cancel(self, job_id: int) -> None:
        """`timeout -k KILL TERM scancel JOB`: the login node ends the scancel within the run
        bound its runner waits for (`self.timeout`, else the runner's command_s), the one
        bot.core.takeover counts it at (`scancel_limits`), so a scancel whose channel
        dropped cannot reach slurmctld after the click's takeover. One the login node
        stopped is an OutcomeUnknown: it may have reached slurmctld. scancel's own status,
        which its shell reports (bot.core.slurm.scancel.scancel_status), decides otherwise,
        also when it is one of `timeout`'s (124, 137): a CommandFailed with it, or nothing
        when it was 0 (scancel had ended as the login node stopped its shell)."""
        deadlines = self.runner.deadlines()
        if self.timeout is not None:
            deadlines = replace(deadlines, command_s=self.timeout)
        argv = scancel_argv(job_id, limits=scancel_limits(deadlines))
        try:
            self._run(argv, effects=True, timeout=deadlines.command_s)
        except CommandFailed as exc:
            status = scancel_status(exc.exit_code, exc.stdout)
            if status is None:
                raise OutcomeUnknown(argv, N_(
                    "%(what)s; it may or may not have taken effect", what=N_(
                        "`%(command)s` did not end within its %(timeout)s s on the login "
                        "node, which stopped it (exit %(code)s)", command=brief_command(argv),
                        timeout=f"{deadlines.command_s:g}", code=exc.exit_code))) from exc
            if status == 0:
                return
            if status != exc.exit_code:
                raise CommandFailed(argv, status, exc.stderr, exc.stdout) from exc
            raise


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


__all__ = ["SlurmClient", "UNAVAILABLE_RE"]
