"""YOLOv5's and ultralytics' early stop on patience, read from their source (ultralytics/yolov5
utils/torch_utils.py and train.py, ultralytics/ultralytics ultralytics/utils/torch_utils.py and
ultralytics/engine/trainer.py): EarlyStopping.__call__ logs `Stopping training early as no
improvement observed in last N epochs. Best results observed at epoch M, best model saved as
best.pt.` (later `EarlyStopping: Training stopped early as ...`, the prefix coloured) from the
rank-0 validation after an epoch, and the trainer's epoch loop then breaks on every rank
(`if stop: break`, BaseTrainer._do_train's `if self.stop: break`); only then come `N epochs
completed in X hours.` and the final validation of best.pt. A log cut after the early stop is a
finished run."""

from __future__ import annotations

from support.end_marker import assert_ends_the_run, each_end, read

HEADER = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
EPOCHS = "".join(
    HEADER
    + f"     {e}/200      10.7G      {1.2 - e / 1000:.4f}     0.6349      1.056         13        "
      "640: 100%|██████████| 13/13 [00:03<00:00,  3.45it/s]\n"
    + "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
      "100%|██████████| 1/1 [00:00<00:00,  2.78it/s]\n"
    + "                   all         44         45       0.79      0.867      0.843"
      f"       0.{50 + e % 10}\n"
    for e in range(66, 74))
NEW = ("EarlyStopping: Training stopped early as no improvement observed in last 20 epochs. "
       "Best results observed at epoch 53, best model saved as best.pt.\n"
       "To update EarlyStopping(patience=20) pass a new patience value, i.e. `patience=300` or "
       "use `patience=0` to disable EarlyStopping.\n")
COLOURED = "\x1b[34m\x1b[1mEarlyStopping: \x1b[0m" + NEW.removeprefix("EarlyStopping: ")
OLD = ("Stopping training early as no improvement observed in last 100 epochs. Best results "
       "observed at epoch 110, best model saved as best.pt.\n"
       "To update EarlyStopping(patience=100) pass a new patience value, i.e. `python train.py "
       "--patience 300` or use `--patience 0` to disable EarlyStopping.\n")
MARKER = "no improvement observed in last"


@each_end({"ultralytics": NEW, "coloured": COLOURED, "yolov5": OLD, "blank line after": NEW + "\n"})
def test_a_log_cut_after_the_early_stop_is_a_finished_run(end):
    assert_ends_the_run(EPOCHS + end, MARKER)


def test_the_early_stop_then_the_loops_end_is_a_finished_run():
    assert_ends_the_run(EPOCHS + NEW + "\n73 epochs completed in 0.105 hours.\n"
                        "Optimizer stripped from runs/detect/train8/weights/last.pt, 5.5MB\n",
                        MARKER)


def test_a_traceback_after_the_early_stop_is_no_completion():
    """A save or the final validation failing after the stop: the error decides."""
    d = read(EPOCHS + NEW + "\n73 epochs completed in 0.105 hours.\n"
                 "Traceback (most recent call last):\n"
                 '  File "train.py", line 12, in <module>\n'
                 "    model.train(data='data.yaml', epochs=200)\n"
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert d.class_id == "cuda_oom"


def test_another_programs_line_without_best_pt_is_no_marker():
    """Not Ultralytics' marker: a program's own early stop, read by the closing words'
    hint (bot.core.diagnose.finish_said `_STOPPED_EARLY`), not by a signature."""
    d = read(EPOCHS + "Training stopped early as no improvement observed in last "
                 "20 epochs. Best results observed at epoch 53, best model saved\n")
    assert (d.class_id, d.decided_by) == ("completed", "hint")
