"""StyleGAN2-ADA's and StyleGAN3's log, built from its source's format strings (NVlabs/
stylegan2-ada-pytorch training/training_loop.py d72cc7d041b4): `Training for {total_kimg}
kimg...` before the loop, each tick's `tick {:<5d} kimg {:<8.1f} time {:<12s} sec/tick {:<7.1f}
sec/kimg {:<7.2f} …`, and after the tick at the total a last snapshot's metrics and `Exiting...`.
The loop stops once the images shown reach the total announced: a tick at it ends a finished
run."""

from __future__ import annotations

import pytest
from support.end_marker import assert_the_error_decides, read

from bot.core.training_lines import LineParser

ANNOUNCED = "Training for 25000 kimg...\n\n"


def _tick(tick: int, kimg: float, time: str) -> str:
    return (f"tick {tick:<5d} kimg {kimg:<8.1f} time {time:<12s} sec/tick {98.1:<7.1f} sec/kimg "
            f"{24.52:<7.2f} maintenance {0.0:<6.1f} cpumem {5.21:<6.2f} gpumem {12.11:<6.2f} "
            f"augment {0.412:.3f}\n")


START = ANNOUNCED + _tick(0, 0.1, "1m 02s") + _tick(1, 4.1, "2m 40s")
LAST_TICKS = _tick(6249, 24996.0, "6d 23h 10m") + _tick(6250, 25000.0, "6d 23h 12m")
AFTER_THE_LOOP = ("Evaluating metrics...\n"
                  '{"results": {"fid50k_full": 2.9212}, "metric": "fid50k_full", "total_time": '
                  '612.1, "total_time_str": "10m 12s", "num_gpus": 8, "snapshot_pkl": "network-sn'
                  'apshot-025000.pkl", "timestamp": 1714591234.12}\n'
                  "\n"
                  "Exiting...\n")
FINISHED = START + LAST_TICKS + AFTER_THE_LOOP


def test_a_tick_takes_the_announced_kimg_as_its_target_and_its_seconds_per_kimg_as_the_pace():
    parser = LineParser()
    parser.parse(ANNOUNCED.strip(), 1)
    sample, _ = parser.parse(_tick(6249, 24996.0, "6d 23h 10m").rstrip(), 2)
    assert sample is not None
    assert (sample.iteration, sample.target_iter) == (24996, 25000)
    assert sample.sec_per_iter == pytest.approx(24.52)


def test_the_tick_at_the_announced_total_ends_a_finished_run():
    d = read(FINISHED)
    assert (d.class_id, d.decided_by) == ("completed", "progress")


@pytest.mark.parametrize("log", [START + _tick(6249, 24996.0, "6d 23h 10m"),
                                 (START + LAST_TICKS).removeprefix(ANNOUNCED)],
                         ids=["short-of-the-total", "no-total-announced"])
def test_a_run_short_of_the_total_or_without_one_is_still_running(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_the_next_run_after_it_is_still_running():
    d = read(FINISHED + START)
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_an_error_after_the_last_tick_decides():
    assert_the_error_decides(START + LAST_TICKS)
