"""bot.core.flight_recorder: PyTorch's NCCL flight-recorder dumps read as plain data only
(never pickle.load), each rank's last collective, and the ranks that fell behind."""

from __future__ import annotations

import os
import pickle

import pytest

from bot.core.flight_recorder import (
    DumpRefused,
    flight_recorder_env,
    load_dump,
    rank_of_file,
    rank_trace,
    records_on_timeout,
    summarize_dumps,
)


def entry(seq: int, op: str, state: str, pg: str = "0") -> dict:
    return {"record_id": seq, "pg_id": int(pg), "process_group": (pg, "default_pg"),
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
            "profiling_name": f"nccl:{op}", "time_created_ns": seq * 1000,
            "input_sizes": [[1]], "input_dtypes": ["Float"], "output_sizes": [[4]],
            "output_dtypes": ["Float"], "state": state, "is_p2p": False, "timeout_ms": 600000,
            "frames": [{"name": "train_step", "filename": "train.py", "line": 40}]}


def dump(*entries: dict) -> bytes:
    return pickle.dumps({"version": "2.10", "pg_config": {"0": {"name": "0", "desc":
                        "default_pg", "ranks": "[0, 1, 2, 3]"}},
                         "pg_status": {}, "entries": list(entries)}, protocol=2)


def test_a_dump_is_read_as_plain_data() -> None:
    data = load_dump(dump(entry(1044, "all_gather", "completed"),
                          entry(1045, "all_gather", "started")))
    assert data["version"] == "2.10" and len(data["entries"]) == 2
    assert data["entries"][0]["process_group"] == ("0", "default_pg")


def test_a_pickle_naming_any_other_global_is_refused_before_it_runs(tmp_path) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):  # noqa: ANN204
            return (os.system, (f"touch {marker}",))

    with pytest.raises(DumpRefused, match="names posix.system|names os.system"):
        load_dump(pickle.dumps({"entries": [Evil()]}))
    assert not marker.exists()
    with pytest.raises(DumpRefused, match="not a flight-recorder dump"):
        load_dump(pickle.dumps({"nothing": 1}))
    with pytest.raises(DumpRefused, match="unreadable"):
        load_dump(b"\x80\x04garbage")


def test_torchscripts_list_builders_are_the_only_globals_allowed() -> None:
    # What TorchScript's pickler writes for an int list: GLOBAL torch.jit._pickle build_intlist
    data = (b"\x80\x02}q\x00(X\x07\x00\x00\x00entriesq\x01]q\x02X\x05\x00\x00\x00sizesq\x03"
            b"ctorch.jit._pickle\nbuild_intlist\nq\x04]q\x05(K\x01K\x02e\x85q\x06Rq\x07u.")
    assert load_dump(data) == {"entries": [], "sizes": [1, 2]}


def test_the_rank_that_never_reached_the_collective_is_behind() -> None:
    traces = [rank_trace(r, load_dump(dump(entry(1044, "all_gather", "completed"),
                                           entry(1045, "all_gather", "started"))))
              for r in (0, 1, 2)]
    traces.append(rank_trace(3, load_dump(dump(entry(1044, "all_gather", "completed")))))
    summary = summarize_dumps(traces, unread=[(4, "no dump")])
    assert summary.behind == (3,)
    assert (summary.waiting_seq, summary.waiting_op) == (1045, "all_gather")
    view = summary.to_view()
    assert view["behind"] == [{"rank": 3, "seq": 1044, "op": "all_gather",
                               "state": "completed"}]
    assert view["unread"] == [{"rank": 4, "why": "no dump"}]


def test_p2p_and_other_process_groups_do_not_hide_the_default_one() -> None:
    data = load_dump(dump(entry(7, "all_reduce", "completed"), entry(8, "all_reduce", "started"),
                          entry(900, "broadcast", "completed", pg="5")))
    trace = rank_trace(0, data)
    assert (trace.last_seq, trace.last_op, trace.last_state, trace.last_completed_seq) == \
        (8, "all_reduce", "started", 7)


def test_nobody_is_behind_when_all_ranks_reached_the_same_collective() -> None:
    same = [rank_trace(r, load_dump(dump(entry(5, "barrier", "started")))) for r in range(4)]
    assert summarize_dumps(same).behind == ()


def test_the_jobs_environment_and_file_names() -> None:
    env = flight_recorder_env("/shared/fr/")
    assert env == {"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
                   "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/shared/fr/nccl_trace_rank_"}
    assert records_on_timeout(env)
    assert not records_on_timeout({"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"})
    assert (rank_of_file("nccl_trace_rank_12"), rank_of_file("nccl_trace_rank_x")) == (12, None)
