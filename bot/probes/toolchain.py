"""Does a worker node have what a JIT needs? A short `srun` that proves it.

Job 108903 died at start with `Failed to find C compiler`: FlexAttention compiles Triton
kernels at run time, the login node has gcc, the worker image does not. This probe runs a small
Python script on the recipe's partition through `srun` (after the recipe's env activation) and
reports CC/CXX, whether a C compiler really compiles and runs a file, Python and torch versions,
and, with torch present, runs a tiny `torch.compile`d function.

The node-side script uses only the standard library (the node's Python may have nothing else)
and prints one JSON line after a marker, so env-setup noise around it is ignored.
"""

from __future__ import annotations

import json
import re
import shlex
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.core.findings import Finding
from bot.core.text import N_

if TYPE_CHECKING:
    from bot.services.ports import Runner

MARKER = "TRAINBOT_TOOLCHAIN_JSON "
# The recipe's env reaches the node under these names (the runner sends values on stdin, srun
# passes its environment on); the node sets the real names after the env setup ran.
ENV_CARRIER_PREFIX = "TRAINBOT_PROBE_ENV_"
PYSPY_ENV = "TRAINBOT_PROBE_PYSPY"  # py-spy's path on the node, for the ptrace check
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Runs on the worker. Stdlib only, Python >= 3.6. Never raises: every failure is data.
NODE_SCRIPT = r'''
import json, os, shutil, subprocess, sys, tempfile, platform
out = {"python": sys.version.split()[0], "python_executable": sys.executable,
       "host": platform.node(), "CC": os.environ.get("CC"), "CXX": os.environ.get("CXX"),
       "PATH": os.environ.get("PATH", "")}

def tail(text, n=600):
    text = (text or "").strip()
    return text[-n:]

def find_compiler(var, names):
    value = os.environ.get(var)
    if value:
        first = value.split()[0]
        path = first if os.path.isabs(first) else shutil.which(first)
        return value, path, "env"
    for name in names:
        path = shutil.which(name)
        if path:
            return name, path, "PATH"
    return None, None, None

def try_compile(var, names, source, ext):
    spec, path, origin = find_compiler(var, names)
    res = {"spec": spec, "path": path, "origin": origin, "works": False, "version": None,
           "error": None}
    if spec is None:
        res["error"] = "no %s set and none of %s on PATH" % (var, ", ".join(names))
        return res
    if path is None or not os.access(path, os.X_OK):
        res["error"] = "%s=%r is not an executable file" % (var, spec)
        return res
    d = tempfile.mkdtemp(prefix="trainbot-cc-")
    try:
        src = os.path.join(d, "probe" + ext)
        exe = os.path.join(d, "probe")
        with open(src, "w") as f:
            f.write(source)
        try:
            v = subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30)
            res["version"] = v.stdout.decode(errors="replace").splitlines()[0] if v.stdout else None
            c = subprocess.run([path] + spec.split()[1:] + [src, "-o", exe],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            if c.returncode != 0:
                res["error"] = "compile failed (%d): %s" % (c.returncode,
                                                           tail(c.stdout.decode(errors="replace")))
                return res
            r = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=30)
            res["works"] = r.returncode == 0 and b"trainbot-ok" in r.stdout
            if not res["works"]:
                res["error"] = "compiled program did not run: %s" % tail(r.stdout.decode())
        except Exception as exc:
            res["error"] = "%s: %s" % (type(exc).__name__, exc)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return res

out["cc"] = try_compile("CC", ["cc", "gcc", "clang"],
                        '#include <stdio.h>\nint main(void){puts("trainbot-ok");return 0;}\n', ".c")
out["cxx"] = try_compile("CXX", ["c++", "g++", "clang++"],
                         '#include <cstdio>\nint main(){std::puts("trainbot-ok");return 0;}\n',
                         ".cpp")
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = bool(torch.cuda.is_available())
    out["gpus"] = torch.cuda.device_count() if out["cuda"] else 0
    try:
        import triton
        out["triton"] = getattr(triton, "__version__", "unknown")
    except Exception:
        out["triton"] = None
    compile_res = {"ran": False, "device": None, "error": None}
    try:
        device = "cuda" if out["cuda"] else "cpu"
        compile_res["device"] = device
        fn = torch.compile(lambda x: (x * 2).sin().sum())
        value = float(fn(torch.arange(8, dtype=torch.float32, device=device)))
        compile_res["ran"] = True
        compile_res["value"] = value
    except Exception as exc:
        compile_res["error"] = tail("%s: %s" % (type(exc).__name__, exc), 1200)
    out["compile"] = compile_res
except Exception as exc:
    out["torch"] = None
    out["torch_error"] = tail("%s: %s" % (type(exc).__name__, exc))

def ptrace_facts(pyspy):
    """Can py-spy read a Python process here as the bot will (same uid, not its parent)?"""
    import time
    res = {"uid": os.getuid(), "ptrace_scope": None, "pyspy": pyspy, "attach": None,
           "error": None}
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            res["ptrace_scope"] = int(f.read().strip())
    except Exception:
        pass
    if not pyspy:
        return res
    if not (os.path.isfile(pyspy) and os.access(pyspy, os.X_OK)):
        res["attach"], res["error"] = False, "%s is not an executable file here" % pyspy
        return res
    target = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.2)"])
    try:
        time.sleep(1.0)
        r = subprocess.run([pyspy, "dump", "--pid", str(target.pid)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        res["attach"] = r.returncode == 0
        if r.returncode != 0:
            res["error"] = tail(r.stdout.decode(errors="replace"), 300)
    except Exception as exc:
        res["attach"], res["error"] = False, "%s: %s" % (type(exc).__name__, exc)
    finally:
        target.kill()
        target.wait()
    return res

out["ptrace"] = ptrace_facts(os.environ.get("TRAINBOT_PROBE_PYSPY"))
print("TRAINBOT_TOOLCHAIN_JSON " + json.dumps(out), flush=True)
'''

