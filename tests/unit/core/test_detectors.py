"""Detectors: stall (with save allowance), leak trend, checkpoint-phase OOM, silent exit, how the
log ends around a completion marker."""

from __future__ import annotations

import calendar
from collections import Counter
from collections.abc import Callable

import pytest
from fakes import present
from support.bar_draws import lightning_validation_draw, mmcv_draw

from bot.core.catalogue import Match
from bot.core.detectors import (
    CompletionEnding,
    completion_ending,
    detect_broken_save,
    detect_leak,
    detect_silent_exit,
    detect_stall,
    progress_doubts,
    theil_sen,
)
from bot.core.metrics import MetricSeries, count_drawn_at
from bot.core.models import Accounting
from bot.core.tail import READ, FileRead, TailState, apply_read, plan_read
from bot.core.training_lines import CheckpointEvent, Sample
from bot.core.units import GIB

T0 = float(calendar.timegm((2025, 5, 14, 16, 0, 0)))


def stamp(t: float) -> str:
    whole = int(t)
    h, rem = divmod(whole - int(T0) + 16 * 3600, 3600)
    return f"2025-05-14 {h:02d}:{rem // 60:02d}:{rem % 60:02d}"


def run(n: int, *, step_s: float = 4.5, rss=lambda it: 45.0, start_iter: int = 1,
        extra: dict[int, list[str]] | None = None) -> tuple[MetricSeries, float]:
    """A series of n progress lines, one per iteration; returns it and the last log time."""
    series = MetricSeries()
    lines = []
    t = T0
    for k in range(n):
        it = start_iter + k
        t = float(int(T0 + k * step_s))  # as printed: whole seconds
        lines.append(f"{stamp(t)} iter={it}/8000 loss=0.6 rss={rss(it):.2f}GiB")
        lines += (extra or {}).get(it, [])
    series.feed_lines(lines)
    return series, t


# --- stall --------------------------------------------------------------------------------


def test_stall_after_five_minutes_reports_start_last_iter_and_duration():
    series, last = run(100)
    assert detect_stall(series, last + 299) is None
    finding = detect_stall(series, last + 1800)
    assert finding is not None
    assert finding.started_at == last
    assert finding.last_iter == 100
    assert finding.last_line == 100
    assert finding.stalled_s == pytest.approx(1800)
    assert finding.threshold_s == 300


def test_a_job_slurm_started_again_is_silent_from_that_start_and_its_lines_are_its_own():
    """Requeued (no run start line in the log): silence counts from the new start, and the
    first line timed after it starts the next run's series, below the first run's iteration."""
    series, last = run(100)
    series.restarted(last + 3600)  # an hour in the queue
    assert detect_stall(series, last + 3600 + 200) is None
    finding = detect_stall(series, last + 3600 + 400)  # the next run silent for 400 s
    assert finding is not None and finding.started_at == last + 3600
    assert finding.stalled_s == pytest.approx(400)
    series.feed_line(f"{stamp(last + 3610)} loading checkpoint 50", 101)
    assert series.run_start == 101 and series.last_progress is None
    series.feed_line(f"{stamp(last + 3620)} iter=60 loss=1.0", 102)
    assert series.last_iteration == 60
    assert detect_stall(series, last + 3620 + 200) is None


def test_slow_steps_raise_the_threshold_to_ten_times_the_step():
    series, last = run(50, step_s=60)  # 60 s/iter -> threshold 600 s
    assert detect_stall(series, last + 500) is None
    assert present(detect_stall(series, last + 700)).threshold_s == pytest.approx(600)


def test_healthy_slow_run_is_not_a_stall():
    series, last = run(300, step_s=13.3)
    assert detect_stall(series, last + 13) is None
    assert detect_stall(series, last) is None


def test_no_times_no_stall():
    series = MetricSeries()
    series.feed_lines(["iter=1 loss=1", "iter=2 loss=1"])
    assert detect_stall(series, 10_000.0) is None


