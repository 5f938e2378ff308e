"""`preflight RECIPE`: catch the launcher, toolchain and memory failures before a job holds GPUs.

Four sections, each a list of pass / warn / fail findings:
- launcher: the recipe's batch script (read over SFTP, or a local file) through the launcher
  lint, plus shellcheck where it is installed;
- toolchain: a short `srun` on the recipe's partition with the recipe's env (bot.probes.toolchain);
- memory: the checkpoint-save host-memory estimate against `--mem` and the site cap;
- forensics: can the bot read a stalled job's stacks (py-spy placed, and tried on a node by the
  toolchain probe: uid, kernel.yama.ptrace_scope), and will an NCCL timeout leave
  flight-recorder dumps (a multi-GPU recipe that could and does not is warned about).

Takes its cluster adapter (a `Runner`: `run` + `sftp`) as an argument; ClusterUnavailable and
HostKeyRejected propagate so the caller can exit 2.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cluster.errors import ClusterError, said
from bot.config import SLURM_OVERRIDE_FIELDS
from bot.core.checkpoints import DEFAULT_POINTER, lookup_stopped
from bot.core.findings import Finding, Level, worst_level
from bot.core.flight_recorder import DUMP_FILE_ENV, records_on_timeout
from bot.core.launcher_lint import (
    ArgOverrides,
    after_toolchain_probe,
    lint_launcher,
    python_scripts_in,
)
from bot.core.memory_budget import (
    MemoryBudget,
    SaveMemoryInputs,
    SaveMode,
    estimate_save_peak,
    format_params,
    parse_count,
)
from bot.core.text import N_, Text, join_text
from bot.core.units import GIB, parse_size
from bot.services.overrides import OverrideError, apply_overrides, parse_overrides
from bot.services.ports import SFTP, Runner
from bot.services.resume_point import submit_env

if TYPE_CHECKING:
    from bot.config import ClusterConfig, Config, RecipeConfig

MAX_SCRIPT_BYTES = 1024 * 1024
DEFAULT_WORKER_RSS = 2 * GIB


class PreflightUsageError(ValueError):
    """The recipe or the options cannot be preflighted as given: `text` says the fix (a
    sentence Slack shows translated), `str()` in English."""

    def __init__(self, text: Text) -> None:
        self.text = text
        super().__init__(str(text))


@dataclass(frozen=True)
class PreflightOptions:
    """Overrides from CLI flags; None means "from the recipe's `preflight:` section and its
    cluster's memory caps in the config"."""

    script_path: str | None = None  # local launcher file instead of the recipe's sbatch_script
    params: int | None = None
    ranks_per_node: int | None = None
    workers_per_rank: int | None = None
    worker_rss_bytes: int | None = None
    mem_bytes: int | None = None
    per_gpu_cap_bytes: int | None = None
    site_floor_bytes: int | None = None
    save_mode: SaveMode | None = None
    ema: bool | None = None
    toolchain: bool = True
    env_setup: str | None = None  # shell snippet activating the env (config text, not Slack)
    python: str = "python3"
    probe_srun_args: tuple[str, ...] = ()
    toolchain_timeout: float = 600.0
    shellcheck: bool = True
    #: The run's `key=value` overrides, as `submit` takes them: Slurm fields replace the
    #: recipe's, the others reach the script as arguments after the recipe's `args`.
    recipe_overrides: tuple[str, ...] = ()


@dataclass
class PreflightReport:
    recipe: str
    sections: dict[str, list[Finding]] = field(default_factory=dict)
    budget: MemoryBudget | None = None
    toolchain_node: dict[str, Any] = field(default_factory=dict)
    script_source: str | None = None

    @property
    def level(self) -> Level:
        return worst_level(f for fs in self.sections.values() for f in fs)

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "level": self.level,
            "ok": self.level != "fail",
            "script": self.script_source,
            "sections": {
                name: {"level": worst_level(fs), "checks": [f.to_json() for f in fs]}
                for name, fs in self.sections.items()
            },
            "memory": self.budget.to_json() if self.budget else None,
            "toolchain_node": self.toolchain_node,
        }


