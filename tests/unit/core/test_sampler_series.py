"""Pure parts of `trainbot sampler`: role classification from process facts, the JSON line
record, and parsing the lines back into series (bot.core.sampler_series)."""

from __future__ import annotations

import json
from typing import Any

from fakes import present

from bot.core.policy import CpuEvidence, DecisionKind, PolicyParams, early_warnings
from bot.core.sampler_series import (
    ProcFacts,
    SamplerSeries,
    classify_roles,
    cpu_around,
    parse_line,
    sample_record,
)

PY = "/opt/conda/envs/wm/bin/python3.11"
TRAIN = (PY, "-u", "train.py", "--config", "mix.yaml")


def P(pid, ppid, name, *cmd):  # noqa: N802 - a compact table constructor
    return ProcFacts(pid, ppid, name, tuple(cmd))


def test_torchrun_four_ranks_with_named_workers():
    procs = [
        P(10, 1, "bash", "/bin/bash", "/var/spool/slurmd/job88154/slurm_script"),
        P(11, 10, "trainbot", PY, "/opt/conda/bin/trainbot", "sampler", "--out", "rss.jsonl"),
        P(12, 10, "pt_elastic", PY, "/opt/conda/bin/torchrun", "--nproc-per-node=4", "train.py"),
        *[P(20 + r, 12, "python3.11", *TRAIN) for r in range(4)],
        # Ten DataLoader workers per rank, forked: same cmdline, name set by torch.
        *[P(100 + 10 * r + w, 20 + r, "pt_data_worker", *TRAIN) for r in range(4)
          for w in range(10)],
        P(90, 20, "python3.11", PY, "-c",
          "from multiprocessing.resource_tracker import main;main(7)"),
    ]
    roles = classify_roles(procs, self_pid=11)
    assert [roles[20 + r] for r in range(4)] == ["trainer"] * 4
    assert sum(1 for r in roles.values() if r == "worker") == 40
    assert roles[10] == roles[11] == roles[12] == roles[90] == "other"


def test_python_m_torch_distributed_run_is_a_launcher():
    procs = [
        P(1, 0, "python", PY, "-m", "torch.distributed.run", "--nproc-per-node=2", "train.py"),
        P(2, 1, "python", PY, "train.py"),
    ]
    assert classify_roles(procs) == {1: "other", 2: "trainer"}


def test_training_script_argument_mentioning_a_launcher_is_still_a_trainer():
    procs = [P(1, 0, "python", PY, "train.py", "--out", "/runs/torchrun_vs_srun/accelerate")]
    assert classify_roles(procs) == {1: "trainer"}


def test_unnamed_fork_children_fall_back_to_workers():
    """An old torch does not name workers: a fork child with the parent's cmdline."""
    procs = [P(1, 0, "python", *TRAIN), P(2, 1, "python", *TRAIN), P(3, 1, "python", *TRAIN)]
    assert classify_roles(procs) == {1: "trainer", 2: "worker", 3: "worker"}


def test_mp_spawn_ranks_are_trainers_and_their_parent_a_launcher():
    spawn = (PY, "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, "
             "pipe_handle=7)", "--multiprocessing-fork")
    procs = [
        P(1, 0, "python", *TRAIN),
        P(2, 1, "python", *spawn),
        P(3, 1, "python", *spawn),
        P(4, 2, "pt_data_worker", *spawn),  # spawn-start DataLoader worker of rank 2
    ]
    assert classify_roles(procs) == {1: "other", 2: "trainer", 3: "trainer", 4: "worker"}


def test_non_python_children_are_other():
    procs = [P(1, 0, "python", *TRAIN), P(2, 1, "nvidia-smi", "nvidia-smi"),
             P(3, 1, "sh", "/bin/sh", "-c", "gcc ...")]
    assert classify_roles(procs) == {1: "trainer", 2: "other", 3: "other"}


def test_inductor_compile_workers_are_other():
    procs = [P(1, 0, "python", *TRAIN),
             P(2, 1, "python", PY, "/site/torch/_inductor/compile_worker/__main__.py", "--w=8")]
    assert classify_roles(procs) == {1: "trainer", 2: "other"}


