"""torchrun's elastic agent stopping the workers still running, read from its source
(pytorch/pytorch torch/distributed/elastic/multiprocessing/api.py, SubprocessContext._close):
`Sending process %s closing signal %s` is logged only for a worker whose `poll()` is None. The
agent shuts its workers down on success too (ElasticAgent.run's `finally`), but by then every
worker has exited, so the line means one was still running when another failed (or the agent
was signalled). After the last progress, with no other error, the log ends in a failure whose
cause is another worker's (`unknown_failure`), not in a finished or running job."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue

BAR = "Epoch 9: 100%|##########| 782/782 [00:41<00:00, 18.93it/s, v_num=3, train_loss=0.412]\n"
FINISHED = BAR + "`Trainer.fit` stopped: `max_epochs=10` reached.\n" + BAR
OLD = "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4243 closing signal "
NEW = ("W0502 10:00:00.123000 140 torch/distributed/elastic/multiprocessing/api.py:890] "
       "Sending process 4243 closing signal ")


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.mark.parametrize("before", [BAR, FINISHED], ids=["after-progress", "after-the-marker"])
@pytest.mark.parametrize("closing", [OLD + "SIGTERM\n", NEW + "SIGTERM\n", OLD + "SIGT"],
                         ids=["logging-format", "torch-2-format", "cut-mid-line"])
def test_the_agent_closing_a_running_worker_ends_in_a_failure(catalogue, before, closing):
    d = read_log(catalogue, before + closing)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "hint")
    assert any("closing signal" in e.text for e in d.evidence)


def test_workers_restarted_after_it_train_on(catalogue):
    """--max-restarts: the agent stops the group and starts it again; progress after it runs."""
    d = read_log(catalogue, BAR + OLD + "SIGTERM\n"
                 + "Epoch 10:  12%|#         | 94/782 [00:05<00:37, 18.5it/s, v_num=3, "
                   "train_loss=0.409]\n")
    assert d.class_id == "none"


def test_a_workers_own_error_still_names_the_cause(catalogue):
    d = read_log(catalogue, BAR + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                 "2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
                 + OLD + "SIGTERM\n")
    assert d.class_id == "cuda_oom"
