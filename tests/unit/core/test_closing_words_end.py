"""A log alone whose program ends in its own closing words beyond `Done training.` reads
`completed` by hint (bot.core.diagnose.finish_said.ends_in_finish_said, detail `finish_said`):
the process's exit with status 0 as a runner reports it (`Process finished with exit code 0`,
which ends every loop it ran, counted ones too), an early stop it announces (`Early stopping`,
Keras's `Epoch 14: early stopping`: the count short of its total is the stop's), the run
named done (`sft done`, `Fine-tuning finished.`) or the final model saved or exported. What
may follow is what follows a target (bot.core.diagnose.after_target), now with a report's
heading (`Confusion Matrix:`) and a copier's elision (`[...truncated...]`). A fold's, a
stage's or an epoch's summary with nothing after it, an early stop's counter or setting, or a
sentence naming its pass leaves the run open.

Chosen after held-out sets' reports of a kind of miss (a finished run read `none`); the lines
are the ones scripts print after their loop, not taken from those logs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.end_marker import read

from bot.core.diagnose import after_target, finish_said

STEPS = "step 100 loss 0.50\nstep 200 loss 0.40\nstep 300 loss 0.30\n"
EPOCHS = "".join(f"Epoch {e}/20 - loss: 0.{9 - e // 3} - val_loss: 0.8\n" for e in range(1, 15))


@pytest.mark.parametrize("log", [
    pytest.param(STEPS + "Process finished with exit code 0\n", id="a runner's exit 0"),
    pytest.param("Experiment 1\nEpisode 501/1000, rewards: -3.5\nExperiment 2\n"
                 "Episode 501/1000, rewards: 4.0\nExperiment 2 took 12.5 seconds\n\n"
                 "Process finished with exit code 0\n", id="an exit 0 after counted passes"),
    pytest.param(EPOCHS + "Early stopping\n", id="a bare early stop"),
    pytest.param(EPOCHS + "Early stopping triggered at epoch 14\nTest loss: 0.71\n",
                 id="an early stop then a test result"),
    pytest.param(STEPS + "sft done\n", id="sft done"),
    pytest.param(STEPS + "Fine-tuning finished.\nSaved adapter to out/\n", id="a fine-tune's end"),
    pytest.param(STEPS + "Saving final model to out/model.pt\n", id="the final model saved"),
    pytest.param(STEPS + "Export complete (35.4s)\n", id="an export's end"),
    pytest.param(STEPS + "All done!\nConfusion Matrix:\n[...truncated...]\n",
                 id="a heading and an elision after it"),
])
def test_the_programs_closing_words_end_a_finished_run_by_hint(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "hint")
    assert d.detail is not None and d.detail["kind"] == "finish_said"


@pytest.mark.parametrize("log", [
    pytest.param("Fold 1/5\n" + EPOCHS + "Early stopping triggered at epoch 14\n"
                 "Fold 1 accuracy: 0.81\n", id="an early stop inside a fold short of the last"),
    pytest.param("Stage 1/3\n" + STEPS + "Saving final model to out/stage1.pt\n",
                 id="a stage's final model short of the last stage"),
    pytest.param(EPOCHS + "EarlyStopping counter: 3 out of 10\n", id="an early stop's counter"),
    pytest.param("early_stopping: true\n" + EPOCHS, id="an early stop's setting"),
    pytest.param(STEPS + "sft done for stage 1\n", id="a stage named done"),
    pytest.param(STEPS + "Process finished with exit code 0\nstep 400 loss 0.2\n",
                 id="training after the exit line"),
    pytest.param("Loading data\nProcess finished with exit code 0\n",
                 id="no training before the exit"),
    pytest.param(EPOCHS + "Early stopping triggered at epoch 14\n"
                 "*** SIGTERM received at time=1700000000 on cpu 3 ***\n", id="a signal after it"),
    pytest.param(STEPS + "Iter 200/1000 loss 0.7\nsft done\n",
                 id="progress well short of its total"),
])
def test_closing_words_that_end_no_run_leave_it_open(log):
    assert read(log).class_id != "completed"


@pytest.mark.parametrize(("text", "closing"), [
    ("Process finished with exit code 0", True), ("Process finished with exit code 1", False),
    ("Process finished with exit code 0137", False), ("Epoch 00017: early stopping", True),
    ("EarlyStopping", True), ("Stopping training early", True),
    ("EarlyStopping counter: 3 out of 10", False), ("early_stopping_patience=5", False),
    ("early_stopping: true", False), ("Epoch 8: early stopping is enabled with patience 3", False),
    ("EarlyStopping(patience=5)", False), ("SFT done", True), ("pretraining complete.", False),
    ("Pre-training finished", False), ("fine-tuning complete", True),
    ("training finished epoch 3", False), ("training done for fold 1", False),
    ("Final model saved to out/", True), ("TensorFlow Lite: export success", True),
    ("exporting final model", True), ("Validation done", False),
])
def test_closing_words(text, closing):
    assert finish_said._closing(text) is closing


@pytest.mark.parametrize(("line", "reported"), [
    ("Confusion Matrix:", True), ("Category 1:", True), ("[...truncated...]", True),
    ("<snip>", True), ("(output omitted)", True), ("Unfreezing backbone", False),
    ("Phase 2: training the full network", False),
])
def test_a_heading_or_an_elision_is_a_report_line(line, reported):
    assert after_target._reported(line) is reported


REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


@pytest.mark.parametrize(("name", "expected"), [
    # a PyCharm run of 15 experiments whose console ends in the process's exit with code 0
    ("completed__asthera-ml-2-task.log", "completed"),
    # an early stop at epoch 18 of 20, the best model's evaluation bar, then its metrics under
    # their headings
    ("completed__hierarchical-text-classification-bert.log", "completed"),
    # a staged scikit-learn pipeline's `TRAINING COMPLETE` banner (no training progress line)
    ("completed__ai-silent-disease-predictor.log", "completed"),
    # a 7-step pipeline's `Pipeline complete! All outputs saved to 'outputs/'`
    ("completed__compressive-strength-estimation.log", "completed"),
    # Hugging Face's train_runtime, then the final evaluate()'s eval_loss at the same step
    ("completed__sentiment-analysis-roberta.log", "completed"),
    # a 40-epoch run's live log after its first epoch's summary and best-model update
    ("none__acneguard-ai-backend.log", "none"),
    # an 80-epoch run's log cut as epoch 80 began, after epoch 79's summary
    ("none__assignment-9-80ep.log", "none"),
    # a 50-epoch run copied after epoch 31's summary
    ("none__car-classification-ml.log", "none"),
])
def test_real_logs_ending_in_closing_words_or_a_summary_mid_run(name, expected):
    text = (REAL / name).read_text(encoding="utf-8").partition("\n")[2]
    assert read(text).class_id == expected


def test_an_evaluation_report_at_the_step_training_ended_is_no_progress_after_its_marker():
    """Hugging Face's Trainer: `train_runtime` (a `completed` marker) then the final
    evaluate()'s dict at the same step reads completed by its marker; a step past it trains."""
    steps = "".join(f"{{'loss': 0.{9 - i}, 'epoch': {i}.0, 'step': {i * 100}}}\n"
                    for i in range(1, 4))
    done = "{'train_runtime': 39.7, 'train_loss': 0.5, 'epoch': 3.0}\n"
    evaluated = read(steps + done + "{'eval_loss': 0.42, 'eval_runtime': 4.0, 'epoch': 3.0, "
                     "'step': 300}\n")
    assert (evaluated.class_id, evaluated.decided_by) == ("completed", "signature")
    assert read(steps + done + "{'loss': 0.2, 'epoch': 4.0, 'step': 400}\n").class_id == "none"


