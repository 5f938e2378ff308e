"""ESPnet2's end of training, read from its source (espnet/espnet espnet2/train/trainer.py
004a54cf46a0, espnet2/train/reporter.py 01d307c42f04): Trainer.run's epoch loop has an `else`
clause that logs `The training was finished at 40 epochs ` only when the loop ran to
max_epoch (no break, no exception), and Reporter.check_early_stopping logs `[Early stopping]
valid.acc has not been improved 11 epochs continuously. The training was stopped at 45epoch`
before the loop breaks on its patience; both end a finished run. The loop's other break, after
an epoch whose every step had an invalid gradient (`... Something seems wrong. This training was
stopped at 3epoch`), is no normal end."""

from __future__ import annotations

import pytest
from support.end_marker import assert_ends_the_run, read

HEAD = "[gpu07] 2024-03-02 11:{m:02d}:{s:02d},068 ({where}) {level}: "
RESULTS = "".join(
    HEAD.format(m=e, s=10, where="trainer:352", level="INFO")
    + f"{e}epoch results: [train] iter_time=0.102, forward_time=0.952, loss={60 - e:.3f}, "
      f"acc={0.5 + e / 100:.3f}, train_time=2.105, time=1 minute and 43.19 seconds, "
      f"total_count={49 * e}, [valid] loss={62 - e:.3f}, acc={0.49 + e / 100:.3f}, "
      f"time=50.5 seconds, total_count={49 * e}\n"
    + HEAD.format(m=e, s=11, where="trainer:407", level="INFO")
    + "The best model has been updated: valid.acc\n"
    for e in range(36, 41))
AVERAGING = (HEAD.format(m=41, s=0, where="average_nbest_models:69", level="INFO")
             + 'Averaging 10best models: criterion="valid.acc": '
               "exp/asr_train/valid.acc.ave_10best.pth\n")


@pytest.mark.parametrize("end", [
    HEAD.format(m=40, s=12, where="trainer:522", level="INFO")
    + "The training was finished at 40 epochs \n",
    HEAD.format(m=40, s=12, where="reporter:275", level="INFO")
    + "[Early stopping] valid.acc has not been improved 11 epochs continuously. The training "
      "was stopped at 40epoch\n",
], ids=["max_epoch", "early stopping"])
@pytest.mark.parametrize("after", ["", AVERAGING], ids=["cut", "averaging after"])
def test_the_loops_end_ends_a_finished_run(end, after):
    assert_ends_the_run(RESULTS + end + after, "The training was")


def test_the_stop_after_an_epoch_of_invalid_gradients_is_no_completion():
    d = read(RESULTS + HEAD.format(m=40, s=12, where="trainer:509", level="WARNING")
             + "The gradients at all steps are invalid in this epoch. Something seems "
               "wrong. This training was stopped at 40epoch\n")
    assert d.class_id != "completed"
