"""A log alone whose program says its training finished in its own words, in a sentence none of
the catalogue's `completed` markers reads (`Done training.`, `INFO: training done`, `All
done!`), after training progress and with only reports, saves or nothing after it, reads
`completed` by hint: bot.core.diagnose.finish_said.ends_in_finish_said, its detail
`finish_said`. The guards are those of a target reached (bot.core.diagnose.after_target): a
sentence that names an epoch or a pass, an outer loop short of its last pass, training, a signal
or an evaluation with no result after it. And a catalogue marker naming a pass short of its
total (`training finished for fold 1/5`) ends that pass, not the run
(bot.core.detectors.completion_ending).

Chosen after held-out sets 20-22's report of a kind of miss (a finished run read `none`); the
sentences are the ones scripts print after their loop, the progress lines a plain loop's
`print(f"step {step} loss {loss:.2f}")`, not taken from those logs.
"""

from __future__ import annotations

import pytest
from support.diagnosis import read_log
from support.end_marker import _catalogue, read

from bot.core.models import Accounting
from bot.slack.render import explain, explain_decided

STEPS = "step 100 loss 0.50\nstep 200 loss 0.40\nstep 300 loss 0.30\n"


@pytest.mark.parametrize("end", [
    "Done training.\n", "Done training!\n", "INFO: training done\n",
    "2024-01-01 10:00:00 INFO training done.\n", "All done!\n",
    "Done training.\nSaved model to out/model.pt\nTest acc: 0.91\n",
])
def test_the_programs_own_finish_sentence_ends_a_finished_run_by_hint(end):
    d = read(STEPS + end)
    assert (d.class_id, d.decided_by) == ("completed", "hint")
    assert d.detail is not None and d.detail["kind"] == "finish_said"


@pytest.mark.parametrize("log", [
    pytest.param(STEPS + "Done training epoch 3\n", id="an epoch's end"),
    pytest.param(STEPS + "training done for fold 1/5\n", id="a fold's end"),
    pytest.param("Fold 1/5\n" + STEPS + "All done!\n", id="inside a fold short of the last"),
    pytest.param(STEPS + "All done!\nstep 400 loss 0.20\n", id="training after it"),
    pytest.param(STEPS + "All done!\n*** SIGTERM received at time=1700000000 on cpu 3 ***\n",
                 id="a signal after it"),
    pytest.param(STEPS + "Done training.\nRunning final evaluation on the test set...\n",
                 id="an evaluation announced with no result"),
    pytest.param("Preparing data\nTokenizing 50000 files\nAll done.\n", id="no training before it"),
    pytest.param("step 100 loss 0.9\nstep 200 loss 0.7\ndone training epoch\n",
                 id="a word after it: an epoch's end"),
    pytest.param("step 100 loss 0.9\nstep 200 loss 0.7\nAll done with preprocessing\n",
                 id="a word after it: another step's end"),
    pytest.param("seed 0\nstep 100 loss 0.9\nstep 200 loss 0.7\nDone training.\nseed 1\n",
                 id="a next seed after it"),
    pytest.param("Iter 100/1000 loss 0.9\nIter 200/1000 loss 0.7\nDone training.\n",
                 id="progress well short of its total before it"),
])
def test_a_sentence_that_ends_no_run_leaves_it_open(log):
    d = read(log)
    assert d.class_id != "completed"


def test_a_marker_naming_a_fold_short_of_its_total_is_no_end():
    assert read(STEPS + "Training finished for fold 1/5\n").class_id == "none"
    assert (read(STEPS + "Training finished for fold 5/5\n").decided_by == "signature")


def test_accounting_leaves_the_log_alone_reading_out():
    d = read_log(_catalogue(), STEPS + "All done!\n", Accounting(exit_code=1))
    assert d.class_id != "completed"


def test_the_confidence_line_says_it_was_inferred_from_the_programs_words():
    d = read(STEPS + "All done!\n")
    assert explain(d).startswith("The program said its training finished in its own words "
                                 "(line 4)")
    assert explain_decided(d).startswith("Inferred from the program's own sentence")
    assert "스스로의 말로 밝혔고(4번째 줄)" in explain(d, "ko")
    assert "프로그램 자신의 문장에서 추론했습니다" in explain_decided(d, "ko")
