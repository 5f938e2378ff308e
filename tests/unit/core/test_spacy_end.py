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
