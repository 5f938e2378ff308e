"""The DataLoader probe of a recipe, run on its cluster: one `srun` task in the recipe's
workdir, off its excluded nodes, after its env_setup, with its env; the node runs
bot/probes/dataloader.py's source (`python -c`, nothing of trainbot installed there) and
prints one JSON line after a marker.

Every word of the argv travels as its own argv word (the SSH runner quotes it, through
bot.cluster.command_line.build_command); the recipe's env values reach the node as environment
(bot.probes.toolchain's carriers), never in the argv. `probe_result` turns the node's output
into the view the thread's template shows (templates/probe_result.json.j2).
"""

from __future__ import annotations

import json
import math
import re
import shlex
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.core.text import N_
from bot.probes.dataloader import MARKER
from bot.probes.toolchain import ENV_CARRIER_PREFIX, probe_env

if TYPE_CHECKING:
    from bot.config import DataLoaderProbeConfig, RecipeConfig
    from bot.services.ports import Runner

NODE_SOURCE = (Path(__file__).with_name("dataloader.py")).read_text(encoding="utf-8")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def srun_minutes(timeout_s: float) -> int:
    """srun's --time for a probe of deadline `timeout_s` (whole minutes, at least 1)."""
    return max(1, int(-(-timeout_s // 60)))


def build_probe_argv(recipe: RecipeConfig, probe: DataLoaderProbeConfig, *,
                     job_name: str | None = None,
                     placed: RecipeConfig | None = None) -> list[str]:
    """The `srun` argv of `probe` for `recipe` (see module doc), placed (partition, account,
    qos, exclude) as `placed`, the recipe as the probed job's sbatch got it, else as
    `recipe`."""
    name = job_name or f"trainbot-dataloader-probe-{uuid.uuid4().hex[:8]}"
    argv = ["srun", f"--job-name={name}", "--nodes=1", "--ntasks=1",
            f"--time={srun_minutes(probe.timeout_s)}", "--quiet"]
    argv += (placed or recipe).placement_flags()  # where the job runs, as its submit
    for flag, value in (("--chdir", recipe.workdir), ("--mem", probe.mem)):
        if value:
            argv.append(f"{flag}={value}")
    cmd: list[str] = [probe.python, "-c", NODE_SOURCE, probe.factory, str(probe.workers),
                      str(probe.samples), *probe.path]
    if recipe.env:
        sets = []
        for var in recipe.env:
            if not ENV_NAME_RE.match(var):
                raise ValueError(f"environment variable name {var!r} is not a valid shell name")
            carrier = ENV_CARRIER_PREFIX + var
            sets.append(f'{var}="${carrier}"; export {var}; unset {carrier}; ')
        cmd = ["/bin/sh", "-c", "".join(sets) + 'exec "$@"', "trainbot-env", *cmd]
    if recipe.env_setup:
        # "$@" is the command above, bash's positional arguments: never re-parsed by a shell
        return [*argv, "bash", "-c", recipe.env_setup + '\nexec "$@"', "trainbot-probe", *cmd]
    return [*argv, *cmd]


def shown_argv(argv: Sequence[str]) -> str:
    """The argv as a person reads it: the node script's source shown as `<dataloader probe>`."""
    return shlex.join("<dataloader probe>" if a == NODE_SOURCE else a for a in argv)


def parse_node_output(stdout: str) -> dict[str, Any] | None:
    """The JSON object the node printed after its marker, or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                found = json.loads(line[len(MARKER):])
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, dict) else None
    return None


def probe_result(node: Mapping[str, Any] | None, *, recipe: str, job_id: str | None,
                 exit_code: int | None = None, stderr: str = "") -> dict[str, Any]:
    """The thread's view of a probe: per-worker RSS growth and what grows, or why it has no
    result (`error`: the node's, srun's exit and stderr tail, or what in the node's report is
    not the shape its script writes: a list where the verdict is, a word where a number is)."""
    view: dict[str, Any] = {"recipe": recipe, "job_id": job_id, "error": None, "host": None,
                            "factory": None, "workers": [], "leaking": None,
                            "conclusive": None, "slope_mb": None, "grows": None}
    if node is None:
        tail = "\n".join(stderr.strip().splitlines()[-6:])
        view["error"] = f"srun exit {exit_code}: {tail or 'no output'}"
        return view
    view.update(host=node.get("host"), factory=node.get("factory"))
    if node.get("error"):
        view["error"] = str(node["error"])
        return view
    try:
        workers = _workers(node)
        verdict = _verdict(node)
    except _NotItsShape as exc:
        shown = json.dumps(node.get(exc.field), default=str)
        view["error"] = N_("the node's report is not what the probe writes: its `%(field)s` is "
                           "%(value)s", field=exc.field,
                           value=shown if len(shown) <= 80 else shown[:79] + "…")
        return view
    leaking, conclusive = bool(verdict.get("leaking")), bool(verdict.get("conclusive"))
    view.update(workers=workers, leaking=leaking, conclusive=conclusive,
                slope_mb=verdict.get("slope_mb_per_sample"),
                grows=("workers" if leaking else "trainer") if conclusive else None)
    return view


class _NotItsShape(ValueError):
    """The node's report holds something else than the node script writes under `field`."""

    def __init__(self, field: str):
        super().__init__(field)
        self.field = field


def _number(value: Any, field: str, *, whole: bool = False) -> Any:
    """`value` when it is a finite number (a whole one: `whole`) or None, else _NotItsShape."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) \
            or not math.isfinite(value):
        raise _NotItsShape(field)
    return value


def _workers(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each worker's row as the template shows it (numbers where it formats numbers)."""
    per_worker = node.get("per_worker") or []
    if not isinstance(per_worker, list) or not all(isinstance(w, Mapping) for w in per_worker):
        raise _NotItsShape("per_worker")
    return [{"pid": _number(w.get("pid"), "per_worker", whole=True),
             "samples": _number(w.get("samples"), "per_worker", whole=True),
             "rss_start_mb": round(_number(w.get("rss_start_mb"), "per_worker") or 0.0),
             "rss_end_mb": round(_number(w.get("rss_end_mb"), "per_worker") or 0.0),
             "slope_mb": _number(w.get("slope_mb"), "per_worker")}
            for w in per_worker]


def _verdict(node: Mapping[str, Any]) -> Mapping[str, Any]:
    """The node's verdict; a conclusive one has its slope (the template formats it)."""
    verdict = node.get("verdict") or {}
    if not isinstance(verdict, Mapping):
        raise _NotItsShape("verdict")
    slope = _number(verdict.get("slope_mb_per_sample"), "verdict")
    if verdict.get("conclusive") and slope is None:
        raise _NotItsShape("verdict")
    return verdict


def run_dataloader_probe(runner: Runner, recipe_name: str, recipe: RecipeConfig,
                         probe: DataLoaderProbeConfig, *,
                         job_id: str | None = None,
                         placed: RecipeConfig | None = None) -> dict[str, Any]:
    """Run the probe through `runner` within `probe.timeout_s`, placed as `placed`
    (build_probe_argv); the thread's view of what it found (`probe_result`). Raises the
    runner's ClusterError (unreachable, timed out)."""
    argv = build_probe_argv(recipe, probe, placed=placed)
    result = runner.run(argv, timeout=probe.timeout_s, check=False,
                        env=probe_env(recipe.env) if recipe.env else None)
    return probe_result(parse_node_output(result.stdout), recipe=recipe_name, job_id=job_id,
                        exit_code=result.exit_code, stderr=result.stderr)