def test_open_checkpoint_save_is_excused_up_to_the_save_time():
    series, last = run(100)
    series.feed_line(f"{stamp(last + 5)} Saving checkpoint at iteration 100", 101)
    assert detect_stall(series, last + 5 + 400) is None  # saving for 400 s: excused
    finding = detect_stall(series, last + 5 + 700)  # saving for 700 s > 600 s allowance
    assert finding is not None and finding.open_save is not None
    assert detect_stall(series, last + 5 + 700, save_time_s=900) is None


def test_finished_save_time_is_subtracted_from_the_idle_time():
    series, last = run(100)
    series.feed_line(f"{stamp(last + 5)} Saving checkpoint at iteration 100", 101)
    series.feed_line(f"{stamp(last + 505)} checkpoint saved in 500.0s", 102)
    assert detect_stall(series, last + 505 + 200) is None  # 700 s idle, 500 s of it saving
    assert detect_stall(series, last + 505 + 400) is not None


def rfc3339(t: float) -> str:
    """A line's time as `kubectl logs --timestamps` prefixes it (a timed prefix)."""
    return stamp(t).replace(" ", "T") + ".000000000Z"


def _bar_time(seconds: int) -> str:
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def _lightning_validation(eval_draws: list[tuple[float, int]]) -> list[str]:
    """Lightning's epoch bar, one draw a line (a collector that turns carriage returns into
    newlines, each line timed), 100 batches 6 s apart, then its validation's bar drawn below
    it at (seconds after the last batch, batches done of 200)."""
    lines = [f"{rfc3339(T0 + 6 * k)} Epoch 0:  {k:3d}%|#         | {k}/100 "
             f"[{_bar_time(6 * k)}<{_bar_time(6 * (100 - k))},  0.17it/s, v_num=0, "
             "train_loss=0.600]" for k in range(1, 101)]
    last = T0 + 600
    lines += [f"{rfc3339(last + dt)} Validation DataLoader 0:  {b // 2:3d}%|#         | "
              f"{b}/200 [{_bar_time(int(dt))}<05:00,  0.33it/s]\x1b[A" for dt, b in eval_draws]
    return lines


def _hf_evaluation(eval_draws: list[tuple[float, int]]) -> list[str]:
    """Hugging Face Trainer's bars (tests/unit/core/test_metrics.py's, one draw a line, each
    line timed): the training bar at the top, 100 steps 6 s apart, its logged loss, then the
    evaluation's own bar drawn below it at (seconds after the last step, batches of 400)."""
    lines = [f"{rfc3339(T0 + 6 * k)}   0%|          | {k}/1000 "
             f"[{_bar_time(6 * k)}<16:40,  0.17it/s]" for k in range(1, 101)]
    last = T0 + 600
    lines.append(f"{rfc3339(last)} {{'loss': 2.3, 'grad_norm': 1.1, 'learning_rate': 5e-05, "
                 "'epoch': 0.01}")
    lines += [f"{rfc3339(last + dt)}  15%|#5        | {b}/400 [{_bar_time(int(dt))}<00:40, "
              f" 0.50it/s]\x1b[A" for dt, b in eval_draws]
    return lines


def _fed(lines: list[str], feed: str) -> MetricSeries:
    """A series fed line by line, or in one block past its sample budget (sparse: one line
    in `stride` and the block's last lines)."""
    if feed == "lines":
        series = MetricSeries()
        series.feed_lines(lines)
    else:
        series = MetricSeries(max_samples=16)
        series.feed_block("\n".join(lines) + "\n")
        assert series.stride > 1
    return series


@pytest.mark.parametrize("feed", ["lines", "sparse-block"])
@pytest.mark.parametrize("log", [_lightning_validation, _hf_evaluation],
                         ids=["lightning", "hugging-face"])
