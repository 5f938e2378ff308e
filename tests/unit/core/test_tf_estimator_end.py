"""TensorFlow Estimator's end of training, read from its source (tensorflow/estimator
tensorflow_estimator/python/estimator/estimator.py 01461af10648): Estimator.train logs
`Loss for final step: <loss>.` after _train_model returned, its steps or max_steps reached or
its input exhausted. An exception in the training session (NanTensorHook's NaN loss error among
them) leaves train before it, and no finally prints it. With no step run the loss is None."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
)

LOOP = "".join(f"INFO:tensorflow:loss = {2.0 - s / 10000:.5f}, step = {s} (12.345 sec)\n"
               f"INFO:tensorflow:global_step/sec: 8.10045\n" for s in range(9100, 10001, 100))
SAVE = "INFO:tensorflow:Saving checkpoints for 10000 into /tmp/model/model.ckpt.\n"
ENDS = {
    # tf.logging through Python logging's default format (TF 1.x)
    "tf.logging": SAVE + "INFO:tensorflow:Loss for final step: 0.0123.\n",
    # absl's prefix (TF 2.x, tensorflow_estimator), a loss in exponent form
    "absl": ("I1205 10:21:07.113312 140210 estimator.py:371] Loss for final step: "
             "1.2345e-05.\n"),
}


@each_end(ENDS)
def test_the_final_steps_loss_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "Loss for final step")


def test_train_called_again_after_an_evaluation_is_still_running():
    """A loop of train and evaluate calls: the next train's progress follows the line."""
    assert_still_running(LOOP + ENDS["tf.logging"]
                         + "INFO:tensorflow:Starting evaluation at 2024-03-04T10:21:09Z\n"
                         + LOOP.replace("step = 9", "step = 19").replace("step = 10000",
                                                                         "step = 20000"))


def test_no_step_run_is_no_end():
    assert_still_running(LOOP + "INFO:tensorflow:Loss for final step: None.\n")


def test_an_error_after_it_decides():
    assert_the_error_decides(LOOP + ENDS["tf.logging"])