def gpus_in_gres(gres: str | None) -> int | None:
    """GPUs per node in a Slurm gres string: `gpu:4` -> 4, `gpu:a100:2` -> 2, `gpu` -> 1."""
    if not gres:
        return None
    for item in gres.split(","):
        parts = item.strip().split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) > 1 and parts[-1].isdigit():
            return int(parts[-1])
        return 1
    return None


def _one_gpu(gres: str | None) -> str | None:
    """The same GPU type as the recipe, one of it: enough to prove Triton on the worker."""
    if not gres or gpus_in_gres(gres) is None:
        return None
    for item in gres.split(","):
        parts = item.strip().split(":")
        if parts[0] == "gpu":
            kind = (
                parts[1] if len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()) else None
            )
            return f"gpu:{kind}:1" if kind else "gpu:1"
    return None


# ---------------------------------------------------------------------------- launcher


def _read_remote(sftp: SFTP, path: str, limit: int = MAX_SCRIPT_BYTES) -> str:
    with sftp.open(path, "rb") as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


def script_paths_on_cluster(recipe: RecipeConfig) -> tuple[str, ...]:
    """Where sbatch looks for the recipe's `sbatch_script`, in its order, as SFTP and a login
    shell (both starting in the home) name them: an absolute path as it is; a relative one
    under the workdir (sbatch's --chdir) first, then in the home (sbatch's own cwd, where the
    login shell starts; measured with strace on 22.05: --chdir, then PATH, then its cwd). The
    first that exists is the one sbatch opens. Empty for a submit_command recipe."""
    path = recipe.sbatch_script
    if path is None:
        return ()
    if path.startswith("/") or not recipe.workdir:
        return (path,)
    return (posixpath.join(recipe.workdir, path), path)


def lint_section(
    recipe_name: str,
    recipe: RecipeConfig,
    options: PreflightOptions,
    runner: Runner | None,
    read_local: Callable[[str], str] = lambda p: Path(p).read_text(),
) -> tuple[list[Finding], str | None]:
    """Lint findings for the recipe's launcher, and where the script was read from."""
    python_sources: dict[str, str] = {}
    if options.script_path:
        try:
            text = read_local(options.script_path)
        except OSError as exc:
            raise PreflightUsageError(N_("cannot read --script %(path)s: %(error)s",
                                         path=options.script_path, error=str(exc))) from exc
        source = options.script_path
        base = str(Path(options.script_path).parent)
        for name in python_scripts_in(text):
            if "$" in name:
                continue
            try:
                python_sources[name] = read_local(str(Path(base) / name))
            except OSError:
                pass
    else:
        paths = script_paths_on_cluster(recipe)
        if not paths:
            return [
                Finding(
                    "launcher",
                    "warn",
                    None,
                    N_("the recipe submits through a site wrapper (submit_command): no batch "
                       "script to lint"),
                    N_("pass --script PATH to lint the launcher"),
                )
            ], None
        if runner is None:
            raise PreflightUsageError(N_("no cluster connection to read the batch script from"))
        sftp = runner.sftp()
        found: tuple[str, str] | None = None
        failure: OSError | None = None
        for candidate in paths:  # sbatch's order: the first it finds is the one it submits
            try:
                found = (candidate, _read_remote(sftp, candidate))
                break
            except OSError as exc:
                failure = failure or exc
        if found is None:
            path = paths[0]
            return [
                Finding(
                    "launcher",
                    "fail",
                    None,
                    N_("cannot read the recipe's batch script %(path)s on the cluster: %(error)s",
                       path=path, error=str(failure)),
                    N_("fix recipes.<name>.sbatch_script (absolute, or relative to workdir or "
                       "the home)"),
                )
            ], path
        path, text = found
        source = f"cluster:{path}"
        bases = [b for b in (recipe.workdir, posixpath.dirname(path)) if b]
        for name in python_scripts_in(text):
            if "$" in name:
                continue
            for base in bases:
                try:
                    python_sources[name] = _read_remote(sftp, posixpath.join(base, name))
                    break
                except OSError:
                    continue
    # sbatch passes the recipe's args to its sbatch_script (a submit wrapper's are its own),
    # and after them the run's overrides that are not Slurm fields
    script_args = recipe.args if recipe.sbatch_script is not None else None
    given = {item.partition("=")[0].strip() for item in options.recipe_overrides}
    arg_overrides = ArgOverrides(recipe_name, tuple(
        k for k in recipe.overridable if k not in SLURM_OVERRIDE_FIELDS and k not in given))
    findings = lint_launcher(text, python_sources, script_args, arg_overrides)
    if options.shellcheck:
        from bot.probes.shellcheck import run_shellcheck

        extra = run_shellcheck(text)
        if extra is None:
            findings.append(
                Finding(
                    "shellcheck",
                    "pass",
                    None,
                    N_("shellcheck is not installed here: skipped (apt-get install shellcheck)"),
                )
            )
        else:
            findings.extend(extra)
    return findings, source