def test_an_evaluation_whose_bar_keeps_advancing_is_no_stall(log, feed: str):
    """A 10-minute evaluation after the last training step (its bar advancing every 30 s) is
    activity: no stall at its end, though no training step came for longer than 300 s; the
    training's iteration, target and pace stay its own."""
    series = _fed(log([(30.0 * k, 10 * k) for k in range(1, 21)]), feed)
    assert series.last_iteration == 100
    assert series.sec_per_iter() == pytest.approx(6.0, rel=0.1)
    end = T0 + 600 + 600
    assert detect_stall(series, end + 290) is None
    # nor are its lines the training's points (charts, the leak fit)
    assert all(s.time is not None and s.time <= T0 + 600
               for s in series.samples if s.iteration is not None)


@pytest.mark.parametrize(("log", "stopped_at"), [(_lightning_validation, "100/200"),
                                                  (_hf_evaluation, "100/400")],
                         ids=["lightning", "hugging-face"])
@pytest.mark.parametrize("feed", ["lines", "sparse-block"])
def test_an_evaluation_whose_bar_stops_advancing_is_a_stall(log, stopped_at: str, feed: str):
    """An evaluation that stops (a hang inside validation, as an NCCL collective's) is a
    stall from its last advance, with the training's last iteration."""
    series = _fed(log([(30.0 * k, 10 * k) for k in range(1, 11)]), feed)
    stopped = T0 + 600 + 300
    assert detect_stall(series, stopped + 290) is None
    finding = detect_stall(series, stopped + 1200)
    assert finding is not None
    assert finding.last_iter == 100
    assert finding.started_at == stopped
    assert finding.stalled_s == pytest.approx(1200)
    assert stopped_at in finding.last_text  # its evidence: the evaluation's last draw


class _FollowedLog:
    """A log followed as the watcher follows it, into a series: each read (bot.core.tail)
    feeds the complete lines and tells the unfinished last line read at a log time
    (`MetricSeries.unfinished_line`); `parsed` counts the parser's reads of each line."""

    def __init__(self, lines: list[str]) -> None:
        self.data = bytearray(("\n".join(lines) + "\n").encode())
        self.state = TailState("train.log")
        self.series = MetricSeries()
        self.parsed: Counter[int] = Counter()
        parse = self.series.parser.parse

        def counted(raw: str, line_no: int) -> tuple[Sample | None, CheckpointEvent | None]:
            self.parsed[line_no] += 1
            return parse(raw, line_no)

        self.series.parser.parse = counted  # type: ignore[method-assign]

    def read(self, at: float) -> None:
        req = plan_read(self.state, 1 << 20)
        start = req.offset - req.back
        got = FileRead(READ, len(self.data), int(at), 1, start, bytes(self.data[start:]))
        chunk = apply_read(self.state, req, got, full_read=req.budget).chunk
        assert chunk is not None
        self.series.feed_lines(chunk.lines, chunk.first_line_no)
        self.state = chunk.state
        if chunk.unfinished:
            self.series.unfinished_line(self.state.line_no + 1, chunk.unfinished, at)


# a bar redrawn in place: mmcv's ProgressBar, Lightning's validation bar (tqdm)
BAR_DRAWS = pytest.mark.parametrize("draw", [mmcv_draw, lightning_validation_draw],
                                    ids=["mmcv", "lightning"])


def _training_then_bar(draw: Callable[[int, int], bytes]) -> tuple[_FollowedLog, float]:
    """100 timed training lines 5 s apart, read; then an evaluation's bar starts on line 101
    (0 of 5,000 images), read: the log and the time of that read."""
    log = _FollowedLog([f"{stamp(T0 + 5 * k)} iter={k + 1}/8000 loss=0.6" for k in range(100)])
    log.read(T0 + 495)
    start = T0 + 500
    log.data += draw(0, 5000)
    log.read(start)
    return log, start