def test_sample_record_sums_by_role_and_bounds_per_process():
    procs = [P(1, 0, "python", *TRAIN)] + [P(10 + i, 1, "pt_data_worker", *TRAIN)
                                           for i in range(40)]
    roles = classify_roles(procs)
    rows = [(procs[0], 40 << 30, 95.0)] + [(p, (1 << 30) + i, 3.0) for i, p in
                                          enumerate(procs[1:])]
    rec: dict[str, Any] = sample_record(1000.0, rows, roles, top=12, sampler_cpu_s=0.5)
    assert rec["rss"]["trainer"] == 40 << 30
    assert rec["rss"]["worker"] == 40 * (1 << 30) + sum(range(40))
    assert rec["n"] == {"trainer": 1, "worker": 40, "other": 0}
    assert rec["cpu"]["worker"] == 120.0
    assert len(rec["per_process"]) == 12 and rec["per_process"][0]["role"] == "trainer"
    assert len(json.dumps(rec)) < 2500  # one line stays small on a 40-worker job
    point = parse_line(json.dumps(rec))
    assert point is not None and point.rss_total == sum(rec["rss"].values())


def _line(t, worker_gib, cpu_total):
    return json.dumps({"v": 1, "t": t,
                       "rss": {"trainer": 40 << 30, "worker": int(worker_gib * (1 << 30)),
                               "other": 0},
                       "cpu": {"trainer": cpu_total, "worker": 0.0, "other": 0.0},
                       "n": {"trainer": 1, "worker": 2, "other": 1}})


def test_series_parses_incrementally_and_skips_junk():
    s = SamplerSeries()
    s.feed_lines([_line(0, 1.9, 90), "", "garbage", '{"t": "x"}', _line(10, 2.5, 90)])
    s.feed_lines([_line(10, 2.5, 90), _line(20, 3.0, 90)])  # a re-read line is not doubled
    s.feed_lines([_line(30, 9.2, 90)[:-5]])  # partial line (file still being written)
    assert s.times() == [0, 10, 20]
    assert [round(x / (1 << 30), 1) for x in s.rss("worker")] == [1.9, 2.5, 3.0]
    assert s.rss("total")[0] == (40 << 30) + int(1.9 * (1 << 30))
    assert s.bad_lines == 3


def test_series_is_bounded():
    s = SamplerSeries(max_points=64)
    s.feed_lines(_line(t, 1 + t / 1000, 90) for t in range(1000))
    assert len(s.points) <= 64
    assert s.points[0].t == 0 and s.points[-1].t >= 900  # the whole run stays visible


def test_cpu_around_corroborates_the_88154_stall():
    s = SamplerSeries()
    s.feed_lines(_line(t, 45, 92 if t < 600 else 8) for t in range(0, 1200, 30))
    before, after = present(cpu_around(s, 600, now=1200))
    assert (before, after) == (92, 8)
    assert cpu_around(s, 600, now=610) is None  # not enough samples since the stall yet
    d = _hang_diag()
    warns = early_warnings(d, _history(), PolicyParams(), 1200,
                           cpu=CpuEvidence(before, after))
    assert warns[0].kind == DecisionKind.WARN and "92 % → 8 %" in warns[0].reason


def _hang_diag():
    from bot.core.models import Action, Diagnosis, DiagnosisMetrics

    return Diagnosis("hang", Action.ASK, True, True, "",
                     metrics=DiagnosisMetrics(last_iter=3470, stall_seconds=600))


def _history():
    from bot.core.policy import AttemptFacts, ChainHistory

    return ChainHistory(attempts=(AttemptFacts("88154", 1, last_iter=3470),))


def test_torchrun_agent_with_fork_ranks_owning_named_workers():
    """The benchmark's layout: pt_elastic forks ranks (same cmdline), ranks own workers."""
    procs = [P(1, 0, "bash", "/bin/bash", "job.sh"), P(2, 1, "pt_elastic", *TRAIN)]
    procs += [P(10 + r, 2, "python3", *TRAIN) for r in range(4)]
    procs += [P(100 + 10 * r + w, 10 + r, "pt_data_worker", *TRAIN) for r in range(4)
              for w in range(9)]
    roles = classify_roles(procs)
    assert [roles[10 + r] for r in range(4)] == ["trainer"] * 4
    assert roles[1] == roles[2] == "other"
    assert sum(r == "worker" for r in roles.values()) == 36


