"""kohya-ss sd-scripts' end of training, read from its source (kohya-ss/sd-scripts 48d368fa5577):
train_network.py (and fine_tune.py, train_db.py, sdxl_train.py, flux_train.py, sd3_train.py and
the other trainers) leave their epoch loop, call `accelerator.end_training()`, save the last model
(`saving checkpoint: <name>`, save_model's line, as every epoch's save) and only then log
`model saved.` (library/utils.setup_logging: `%(message)s`, through rich's RichHandler on stderr
unless --console_log_simple). No exception path prints it, so it ends a finished run in a log
with no accounting."""

from __future__ import annotations

from support.end_marker import assert_ends_the_run, each_end, read

# The program's stdout (accelerator.print): its tqdm bar is on stderr, and a bar at its total
# would end the run by itself; the stdout file shows the epochs and their saves only.
LOOP = ("  num epochs / epoch数: 10\n"
        + "".join(f"\nepoch {e}/10\n\n\nsaving checkpoint: /out/lora/my_lora-{e:06d}.safetensors\n"
                  for e in range(1, 10))
        + "\nepoch 10/10\n\n"
        + "\nsaving checkpoint: /out/lora/my_lora.safetensors\n")
ENDS = {
    # --console_log_simple (or no rich): the bare message
    "simple": "model saved.\n",
    # rich's RichHandler writing to a file: time, level, message, the caller's file and line
    "rich": "[02/16/26 08:07:29] INFO     model saved.                     train_network.py:1729\n",
    # rich's repeated time left blank
    "rich, same second": ("                    INFO     model saved.                     "
                          "train_network.py:1729\n"),
}


@each_end(ENDS)
def test_model_saved_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "model saved.")


def test_the_last_save_alone_is_no_completion():
    """`saving checkpoint:` is every epoch's save too: a log cut before `model saved.` is not
    ended."""
    d = read(LOOP)
    assert d.class_id != "completed"


def test_a_save_named_model_saved_in_a_sentence_is_no_marker():
    """Other programs' per-epoch lines that say so among other words are not kohya's end."""
    d = read(LOOP + "epoch 10: best model saved.\n")
    assert d.class_id != "completed"


def test_an_error_after_it_is_still_the_failure():
    d = read(LOOP + ENDS["simple"] + "Traceback (most recent call last):\n"
             '  File "/opt/sd-scripts/train_network.py", line 1740, in <module>\n'
             "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert d.class_id != "completed"