# ---------------------------------------------------------------------------- memory


PASS_PARAMS = N_("pass --params (e.g. --params 1.4B)")


def _params_from_cluster(recipe: RecipeConfig,
                         runner: Runner | None) -> tuple[int | None, Text | str, Text]:
    """Parameter count from the recipe's latest complete DCP checkpoint, read over SFTP;
    where it came from (or why there is none), and what to do without one."""
    if recipe.checkpoint is None or runner is None:
        return None, N_("the recipe has no checkpoint dir"), PASS_PARAMS
    from bot.cluster.checkpoints import probe_recipe_checkpoints
    from bot.probes.checkpoint_verify import (
        CheckpointUnreadable,
        param_count_from_metadata,
        parse_metadata_bytes,
    )

    sftp = runner.sftp()
    try:
        decision = probe_recipe_checkpoints(sftp, recipe.checkpoint)
    except OSError as exc:
        return None, N_("cannot list %(path)s: %(error)s", path=recipe.checkpoint.dir,
                        error=str(exc)), PASS_PARAMS
    if decision.bound is not None and decision.bound.symlinks == 0:
        return None, lookup_stopped(recipe.checkpoint.dir, decision), N_(
            "move the old checkpoints and other files out of the directory (a resume of this "
            "recipe is refused until then), or pass --params (e.g. --params 1.4B)")
    if decision.bound is not None and decision.bound.symlinks is not None:
        return None, lookup_stopped(recipe.checkpoint.dir, decision), N_(
            "replace those symlinks with the directories they point to or remove the old "
            "ones (a resume of this recipe is refused until then), or pass --params (e.g. "
            "--params 1.4B)")
    if decision.bound is not None:  # the lookup stopped: the newest complete one is unknown
        return None, lookup_stopped(recipe.checkpoint.dir, decision), N_(
            "remove the incomplete checkpoints or write a complete one's name in %(pointer)s "
            "(a resume of this recipe is refused until then), or pass --params (e.g. "
            "--params 1.4B)", pointer=recipe.checkpoint.pointer_file or DEFAULT_POINTER)
    ckpt = decision.checkpoint
    if ckpt is None:
        return None, N_("no complete checkpoint in %(path)s yet",
                        path=recipe.checkpoint.dir), PASS_PARAMS
    for sub in ("", "model"):
        meta = (
            posixpath.join(ckpt.path, sub, ".metadata")
            if sub
            else posixpath.join(ckpt.path, ".metadata")
        )
        try:
            with sftp.open(meta, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        try:
            count = param_count_from_metadata(parse_metadata_bytes(data, meta))
        except CheckpointUnreadable as exc:
            return None, str(exc), PASS_PARAMS
        return count, N_("read from %(path)s", path=meta), PASS_PARAMS
    return None, N_("%(path)s has no DCP .metadata to read the parameter count from",
                    path=ckpt.path), PASS_PARAMS


def with_config_defaults(
    options: PreflightOptions, recipe: RecipeConfig, cluster: ClusterConfig
) -> PreflightOptions:
    """The CLI's flags where given, else the recipe's `preflight:` facts and the cluster's
    memory caps from the config (so `/train preflight` and the CLI judge alike)."""
    facts = recipe.preflight

    def size(value: str | None) -> int | None:
        return parse_size(value) if value is not None else None

    def first(flag: Any, configured: Any) -> Any:
        return flag if flag is not None else configured

    return replace(
        options,
        params=first(options.params, parse_count(facts.params) if facts.params else None),
        ranks_per_node=first(options.ranks_per_node, facts.ranks_per_node),
        workers_per_rank=first(options.workers_per_rank, facts.workers_per_rank),
        worker_rss_bytes=first(options.worker_rss_bytes, size(facts.worker_rss)),
        per_gpu_cap_bytes=first(options.per_gpu_cap_bytes, size(cluster.per_gpu_mem_cap)),
        site_floor_bytes=first(options.site_floor_bytes, size(cluster.mem_floor)),
        save_mode=first(options.save_mode, SaveMode(facts.save_mode)),
        ema=first(options.ema, facts.ema),
    )


def memory_section(
    recipe: RecipeConfig, options: PreflightOptions, runner: Runner | None
) -> tuple[list[Finding], MemoryBudget | None]:
    params = options.params
    source: Text | str = N_("given")
    fix = PASS_PARAMS
    if params is None:
        params, source, fix = _params_from_cluster(recipe, runner)
    if not params:
        return [
            Finding(
                "memory_budget",
                "warn",
                None,
                N_("no parameter count (%(source)s): skipped the checkpoint memory budget",
                   source=source),
                fix,
            )
        ], None
    gpus = gpus_in_gres(recipe.gres)
    ranks = options.ranks_per_node or gpus
    if not ranks:
        return [
            Finding(
                "memory_budget",
                "warn",
                None,
                N_("ranks per node unknown (no --ranks, no gpu in the recipe's gres): skipped "
                   "the checkpoint memory budget"),
                N_("pass --ranks N"),
            )
        ], None
    notes: list[Text] = [N_("parameter count %(params)s (%(source)s)",
                            params=format_params(params), source=source)]
    worker_rss = options.worker_rss_bytes
    if options.workers_per_rank and worker_rss is None:
        worker_rss = DEFAULT_WORKER_RSS
        notes.append(N_("worker RSS assumed 2 GiB: measure it with `trainbot probe dataloader`"))
    mem = (
        options.mem_bytes
        if options.mem_bytes is not None
        else (parse_size(recipe.mem) if recipe.mem else None)
    )
    inputs = SaveMemoryInputs(
        params=params,
        ranks_per_node=ranks,
        gpus_per_node=gpus or ranks,
        ema_bytes=4.0 if options.ema else 0.0,
        save_mode=options.save_mode or SaveMode.FULL_PER_RANK,
        workers_per_rank=options.workers_per_rank or 0,
        worker_rss_bytes=worker_rss or 0,
    )
    budget = estimate_save_peak(
        inputs,
        mem_limit_bytes=mem,
        per_gpu_cap_bytes=options.per_gpu_cap_bytes,
        site_floor_bytes=options.site_floor_bytes,
    )
    finding = budget.finding()
    finding = Finding(
        finding.check,
        finding.level,
        None,
        N_("%(budget)s [%(notes)s]", budget=finding.text,
           notes=join_text(notes)),
        finding.fix_text,
    )
    return [finding], budget


# ---------------------------------------------------------------------------- all of it


def run_preflight(
    config: Config,
    recipe_name: str,
    runner: Runner | None,
    options: PreflightOptions = PreflightOptions(),  # noqa: B008 (frozen, never mutated)
    read_local: Callable[[str], str] = lambda p: Path(p).read_text(),
) -> PreflightReport:
    """Every preflight check for one recipe. `runner` may be None only when nothing needs the
    cluster (a local --script, no toolchain probe, --params given)."""
    try:
        recipe = config.recipes[recipe_name]
    except KeyError:
        known = ", ".join(sorted(config.recipes)) or "none"
        raise PreflightUsageError(
            N_("no recipe %(recipe)s in the config (known: %(known)s)",
               recipe=repr(recipe_name), known=known)
        ) from None
    if options.recipe_overrides:
        try:
            recipe = apply_overrides(
                recipe, parse_overrides(recipe_name, recipe, options.recipe_overrides))
        except OverrideError as exc:
            raise PreflightUsageError(exc.args[0]) from None
    options = with_config_defaults(options, recipe, config.clusters[recipe.cluster])
    report = PreflightReport(recipe=recipe_name)
    report.sections["launcher"], report.script_source = lint_section(
        recipe_name, recipe, options, runner, read_local
    )
    if options.toolchain:
        if runner is None:
            raise PreflightUsageError(N_("the toolchain probe needs the cluster"))
        from bot.probes.toolchain import ptrace_checks, run_toolchain_probe

        # where and on what the job runs, as its sbatch gets it (RecipeConfig.placement_flags:
        # partition, account, qos, and the nodes the recipe leaves out, never probed); a
        # relative env_setup (`source .venv/bin/activate`) is the workdir's (sbatch --chdir)
        srun_args = [*recipe.placement_flags(), *options.probe_srun_args]
        if recipe.workdir:
            srun_args.append(f"--chdir={recipe.workdir}")
        one_gpu = _one_gpu(recipe.gres)
        if one_gpu:
            srun_args.append(f"--gres={one_gpu}")
        env_setup = options.env_setup or recipe.env_setup
        pyspy, pyspy_finding = _pyspy_on_cluster(config, recipe.cluster, runner)
        tool = run_toolchain_probe(
            runner,
            None,  # the partition is among the placement flags
            env_setup=env_setup,
            python=options.python,
            env=recipe.env or None,
            srun_args=srun_args,
            timeout=options.toolchain_timeout,
            pyspy=pyspy,
        )
        report.sections["toolchain"] = tool.findings
        report.toolchain_node = tool.node
        cc = [f for f in tool.findings if f.check == "toolchain:cc"]
        if cc:
            report.sections["launcher"] = after_toolchain_probe(
                report.sections["launcher"], all(f.level == "pass" for f in cc)
            )
        forensics = [*pyspy_finding, *ptrace_checks(tool.node)]
    else:
        report.sections["toolchain"] = [
            Finding("toolchain", "warn", None, N_("skipped (--no-toolchain)"))
        ]
        report.sections["launcher"] = after_toolchain_probe(report.sections["launcher"], None)
        forensics = [Finding("forensics:py_spy", "warn", None,
                             N_("py-spy not tried on a node (--no-toolchain)"))]
    report.sections["memory"], report.budget = memory_section(recipe, options, runner)
    report.sections["forensics"] = [*forensics, flight_recorder_check(recipe)]
    return report


def _pyspy_on_cluster(config: Config, cluster: str,
                      runner: Runner) -> tuple[str | None, list[Finding]]:
    """py-spy's path on the nodes (the site's, else the bot's own copy, placed now)."""
    configured = config.clusters[cluster].py_spy
    if configured:
        return configured, []
    from bot.cluster.pyspy import PySpyUnavailable, place_pyspy

    try:
        return place_pyspy(runner, runner.sftp()), []
    except (PySpyUnavailable, ClusterError, OSError) as exc:
        return None, [Finding("forensics:py_spy", "warn", None,
                              N_("py-spy could not be placed on the cluster: %(error)s",
                                 error=said(exc)),
                              N_("install py-spy on the nodes and set the cluster's `py_spy` "
                                 "path"))]


def flight_recorder_check(recipe: RecipeConfig) -> Finding:
    """Will an NCCL timeout of this recipe leave flight-recorder dumps trainbot can read?"""
    env = submit_env("", recipe, None)
    gpus = gpus_in_gres(recipe.gres) or 0
    distributed = gpus > 1 or any(k.startswith(("NCCL_", "TORCH_NCCL_")) for k in recipe.env)
    if records_on_timeout(env) and env.get(DUMP_FILE_ENV):
        where = recipe.nccl_flight_recorder or env[DUMP_FILE_ENV]
        return Finding("forensics:flight_recorder", "pass", None,
                       N_("an NCCL timeout leaves each rank's flight-recorder dump in %(path)s: "
                          "the thread will say which rank fell behind", path=where))
    if not distributed:
        return Finding("forensics:flight_recorder", "pass", None,
                       N_("one GPU and no NCCL settings: no collective to record"))
    return Finding("forensics:flight_recorder", "warn", None,
                   N_("the recipe could record its NCCL collectives (%(gpus)s GPUs) and does not: "
                      "after a watchdog timeout nobody will know which rank fell behind",
                      gpus=gpus),
                   N_("set `nccl_flight_recorder: <a shared directory>` in the recipe (trainbot "
                      "then sets TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT and "
                      "TORCH_NCCL_DEBUG_INFO_TEMP_FILE for its jobs)"))
