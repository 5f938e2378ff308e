"""torchrun's end of a node's training, read from its source (pytorch/pytorch
torch/distributed/elastic/agent/server/api.py 00a1abb4ef74): SimpleElasticAgent._invoke_run
logs `[default] worker group successfully finished. Waiting 300 seconds for other agents to
finish.` only in its WorkerState.SUCCEEDED branch, every local worker having exited 0, then
_exit_barrier logs `Local worker group finished (WorkerState.SUCCEEDED). Waiting ...`. A failed
group restarts (`Worker group FAILED. 3/3 attempts left; will restart worker group`) or stops,
and neither line is printed."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
)

LOOP = "".join(f"[rank0]: iter {i}: loss {2.0 - i / 1000:.4f}, time 312.45ms\n"
               for i in range(380, 400))
SUCCEEDED = "worker group successfully finished. Waiting 300 seconds for other agents to finish."
BARRIER = ("Local worker group finished ({state}). Waiting 300 seconds for other agents to "
           "finish")
ENDS = {
    # torch 1.9 to 2.1: logging.basicConfig's default format
    "torch 1.x": (f"INFO:torch.distributed.elastic.agent.server.api:[default] {SUCCEEDED}\n"
                  "INFO:torch.distributed.elastic.agent.server.api:"
                  + BARRIER.format(state="SUCCEEDED") + "\n"
                  "INFO:torch.distributed.elastic.agent.server.api:Done waiting for other "
                  "agents. Elapsed: 0.0006 seconds\n"),
    # torch 2.2 and 2.3: the elastic logger's own format
    "torch 2.2": (f"[2024-03-04 10:21:07,113] torch.distributed.elastic.agent.server.api: "
                  f"[INFO] [default] {SUCCEEDED}\n"),
    # newer torch: a glog-style prefix, and %s of the enum
    "torch 2.4": ("I1205 10:21:07.113000 140210 torch/distributed/elastic/agent/server/"
                  f"api.py:713] [default] {SUCCEEDED}\n"
                  "I1205 10:21:07.113000 140210 torch/distributed/elastic/agent/server/"
                  "api.py:728] " + BARRIER.format(state="WorkerState.SUCCEEDED") + "\n"),
    "the barrier's line alone": BARRIER.format(state="WorkerState.SUCCEEDED") + "\n",
}


@each_end(ENDS)
def test_the_agents_success_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "finish")


def test_a_restarted_group_that_trains_on_is_still_running():
    """--max-restarts: the group failed and restarted; its workers' progress follows."""
    assert_still_running(LOOP + "INFO:torch.distributed.elastic.agent.server.api:[default] "
                         "Worker group FAILED. 3/3 attempts left; will restart worker group\n"
                         + LOOP)


def test_training_after_the_line_is_no_end():
    """One node's group finished while the log goes on with another node's training."""
    assert_still_running(LOOP + ENDS["torch 1.x"] + LOOP)


def test_an_error_after_it_decides():
    assert_the_error_decides(LOOP + ENDS["torch 2.4"])
