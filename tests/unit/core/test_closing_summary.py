"""A finished run that ends in its own words (bot.core.diagnose.closing_summary): with no
accounting, a summary the log prints once after its last progress line (a final score, the
model saved) reads `completed`; a report it printed after earlier epochs too, more progress
after it, or an error after it does not."""

from __future__ import annotations

from support.end_marker import LATE_ERROR, read

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.diagnose.closing_summary import ClosingShapes, line_shape

SUMMARY = "Final test accuracy: 0.9312\nModel saved to out/model.pt\n"


def _epochs(epochs: int, *, report: str = "val acc: 0.{acc}\n", first: int = 0) -> str:
    """A script's own loop: ten progress lines an epoch, then the epoch's report."""
    out = []
    for i in range(first * 10, (first + epochs) * 10):
        out.append(f"2024-01-01 10:{i // 60:02d}:{i % 60:02d} epoch={i // 10} iter={i * 10} "
                   f"loss={1 / (i + 1):.4f}\n")
        if i % 10 == 9:
            out.append(report.format(acc=50 + i // 10))
    return "".join(out)


def test_a_summary_new_to_the_log_after_its_last_progress_ends_the_run() -> None:
    d = read(_epochs(4) + SUMMARY)
    assert d.class_id == "completed"
    assert [e.text for e in d.evidence] == ["Final test accuracy: 0.9312"]


def test_the_same_log_cut_after_an_epoch_report_is_still_running() -> None:
    # `Best val acc so far` after every epoch: the last one is no summary
    log = _epochs(4, report="Best val acc so far: 0.{acc}, saved to best.pt\n")
    assert read(log).class_id == "none"
    assert read(log + SUMMARY).class_id == "completed"


def test_a_total_printed_after_every_epoch_does_not_end_the_run() -> None:
    log = _epochs(4, report="epoch done. Total time: {acc}s\n")
    assert read(log).class_id == "none"


def test_more_progress_after_the_summary_is_a_run_going_on() -> None:
    # a script training a second model after the first one's summary
    assert read(_epochs(4) + SUMMARY + _epochs(1, first=4)).class_id == "none"


def test_a_last_line_printed_before_the_last_progress_is_no_summary_end() -> None:
    # the summary, then a line of the loop's own (an epoch report): the run may go on
    d = read(_epochs(4) + "Final test accuracy: 0.9312\nval acc: 0.61\n")
    assert d.class_id == "none"


def test_an_error_after_the_summary_decides() -> None:
    assert read(_epochs(4) + SUMMARY + LATE_ERROR).class_id == "disk_full"


def test_a_log_with_one_progress_line_has_no_loop_to_close() -> None:
    log = "2024-01-01 10:00:00 epoch=0 iter=10 loss=0.9\n" + SUMMARY
    assert read(log).class_id == "none"


def test_accounting_decides_over_the_summary() -> None:
    # sacct's RUNNING: the job goes on whatever its log's last lines say
    from bot.core.models import Accounting

    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text(_epochs(4) + SUMMARY)
    analysis.finish()
    assert analysis.diagnose(Accounting(state="RUNNING")).class_id == "none"


def test_the_streaming_scan_reads_the_summary_however_the_bytes_arrive() -> None:
    # a watcher feeds each tick's new bytes: lines split across feeds are noted once whole
    data = (_epochs(4) + SUMMARY).encode()
    analysis = LogAnalysis(Catalogue.load())
    for i in range(0, len(data), 7):
        analysis.feed(data[i:i + 7])
    analysis.finish()
    assert analysis.diagnose().class_id == "completed"


def test_shapes_ignore_numbers_spaces_and_rank_prefixes() -> None:
    assert line_shape("[rank0]: Best acc 0.91  at epoch 3") == line_shape(
        b"[rank12]: Best acc 0.5 at epoch 120")
    assert line_shape("Final test acc 0.9") != line_shape("Final train acc 0.9")


def test_past_its_bound_the_record_reads_no_summary() -> None:
    # a log that says `Total` on every progress line is not shaped a line at a time for ever
    shapes = ClosingShapes(max_shapes=4096, max_lines=3)
    for n in range(1, 4):
        shapes.note(n, b"Total: %d" % n)
    assert shapes.overflowed
    shapes.note(5, b"Final test accuracy: 0.93")
    assert shapes.first_seen("Final test accuracy: 0.93") is None
    many = ClosingShapes(max_shapes=2)
    for n, word in enumerate(("Best a", "Best b", "Best c"), start=1):
        many.note(n, word.encode())
    assert many.overflowed


def test_a_run_cut_in_its_first_save_is_no_finished_run() -> None:
    # the first checkpoint or best-model save is new to the log too, and a save is where a
    # host OOM kills a run: it ends no run
    for save in ("Saving checkpoint to ckpt/epoch_4.pt\n", "Best model so far, saving to best.pt\n",
                 "Final checkpoint written to out/final.pt\n"):
        assert read(_epochs(4) + save).class_id == "none", save


def test_a_summary_that_training_goes_on_after_is_no_end() -> None:
    # Lightning's early stop below min_epochs: its best score, then `Training will continue...`
    log = _epochs(4) + (
        "Monitored metric val_loss did not improve in the last 3 records. Best score: 0.123. "
        "Signaling Trainer to stop.\n"
        "Trainer was signaled to stop but the required `min_epochs=5` or `min_steps=None` has "
        "not been met. Training will continue...\n")
    assert read(log).class_id == "none"


def test_a_closing_word_with_no_figure_is_no_summary() -> None:
    assert read(_epochs(4) + "Final results: none\n").class_id == "none"


def test_a_run_cut_after_its_first_epoch_report_is_still_running() -> None:
    # after the first epoch every report is new: a loop that has not yet printed anything
    # between its progress lines closes nothing
    first = _epochs(1, report="")
    assert read(first + "Best val acc: 0.81\n").class_id == "none"
    assert read(_epochs(2) + "Best val acc: 0.81\n").class_id == "completed"


def _counted(epochs: int, total: int, *, report_every: int,
             report: str = "Test accuracy: 0.{acc}\n") -> str:
    """A loop that names its total (`Epoch 3/20`) and reports a test score every few epochs."""
    out = []
    for e in range(1, epochs + 1):
        out += [f"Epoch {e}/{total} iter={e * 100 + i * 10} loss={1 / (e + i):.4f}\n"
                for i in range(3)]
        out.append(f"val loss: 0.{e:02d}\n")
        if e % report_every == 0:
            out.append(report.format(acc=50 + e))
    return "".join(out)


def test_a_report_printed_every_few_epochs_is_no_summary_before_the_last_epoch() -> None:
    # cut right after its first test report at epoch 5 of 20: new to the log, yet the loop
    # says it has 15 epochs to go
    d = read(_counted(5, 20, report_every=5))
    assert d.class_id == "none"
    # the same script's final report, once its last epoch is done
    assert read(_counted(20, 20, report_every=100) + "Test accuracy: 0.93\n").class_id == (
        "completed")


def test_an_iteration_short_of_its_named_target_is_no_finished_loop() -> None:
    log = "".join(f"iter {i}/10000 loss={1 / i:.4f}\nlr: 0.001\n" for i in range(100, 600, 100))
    assert read(log + "Test set: final accuracy 0.41\n").class_id == "none"


def test_a_run_that_says_it_stopped_early_ends_in_its_summary() -> None:
    # no framework's end marker: the script's own early stop, then its best result
    log = _counted(12, 100, report_every=100) + (
        "No improvement for 5 epochs, stopping.\nBest val acc: 0.88 at epoch 7\n")
    d = read(log)
    assert d.class_id == "completed"
    assert [e.text for e in d.evidence] == ["Best val acc: 0.88 at epoch 7"]
