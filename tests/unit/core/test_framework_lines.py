"""Named frameworks' own loggers' lines (bot.core.framework_lines), read ahead of the generic
grammar: the figures each sets on the sample, and the body it leaves for the grammar, without
what the grammar must not read again as its own (a GPU memory as host memory)."""

from __future__ import annotations

from bot.core.framework_lines import read_framework_line
from bot.core.training_lines import Sample


def test_a_metric_logger_line_leaves_its_meters_without_its_gpu_memory():
    s = Sample(line_no=1)
    body = read_framework_line(
        "Epoch: [3]  [ 100/1251]  eta: 0:05:12  lr: 0.000100  loss: 0.8123 (0.8450)  "
        "time: 0.2500  data: 0.0010  max mem: 10240", s)
    assert (s.iteration, s.sec_per_iter, s.gpu_mem_bytes) == (3 * 1251 + 100, 0.25,
                                                              10240 * 1024**2)
    assert "loss: 0.8123" in body and "max mem" not in body


def test_an_openmmlab_line_gives_its_step_and_leaves_the_body_whole():
    s = Sample(line_no=1)
    line = ("Iter [80000/80000]\tlr: 1.000e-04, eta: 0:00:00, time: 0.400, data_time: 0.010, "
            "memory: 5000, loss: 0.2000")
    assert read_framework_line(line, s) == line
    assert (s.iteration, s.target_iter, s.sec_per_iter, s.gpu_mem_bytes) == (
        80000, 80000, 0.4, 5000 * 1024**2)


def test_another_line_is_left_as_it_is():
    s = Sample(line_no=1)
    line = "step 100 loss 0.5 eta: 0:00:10"
    assert read_framework_line(line, s) == line
    assert not s.is_metric