def _rss_line(t, trainer_gib, worker_gib):
    return json.dumps({"v": 1, "t": t,
                       "rss": {"trainer": int(trainer_gib * (1 << 30)),
                               "worker": int(worker_gib * (1 << 30)), "other": 0},
                       "cpu": {"trainer": 90.0, "worker": 40.0, "other": 0.0},
                       "n": {"trainer": 1, "worker": 2, "other": 1}})


def test_rss_by_iteration_interpolates_between_progress_lines():
    from bot.core.sampler_series import rss_by_iteration

    s = SamplerSeries()
    s.feed_lines([_rss_line(t, 40, 2) for t in (5, 10, 15, 100)])
    progress = [(0.0, 100), (10.0, 110), (20.0, 120)]
    assert [it for it, _ in rss_by_iteration(s, progress)] == [105, 110, 115]  # t=100 outside


def test_sampler_leak_finds_the_88016_worker_leak_without_rss_in_the_log():
    from bot.core.sampler_series import role_growth, sampler_leak

    s = SamplerSeries()
    # 160 iterations at 4.5 s; workers 1.9 -> 9.2 GiB (the decoder cache), trainer flat.
    s.feed_lines(_rss_line(4.5 * k, 40, 1.9 + 7.3 * k / 160) for k in range(0, 161, 8))
    progress = [(4.5 * k, 64 + k) for k in range(0, 161, 4)]
    finding = sampler_leak(s, progress, 100 << 30, target_iter=8000)
    assert finding is not None
    assert 4.0 < finding.slope_gib_per_100_iter < 5.0  # 7.3 GiB over 160 iterations
    assert 64 + 160 < finding.projected_oom_iter < 8000
    first, last = present(role_growth(s, "worker"))
    assert round(first / (1 << 30), 1) < 3 and round(last / (1 << 30), 1) > 8
    # Flat memory is no leak.
    flat = SamplerSeries()
    flat.feed_lines(_rss_line(4.5 * k, 40, 2) for k in range(0, 161, 8))
    assert sampler_leak(flat, progress, 100 << 30, target_iter=8000) is None


def _run_line(t, worker_gib, root):
    """A sampler line naming the tree's root process (pid, start time)."""
    line = json.loads(_rss_line(t, 40, worker_gib))
    line["root"] = {"pid": root[0], "started": root[1]}
    return json.dumps(line)


def test_a_requeued_jobs_worker_growth_is_its_last_runs():
    """A requeued job's batch script runs again and its sampler appends to the same file:
    run 1's workers grew 1 -> 9 GiB, run 2's (a new root process) hold 6 GiB from their
    start. The growth compares run 2's first points with its last (none), not run 1's start
    with run 2's end (1 -> 6 GiB)."""
    from bot.core.sampler_series import role_growth

    run_1 = [_run_line(10.0 * k, 1 + 8 * k / 20, (4242, 1000.0)) for k in range(21)]
    run_2 = [_run_line(3600 + 10.0 * k, 6.0, (5151, 3590.0)) for k in range(10)]
    s = SamplerSeries()
    s.feed_lines(run_1 + run_2)
    assert s.run_start == 3600
    assert role_growth(s, "worker") == (6 << 30, 6 << 30)
    # ... a run with too few points yet has no growth to show
    short = SamplerSeries()
    short.feed_lines(run_1 + run_2[:5])
    assert role_growth(short, "worker") is None
    # ... the same pid started again (a run in its own PID namespace) is another root too
    again = SamplerSeries()
    again.feed_lines(run_1 + [_run_line(3600 + 10.0 * k, 2.0, (4242, 3590.0))
                              for k in range(10)])
    assert again.run_start == 3600
    # ... lines that name no root (an older sampler's) are one run
    old = SamplerSeries()
    old.feed_lines(_rss_line(t, 40, 2.0) for t in (10, 20, 3600, 3610))
    assert old.run_start is None and len(old.last_run()) == 4