def test_a_percentage_is_no_outer_loop_pass():
    from bot.core.outer_loop import outer_loop_open
    assert not outer_loop_open(["Evaluating best model: 100%|##########| 125/125"])
    assert outer_loop_open(["Evaluating model 2", "loss 0.3"])


# Keras's epoch lines, 60 of them: a pass's header before them is more than a log's 40-line
# tail back
LONG_EPOCHS = "".join(f"Epoch {e}/100\n250/250 [==============================] - 3s 12ms/step"
                      f" - loss: 0.{90 - e % 50:02d} - val_loss: 0.80\n" for e in range(1, 31))


@pytest.mark.parametrize("log", [
    pytest.param("===== Fold 1/5 =====\n" + LONG_EPOCHS + "Early stopping\n",
                 id="a fold's early stop, its header beyond the tail"),
    pytest.param("Running seed 1 of 3\n" + LONG_EPOCHS + "Early stopping triggered at epoch 30\n"
                 "Test loss: 0.71\n", id="a seed's early stop, its header beyond the tail"),
    pytest.param("Seed 1/3\n" + "".join(f"step {s} loss 0.{99 - s}\n" for s in range(1, 60))
                 + "Saving final model to out/seed1/\n",
                 id="a seed's final model, its header beyond the tail"),
])
def test_a_pass_short_of_the_last_holds_its_closing_words_however_far_back_its_header(log):
    assert read(log).class_id == "none"