@BAR_DRAWS
def test_a_bar_redrawn_on_an_unfinished_line_whose_count_advances_is_no_stall(draw):
    """A 20-minute evaluation drawn by a bar alone (carriage returns, no newline: no new line
    for the watcher to read) is activity while its count rises, read after read: no stall,
    though no line came for four times the threshold."""
    log, start = _training_then_bar(draw)
    for minute in range(1, 21):
        log.data += draw(250 * minute, 5000)
        log.read(start + 60 * minute)
        assert detect_stall(log.series, start + 60 * minute + 30) is None
    assert log.state.line_no == 100  # the bar's line is still unfinished: not consumed
    assert detect_stall(log.series, start + 1200 + 290) is None


@BAR_DRAWS
def test_a_bar_frozen_at_its_count_on_an_unfinished_line_is_a_stall(draw):
    """The evaluation hangs at 2,500 images: its bar, redrawn at that count (or not at all),
    is no activity, so the stall is told past the threshold from the read that last showed
    the count move, the bar's draw as its evidence and the training's last iteration."""
    log, start = _training_then_bar(draw)
    for minute in range(1, 11):
        log.data += draw(250 * minute, 5000)
        log.read(start + 60 * minute)
    advanced = start + 600
    for minute in range(11, 20):  # redrawn at the same count, then the same bytes read again
        if minute < 15:
            log.data += draw(2500, 5000)
        log.read(start + 60 * minute)
    assert detect_stall(log.series, advanced + 290) is None
    finding = detect_stall(log.series, advanced + 360)
    assert finding is not None
    assert (finding.started_at, finding.last_iter, finding.last_line) == (advanced, 100, 101)
    assert "2500/5000" in finding.last_text


@BAR_DRAWS
def test_a_bar_count_not_seen_since_a_read_is_never_dated_before_it_was_drawn(draw):
    """A restart reads a bar the store did not keep, drawn since a read at minute 0 (the
    line's bytes then: the bar at 1,000) up to a read at minute 10, the file's mtime then. A
    count first drawn since minute 0 is dated at the file's mtime, its last write: moving
    (drawn last), refreshed (each count drawn twice), or frozen and redrawn (later than its
    freeze, never earlier); a count drawn before minute 0, at minute 0."""
    head = b"\n".join([b"x"] * 5) + b"\n"
    kept = draw(750, 5000) + draw(1000, 5000)

    def drawn_at(since_then: bytes) -> float:
        line = kept + since_then
        return count_drawn_at(line, len(head) + len(line), (len(head) + len(kept), 0.0), 600.0)

    moving = b"".join(draw(1000 + 250 * m, 5000) for m in range(1, 11))
    assert drawn_at(moving) == 600.0
    refreshed = b"".join(draw(1000 + 250 * m, 5000) * 2 for m in range(1, 11))
    assert drawn_at(refreshed) == 600.0
    frozen = b"".join(draw(1000 + 250 * min(m, 4), 5000) for m in range(1, 11))
    assert drawn_at(frozen) == 600.0
    assert drawn_at(draw(1000, 5000) * 10) == 0.0


def test_a_new_bar_after_a_long_quiet_downtime_is_dated_at_the_files_last_write():
    """The bot is down 2 hours (7,200 s) through a silent phase; then a 20-line table is
    written and, a minute before the restart's read, a new Lightning bar drawn at 0/1,000
    (tqdm draws each count twice). The count is dated at the file's mtime (7,200 s), never
    before its first draw (about 7,140 s). Before, it was dated by its first draw's share of
    the bytes written since the offset's write (the table's): at about 6,400 s, 13 minutes
    before it was drawn, and the restart's read warned `hang` for a moving bar (its ranks'
    stacks collected over SSH)."""
    head = b"".join(f"{stamp(100 + i)} iter={i}/8000 loss=0.7\n".encode() for i in range(50))
    table = b"".join(f"| metric_{i:02d} | {0.5 + i / 100:.4f} |\n".encode() for i in range(20))
    line = lightning_validation_draw(0, 1000) * 2
    end = len(head) + len(table) + len(line)
    assert count_drawn_at(line, end, (len(head), 0.0), 7200.0) == 7200.0


