"""ultralytics' validation of best.pt after its epoch loop, built from its source's strings:
BaseTrainer._do_train (ultralytics/ultralytics ultralytics/engine/trainer.py 00016300) logs
`\\n{N} epochs completed in {h:.3f} hours.` when the loop ends, then `final_eval` strips the
optimizer from last.pt and best.pt (`Optimizer stripped from {f}, {mb:.1f}MB`) and logs
`\\nValidating {best}...` before the validator runs on that file; BaseValidator.__call__
(ultralytics/engine/validator.py 12601021), validating a saved model, draws its bar (the
DetectionValidator's desc: `Class  Images  Instances  Box(P  R  mAP50  mAP50-95)`), prints the
table (`all` and a row per class, `%22s%11i%11i%11.3g…`), then `Speed: %.1fms preprocess,
%.1fms inference, %.1fms loss, %.1fms postprocess per image` and, with plots (the default) or
save_json, `Results saved to {colorstr('bold', save_dir)}`. A log that ends after the
completion line, inside that validation, is still running (`none`); `completed` once the
validation's closing line came. The epochs' lines are the trainer's bar (`%11s` * 2 +
`%11.4g` * 5: `{epoch}/{epochs}`, GPU memory, the losses, instances, size) and each epoch's
validation, as in test_ultralytics_early_stop."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log
from support.end_marker import read

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting

HEADER = "\n      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
BAR_DESC = ("                 Class     Images  Instances      Box(P          R      mAP50  "
            "mAP50-95): ")
VAL_BAR = BAR_DESC + "100%|██████████| 4/4 [00:01<00:00,  2.78it/s]\n"
EPOCHS = "".join(
    HEADER
    + f"{e:>11}/100      2.61G      {1.2 - e / 1000:.4f}     0.6349      1.056         13        "
      "640: 100%|██████████| 8/8 [00:03<00:00,  2.45it/s]\n"
    + VAL_BAR
    + f"                   all        128        929      0.651      0.541      0.617"
      f"       0.{400 + e}\n"
    for e in range(96, 101))
DONE = "\n100 epochs completed in 0.071 hours.\n"
STRIPPED = ("Optimizer stripped from runs/detect/train/weights/last.pt, 6.5MB\n"
            "Optimizer stripped from runs/detect/train/weights/best.pt, 6.5MB\n")
VALIDATING = ("\nValidating runs/detect/train/weights/best.pt...\n"
              "Ultralytics YOLOv8.0.196 🚀 Python-3.10.12 torch-2.0.1+cu118 CUDA:0 (Tesla T4, "
              "15102MiB)\n"
              "Model summary (fused): 168 layers, 3151904 parameters, 0 gradients, 8.7 GFLOPs\n")
NAMES = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
         "traffic light", "fire hydrant", "stop sign"]


def _table(classes: int) -> str:
    return VAL_BAR + "                   all        128        929      0.669      0.554      " \
        "0.631      0.466\n" + "".join(
            f"{NAMES[k % len(NAMES)]:>22}        128        {k + 3:>3}      0.70{k % 10}      "
            f"0.55{k % 10}      0.631      0.47{k % 10}\n" for k in range(classes))


SPEED = "Speed: 0.2ms preprocess, 1.1ms inference, 0.0ms loss, 1.0ms postprocess per image\n"
SAVED = "Results saved to \x1b[1mruns/detect/train\x1b[0m\n"
STARTED = EPOCHS + DONE + STRIPPED + VALIDATING


@pytest.mark.parametrize("end", [
    "",                                          # the validation's start: its banner, summary
    BAR_DESC + " 50%|█████     | 2/4 [00:01<00:01,  1.50it/s]",  # its bar drawn halfway
    _table(5),                                   # the table printed, no closing line yet
    _table(79),                                  # COCO's 80 rows: its start is out of the tail
], ids=["banner", "bar", "table", "long_table"])
def test_a_log_that_ends_inside_the_validation_of_best_pt_is_still_running(end):
    d = read(STARTED + end)
    assert d.class_id == "none"
    assert d.detail is not None and d.detail["kind"] == "evaluating"


@pytest.mark.parametrize("end", [SPEED + SAVED, SPEED, SAVED + "\U0001f4a1 Learn more at "
                                 "https://docs.ultralytics.com/modes/train\n"],
                         ids=["speed_and_saved", "speed_no_plots", "yolov5_saved"])
def test_the_validations_closing_line_ends_the_run(end):
    d = read(STARTED + _table(5) + end)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert any("epochs completed in" in e.text for e in d.evidence)


def test_the_loops_end_before_the_validation_starts_still_ends_the_run():
    """Cut at the completion line or the stripped checkpoints (a pasted excerpt): nothing says
    a validation started, and the marker is the trainer's end of training."""
    assert read(EPOCHS + DONE).class_id == "completed"
    assert read(EPOCHS + DONE + STRIPPED).class_id == "completed"


def test_an_error_inside_the_validation_decides():
    d = read(STARTED + VAL_BAR.replace("100%", " 25%") + "Traceback (most recent call last):\n"
             '  File "train.py", line 12, in <module>\n'
             "    model.train(data='coco.yaml', epochs=100)\n"
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert d.class_id == "cuda_oom"


def test_slurm_saying_it_ended_0_decides_over_the_open_validation():
    """With accounting the job's end is known: COMPLETED 0:0 after the marker is completed."""
    d = read_log(Catalogue.load(), STARTED + _table(5),
                 Accounting(state="COMPLETED", exit_code=0, signal=0))
    assert d.class_id == "completed"


def test_another_programs_validating_line_is_no_open_validation():
    """`Validating` of a file other than best.pt, after the marker: not YOLO's final one."""
    assert read(EPOCHS + DONE + "Validating checkpoint.ckpt...\n" + _table(3)).class_id == (
        "completed")
