"""`trainbot checkpoint verify` on real DCP checkpoints written by torch on the CPU."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp

from bot.cli import main  # noqa: E402
from bot.probes.checkpoint_verify import (  # noqa: E402
    CheckpointUnreadable,
    load_metadata,
    read_param_count,
    verify_checkpoint,
)

REPO = Path(__file__).resolve().parents[3]

# 64*64 + 64 + 64*8 + 8
MODEL_PARAMS = 4680


def _save(state: dict, path: Path, thread_count: int = 2) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "torch.distributed is disabled … single process"
        dcp.save(state, storage_writer=dcp.FileSystemWriter(str(path), thread_count=thread_count),
                 no_dist=True)


def _train_state() -> tuple[dict, dict]:
    from torch.distributed.checkpoint.state_dict import get_state_dict

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 8))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 64)).sum().backward()
    opt.step()
    return get_state_dict(model, opt)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """checkpoints/iter_000001000 (one DCP checkpoint, two shard files) + its pointer, and
    checkpoints/split_000002000 with model/ and optim/ saved separately."""
    root = tmp_path_factory.mktemp("ckpt") / "checkpoints"
    model_sd, optim_sd = _train_state()
    _save({"model": model_sd, "optim": optim_sd, "step": 1000}, root / "iter_000001000")
    (root / "latest_checkpoint.txt").write_text("iter_000001000\n")
    _save(model_sd, root / "split_000002000" / "model", thread_count=1)
    _save(optim_sd, root / "split_000002000" / "optim", thread_count=1)
    return root


@pytest.fixture()
def ckpts(pristine, tmp_path) -> Path:
    copy = tmp_path / "checkpoints"
    shutil.copytree(pristine, copy)
    return copy


def _shards(d: Path) -> list[Path]:
    shards = sorted(d.glob("*.distcp"))
    assert len(shards) == 2, "the fixture writes two shard files"
    return shards


def _verify_cli(*argv: str, capsys) -> tuple[int, dict]:
    code = main(["checkpoint", "verify", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_intact_checkpoint_with_pointer_is_valid(ckpts, capsys):
    d = ckpts / "iter_000001000"
    code, out = _verify_cli(str(d), "--pointer", str(ckpts / "latest_checkpoint.txt"),
                            capsys=capsys)
    assert code == 0
    assert out["valid"] is True
    assert out["param_count"] == MODEL_PARAMS
    assert out["storage_files"] == 2
    assert {c["check"] for c in out["checks"]} == {"metadata[.]", "storage[.]", "pointer"}


def test_truncated_shard_is_detected(ckpts, capsys):
    d = ckpts / "iter_000001000"
    shard = _shards(d)[1]
    with open(shard, "r+b") as f:
        f.truncate(shard.stat().st_size - 100)
    code, out = _verify_cli(str(d), capsys=capsys)
    assert code == 1 and out["valid"] is False
    (bad,) = [c for c in out["checks"] if c["level"] == "fail"]
    assert "truncated" in bad["message"] and shard.name in bad["message"]


def test_missing_shard_is_detected(ckpts, capsys):
    d = ckpts / "iter_000001000"
    gone = _shards(d)[0]
    gone.unlink()
    code, out = _verify_cli(str(d), capsys=capsys)
    assert code == 1
    (bad,) = [c for c in out["checks"] if c["level"] == "fail"]
    assert "missing" in bad["message"] and gone.name in bad["message"]


def test_missing_pointer_is_detected(ckpts, capsys):
    (ckpts / "latest_checkpoint.txt").unlink()
    code, out = _verify_cli(str(ckpts / "iter_000001000"), "--pointer",
                            str(ckpts / "latest_checkpoint.txt"), capsys=capsys)
    assert code == 1
    (bad,) = [c for c in out["checks"] if c["level"] == "fail"]
    assert bad["check"] == "pointer" and "does not exist" in bad["message"]


@pytest.mark.parametrize(
    ("content", "ok"),
    [("iter_000001000", True), ("{abs}", True), ("1000", True), ("", False),
     ("iter_000003000", False)],
)
def test_pointer_forms(ckpts, content, ok):
    d = ckpts / "iter_000001000"
    pointer = ckpts / "latest_checkpoint.txt"
    pointer.write_text(content.replace("{abs}", str(d)) + "\n")
    report = verify_checkpoint(d, pointer=pointer)
    assert report.valid is ok


def test_pointer_naming_another_checkpoint_warns(ckpts):
    (ckpts / "latest_checkpoint.txt").write_text("split_000002000")
    report = verify_checkpoint(ckpts / "iter_000001000", pointer=ckpts / "latest_checkpoint.txt")
    assert report.valid and report.level == "warn"


def test_87870_partial_save_model_written_but_no_pointer(ckpts):
    """iter_000001000/model was written, the save died before the rest and the pointer."""
    it = ckpts / "iter_000001000"
    partial = ckpts / "iter_000003000"
    (partial / "model").mkdir(parents=True)
    for shard in _shards(it):
        shutil.copy(shard, partial / "model" / shard.name)  # shards written, .metadata never
    (ckpts / "latest_checkpoint.txt").unlink()
    report = verify_checkpoint(partial, pointer=ckpts / "latest_checkpoint.txt")
    assert not report.valid
    fails = {f.check: f.message for f in report.findings if f.level == "fail"}
    assert "never finished" in fails["metadata[model]"]
    assert "pointer" in fails


def test_directory_without_any_checkpoint_is_invalid_and_missing_dir_is_usage(ckpts, capsys):
    empty = ckpts / "empty"
    empty.mkdir()
    assert verify_checkpoint(empty).valid is False
    assert main(["checkpoint", "verify", str(ckpts / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_truncated_metadata_is_unreadable(ckpts):
    meta = ckpts / "iter_000001000" / ".metadata"
    meta.write_bytes(meta.read_bytes()[:200])
    report = verify_checkpoint(ckpts / "iter_000001000")
    assert not report.valid
    assert "not a readable DCP metadata file" in report.findings[0].message


class _Evil:
    def __init__(self, canary: str) -> None:
        self.canary = canary

    def __reduce__(self):
        return (os.system, (f"touch {self.canary}",))


def test_hostile_metadata_pickle_is_refused_without_running_code(ckpts, tmp_path):
    canary = tmp_path / "pwned"
    meta = ckpts / "iter_000001000" / ".metadata"
    meta.write_bytes(pickle.dumps(_Evil(str(canary))))
    with pytest.raises(CheckpointUnreadable, match="refused to load"):
        load_metadata(meta.parent)
    assert not verify_checkpoint(meta.parent).valid
    assert not canary.exists()


def test_read_param_count_counts_model_tensors_not_adam_moments(ckpts):
    assert read_param_count(ckpts / "iter_000001000") == MODEL_PARAMS
    # model/ and optim/ saved as separate DCP checkpoints under one step directory
    assert read_param_count(ckpts / "split_000002000") == MODEL_PARAMS
    report = verify_checkpoint(ckpts / "split_000002000")
    assert report.valid and report.parts == ["model", "optim"]


def test_readable_report_lists_every_check(ckpts, capsys):
    code = main(["checkpoint", "verify", str(ckpts / "iter_000001000")])
    out = capsys.readouterr().out
    assert code == 0
    assert "VALID" in out and "[PASS] storage[.]" in out


# --- bad input: one clear line and exit 2 ----------------------------------------------------


@pytest.mark.parametrize("content", [b"\x80\x02}q\x00.\xff\xfe", b"iter_000001000\x00\x00\x00",
                                     b"\x00" * 4096])
def test_a_binary_pointer_file_is_a_usage_error_naming_the_flag(ckpts, capsys, content):
    pointer = ckpts / "pointer.bin"
    pointer.write_bytes(content)
    code = main(["checkpoint", "verify", str(ckpts / "iter_000001000"), "--pointer", str(pointer)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--pointer {pointer}" in err and "not a text file" in err
    assert "latest_checkpoint.txt" in err  # the fix: the pointer the training writes


def test_without_torch_verify_says_torch_is_needed_and_exits_2(ckpts):
    """Without torch every checkpoint used to be INVALID, "do not resume": a false alarm."""
    code = ("import sys\nsys.modules['torch'] = None\nfrom bot.cli import main\n"
            f"sys.exit(main(['checkpoint', 'verify', {str(ckpts / 'iter_000001000')!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and "INVALID" not in proc.stderr and "resume" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "needs torch" in proc.stderr
    assert "pip install torch" in proc.stderr
