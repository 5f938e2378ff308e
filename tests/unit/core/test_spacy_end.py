"""spaCy's end of training, read from its source (explosion/spaCy f69c32f7,
spacy/training/loop.py train()): once its step iterator ended (max_epochs, max_steps or patience
reached) it writes wasabi's good message `✔ Saved pipeline to output directory` and the path on
the next line (explosion/wasabi ddcb05a, Printer.text: `{icon} {title}\\n{text}`); an exception
leaves through its finally block before it. Its training table (spacy/training/loggers.py
console_logger: `E`, `#`, each component's loss, the scores) is written row by row after each
evaluation."""

from __future__ import annotations

import pytest
from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    read,
)

from bot.core.metrics import MetricSeries

TABLE = (
    "\u2139 Pipeline: ['tok2vec', 'ner']\n"
    "\u2139 Initial learn rate: 0.001\n"
    "E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE \n"
    "---  ------  ------------  --------  ------  ------  ------  ------\n"
    "  0       0          0.00     49.67    0.00    0.00    0.00    0.00\n"
    "  3     200         41.79   2123.60   41.19   52.83   33.75    0.41\n"
    " 12    1600        112.41    412.02   81.12   82.40   79.88    0.81\n"
    " 20    2000         98.02    301.12   81.40   82.71   80.13    0.81\n")
ENDS = {
    "icon": "\u2714 Saved pipeline to output directory\noutput/model-last\n",
    "no UTF-8": "[+] Saved pipeline to output directory\noutput/model-last\n",
}


@pytest.mark.parametrize("end", list(ENDS.values()), ids=list(ENDS))
def test_the_saved_pipeline_ends_a_finished_run(end):
    assert_ends_the_run(TABLE + end, "Saved pipeline to output directory")


def test_its_abort_message_is_no_end():
    """An exception: `⚠ Aborting and saving the final best model. Encountered exception: ...`,
    no saved-pipeline line, so no finished run."""
    d = read(TABLE + "\u26a0 Aborting and saving the final best model. Encountered exception: "
             "OSError(28, 'No space left on device')\n")
    assert d.class_id != "completed"


@pytest.mark.parametrize("end", list(ENDS.values()), ids=list(ENDS))
def test_an_error_after_it_decides(end):
    assert_the_error_decides(TABLE + end)


SECOND_STEP = (
    "=================================== train ===================================\n"
    "Running command: /usr/bin/python -m spacy train configs/b.cfg --output training/b\n"
    "\u2139 Saving to output directory: training/b\n"
    "\u2139 Using CPU\n")


@pytest.mark.parametrize("end", list(ENDS.values()), ids=list(ENDS))
def test_a_next_spacy_train_after_it_undoes_it(end):
    """`spacy project run` with two training steps: the second's runner line, its table and
    rows after the first's saved pipeline: still training."""
    assert_still_running(TABLE + end + SECOND_STEP + TABLE)


def test_a_next_training_table_undoes_it():
    """A second `spacy train` in the same batch script, no project runner: its table."""
    assert_still_running(TABLE + ENDS["icon"] + TABLE)


def test_the_runner_starting_a_next_training_undoes_it():
    """The runner's line alone, the next training still loading its pipeline."""
    assert_still_running(TABLE + ENDS["icon"] + SECOND_STEP)


# --- the table's rows as progress ---------------------------------------------------------
# console_logger_v3 (spacy/training/loggers.py 041f47b3) writes its header once, before the loop
# (msg.row of `E`, `#`, the losses, the scores and `Score`, upper-cased, two blanks apart), then
# a row after each evaluation: epoch, step, each loss and score `{0:.2f}`, right-aligned in the
# header's widths.
ROWS = TABLE.split("------\n", 1)[1]


def _series_of(text: str) -> MetricSeries:
    series = MetricSeries()
    series.feed_lines(text.splitlines())
    return series


def test_the_rows_under_its_header_are_the_trainings_steps():
    series = _series_of(TABLE)
    assert [s.iteration for s in series.samples] == [0, 200, 1600, 2000]
    assert read(TABLE).metrics.last_iter == 2000


@pytest.mark.parametrize("before", ["", "Training data: 1200 docs\n"], ids=["alone", "after text"])
def test_rows_before_any_header_are_no_progress(before):
    """A table of bare numbers another program printed: no header, no steps of a training."""
    assert _series_of(before + ROWS).last_iteration is None
    assert read(before + ROWS).metrics.last_iter is None


def test_a_row_of_another_width_is_none_of_its_rows():
    """Under the header, a line of numbers with fewer columns than it is no row of the table."""
    series = _series_of(TABLE + "  21    2100\n")
    assert series.last_iteration == 2000


def test_a_second_trainings_rows_count_from_its_own_header():
    """A second `spacy train` (another pipeline, another table's width): its rows under its own
    header."""
    second = ("E    #       LOSS TEXTCAT  CATS_SCORE  SCORE \n"
              "---  ------  ------------  ----------  ------\n"
              "  0       0          0.25        0.00    0.00\n"
              "  2     400         11.20       71.30    0.71\n")
    series = _series_of(ROWS + ENDS["icon"] + second)
    assert [s.iteration for s in series.samples] == [0, 400]


def test_a_log_cut_after_its_rows_is_still_running_and_an_error_after_them_decides():
    assert_still_running(TABLE)
    assert_the_error_decides(TABLE)