COMPILER_FIX = N_(
    "install a compiler into the env (conda-forge `gcc_linux-64 gxx_linux-64`) and export "
    "`%(export)s` in the launcher (compiler_missing)",
    export="CC=$CONDA_PREFIX/bin/x86_64-conda-linux-gnu-gcc CXX=$CONDA_PREFIX/bin/"
    "x86_64-conda-linux-gnu-g++")


def build_probe_argv(
    partition: str | None,
    *,
    env_setup: str | None = None,
    python: str = "python3",
    env_names: Sequence[str] = (),
    srun_args: Sequence[str] = (),
    job_name: str | None = None,
    time_limit: str = "10",
) -> list[str]:
    """The `srun` argv that runs the node script on one task of `partition`.

    `env_setup` is the recipe's activation snippet (config text, run by bash on the node, the
    same trust as the recipe's batch script); everything else travels as separate argv words,
    which the SSH runner quotes, and is never parsed by a shell. `env_names` are set on the
    node after the setup (e.g. a stripped PATH) from `ENV_CARRIER_PREFIX`+name, which the
    caller passes as environment (`probe_env`): values never appear in this argv.
    """
    name = job_name or f"trainbot-preflight-{uuid.uuid4().hex[:8]}"
    argv = ["srun", f"--job-name={name}", "--nodes=1", "--ntasks=1", f"--time={time_limit}",
            "--quiet", *srun_args]
    if partition:  # else the cluster's default partition
        argv.insert(1, f"--partition={partition}")
    cmd: list[str] = [python, "-c", NODE_SCRIPT]
    if env_names:
        sets = []
        for name in env_names:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"environment variable name {name!r} is not a valid shell name")
            carrier = ENV_CARRIER_PREFIX + name
            sets.append(f'{name}="${carrier}"; export {name}; unset {carrier}; ')
        cmd = ["/bin/sh", "-c", "".join(sets) + 'exec "$@"', "trainbot-env", *cmd]
    if env_setup:
        # "$@" is the command above, passed as bash's positional arguments: no re-quoting.
        return [*argv, "bash", "-c", env_setup + '\nexec "$@"', "trainbot-probe", *cmd]
    return [*argv, *cmd]