@BAR_DRAWS
def test_an_unfinished_bar_line_is_parsed_once_when_it_completes(draw):
    """The bar's line, read unfinished at every tick, is parsed once, when its newline comes
    (as a complete line always was): the evaluation it drew is the series' then, not before."""
    log, start = _training_then_bar(draw)
    for minute in range(1, 21):
        log.data += draw(250 * minute, 5000)
        log.read(start + 60 * minute)
    assert log.parsed[101] == 0 and log.series.lines_seen == 100
    log.data += f"\n{stamp(start + 1201)} iter=101/8000 loss=0.6\n".encode()
    log.read(start + 1201)
    log.read(start + 1260)
    assert (log.parsed[101], log.parsed[102]) == (1, 1)
    evaluation = log.series.last_evaluation
    assert evaluation is not None and evaluation.line_no == 101
    assert evaluation.evaluation_batches == (5000, 5000)
    assert log.series.last_iteration == 101


# --- leak ---------------------------------------------------------------------------------


def leak_rss(it: int) -> float:
    return 72.0 + (90.0 - 72.0) / (161 - 64) * (it - 64)


def test_leak_slope_and_projection_match_the_88016_numbers():
    series, _ = run(170, rss=leak_rss)
    finding = detect_leak(series, 950 * GIB, target_iter=8000)
    assert finding is not None
    assert finding.slope_gib_per_100_iter == pytest.approx(18.56, abs=0.05)
    assert finding.projected_oom_iter == pytest.approx(4795, abs=10)


def test_one_spike_does_not_move_the_leak_slope():
    clean, _ = run(170, rss=leak_rss)
    spiky, _ = run(170, rss=lambda it: leak_rss(it) + (300 if it == 120 else 0))
    a = present(detect_leak(clean, 950 * GIB, target_iter=8000))
    b = present(detect_leak(spiky, 950 * GIB, target_iter=8000))
    assert b.slope_gib_per_100_iter == pytest.approx(a.slope_gib_per_100_iter, rel=0.02)


def test_save_peak_is_left_out_and_does_not_create_a_leak():
    saves = {k: [f"saving checkpoint at iteration {k}",
                 f"{stamp(T0)} rss=186.0GiB during save",
                 "checkpoint saved in 47.0s"] for k in (100, 200, 300)}
    series, _ = run(400, rss=lambda it: 45.0 + (it % 7) * 0.3, extra=saves)
    assert detect_leak(series, 300 * GIB, target_iter=8000) is None


def test_flat_noisy_rss_is_not_a_leak():
    series, _ = run(500, rss=lambda it: 45 + ((it * 7919) % 11) - 5)
    assert detect_leak(series, 950 * GIB, target_iter=8000) is None


def test_slow_growth_that_crosses_the_limit_after_the_target_is_not_reported():
    series, _ = run(500, rss=lambda it: 45 + it * 0.01)  # 1 GiB / 100 iters
    assert detect_leak(series, 950 * GIB, target_iter=8000) is None
    assert detect_leak(series, 100 * GIB, target_iter=8000) is not None


def test_leak_warns_with_headroom_before_the_limit_itself_is_reached():
    """leak_warn_margin: RSS growing 0.05 GiB per iteration crosses the limit after the target
    but 90 % of it before: warned with the 10 % headroom, not without; the projection is
    still where the limit itself is crossed."""
    series, _ = run(500, rss=lambda it: 45 + it * 0.05)
    limit = 440 * GIB  # crossed at iter 7900; 90 % of it (396 GiB) at iter 7020
    assert detect_leak(series, limit, target_iter=7500, warn_margin=0.0) is None
    finding = detect_leak(series, limit, target_iter=7500, warn_margin=0.1)
    assert finding is not None
    assert finding.projected_oom_iter == pytest.approx(7900, abs=5)  # the limit, not 90 % of it
    assert detect_leak(series, limit, target_iter=7500) == finding  # 0.1 is the default


