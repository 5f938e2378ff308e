"""BasicSR's log, built from its source's format strings (XPixelGroup/BasicSR basicsr/train.py and
basicsr/utils/logger.py, MessageLogger): before its loop the `Training statistics:` record ends in
`\tTotal epochs: {total_epochs}; iters: {total_iters}.`; every print_freq iterations
`[{exp_name[:5]}..][epoch:{epoch:3d}, iter:{current_iter:8,d}, lr:({lr:.3e},)] [eta: {timedelta},
time (data): {iter:.3f} ({data:.3f})] {key}: {value:.4e} …` (the iterations done, from 1); after
it `End of training. Time consumed: …`. The lines are progress: the iteration, its target, its
seconds and the loss the thread charts (the first generator's term: `l_pix`, `l_g_pix`)."""

from __future__ import annotations

from support.end_marker import read

from bot.cli import main
from bot.core.training_lines import LineParser

_LOG = "2024-05-01 {h:02d}:{m:02d}:00,123 INFO: "
STATS = ("2024-05-01 08:00:00,123 INFO: Training statistics:\n"
         "\tNumber of train images: 800\n\tDataset enlarge ratio: 100\n"
         "\tBatch size per gpu: 16\n\tWorld size (gpu number): 1\n"
         "\tRequire iter number per epoch: 5000\n\tTotal epochs: 80; iters: 400000.\n")


def _train(it: int, losses: str = "") -> str:
    epoch = (it - 1) // 5000 + 1
    losses = losses or f"l_pix: {2 - it / 400000:.4e} "
    return (_LOG.format(h=8 + it // 40000, m=it // 1000 % 60)
            + f"[train..][epoch:{epoch:3d}, iter:{it:8,d}, lr:({1e-4:.3e},)] "
            f"[eta: 1 day, 2:03:04, time (data): {0.215:.3f} ({0.003:.3f})] {losses}\n")


def _run(last: int) -> str:
    return STATS + "".join(_train(it) for it in range(last - 300, last + 1, 100))


END = (_LOG.format(h=19, m=31) + "End of training. Time consumed: 2 days, 3:04:05\n"
       + _LOG.format(h=19, m=31) + "Save the latest model.\n"
       + _LOG.format(h=19, m=32) + "Validation Set5\n\t # psnr: 32.1234\tBest: 32.2000 @ 395000 "
       "iter\n\n")


def test_its_training_line_gives_the_iteration_target_pace_and_loss():
    parser = LineParser()
    for n, line in enumerate(STATS.splitlines(), 1):
        parser.parse(line, n)
    sample, _ = parser.parse(_train(123_400).rstrip("\n"), 9)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.sec_per_iter, sample.loss) == (
        123_400, 400_000, 0.215, 1.6915)


def test_a_gan_lines_loss_is_its_generators_first_term():
    # SRGANModel / Real-ESRGAN: the generator's terms, then the discriminator's
    losses = ("l_g_pix: 1.2345e-02 l_g_percep: 2.3456e+00 l_g_gan: 8.7654e-02 l_d_real: "
              "6.5432e-01 out_d_real: 1.2345e+00 l_d_fake: 5.4321e-01 out_d_fake: -1.2345e+00 ")
    sample, _ = LineParser().parse(_train(1000, losses).rstrip("\n"), 1)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.loss) == (1000, None, 0.012345)


def test_trainbot_diagnose_shows_its_progress(tmp_path, capsys):
    path = tmp_path / "train_RealESRNet.log"
    path.write_text(_run(200_000), encoding="utf-8")
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: none - running, nothing to report"
    assert "progress: iteration 200000/400000, 0.21 s/iter, loss 1.5" in out


def test_a_finished_run_ends_at_its_target():
    d = read(_run(400_000) + END)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (400_000, 400_000)

