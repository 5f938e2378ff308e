"""The training frameworks' own end-of-training lines (the `completed` class's markers, each read
from its framework's source: bot/core/catalogue/catalogue.yaml names the file and commit) read
as a finished run in a log with no accounting, the way `trainbot diagnose` reads a file; an
unhandled error after one, or another rank's failure, still reads as the failure."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import STOP_CLASSES


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


# Each a short log as the framework prints its last steps and its end, in its default logger's
# format.
ENDS = {
    # Hugging Face's Trainer in an example script (`[INFO|trainer.py:N] time >> ` prefix): the
    # message starts with two newlines, then the train() metrics
    "transformers": (
        "{'loss': 0.3412, 'grad_norm': 1.92, 'learning_rate': 1.2e-06, 'epoch': 2.98}\n"
        "100%|##########| 1449/1449 [19:47<00:00,  1.22it/s][INFO|trainer.py:2383] "
        "2024-05-01 19:38:57,100 >> \n"
        "\n"
        "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
        "\n"
        "\n"
        "{'train_runtime': 1187.4, 'train_samples_per_second': 9.76, 'train_steps_per_second': "
        "1.22, 'train_loss': 0.52, 'epoch': 3.0}\n"
        "100%|##########| 1449/1449 [19:47<00:00,  1.22it/s]\n"
    ),
    # Lightning's FitLoop.done with its own handler (the bare message), the closed bar after it
    "lightning max_epochs": (
        "Epoch 9: 100%|##########| 782/782 [00:41<00:00, 18.93it/s, v_num=3, train_loss=0.412]\n"
        "`Trainer.fit` stopped: `max_epochs=10` reached.\n"
        "Epoch 9: 100%|##########| 782/782 [00:41<00:00, 18.92it/s, v_num=3, train_loss=0.412]\n"
    ),
    # ... and through the root logger's basicConfig format
    "lightning max_steps": (
        "Epoch 2:  40%|####      | 2000/5000 [12:01<18:02,  2.77it/s, v_num=0, loss=2.31]\n"
        "INFO:lightning.pytorch.utilities.rank_zero:`Trainer.fit` stopped: `max_steps=12000` "
        "reached.\n"
    ),
    # DeepSpeed's launcher reporting its ranks' exit 0
    "deepspeed": (
        "[2024-05-01 19:38:50,100] [INFO] [logging.py:96:log_dist] [Rank 0] step=5000, "
        "skipped=0, lr=[3e-05], mom=[(0.9, 0.999)]\n"
        "steps: 5000 loss: 2.1134 iter time (s): 1.412 samples/sec: 362.6\n"
        "[2024-05-01 19:38:57,100] [INFO] [launch.py:351:main] Process 40211 exits "
        "successfully.\n"
        "[2024-05-01 19:38:57,100] [INFO] [launch.py:351:main] Process 40212 exits "
        "successfully.\n"
    ),
    # Megatron-LM's pretrain() after train() returned, its final save after it
    "megatron": (
        " [2024-05-01 19:38:50] iteration     5000/    5000 | consumed samples:      2560000 | "
        "elapsed time per iteration (ms): 1412.3 | learning rate: 3.000E-05 | global batch "
        "size:   512 | lm loss: 2.113456E+00 | loss scale: 1.0 | grad norm: 0.312 | number of "
        "skipped iterations:   0 | number of nan iterations:   0 |\n"
        "[after training is done] datetime: 2024-05-01 19:38:57 \n"
        "saving checkpoint at iteration    5000 to /ckpt/gpt in torch_dist format\n"
        "  successfully saved checkpoint from iteration    5000 to /ckpt/gpt [ t 1/8, p 1/1 ]\n"
    ),
    # fairseq's train.py (`time | level | logger | message`)
    "fairseq": (
        "2024-05-01 19:30:12 | INFO | train | epoch 030 | loss 3.912 | nll_loss 2.201 | ppl 4.6"
        " | wps 41234 | ups 1.2 | wpb 33021 | bsz 1093 | num_updates 30000 | lr 0.0001 | gnorm "
        "0.41 | train_wall 812 | wall 8123\n"
        "2024-05-01 19:30:16 | INFO | fairseq.checkpoint_utils | Saved checkpoint "
        "checkpoints/checkpoint30.pt (epoch 30 @ 30000 updates, score 3.85) (writing took 4.2 "
        "seconds)\n"
        "2024-05-01 19:30:16 | INFO | fairseq_cli.train | done training in 8123.4 seconds\n"
    ),
    # torchtitan under torchrun's `--local-ranks-filter`-less tee: `[rankN]:` before its
    # `[titan] time - root - INFO - ` format; every rank logs the end
    "torchtitan": (
        "[rank0]:[titan] 2025-03-02 10:00:00,123 - root - INFO - step: 1000  loss:  3.2101  "
        "memory: 61.32GiB(77.45%)  tps: 6,842  tflops: 317.22  mfu: 32.08%\n"
        "[rank0]:[titan] 2025-03-02 10:00:05,000 - root - INFO - Sleeping 2 seconds for other "
        "ranks to complete\n"
        "[rank1]:[titan] 2025-03-02 10:00:05,010 - root - INFO - Training completed\n"
        "[rank0]:[titan] 2025-03-02 10:00:07,010 - root - INFO - Training completed\n"
        "[rank0]:[titan] 2025-03-02 10:00:07,500 - root - INFO - Process group destroyed\n"
    ),
    # torchtune's checkpointer (`INFO:torchtune.utils._logging:`) saving after the last step
    "torchtune": (
        "1|1000|Loss: 0.8123: 100%|##########| 1000/1000 [41:12<00:00,  2.47s/it]\n"
        "INFO:torchtune.utils._logging:Model checkpoint of size 4.98 GiB saved to "
        "/tmp/out/epoch_0/model-00001-of-00004.safetensors\n"
        "INFO:torchtune.utils._logging:Saving final epoch checkpoint.\n"
        "INFO:torchtune.utils._logging:The full model checkpoint, including all weights and "
        "configurations, has been saved successfully.You can now use this checkpoint for further"
        " training or inference.\n"
    ),
    # axolotl's train() after the Trainer returned
    "axolotl": (
        "{'loss': 0.9123, 'grad_norm': 0.51, 'learning_rate': 2e-07, 'epoch': 3.0}\n"
        "[2025-03-02 10:00:00,000] [INFO] [axolotl.train.save_trained_model:267] [PID:4242] "
        "[RANK:0] Training completed! Saving trained model to ./outputs/out.\n"
    ),
    # YOLOv5's train.py (its LOGGER: the message alone, a blank line before it)
    "yolov5": (
        "     99/99      3.91G    0.02171    0.01312   0.002418         41        640: 100%|"
        "##########| 469/469 [01:12<00:00,  6.47it/s]\n"
        "\n"
        "100 epochs completed in 2.213 hours.\n"
        "Optimizer stripped from runs/train/exp/weights/last.pt, 14.4MB\n"
    ),
    # OpenNMT-py's early stopping (`[time level] message`): EarlyStopping's verdict and its
    # best step (`_log_best_step`, a step number that reads as progress), then the trainer's
    # own line as it leaves its loop
    "opennmt early stop": (
        "[2024-05-01 19:38:50,100 INFO] Step 42000/100000; acc: 61.2; ppl:   6.1; xent: 1.8; "
        "lr: 0.00031; sents:   81234; bsz: 3120/3201/101; 21034/21512 tok/s;   8123 sec;\n"
        "[2024-05-01 19:38:57,100 INFO] Training finished after not improving. Early Stop!\n"
        "[2024-05-01 19:38:57,100 INFO] Best model found at step 38000\n"
        "[2024-05-01 19:38:57,100 INFO] earlystopper has_stopped!\n"
    ),
    # ... on a validation score that stopped moving (EarlyStopping._stalled_patience)
    "opennmt stalled early stop": (
        "[2024-05-01 19:38:50,100 INFO] Step 42000/100000; acc: 61.2; ppl:   6.1; xent: 1.8; "
        "lr: 0.00031; sents:   81234; bsz: 3120/3201/101; 21034/21512 tok/s;   8123 sec;\n"
        "[2024-05-01 19:38:57,100 INFO] Stalled patience: 0/4\n"
        "[2024-05-01 19:38:57,100 INFO] Training finished after stalled validations. Early Stop!\n"
        "[2024-05-01 19:38:57,100 INFO] Best model found at step 38000\n"
        "[2024-05-01 19:38:57,100 INFO] earlystopper has_stopped!\n"
    ),
    # OpenNMT-py before 3.0 (before its 02e29a2c, 2022-09, added `earlystopper has_stopped!`):
    # the step report (onmt/utils/statistics.py, Statistics.output: `Step %2d/%5d; acc: %6.2f;
    # ...`), the validation (onmt/utils/report_manager.py, ReportMgr._report_step), then
    # EarlyStopping's verdict and its best step (onmt/utils/earlystopping.py l. 170-183 at
    # f7fc40e3: `Decreasing patience: {}/{}`, `Training finished after not improving. Early
    # Stop!`, `Best model found at step {}`) as Trainer.train breaks out of its loop, then its
    # final save (onmt/models/model_saver.py, ModelSaver.save: `Saving checkpoint
    # %s_step_%d.pt`); train_single prints nothing after it
    "opennmt 2.x early stop": (
        "[2021-05-01 19:38:10,100 INFO] Step 41950/100000; acc:  61.02; ppl:  6.14; xent: 1.81; "
        "lr: 0.00031; 21034/21512 tok/s;   8103 sec\n"
        "[2021-05-01 19:38:30,100 INFO] Step 42000/100000; acc:  61.20; ppl:  6.10; xent: 1.81; "
        "lr: 0.00031; 21041/21519 tok/s;   8123 sec\n"
        "[2021-05-01 19:38:56,900 INFO] Validation perplexity: 7.12\n"
        "[2021-05-01 19:38:56,900 INFO] Validation accuracy: 58.31\n"
        "[2021-05-01 19:38:57,100 INFO] Decreasing patience: 0/4\n"
        "[2021-05-01 19:38:57,100 INFO] Training finished after not improving. Early Stop!\n"
        "[2021-05-01 19:38:57,100 INFO] Best model found at step 38000\n"
        "[2021-05-01 19:38:57,300 INFO] Saving checkpoint models/ende_step_42000.pt\n"
    ),
    # ... on a validation score that stopped moving (EarlyStopping._update_stalled, l. 133-144:
    # `Stalled patience: {}/{}`, `Training finished after stalled validations. Early Stop!`),
    # with no save after it (ModelSaver.save returns at once when the step was saved already)
    "opennmt 2.x stalled early stop": (
        "[2021-05-01 19:38:10,100 INFO] Step 41950/100000; acc:  61.02; ppl:  6.14; xent: 1.81; "
        "lr: 0.00031; 21034/21512 tok/s;   8103 sec\n"
        "[2021-05-01 19:38:30,100 INFO] Step 42000/100000; acc:  61.20; ppl:  6.10; xent: 1.81; "
        "lr: 0.00031; 21041/21519 tok/s;   8123 sec\n"
        "[2021-05-01 19:38:56,900 INFO] Validation perplexity: 7.12\n"
        "[2021-05-01 19:38:56,900 INFO] Validation accuracy: 58.31\n"
        "[2021-05-01 19:38:57,100 INFO] Stalled patience: 0/4\n"
        "[2021-05-01 19:38:57,100 INFO] Training finished after stalled validations. Early Stop!\n"
        "[2021-05-01 19:38:57,100 INFO] Best model found at step 38000\n"
    ),
    # Cerebras Model Zoo's trainer (Cerebras/modelzoo 608d5a3, RELEASE_2.4.0: src/cerebras/
    # modelzoo/trainer/loggers/progress.py, ProgressLogger: its step lines, on_train_end's
    # `Training completed successfully!`, then on_fit_end's `Processed N training sample(s) in
    # S seconds.`, which is no marker: on_fit_exception prints it after a failure too)
    "cerebras": (
        "2024-08-02 21:37:56,370 INFO:   | Train Device=CSX, Step=400, Loss=4.12672, "
        "Rate=583.08 samples/sec, GlobalRate=585.88 samples/sec\n"
        "2024-08-02 21:37:56,377 INFO:   Saving checkpoint at step 400\n"
        "2024-08-02 21:38:13,224 INFO:   Saved checkpoint model_dir/checkpoint_400.mdl\n"
        "2024-08-02 21:38:42,917 INFO:   Training completed successfully!\n"
        "2024-08-02 21:38:42,923 INFO:   Processed 819200 training sample(s) in 2716.99479 "
        "seconds.\n"
    ),
    # llm-foundry's train command after Composer's fit() (its basicConfig format)
    "llm-foundry": (
        "[batch=4800/4800]:\n"
        "\t Train time/batch: 4799\n"
        "\t Train loss/train/total: 2.1102\n"
        "2024-06-29 13:02:11,412: rank0[822018][MainThread]: INFO: "
        "llmfoundry.command_utils.train: Done.\n"
    ),
    # ColossalAI's applications: Colossal-LLaMA's train.py, ColossalChat's PPO script,
    # ColossalMoE's train.py, the RoBERTa pretraining example (its dist logger's format)
    "colossal-llama": (
        "Epoch 0: 100%|##########| 1000/1000 [1:02:03<00:00,  3.72s/it, Loss=1.2112]\n"
        "Start saving final model checkpoint\n"
        "Saved final model checkpoint at epoch 0 at folder /ckpt/llama\n"
        "Max device memory usage: 61234.12 MB\n"
    ),
    "colossalchat ppo": (
        "Episode 9: 100%|##########| 100/100 [10:01<00:00,  6.01s/it, reward=0.812]\n"
        "Saved final actor model checkpoint at episodes 10 at folder /ckpt/actor\n"
        "Saved final critic model checkpoint at episodes 10 at folder /ckpt/critic\n"
    ),
    "colossalmoe": (
        "Epoch [3/3]: 100%|##########| 500/500 [20:00<00:00, loss=1.832]\n"
        "Saving model checkpoint to /ckpt/moe\n"
        "Finish training\n"
    ),
    "colossalai roberta": (
        "[05/01/24 19:38:50] INFO     colossalai - pretrain - INFO: epoch 9 | shard_length 10 |"
        " elapsed_time: 61.201 minseval_loss: 1.8123 | ppl: 6.12\n"
        "[05/01/24 19:38:57] INFO     colossalai - pretrain - INFO: Congratulation, training "
        "has finished!!!\n"
    ),
}


@pytest.mark.parametrize("framework", sorted(ENDS))
def test_a_frameworks_end_of_training_reads_as_completed(catalogue, framework: str):
    d = read_log(catalogue, ENDS[framework])
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert not d.retryable


@pytest.mark.parametrize("framework", sorted(ENDS))
@pytest.mark.parametrize("error", [
    "Traceback (most recent call last):\n"
    '  File "train.py", line 412, in <module>\n'
    "    main()\n"
    "OSError: [Errno 5] Input/output error: '/ckpt/last.pt'\n",
    "terminate called after throwing an instance of 'std::future_error'\n"
    "  what():  std::future_error: Broken promise\n",
    "srun: error: gpu-a017: task 0: Exited with exit code 1\n",
], ids=["traceback", "terminate", "srun"])
def test_an_unhandled_error_after_the_end_of_training_is_the_failure(catalogue, framework: str,
                                                                       error: str):
    d = read_log(catalogue, ENDS[framework] + error)
    assert d.class_id == "unknown_failure"


RANK_0_FAILS = (
    "[rank0]:Traceback (most recent call last):\n"
    '[rank0]:  File "/opt/torchtitan/torchtitan/train.py", line 57, in main\n'
    "[rank0]:    trainer.train()\n"
    "[rank0]:ValueError: step 1000 produced an empty batch\n"
)
RANK_1_ENDS = "[rank1]:[titan] 2025-03-02 10:00:05,010 - root - INFO - Training completed\n"


@pytest.mark.parametrize("ending", [
    # rank 1 ends training, then rank 0's error; then before it, the log cut after rank 1's
    RANK_1_ENDS + RANK_0_FAILS,
    RANK_0_FAILS + RANK_1_ENDS,
    # srun --label's task labels
    "1: INFO:torchtune.utils._logging:Saving final epoch checkpoint.\n"
    "0: Traceback (most recent call last):\n"
    '0:   File "recipes/full_finetune_distributed.py", line 901, in <module>\n'
    "0: ValueError: step 1000 produced an empty batch\n",
], ids=["marker-then-error", "error-then-marker", "srun-labels"])
def test_a_marker_on_another_rank_while_rank_0_fails_is_the_failure(catalogue, ending: str):
    text = (
        "[rank0]:[titan] 2025-03-02 10:00:00,123 - root - INFO - step: 1000  loss:  3.2101  "
        "memory: 61.32GiB(77.45%)  tps: 6,842  tflops: 317.22  mfu: 32.08%\n"
        "[rank1]:[titan] 2025-03-02 10:00:00,124 - root - INFO - step: 1000  loss:  3.2101  "
        "memory: 61.32GiB(77.45%)  tps: 6,842  tflops: 317.22  mfu: 32.08%\n"
    ) + ending
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "hint")


def test_training_that_goes_on_after_a_final_save_line_is_running(catalogue):
    # a `Saving final epoch checkpoint.` of a run that resumed and trains on (its progress
    # after the line) is not the end
    text = ENDS["torchtune"] + (
        "2|1001|Loss: 0.8011:   0%|          | 1/1000 [00:03<52:10,  3.13s/it]\n")
    assert read_log(catalogue, text).class_id == "none"


@pytest.mark.parametrize("line", [
    # a periodic save, a per-epoch line, a plain `Done.` of another logger: not the end
    "Saved model checkpoint at step 500 in folder /ckpt",
    "Finish training epoch 3",
    "2024-06-29 13:02:11,412: rank0[822018][MainThread]: INFO: __main__: Done.",
    "INFO:torchtune.utils._logging:Recipe checkpoint of size 9.12 GiB saved to "
    "/tmp/out/recipe_state/recipe_state.pt",
])
def test_lines_like_the_markers_are_not_an_end(catalogue, line: str):
    text = "step 10 loss 1.2\n" + line + "\n"
    assert read_log(catalogue, text).class_id == "none"


def test_the_completed_class_never_resubmits_and_no_stop_class_became_retryable(catalogue):
    completed = catalogue.classes["completed"]
    assert not completed.retryable and not completed.charges_budget
    assert all(not catalogue.classes[cid].retryable for cid in STOP_CLASSES)


# Keras's fit() (keras-team/keras 3422977a5e): keras/src/callbacks/progbar_logger.py,
# ProgbarLogger.on_epoch_begin prints `Epoch {epoch + 1}/{self.epochs}` (epochs > 1) and
# on_epoch_end finalizes the epoch's bar; keras/src/utils/progbar.py, Progbar.update draws it
# (verbose 1: `%{n}d/%d` in bold, the `━` bar in colours, elapsed seconds, time per step, ` -
# name: value`; on a terminal each update after `\b...\r`, else each on its own line; verbose
# 2: `469/469 - 3s - 6ms/step - loss: ...` at the end only). tf.keras 2's Progbar drew
# `[=====>....]` instead.
_K3 = "\x1b[1m{n}/469\x1b[0m \x1b[32m{bar}\x1b[0m\x1b[37m{rest}\x1b[0m \x1b[1m{t}\x1b[0m {m}"


def _keras3_epoch(epoch: int, epochs: int, last: int = 469) -> str:
    updates = [_K3.format(n=n, bar="━" * (20 * n // 469), rest="━" * (20 - 20 * n // 469),
                          t="3s" if n == 469 else "1s", m="6ms/step - accuracy: 0.9812 - "
                          "loss: 0.0611") for n in (120, 300, last)]
    return f"Epoch {epoch}/{epochs}\n" + "\r".join(updates) + "\n"


KERAS_ENDS = {
    "keras 3 on a terminal": _keras3_epoch(9, 10) + _keras3_epoch(10, 10),
    "keras 3 verbose 2": (
        "Epoch 9/10\n469/469 - 3s - 6ms/step - accuracy: 0.9801 - loss: 0.0652\n"
        "Epoch 10/10\n469/469 - 3s - 6ms/step - accuracy: 0.9812 - loss: 0.0611\n"),
    "tf.keras 2 to a file": (
        "Epoch 10/10\n"
        "  1/469 [..............................] - ETA: 2s - loss: 0.0598 - accuracy: 0.9844\n"
        "235/469 [==============>...............] - ETA: 1s - loss: 0.0605 - accuracy: 0.9815\n"
        "469/469 [==============================] - 3s 6ms/step - loss: 0.0611 - accuracy: "
        "0.9812 - val_loss: 0.0690 - val_accuracy: 0.9791\n"),
}


@pytest.mark.parametrize("case", sorted(KERAS_ENDS))
def test_keras_fits_last_epoch_finished_reads_as_completed(catalogue, case: str):
    """The bar of fit()'s last epoch at its total ends the run (bot.core.diagnose.framework_end,
    ends_in_keras_last_epoch); before, a log of Keras's read as still running (`none`), its
    bars no progress the series counts."""
    d = read_log(catalogue, KERAS_ENDS[case])
    assert (d.class_id, d.retryable) == ("completed", False)


@pytest.mark.parametrize("text", [
    # an epoch before the last
    _keras3_epoch(9, 10),
    # the last epoch's bar short of its total
    _keras3_epoch(9, 10) + _keras3_epoch(10, 10, last=300),
    # an error after the last epoch
    _keras3_epoch(10, 10) + "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n    model.save("/ckpt/model.keras")\n'
    "OSError: [Errno 122] Disk quota exceeded\n",
])
def test_keras_short_of_its_last_epochs_end_is_no_completion(catalogue, text: str):
    assert read_log(catalogue, text).class_id != "completed"


def test_cerebras_samples_summary_alone_is_no_completion(catalogue):
    """Cerebras Model Zoo's `Processed N training sample(s) in S seconds.` (progress.py at
    608d5a3, ProgressLogger.on_fit_end) is printed by on_fit_exception too, after a failure: the
    summary alone does not end a run as completed."""
    d = read_log(catalogue, (
        "2025-07-11 15:24:02,100 INFO:   | Train Device=CSX, Step=50, Loss=7.67120, "
        "Rate=33.01 samples/sec, GlobalRate=32.98 samples/sec\n"
        "2025-07-11 18:04:23,132 INFO:   Processed 11264 training sample(s) in 9567.159426912 "
        "seconds.\n"))
    assert d.class_id != "completed"