def test_leak_needs_leak_min_samples_rss_points():
    series, _ = run(5, rss=lambda it: 45 + it * 10)  # 5 samples, +10 GiB per iteration
    assert detect_leak(series, 950 * GIB, target_iter=8000) is None  # default: 6 samples
    finding = detect_leak(series, 950 * GIB, target_iter=8000, min_samples=5)
    assert finding is not None and finding.n_points == 5


def test_leak_without_limit_has_no_projection():
    series, _ = run(170, rss=leak_rss)
    finding = detect_leak(series, None)
    assert finding is not None and finding.projected_oom_iter is None


def test_theil_sen_ignores_outliers():
    import numpy as np

    x = np.arange(20, dtype=float)
    y = 2 * x + 1
    y[5] = 500
    slope, intercept, share = theil_sen(x, y)
    assert slope == pytest.approx(2)
    assert intercept == pytest.approx(1)
    assert share > 0.8


# --- checkpoint-phase OOM -----------------------------------------------------------------


def save_series(with_end: bool) -> MetricSeries:
    series = MetricSeries()
    lines = ["iter=999 loss=0.8", "Saving checkpoint at iteration 1000"]
    if with_end:
        lines.append("Saved checkpoint iter_000001000")
    lines.append("iter=1000 loss=0.8")
    series.feed_lines(lines)
    return series


def test_a_failure_after_a_save_start_with_no_end_broke_the_save():
    series = save_series(with_end=False)
    finding = detect_broken_save(series, 5)
    assert finding is not None and finding.open
    assert finding.save.iteration == 1000 and finding.save.start_line == 2
    assert detect_broken_save(series) is not None  # no failure line: end of the log


def test_a_failure_after_a_finished_save_broke_no_save():
    series = save_series(with_end=True)
    assert detect_broken_save(series, 6) is None
    assert detect_broken_save(series, 1) is None


def test_a_failure_inside_a_save_window_by_time_broke_the_save():
    series = MetricSeries()
    series.feed_lines([
        "2025-05-12 11:15:03 Saving checkpoint at iteration 1000",
        "2025-05-12 11:16:03 checkpoint saved in 60s",
    ])
    inside = float(calendar.timegm((2025, 5, 12, 11, 15, 30)))
    after = float(calendar.timegm((2025, 5, 12, 11, 20, 0)))
    assert detect_broken_save(series, failed_time=inside) is not None
    assert detect_broken_save(series, failed_time=after) is None


# --- silent exit --------------------------------------------------------------------------


COMPLETED = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=7200)


def test_completed_with_the_target_reached_is_not_silent():
    series, _ = run(100, start_iter=7901)
    assert detect_silent_exit(COMPLETED, series, [], target_iter=8000) is None


def test_completed_in_ten_seconds_with_no_iteration_and_an_ls_error_is_silent():
    acct = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=10)
    ls = Match("silent_exit", 4, "ls: cannot access '/ckpt/checkpoint_step_*': No such file",
               False)
    finding = detect_silent_exit(acct, MetricSeries(), [ls], target_iter=5000)
    assert finding is not None
    assert finding.reasons() == [
        {"kind": "failure_line", "line": 4, "text": ls.text},
        {"kind": "short_run", "elapsed_s": 10}, {"kind": "no_iteration"}]


def test_a_short_resume_that_reaches_its_target_is_not_silent():
    # a resume from iter 7900 with 100 iterations left finishes in well under a minute
    series, _ = run(100, start_iter=7901)
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20)
    assert detect_silent_exit(short, series, [], target_iter=8000) is None
    done = Match("completed", 101, "Training complete", True)
    assert detect_silent_exit(short, MetricSeries(), [done], target_iter=None) is None


