"""A log cut inside a traceback (an excerpt that ends in its frames, before the exception line)
reads by its innermost frame where that names the cause, from the source that raises there:
torch's DataLoader SIGCHLD handler (torch/utils/data/_utils/signal_handling.py, `def
handler(signum, frame): _error_if_any_worker_fails()`, which raises only when a worker process
died), and a blocking wait after a terminal's `^C` (CPython's default SIGINT handler raises
KeyboardInterrupt with no frame of its own). Any other cut traceback stays a failure whose cause
was cut off (`unknown_failure`)."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting

PROGRESS = "[2025-03-02 10:00:00] epoch 3 iter 120/8000 loss 1.21\n"
FAILED = Accounting(state="FAILED", exit_code=1, signal=0)
SIGINT = Accounting(state="FAILED", exit_code=0, signal=2)
TORCH = "/opt/conda/lib/python3.10/site-packages/torch"
PY = "/opt/conda/lib/python3.10"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def _frames(*frames: tuple[str, str, str]) -> str:
    """Traceback frames as Python prints them; each (file, function, source line)."""
    return "".join(f'  File "{path}", line 41, in {func}\n    {source}\n'
                   for path, func, source in frames)


# The main process waiting for a batch (torch/utils/data/dataloader.py, _try_get_data) down to
# the selector's poll: where both a DataLoader worker's death and a Ctrl-C reach it.
TO_THE_QUEUE = (
    ("train.py", "<module>", "for step, batch in enumerate(train_loader):"),
    (f"{TORCH}/utils/data/dataloader.py", "__next__", "data = self._next_data()"),
    (f"{TORCH}/utils/data/dataloader.py", "_next_data", "idx, data = self._get_data()"),
    (f"{TORCH}/utils/data/dataloader.py", "_try_get_data",
     "data = self._data_queue.get(timeout=timeout)"),
    (f"{PY}/multiprocessing/queues.py", "get", "if not self._poll(timeout):"),
    (f"{PY}/multiprocessing/connection.py", "_poll", "r = wait([self], timeout)"),
    (f"{PY}/multiprocessing/connection.py", "wait", "ready = selector.select(timeout)"),
    (f"{PY}/selectors.py", "select", "fd_event_list = self._selector.poll(timeout)"),
)
SIGCHLD_HANDLER = (f"{TORCH}/utils/data/_utils/signal_handling.py", "handler",
                   "_error_if_any_worker_fails()")
TRACEBACK = "Traceback (most recent call last):\n"


@pytest.mark.parametrize("acct", [None, FAILED], ids=["log-only", "1:0"])
@pytest.mark.parametrize("prefix", ["", "[rank0]: "], ids=["bare", "rank-prefixed"])
def test_a_traceback_cut_in_the_dataloaders_sigchld_handler_is_a_worker_that_died(
        catalogue, acct, prefix):
    frames = TRACEBACK + _frames(*TO_THE_QUEUE, SIGCHLD_HANDLER)
    text = PROGRESS + "".join(prefix + line + "\n" for line in frames.splitlines())
    d = read_log(catalogue, text, acct)
    assert (d.class_id, d.decided_by) == ("dataloader_worker_killed", "hint")
    assert any("signal_handling.py" in e.text for e in d.evidence)


@pytest.mark.parametrize("acct", [None, FAILED, SIGINT], ids=["log-only", "1:0", "0:2"])
def test_a_traceback_cut_in_a_wait_after_ctrl_c_is_a_hang(catalogue, acct):
    d = read_log(catalogue, PROGRESS + "^C" + TRACEBACK + _frames(*TO_THE_QUEUE), acct)
    assert (d.class_id, d.decided_by) == ("hang", "hint")
    assert any("in select" in e.text for e in d.evidence)


@pytest.mark.parametrize("text", [
    # no `^C`: the excerpt may stop just above the SIGCHLD handler's frame
    TRACEBACK + _frames(*TO_THE_QUEUE),
    # interrupted while it computed: it was making progress
    "^C" + TRACEBACK + _frames(("train.py", "<module>", "loss.backward()"),
                               (f"{TORCH}/_tensor.py", "backward",
                                "torch.autograd.backward(self)")),
    # the handler's caller, not the handler: the excerpt stops before the frame that decides
    TRACEBACK + _frames(*TO_THE_QUEUE[:4]),
    # the worker's own death was printed before the cut traceback: that error decides
    "^C" + TRACEBACK + _frames(*TO_THE_QUEUE[:4]) + "ValueError: bad sample 17\n"
    + "^C" + TRACEBACK + _frames(*TO_THE_QUEUE),
], ids=["no-ctrl-c", "computing", "handler-not-reached", "another-error-before"])
def test_a_traceback_cut_elsewhere_stays_a_failure_of_unknown_cause(catalogue, text):
    d = read_log(catalogue, PROGRESS + text)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "hint")


def test_the_worker_death_whole_still_reads_by_its_message(catalogue):
    text = (PROGRESS + TRACEBACK + _frames(*TO_THE_QUEUE, SIGCHLD_HANDLER)
            + "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n")
    assert read_log(catalogue, text).class_id == "dataloader_worker_killed"