def _gen_line(t, worker_gib, gen, root=(4242, 1000.0)):
    """A sampler line of one batch script run (`root`) whose trainers are generation `gen`."""
    line = json.loads(_run_line(t, worker_gib, root))
    line["gen"] = gen
    return json.dumps(line)


def test_an_elastic_restarts_new_trainers_start_the_leak_fit_again():
    """torchrun restarts every trainer inside the same batch script (`--max-restarts`): the
    workers of generation 0 grew 1 -> 9 GiB and were killed; generation 1's start at 2 GiB
    and grow 0.5 GiB every 100 iterations. The log writes no run start line at the restart,
    so its progress spans both. The leak fit and the growth are generation 1's: with
    generation 0 mixed in (9 GiB, then a drop to 2 GiB), the fit said 0.35 GiB / 100
    iterations and the host OOM at iteration 6,580 instead of 4,800, and the workers' growth
    started at 1.2 GiB."""
    from bot.core.sampler_series import role_growth, sampler_leak

    gen_0 = [_gen_line(10.0 * k, 1 + 8 * k / 40, 0) for k in range(41)]  # iterations 0-400
    gen_1 = [_gen_line(500 + 10.0 * k, 2 + 0.5 * k / 10, 1) for k in range(41)]
    s = SamplerSeries()
    s.feed_lines(gen_0 + gen_1)
    assert s.run_start == 500
    assert [p.gen for p in s.last_run()] == [1] * 41
    # the log: iterations 0-400 at 10 s, then resumed from the checkpoint saved at 400
    progress = [(10.0 * k, 10 * k) for k in range(41)]
    progress += [(500 + 10.0 * k, 400 + 10 * k) for k in range(41)]
    finding = sampler_leak(s, progress, 64 << 30, target_iter=10_000)
    assert finding is not None
    assert 0.45 < finding.slope_gib_per_100_iter < 0.55  # generation 1's 0.5 GiB / 100 iter
    assert 4_700 < finding.projected_oom_iter < 4_900  # 64 GiB total at 0.5 GiB / 100 iter
    first, last = present(role_growth(s, "worker"))
    assert round(first / (1 << 30)) == 2 and round(last / (1 << 30)) == 4
    # ... one trainer generation all along is one run, as before
    one = SamplerSeries()
    one.feed_lines(gen_0)
    assert one.run_start is None and len(one.last_run()) == 41
    # ... a requeue (another root) starts its own generations at 0: still a new run
    requeued = SamplerSeries()
    requeued.feed_lines(gen_0 + [_gen_line(500 + 10.0 * k, 2, 0, root=(5151, 490.0))
                                 for k in range(5)])
    assert requeued.run_start == 500


def test_trainer_generations_count_only_a_whole_replacement():
    from bot.core.sampler_series import TrainerGenerations

    g = TrainerGenerations()
    ranks = [(20 + r, 100.0) for r in range(4)]
    assert g.see(ranks) == 0
    assert g.see([]) == 0  # between a restart's kill and its new trainers
    assert g.see([(30 + r, 200.0) for r in range(4)]) == 1  # all four new: torchrun restarted
    assert g.see([(30, 200.0), (31, 200.0), (32, 200.0), (44, 250.0)]) == 1  # one replaced
    # the same pids started again (a PID namespace, or pids wrapped) are new trainers
    assert g.see([(30, 300.0), (31, 300.0), (32, 300.0), (44, 300.0)]) == 2


def test_sample_record_names_the_trees_root():
    procs = [P(1, 0, "python", *TRAIN)]
    rec = sample_record(1000.0, [(procs[0], 1 << 30, 5.0)], classify_roles(procs),
                        root=(1, 999.123))
    assert rec["root"] == {"pid": 1, "started": 999.12}
    point = parse_line(json.dumps(rec))
    assert point is not None and point.root == (1, 999.12)
    assert present(parse_line(_rss_line(1.0, 40, 2))).root is None
    assert point.gen is None and "gen" not in rec  # a line without one: an older sampler's
    rec = sample_record(1000.0, [(procs[0], 1 << 30, 5.0)], classify_roles(procs),
                        root=(1, 999.123), generation=2)
    assert present(parse_line(json.dumps(rec))).gen == 2