def test_a_completion_marker_that_training_followed_does_not_excuse_a_short_run():
    series, _ = run(100)
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20)
    followed = Match("completed", 50, "Training completed", True)
    finding = detect_silent_exit(short, series, [followed], target_iter=None)
    assert finding is not None
    assert finding.reasons() == [{"kind": "short_run", "elapsed_s": 20}]
    # the same marker after the last progress line stands for the work done
    last = Match("completed", present(series.last_iteration_line) + 1, "Training completed", True)
    assert detect_silent_exit(short, series, [followed, last], target_iter=None) is None


def test_a_short_run_below_its_target_names_both_reasons():
    series, _ = run(100)
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20)
    finding = detect_silent_exit(short, series, [], target_iter=8000)
    assert finding is not None
    assert finding.reasons() == [{"kind": "short_run", "elapsed_s": 20},
                                 {"kind": "stopped", "last_iter": 100, "target_iter": 8000}]


def test_completed_below_target_is_silent():
    series, _ = run(100)
    finding = detect_silent_exit(COMPLETED, series, [], target_iter=8000)
    assert finding is not None
    assert finding.reasons()[0] == {"kind": "stopped", "last_iter": 100, "target_iter": 8000}


def test_only_completed_zero_zero_can_be_a_silent_exit():
    for acct in (Accounting(state="FAILED", exit_code=1, signal=0),
                 Accounting(state="COMPLETED", exit_code=0, signal=9),
                 Accounting(state="RUNNING")):
        assert detect_silent_exit(acct, MetricSeries(), [], target_iter=10) is None


def test_progress_doubts_are_the_reasons_a_completion_marker_waives():
    series, _ = run(100)
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20)
    assert progress_doubts(short, series, target_iter=8000).reasons() == [
        {"kind": "short_run", "elapsed_s": 20},
        {"kind": "stopped", "last_iter": 100, "target_iter": 8000}]
    assert progress_doubts(short, MetricSeries(), target_iter=None).reasons() == [
        {"kind": "short_run", "elapsed_s": 20}, {"kind": "no_iteration"}]
    # a short run that reached its target leaves no doubt
    assert progress_doubts(short, series, target_iter=100).reasons() == []


# --- how the log ends around a completion marker ---------------------------------------------

# Hugging Face Trainer's training bar, its marker, then the evaluation it opens after training
# (`***** Running Evaluation *****`) and that evaluation's own bar
TRAINED_THEN_EVALUATING = [
    *(f"  0%|          | {i * 10}/8000 [00:{i:02d}<2:40:00,  1.2it/s]" for i in (1, 2, 3)),
    "Training completed.", "***** Running Evaluation *****",
    " 45%|####5     | 45/100 [00:10<00:12,  4.50it/s]"]


def test_an_evaluation_opened_after_the_marker_is_no_training_progress():
    series = MetricSeries()
    series.feed_lines(TRAINED_THEN_EVALUATING)
    marker = Match("completed", 4, "Training completed.", True)
    ending = completion_ending([marker], series, evaluation_start=5)
    assert ending == CompletionEnding(marker_line=4, ends_in_marker=True,
                                      evaluates_after_marker=True)
    # read without the evaluation's line, its bar is progress after the marker
    assert completion_ending([marker], series) == CompletionEnding(marker_line=4)
    assert completion_ending([], series, evaluation_start=5) == CompletionEnding()
    # the silent exit detector reads the ending it is given: the marker vouches for the run
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20)
    assert detect_silent_exit(short, series, [marker], target_iter=8000,
                              completion=ending) is None
    finding = detect_silent_exit(short, series, [marker], target_iter=8000)
    assert finding is not None
    assert finding.reasons() == [{"kind": "short_run", "elapsed_s": 20},
                                 {"kind": "stopped", "last_iter": 45, "target_iter": 8000}]