@dataclass
class ToolchainReport:
    """What the node reported, and the checks derived from it."""

    findings: list[Finding]
    node: dict[str, Any] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    stderr_tail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"checks": [f.to_json() for f in self.findings], "node": self.node,
                "stderr_tail": self.stderr_tail}


def probe_env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The environment to run `build_probe_argv(env_names=list(env))` with."""
    return {ENV_CARRIER_PREFIX + k: v for k, v in env.items()} if env else None


def parse_node_output(stdout: str) -> dict[str, Any] | None:
    """The JSON object the node script printed after its marker, or None (no marker, no
    JSON, or JSON that is no object: a list, a string)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                found = json.loads(line[len(MARKER):])
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, dict) else None
    return None


def _facts(node: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The node's object of facts under `key` ({} when it gave none); ValueError when it gave
    something else (`"cc": "gcc"`): not what the node script writes."""
    facts = node.get(key) or {}
    if not isinstance(facts, Mapping):
        raise ValueError(f"the node's {key!r} is a {type(facts).__name__}, not an object")
    return facts


def checks_from_node(node: Mapping[str, Any]) -> list[Finding]:
    """pass / warn / fail per toolchain fact the node reported (pure). ValueError when the
    report is not the shape the node script writes (see `_facts`)."""
    out: list[Finding] = []
    host = node.get("host") or N_("the worker")
    cc = _facts(node, "cc")
    unknown = N_("unknown error")
    if cc.get("works"):
        how = (f"CC={node.get('CC')}" if cc.get("origin") == "env"
               else N_("found on PATH, CC unset"))
        out.append(Finding("toolchain:cc", "pass", None,
                           N_("C compiler on %(host)s compiled and ran a test program: "
                              "%(path)s (%(how)s; %(version)s)", host=host, path=cc.get("path"),
                              how=how, version=cc.get("version") or N_("version unknown"))))
    else:
        out.append(Finding("toolchain:cc", "fail", None,
                           N_("compiler_missing: no working C compiler on %(host)s (%(error)s); "
                              "Triton / Inductor will die with `Failed to find C compiler` (job "
                              "108903)", host=host, error=cc.get("error") or unknown),
                           COMPILER_FIX))
    cxx = _facts(node, "cxx")
    comp = _facts(node, "compile")
    if cxx.get("works"):
        out.append(Finding("toolchain:cxx", "pass", None,
                           N_("C++ compiler works: %(path)s", path=cxx.get("path"))))
    else:
        out.append(Finding("toolchain:cxx", "warn", None,
                           N_("no working C++ compiler on %(host)s (%(error)s); Inductor's CPU "
                              "kernels and C++ extensions need one", host=host,
                              error=cxx.get("error")), COMPILER_FIX))
    out.append(Finding("toolchain:python", "pass", None,
                       N_("Python %(version)s (%(path)s)", version=node.get("python"),
                          path=node.get("python_executable"))))
    if not node.get("torch"):
        out.append(Finding("toolchain:torch", "warn", None,
                           N_("torch not importable: skipped the compile check (%(error)s)",
                              error=node.get("torch_error") or N_("no error text")),
                           N_("activate the training env with the recipe's env_setup")))
        return out
    torch = f"torch {node.get('torch')}"
    triton = f", triton {node.get('triton')}" if node.get("triton") else ""
    out.append(Finding("toolchain:torch", "pass", None,
                       N_("%(torch)s, %(gpus)s GPU(s)%(triton)s", torch=torch,
                          gpus=node.get("gpus"), triton=triton) if node.get("cuda") else
                       N_("%(torch)s, no CUDA%(triton)s", torch=torch, triton=triton)))
    if comp.get("ran"):
        out.append(Finding("toolchain:torch_compile", "pass", None,
                           N_("torch.compile JIT works on %(device)s", device=comp.get("device"))))
    else:
        err = comp.get("error") or unknown
        missing = isinstance(err, str) and ("C compiler" in err or "CC environment variable" in err)
        out.append(Finding("toolchain:torch_compile", "fail", None,
                           N_("compiler_missing: torch.compile failed on %(device)s: %(error)s",
                              device=comp.get("device"), error=err) if missing else
                           N_("torch.compile failed on %(device)s: %(error)s",
                              device=comp.get("device"), error=err),
                           COMPILER_FIX if missing else
                           N_("run the failing snippet on the node and read the error")))
    return out


def run_toolchain_probe(
    runner: Runner,
    partition: str | None,
    *,
    env_setup: str | None = None,
    python: str = "python3",
    env: Mapping[str, str] | None = None,
    srun_args: Sequence[str] = (),
    timeout: float = 600.0,
    pyspy: str | None = None,
) -> ToolchainReport:
    """Run the probe with `srun` through `runner`; a failing srun, or a report not of the
    node script's shape, becomes a `fail` finding.
    With `pyspy` (its path on the nodes) the node also tries it on a process of its own
    (`node["ptrace"]`, see `ptrace_checks`).

    Raises the runner's ClusterUnavailable / CommandTimedOut: the caller decides (exit 2).
    """
    if pyspy:
        env = {**(env or {}), PYSPY_ENV: pyspy}
    argv = build_probe_argv(partition, env_setup=env_setup, python=python,
                            env_names=list(env or {}), srun_args=srun_args)
    result = runner.run(argv, timeout=timeout, check=False, env=probe_env(env))
    node = parse_node_output(result.stdout)
    stderr_tail = "\n".join(result.stderr.strip().splitlines()[-8:])
    shown = shlex.join("<probe script>" if a == NODE_SCRIPT else a for a in argv)
    checks: list[Finding] = []
    if node is not None:
        try:
            checks = checks_from_node(node)
        except (TypeError, ValueError):  # a report not of the node script's shape
            node = None
    if node is None:
        return ToolchainReport(
            [Finding("toolchain:srun", "fail", None,
                     N_("the toolchain probe did not report (exit %(code)s): %(output)s",
                        code=result.exit_code,
                        output=stderr_tail or result.stdout.strip()[-400:] or N_("no output")),
                     N_("check the partition and the env setup; ran `%(command)s`",
                        command=shown))],
            {}, argv, stderr_tail,
        )
    return ToolchainReport(checks, node, argv, stderr_tail)


PTRACE_FIX = N_("set `kernel.yama.ptrace_scope = 0` on the nodes (sysctl; at 1 only a "
                "process's ancestors may attach, and py-spy in its own srun step is none), or "
                "give py-spy `cap_sys_ptrace` (setcap) and set it as the cluster's `py_spy`")


def ptrace_checks(node: Mapping[str, Any]) -> list[Finding]:
    """Can the bot dump a stalled job's Python stacks on this node (py-spy as the job's uid)?"""
    facts = node.get("ptrace")
    if not isinstance(facts, Mapping):
        return []
    host = node.get("host") or N_("the worker")
    scope = facts.get("ptrace_scope")
    scope_text = N_("no Yama ptrace policy") if scope is None else \
        f"kernel.yama.ptrace_scope={scope}"
    if facts.get("attach"):
        return [Finding("forensics:py_spy", "pass", None,
                        N_("py-spy read a Python process's stack on %(host)s as uid %(uid)s "
                           "(%(scope)s): a stall's stacks can be collected", host=host,
                           uid=facts.get("uid"), scope=scope_text))]
    if facts.get("pyspy") is None:
        return [Finding("forensics:py_spy", "warn", None,
                        N_("py-spy was not tried on %(host)s (%(scope)s)", host=host,
                           scope=scope_text),
                        N_("see the line about py-spy above"))]
    fix = N_("ptrace_scope=3 forbids every attach until the node reboots: set it to 0 at "
             "boot") if scope == 3 else PTRACE_FIX
    return [Finding("forensics:py_spy", "warn", None,
                    N_("py-spy cannot read a Python process on %(host)s as uid %(uid)s "
                       "(%(scope)s): %(error)s; a stall will be posted without the ranks' "
                       "stacks", host=host, uid=facts.get("uid"), scope=scope_text,
                       error=facts.get("error") or N_("refused")), fix)]