def test_the_last_pass_far_back_and_passes_ending_out_of_order_end_the_loop():
    """The loop's furthest pass is its last (`Fold 5/5`), its header beyond the tail; trials
    run side by side report their ends out of order (`trial 5/5` before `trial 3/5`)."""
    assert read("===== Fold 5/5 =====\n" + LONG_EPOCHS + "Early stopping\n"
                ).class_id == "completed"
    trials = "".join(f"Training LightGBM (trial {i}/5)  CV accuracy: 0.92{i}\n"
                     for i in (1, 2, 5, 4, 3))
    assert read(trials + LONG_EPOCHS + "Early stopping\n").class_id == "completed"


@pytest.mark.parametrize("log", [
    pytest.param("Loading raw data from /data\nCleaned 50000 rows\n"
                 "Data pipeline completed successfully!\n", id="a data pipeline at a job's start"),
    pytest.param("Reading config\nPreprocessing pipeline complete.\n", id="preprocessing"),
    pytest.param("[00:00:03] Tokenize words  ██████████████ 200000 / 200000\n"
                 "[00:00:20] Compute merges ██████████████ 31744 / 31744\n"
                 "Tokenizer training complete\n", id="a tokenizer's training"),
    pytest.param("Activating conda env\nSetup script done\n", id="a setup script"),
    pytest.param("srun: job 123 queued\nData prep job finished\n", id="a data prep job"),
    pytest.param("Loading corpus\nsft done\n", id="the run's words with no progress"),
    pytest.param(STEPS + "Head training complete.\n", id="a head's training"),
    pytest.param(STEPS + "Warmup training finished\n", id="a warmup"),
    pytest.param(STEPS + "Teacher training complete\n", id="a teacher's training"),
    pytest.param(STEPS + "VAE training complete.\n", id="a VAE's training"),
    pytest.param(STEPS + "Pretraining stage: training complete\n", id="a stage named before"),
    pytest.param(STEPS + "pretrain.py: training finished\n", id="a stage's script named before"),
])
def test_a_stage_named_done_or_words_before_any_training_leave_the_run_open(log):
    assert read(log).class_id == "none"


@pytest.mark.parametrize("log", [
    pytest.param(STEPS + "INFO: Training complete.\n", id="a level before the words"),
    pytest.param(STEPS + "The training is done\n", id="the training"),
    pytest.param("EA1   : LinearRegression   R²=0.8271  RMSE=3.787 MPa\n"
                 "Pipeline complete! All outputs saved to 'outputs/'\n",
                 id="a fit's results with no progress"),
])
def test_the_whole_run_named_done_ends_it(log):
    assert read(log).class_id == "completed"


@pytest.mark.parametrize("log", [
    pytest.param(STEPS + "SFT done, starting DPO...\n", id="the next phase on the line"),
    pytest.param(STEPS + "SFT complete, moving to RL stage\n", id="moving to the next"),
    pytest.param(STEPS + "sft done\nLoading checkpoint shards: 100%|##########| 2/2 "
                 "[00:05<00:00,  2.51s/it]\n", id="the next phase's checkpoint loaded"),
    pytest.param(STEPS + "sft done\nMap: 100%|##########| 5000/5000 [00:01<00:00, "
                 "3012.21 examples/s]\n", id="the next phase's data mapped"),
    pytest.param(STEPS + "sft done\nwandb: Tracking run with wandb version 0.16.1\n",
                 id="the next phase's tracker run"),
])
def test_a_next_phase_said_or_started_after_the_words_keeps_the_run_open(log):
    assert read(log).class_id == "none"


@pytest.mark.parametrize("line", [
    "early stop count = 2", "Early stop count: 3", "[EarlyStopping] counter 3 of 10",
    "early stopping wait: 3 / 10", "Early stopping not triggered, best val_loss 0.3",
    "EarlyStopping tracker: best=0.31 wait=2", "Early stopping best epoch so far: 12",
    "Early stopping in 5 epochs if no improvement",
])
def test_an_early_stops_count_printed_each_epoch_is_no_stop(line):
    d = read(EPOCHS + line + "\n")
    assert d.class_id == "none"
    assert not finish_said._STOPPED_EARLY.search(line)


def test_an_interruption_before_the_final_save_is_no_clean_end():
    """A script's `except KeyboardInterrupt:` or `finally:` saves the model on Ctrl-C."""
    assert read(STEPS + "Interrupted\nSaving final model to out/model.pt\n"
                ).class_id != "completed"
    assert read(STEPS + "Training interrupted by user\nSaving final model to out/\n"
                ).class_id != "completed"
