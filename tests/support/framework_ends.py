"""Short log tails of widely used training code's successful ends, each built from its source's
format strings (the repository and the file the `completed` class's comments in
bot/core/catalogue/catalogue.yaml name): a few progress lines, then what the code prints after
its loop. `ENDS`: the framework, its log, and the verdict `trainbot diagnose` gives it with no
accounting (`completed`, or `none` where the code prints no line of its own after its loop and
its progress lines name no total, so its end is a cut run's)."""

from __future__ import annotations

F: dict[str, str] = {}
F["transformers run_clm"] = (
    "{'loss': 2.8812, 'grad_norm': 1.53, 'learning_rate': 1.1e-06, 'epoch': 2.99}\n"
    "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1755/1755 [21:03<00:00,  "
    "1.39it/s][INFO|trainer.py:2383] 2024-05-01 19:38:57,100 >> \n"
    "\n"
    "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
    "\n"
    "\n"
    "{'train_runtime': 1263.5, 'train_samples_per_second': 11.1, 'train_steps_per_second': 1.389,"
    " 'train_loss': 3.01, 'epoch': 3.0}\n"
    "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1755/1755 [21:03<00:00,  "
    "1.39it/s]\n"
    "[INFO|trainer.py:3478] 2024-05-01 19:39:01,100 >> Saving model checkpoint to /tmp/test-clm\n"
    "[INFO|configuration_utils.py:472] 2024-05-01 19:39:01,102 >> Configuration saved in /tmp/tes"
    "t-clm/config.json\n"
    "[INFO|modeling_utils.py:2598] 2024-05-01 19:39:03,000 >> Model weights saved in /tmp/test-cl"
    "m/model.safetensors\n"
    "***** train metrics *****\n"
    "  epoch                    =        3.0\n"
    "  total_flos               =  2727598GF\n"
    "  train_loss               =     3.0123\n"
    "  train_runtime            = 0:21:03.51\n"
    "  train_samples            =       2318\n"
    "  train_samples_per_second =     11.105\n"
    "  train_steps_per_second   =      1.389\n"
    "05/01/2024 19:39:03 - INFO - __main__ - *** Evaluate ***\n"
    "[INFO|trainer.py:3788] 2024-05-01 19:39:03,010 >> ***** Running Evaluation *****\n"
    "[INFO|trainer.py:3790] 2024-05-01 19:39:03,010 >>   Num examples = 240\n"
    "[INFO|trainer.py:3793] 2024-05-01 19:39:03,010 >>   Batch size = 8\n"
    "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 30/30 [00:07<00:00,  4.01"
    "it/s]\n"
    "***** eval metrics *****\n"
    "  epoch                   =        3.0\n"
    "  eval_accuracy           =     0.4124\n"
    "  eval_loss               =     3.0412\n"
    "  eval_runtime            = 0:00:07.81\n"
    "  eval_samples            =        240\n"
    "  perplexity              =    20.9321\n"
)
F["accelerate no_trainer"] = (
    "96%|######### | 1000/1035 [02:10<00:30,  2.65it/s]\n"
    "98%|######### | 1020/1035 [02:10<00:30,  2.65it/s]\n"
    "05/01/2024 19:30:00 - INFO - __main__ - epoch 1: {'accuracy': 0.8431, 'f1': 0.8881}\n"
    "100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1035/1035 [06:30<00:00,  "
    "2.65it/s]\n"
    "05/01/2024 19:32:10 - INFO - __main__ - epoch 2: {'accuracy': 0.8603, 'f1': 0.9012}\n"
    "Configuration saved in /tmp/mrpc/config.json\n"
    "Model weights saved in /tmp/mrpc/model.safetensors\n"
)
F["fairseq"] = (
    "2024-05-01 19:29:00 | INFO | train_inner | epoch 010:    700 / 782 loss=3.931, nll_loss=2.21"
    "2, ppl=4.63, wps=41234, ups=2.31, wpb=17820, bsz=612, num_updates=7738, lr=0.0004, gnorm=0.4"
    "12, train_wall=43, gb_free=10.1, wall=3400\n"
    "2024-05-01 19:30:00 | INFO | train_inner | epoch 010:    780 / 782 loss=3.912, nll_loss=2.20"
    "1, ppl=4.6, wps=41100, ups=2.3, wpb=17790, bsz=610, num_updates=7818, lr=0.0004, gnorm=0.41,"
    " train_wall=43, gb_free=10.1, wall=3443\n"
    "2024-05-01 19:30:01 | INFO | fairseq_cli.train | Stopping training due to num_updates: 7820 "
    ">= max_update: 7820\n"
    "2024-05-01 19:30:01 | INFO | fairseq_cli.train | begin validation on \"valid\" subset\n"
    "2024-05-01 19:30:10 | INFO | valid | epoch 010 | valid on 'valid' subset | loss 3.812 | nll_"
    "loss 2.1 | ppl 4.29 | wps 91234 | wpb 1700 | bsz 64 | num_updates 7820 | best_loss 3.812\n"
    "2024-05-01 19:30:10 | INFO | fairseq.checkpoint_utils | Saved checkpoint checkpoints/checkpo"
    "int_best.pt (epoch 10 @ 7820 updates, score 3.812) (writing took 4.1 seconds)\n"
    "2024-05-01 19:30:10 | INFO | fairseq_cli.train | end of epoch 10 (average epoch stats below)"
    "\n"
    "2024-05-01 19:30:10 | INFO | train | epoch 010 | loss 3.92 | nll_loss 2.21 | ppl 4.62 | wps "
    "41000 | ups 2.3 | num_updates 7820 | lr 0.0004 | train_wall 340 | wall 3460\n"
    "2024-05-01 19:30:10 | INFO | fairseq_cli.train | done training in 3459.2 seconds\n"
)
F["ultralytics yolov8"] = (
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "     99/100      2.61G     0.8201     0.5201      1.021         41        640: 100%|\u2588"
    "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 8/8 [00:02<00:00,  3.10it/s]\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 10"
    "0%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 4/4 [00:01<00:00,  3.41it/s"
    "]\n"
    "                   all        128        929      0.812      0.745      0.823      0.612\n"
    "\n"
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "    100/100      2.61G     0.8123     0.5123      1.012         45        640: 100%|\u2588"
    "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 8/8 [00:02<00:00,  3.12it/s]\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 10"
    "0%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 4/4 [00:01<00:00,  3.41it/s"
    "]\n"
    "                   all        128        929      0.812      0.745      0.823      0.612\n"
    "\n"
    "100 epochs completed in 0.089 hours.\n"
    "Optimizer stripped from runs/detect/train/weights/last.pt, 6.5MB\n"
    "Optimizer stripped from runs/detect/train/weights/best.pt, 6.5MB\n"
    "\n"
    "Validating runs/detect/train/weights/best.pt...\n"
    "Ultralytics 8.2.0 \U0001f680 Python-3.11.7 torch-2.2.2+cu121 CUDA:0 (NVIDIA A100-SXM4-80GB, "
    "81038MiB)\n"
    "Model summary (fused): 168 layers, 3151904 parameters, 0 gradients, 8.7 GFLOPs\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 10"
    "0%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 4/4 [00:01<00:00,  3.41it/s"
    "]\n"
    "                   all        128        929      0.812      0.745      0.823      0.612\n"
    "                person        128        254      0.912      0.712      0.834      0.612\n"
    "Speed: 0.2ms preprocess, 1.5ms inference, 0.0ms loss, 1.2ms postprocess per image\n"
    "Results saved to \x1b[1mruns/detect/train\x1b[0m\n"
)
F["timm train.py"] = (
    "Scheduled epochs: 300. LR stepped per epoch.\n"
    "Train: 298 [1250/1251 (100%)]  Loss: 2.801 (2.90)  Time: 0.401s,  638.40/s  (0.419s,  611.00"
    "/s)  LR: 1.000e-05  Data: 0.001 (0.010)\n"
    "Test: [   0/48]  Time: 1.212 (1.212)  Loss:  0.8123 (0.8123)  Acc@1: 84.3750 (84.3750)  Acc@"
    "5: 96.0938 (96.0938)\n"
    "Test: [  48/48]  Time: 0.112 (0.312)  Loss:  0.9012 (0.9321)  Acc@1: 81.2500 (80.0240)  Acc@"
    "5: 95.3125 (95.0120)\n"
    "Current checkpoints:\n"
    " ('./output/train/20240501-120000-resnet50-224/checkpoint-298.pth.tar', 80.024)\n"
    "\n"
    "Train: 299 [   0/1251 (  0%)]  Loss: 2.812 (2.81)  Time: 2.401s,  106.62/s  (2.401s,  106.62"
    "/s)  LR: 1.000e-05  Data: 1.901 (1.901)\n"
    "Train: 299 [1250/1251 (100%)]  Loss: 2.791 (2.89)  Time: 0.401s,  638.40/s  (0.419s,  611.00"
    "/s)  LR: 1.000e-05  Data: 0.001 (0.010)\n"
    "Test: [   0/48]  Time: 1.212 (1.212)  Loss:  0.8123 (0.8123)  Acc@1: 84.3750 (84.3750)  Acc@"
    "5: 96.0938 (96.0938)\n"
    "Test: [  48/48]  Time: 0.112 (0.312)  Loss:  0.9012 (0.9321)  Acc@1: 81.2500 (80.1240)  Acc@"
    "5: 95.3125 (95.0120)\n"
    "Current checkpoints:\n"
    " ('./output/train/20240501-120000-resnet50-224/checkpoint-299.pth.tar', 80.124)\n"
    " ('./output/train/20240501-120000-resnet50-224/checkpoint-298.pth.tar', 80.024)\n"
    "\n"
    "*** Best metric: 80.124 (epoch 299)\n"
    "--result\n"
    "[\n"
    "    {\n"
    "        \"epoch\": 299,\n"
    "        \"train_loss\": 2.89,\n"
    "        \"eval_loss\": 0.9321,\n"
    "        \"eval_top1\": 80.124,\n"
    "        \"eval_top5\": 95.012\n"
    "    }\n"
    "]\n"
)
# Runner._log_env's config (pretty_text: keys sorted), LoggerHook's lines every 50 steps with
# ignore_last (the epoch's last 30 steps unlogged), CheckpointHook's save once the epoch is over
F["mmengine/mmdet"] = (
    "05/01 07:00:00 - mmengine - INFO - Config:\n"
    "max_epochs = 12\n"
    "train_cfg = dict(max_epochs=12, type='EpochBasedTrainLoop', val_interval=1)\n"
    "05/01 19:27:40 - mmengine - INFO - Epoch(train) [12][7250/7330]  base_lr: 2.0000e-04 lr: 2.0"
    "000e-04  eta: 0:00:32  time: 0.4012  data_time: 0.0100  memory: 4012  grad_norm: 4.1000  los"
    "s: 0.5123  loss_rpn_cls: 0.0100  loss_bbox: 0.2000\n"
    "05/01 19:28:00 - mmengine - INFO - Epoch(train) [12][7300/7330]  base_lr: 2.0000e-04 lr: 2.0"
    "000e-04  eta: 0:00:12  time: 0.4012  data_time: 0.0100  memory: 4012  grad_norm: 4.1000  los"
    "s: 0.5123  loss_rpn_cls: 0.0100  loss_bbox: 0.2000\n"
    "05/01 19:28:12 - mmengine - INFO - Exp name: faster-rcnn_r50_fpn_1x_coco_20240501_120000\n"
    "05/01 19:28:12 - mmengine - INFO - Saving checkpoint at 12 epochs\n"
    "05/01 19:31:00 - mmengine - INFO - Epoch(val) [12][4950/5000]    eta: 0:00:02  time: 0.0412 "
    " data_time: 0.0010  memory: 412\n"
    "05/01 19:31:00 - mmengine - INFO - Evaluating bbox...\n"
    "05/01 19:32:00 - mmengine - INFO - bbox_mAP_copypaste: 0.374 0.581 0.404 0.212 0.410 0.481\n"
    "05/01 19:32:00 - mmengine - INFO - Epoch(val) [12][5000/5000]    coco/bbox_mAP: 0.3740  coco"
    "/bbox_mAP_50: 0.5810  coco/bbox_mAP_75: 0.4040  data_time: 0.0010  time: 0.0412\n"
)
# mmcv 1.x's EpochBasedRunner announcing its epochs as it starts, TextLoggerHook's lines every 50
# steps with ignore_last (the epoch's last 30 steps unlogged), CheckpointHook's save once the epoch
# is over, EvalHook's results once its pass is over
F["mmcv 1.x / mmdet 2.x"] = (
    "2021-03-01 07:00:00,123 - mmdet - INFO - Start running, host: alice@gpu-a07, work_dir: /work"
    "/faster_rcnn_r50_fpn_1x_coco\n"
    "2021-03-01 07:00:00,124 - mmdet - INFO - workflow: [('train', 1)], max: 12 epochs\n"
    "2021-03-01 19:27:40,123 - mmdet - INFO - Epoch [12][7250/7330]\tlr: 2.000e-04, eta: 0:00:4"
    "1, time: 0.401, data_time: 0.010, memory: 4012, loss_rpn_cls: 0.0100, loss_bbox: 0.2000, los"
    "s: 0.5123, grad_norm: 4.1000\n"
    "2021-03-01 19:28:00,123 - mmdet - INFO - Epoch [12][7300/7330]\tlr: 2.000e-04, eta: 0:00:1"
    "2, time: 0.401, data_time: 0.010, memory: 4012, loss_rpn_cls: 0.0100, loss_bbox: 0.2000, los"
    "s: 0.5123, grad_norm: 4.1000\n"
    "2021-03-01 19:28:12,123 - mmdet - INFO - Saving checkpoint at 12 epochs\n"
    "2021-03-01 19:32:00,123 - mmdet - INFO - Epoch(val) [12][5000]\tbbox_mAP: 0.3740, bbox_mAP_"
    "50: 0.5810, bbox_mAP_copypaste: 0.374 0.581 0.404 0.212 0.410 0.481\n"
)
# mmcv 1.x's IterBasedRunner (open-mmlab/mmcv 1.x mmcv/runner/iter_based_runner.py: `workflow:
# %s, max: %d iters` as it starts), mmseg 0.x's runner: TextLoggerHook's `Iter [i/N]` lines name
# the total themselves (no announcement needed), every 50 iterations here, the last one short of
# it; CheckpointHook's save at the last iteration (`Saving checkpoint at 80000 iterations`), then
# EvalHook's results (`Iter(val) [500]`, once its pass is over)
F["mmcv 1.x IterBasedRunner / mmseg 0.x"] = (
    "2021-03-01 07:00:00,123 - mmseg - INFO - Start running, host: alice@gpu-a07, work_dir: /work"
    "/deeplabv3_r50-d8_512x1024_80k_cityscapes\n"
    "2021-03-01 07:00:00,124 - mmseg - INFO - workflow: [('train', 1)], max: 80000 iters\n"
    "2021-03-01 19:27:40,123 - mmseg - INFO - Iter [79900/80000]\tlr: 1.000e-04, eta: 0:00:41, t"
    "ime: 0.401, data_time: 0.010, memory: 4012, decode.loss_seg: 0.1000, loss: 0.1123\n"
    "2021-03-01 19:28:00,123 - mmseg - INFO - Iter [79950/80000]\tlr: 1.000e-04, eta: 0:00:12, t"
    "ime: 0.401, data_time: 0.010, memory: 4012, decode.loss_seg: 0.1000, loss: 0.1123\n"
    "2021-03-01 19:28:12,123 - mmseg - INFO - Saving checkpoint at 80000 iterations\n"
    "2021-03-01 19:32:00,123 - mmseg - INFO - Iter(val) [500]\tmIoU: 0.7740, mAcc: 0.8500, aAcc"
    ": 0.9500\n"
)
F["deepspeed launcher"] = (
    "[2024-05-01 19:38:50,100] [INFO] [logging.py:96:log_dist] [Rank 0] step=5000, skipped=0, lr="
    "[3e-05], mom=[(0.9, 0.999)]\n"
    "steps: 5000 loss: 2.1134 iter time (s): 1.412 samples/sec: 362.6\n"
    "[2024-05-01 19:38:57,100] [INFO] [launch.py:351:main] Process 40211 exits successfully.\n"
)
F["deepspeed-chat step1"] = (
    "Epoch: 0, Step: 1000, Rank: 0, loss = 1.2312\n"
    "Model Parameters: 1.429 B, Latency: 0.83s, TFLOPs: 55.84, Samples/sec: 19.21, Time/seq 0.05s"
    ", Batch Size: 16, Sequence Length: 512\n"
    "Epoch: 0, Step: 1001, Rank: 0, loss = 1.2101\n"
    "Model Parameters: 1.429 B, Latency: 0.73s, TFLOPs: 63.64, Samples/sec: 21.90, Time/seq 0.05s"
    ", Batch Size: 16, Sequence Length: 512\n"
    "***** Evaluating perplexity, Epoch 1/1 *****\n"
    "ppl: 2.148517608642578, loss: 0.7647781372070312\n"
    "saving the final model ...\n"
)
F["megatron-lm"] = (
    " [2024-05-01 19:38:50] iteration    20000/   20000 | consumed samples:     10240000 | elapse"
    "d time per iteration (ms): 1412.3 | learning rate: 3.000E-05 | global batch size:   512 | lm"
    " loss: 2.113400E+00 | loss scale: 1.0 | grad norm: 0.312 | number of skipped iterations:   0"
    " | number of nan iterations:   0 |\n"
    "[after training is done] datetime: 2024-05-01 19:38:57 \n"
    "saving checkpoint at iteration   20000 to /ckpt\n"
    "  successfully saved checkpoint at iteration   20000 to /ckpt\n"
)
F["gpt-neox / megatron-deepspeed"] = (
    " samples/sec: 362.600 | iteration    19990/   20000 | elapsed time per iteration (ms): 1412."
    "3 | learning rate: 3.000E-05 | approx flops per GPU: 150.1TFLOPS | lm_loss: 2.113400E+00 | l"
    "oss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    " samples/sec: 362.600 | iteration    20000/   20000 | elapsed time per iteration (ms): 1412."
    "3 | learning rate: 3.000E-05 | approx flops per GPU: 150.1TFLOPS | lm_loss: 2.110100E+00 | l"
    "oss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    "--------------------------------------------------------------------------------------------"
    "--------------------------\n"
    " validation results at the end of training for val data | lm_loss value: 2.212300E+00 | lm_l"
    "oss_ppl value: 9.136100E+00 | \n"
    "--------------------------------------------------------------------------------------------"
    "--------------------------\n"
)
F["megatron (old) end-of-training validation"] = (
    " iteration    19990/   20000 | consumed samples:     10234880 | elapsed time per iteration ("
    "ms): 1412.3 | learning rate: 3.000E-05 | global batch size:   512 | lm loss: 2.113400E+00 | "
    "loss scale: 1.0 | grad norm: 0.312 | number of skipped iterations:   0 | number of nan itera"
    "tions:   0 |\n"
    "time (ms) | forward-compute: 400.12 | backward-compute: 900.2 | optimizer: 80.1\n"
    " iteration    20000/   20000 | consumed samples:     10240000 | elapsed time per iteration ("
    "ms): 1412.3 | learning rate: 3.000E-05 | global batch size:   512 | lm loss: 2.110100E+00 | "
    "loss scale: 1.0 | grad norm: 0.312 | number of skipped iterations:   0 | number of nan itera"
    "tions:   0 |\n"
    "--------------------------------------------------------------------------------------------"
    "---------------------\n"
    " validation loss at the end of training for val data | lm loss value: 2.212300E+00 | lm loss"
    " PPL: 9.136100E+00 | \n"
    "--------------------------------------------------------------------------------------------"
    "---------------------\n"
    "saving checkpoint at iteration   20000 to /ckpt\n"
    "  successfully saved checkpoint at iteration   20000 to /ckpt\n"
    "--------------------------------------------------------------------------------------------"
    "---------------------\n"
    " validation loss at the end of training for test data | lm loss value: 2.201200E+00 | lm los"
    "s PPL: 9.035100E+00 | \n"
    "--------------------------------------------------------------------------------------------"
    "---------------------\n"
)
F["nanoGPT"] = (
    "Overriding config with config/train_shakespeare_char.py:\n"
    "max_iters = 5000\n"
    "lr_decay_iters = 5000\n"
    "iter 4990: loss 0.8123, time 45.12ms, mfu 30.12%\n"
    "step 5000: train loss 0.8012, val loss 1.4712\n"
    "saving checkpoint to out-shakespeare-char\n"
    "iter 5000: loss 0.8101, time 5012.12ms, mfu 27.12%\n"
)
F["lightning"] = (
    "Epoch 9: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 782/782 [00:41<0"
    "0:00, 18.93it/s, v_num=3, train_loss=0.412]\n"
    "`Trainer.fit` stopped: `max_epochs=10` reached.\n"
    "Epoch 9: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 782/782 [00:41<0"
    "0:00, 18.92it/s, v_num=3, train_loss=0.412]\n"
)
F["NeMo (Lightning)"] = (
    "[NeMo I 2024-05-01 19:38:50 nemo_logging:381] Epoch 0, global step 100000: 'val_loss' reache"
    "d 1.21000 (best 1.21000), saving model to '/results/checkpoints/megatron_gpt--val_loss=1.21-"
    "step=100000.ckpt' as top 3\n"
    "`Trainer.fit` stopped: `max_steps=100000` reached.\n"
)
F["ESPnet2"] = (
    "[gpu01] 2024-05-01 19:30:00,000 (trainer:756) INFO: 40epoch:train:1901-2000batch: iter_time="
    "1.2e-04, forward_time=0.112, loss_ctc=12.1, loss_att=4.1, acc=0.912, loss=6.5, backward_time"
    "=0.09, optim_step_time=0.02, optim0_lr0=2.0e-04, train_time=0.512\n"
    "[gpu01] 2024-05-01 19:31:00,000 (trainer:338) INFO: 40epoch results: [train] iter_time=1.2e-"
    "04, loss=6.4, acc=0.91, [valid] loss=7.1, acc=0.90, cer=0.06, time=21 minutes and 4.12 secon"
    "ds, total_count=80000, gpu_max_cached_mem_GB=20.1\n"
    "[gpu01] 2024-05-01 19:31:02,000 (trainer:386) INFO: The best model has been updated: valid.a"
    "cc\n"
    "[gpu01] 2024-05-01 19:31:02,000 (trainer:440) INFO: The training was finished at 40 epochs "
    "\n"
    "[gpu01] 2024-05-01 19:31:05,000 (average_nbest_models:69) INFO: Averaging 10best models: cri"
    "terion=\"valid.acc\": exp/asr_train/valid.acc.ave_10best.pth\n"
)
F["OpenNMT-py train_steps"] = (
    "[2024-05-01 19:30:00,000 INFO] Step 99950/100000; acc: 65.1; ppl:  5.21; xent: 1.65; lr: 0.0"
    "0009; sents:   4012; bsz: 1812/1920/ 50; 12000/13000 tok/s;  36000 sec;\n"
    "[2024-05-01 19:30:18,000 INFO] Step 100000/100000; acc: 65.2; ppl:  5.20; xent: 1.65; lr: 0."
    "00009; sents:   4013; bsz: 1812/1920/ 50; 12000/13000 tok/s;  36018 sec;\n"
    "[2024-05-01 19:30:30,000 INFO] valid stats calculation\n"
    "[2024-05-01 19:30:40,000 INFO] Validation perplexity: 4.812\n"
    "[2024-05-01 19:30:40,000 INFO] Validation accuracy: 66.12\n"
    "[2024-05-01 19:30:41,000 INFO] Saving checkpoint run/model_step_100000.pt\n"
)
F["OpenNMT-py early stop"] = (
    "[2024-05-01 19:30:00,000 INFO] Step 42000/100000; acc: 65.1; ppl:  5.21; xent: 1.65; lr: 0.0"
    "0009; sents:   4012; bsz: 1812/1920/ 50; 12000/13000 tok/s;  36000 sec;\n"
    "[2024-05-01 19:30:40,000 INFO] Validation perplexity: 4.812\n"
    "[2024-05-01 19:30:40,000 INFO] Training finished after not improving. Early Stop!\n"
    "[2024-05-01 19:30:40,000 INFO] earlystopper has_stopped!\n"
    "[2024-05-01 19:30:41,000 INFO] Saving checkpoint run/model_step_42000.pt\n"
)
F["torchvision references"] = (
    "Epoch: [89]  [4990/5005]  eta: 0:00:05  lr: 0.0001  img/s: 612.1  loss: 1.0123 (1.0212)  acc"
    "1: 75.0000 (74.1210)  acc5: 92.1875 (91.2000)  time: 0.3412  data: 0.0012  max mem: 10122\n"
    "Epoch: [89] Total time: 0:28:31\n"
    "Test:   [ 0/196]  eta: 0:05:00  loss: 0.6123 (0.6123)  acc1: 84.3750 (84.3750)  acc5: 96.093"
    "8 (96.0938)  time: 1.5312  data: 1.2012  max mem: 10122\n"
    "Test:  Total time: 0:00:41\n"
    "Test:  Acc@1 76.130 Acc@5 92.862\n"
    "Training time 1 day, 18:48:33\n"
)
F["DETR / Deformable-DETR"] = (
    "Epoch: [499]  [7320/7393]  eta: 0:00:10  lr: 0.000010  class_error: 4.12  loss: 5.1234 (5.20"
    "12)  loss_ce: 0.2012 (0.2100)  loss_bbox: 0.1012 (0.1100)  loss_giou: 0.3012 (0.3100)  time:"
    " 0.1412  data: 0.0012  max mem: 8012\n"
    "Epoch: [499] Total time: 0:17:31 (0.1422 s / it)\n"
    "Averaged stats: lr: 0.000010  class_error: 4.12  loss: 5.2012 (5.2012)\n"
    "Test:  [  0/625]  eta: 0:05:00  class_error: 0.00  loss: 4.1234 (4.1234)  time: 0.4812  data"
    ": 0.3012  max mem: 8012\n"
    "Test: Total time: 0:01:12 (0.1152 s / it)\n"
    "Averaged stats: class_error: 3.00  loss: 4.5012 (4.6012)\n"
    "Accumulating evaluation results...\n"
    "DONE (t=12.01s).\n"
    " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.420\n"
    "Training time 3 days, 4:01:12\n"
)
F["MAE/DINO/BEiT (MetricLogger)"] = (
    "Epoch: [799]  [620/625]  eta: 0:00:02  lr: 0.000000  loss: 0.4123 (0.4112)  time: 0.4012  da"
    "ta: 0.0012  max mem: 20121\n"
    "Epoch: [799] Total time: 0:04:12 (0.4032 s / it)\n"
    "Averaged stats: lr: 0.000000  loss: 0.4112 (0.4112)\n"
    "Training time 3 days, 12:00:41\n"
)
F["YOLOX"] = (
    "2024-05-01 19:30:00 | INFO     | yolox.core.trainer:261 - epoch: 300/300, iter: 7320/7329, g"
    "pu mem: 8012Mb, mem: 20.1Gb, iter_time: 0.412s, data_time: 0.001s, total_loss: 4.1, iou_loss"
    ": 2.1, l1_loss: 0.0, conf_loss: 1.2, cls_loss: 0.8, lr: 1.250e-04, size: 640, ETA: 0:00:04\n"
    "2024-05-01 19:31:00 | INFO     | yolox.core.trainer:351 - \n"
    "Average forward time: 4.12 ms, Average NMS time: 1.01 ms, Average inference time: 5.13 ms\n"
    "2024-05-01 19:31:00 | INFO     | yolox.core.trainer:361 - Save weights to ./YOLOX_outputs/yo"
    "lox_s\n"
    "2024-05-01 19:31:00 | INFO     | yolox.core.trainer:198 - Training of experiment is done and"
    " the best AP is 40.51\n"
)
F["PaddleDetection"] = (
    "[05/01 19:30:00] ppdet.engine INFO: Epoch: [299] [7320/7329] eta: 0:00:04 lr: 0.000010 loss:"
    " 1.212100 loss_cls: 0.412100 loss_iou: 0.212100 batch_cost: 0.4012 data_cost: 0.0012 ips: 19"
    ".9402 images/s\n"
    "[05/01 19:30:05] ppdet.utils.checkpoint INFO: Save checkpoint: output/ppyoloe_crn_l_300e_coc"
    "o\n"
    "[05/01 19:31:00] ppdet.engine INFO: Eval iter: 4900\n"
    "[05/01 19:31:05] ppdet.metrics.metrics INFO: The bbox result is saved to bbox.json.\n"
    " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.512\n"
    "[05/01 19:32:00] ppdet.engine INFO: Total sample number: 5000, average FPS: 82.1\n"
    "[05/01 19:32:00] ppdet.engine.callbacks INFO: Best test bbox ap is 0.512.\n"
)
# train.py's line every 25 steps (the step before it counts), the save at --end-step, `Done!`
F["k-diffusion"] = (
    "Epoch: 41, step: 99950, loss: 0.0123, avg loss: 0.0456\n"
    "Epoch: 41, step: 99975, loss: 0.0121, avg loss: 0.0455\n"
    "Saving to model_00100000.pth...\n"
    "Done!\n"
)
F["fastai"] = (
    "epoch     train_loss  valid_loss  accuracy  time    \n"
    "0         0.412312    0.312100    0.891200  01:12     \n"
    "1         0.301200    0.251200    0.912300  01:11     \n"
    "2         0.251200    0.231200    0.921200  01:11     \n"
)
F["sentence-transformers v2 fit"] = (
    "Iteration: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1250/1250 [02:"
    "30<00:00,  8.31it/s]\n"
    "Epoch:  75%|#######5  | 3/4 [07:30<02:30, 150.12s/it]\n"
    "Iteration: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 1250/1250 [02:"
    "30<00:00,  8.31it/s]\n"
    "Epoch: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 4/4 [10:00<00:00, "
    "150.12s/it]\n"
)
F["keras"] = (
    "Epoch 10/10\n"
    "1563/1563 [==============================] - 8s 5ms/step - loss: 0.4123 - accuracy: 0.8512 -"
    " val_loss: 0.8012 - val_accuracy: 0.7312\n"
)
F["keras early stop"] = (
    "Epoch 8/50\n"
    "1563/1563 [==============================] - 8s 5ms/step - loss: 0.4123 - accuracy: 0.8512 -"
    " val_loss: 0.8012 - val_accuracy: 0.7312\n"
    "Restoring model weights from the end of the best epoch: 5.\n"
    "Epoch 8: early stopping\n"
)
F["torchreid"] = (
    "epoch: [60/60][30/32]\ttime 0.212 (0.230)\tdata 0.001 (0.010)\teta 0:00:00\tloss_t 0.0300 (0"
    ".3000)\tloss_x 1.0300 (1.2000)\tacc 50.00 (48.00)\tlr 0.000350\n"
    "=> Final test\n"
    "** Results **\n"
    "mAP: 71.2%\n"
    "Rank-1  : 87.6%\n"
    "Checkpoint saved to \"log/resnet50/model/model.pth.tar-60\"\n"
    "Elapsed 0:42:07\n"
)
F["detectron2"] = (
    "[05/01 19:29:40 d2.utils.events]:  eta: 0:00:11  iter: 89979  total_loss: 0.512  loss_cls: 0"
    ".101  loss_box_reg: 0.201  time: 0.5600  data_time: 0.0100  lr: 0.0002  max_mem: 5120M\n"
    "[05/01 19:30:00 fvcore.common.checkpoint]: Saving checkpoint to ./output/model_final.pth\n"
    "[05/01 19:30:05 d2.evaluation.evaluator]: Start inference on 5000 batches\n"
    "[05/01 19:30:15 d2.evaluation.evaluator]: Inference done 11/5000. Dataloading: 0.0010 s/iter"
    ". Inference: 0.0500 s/iter. Eval: 0.0001 s/iter. Total: 0.0512 s/iter. ETA=0:04:15\n"
    "[05/01 19:35:00 d2.evaluation.evaluator]: Total inference time: 0:04:20.123 (0.052 s / iter "
    "per device, on 1 devices)\n"
    "[05/01 19:35:10 d2.evaluation.testing]: copypaste: Task: bbox\n"
    "[05/01 19:35:10 d2.evaluation.testing]: copypaste: AP,AP50,AP75,APs,APm,APl\n"
    "[05/01 19:35:10 d2.evaluation.testing]: copypaste: 40.2130,61.0120,43.8210,24.0120,43.5120,5"
    "2.1120\n"
    "[05/01 19:35:10 d2.utils.events]:  eta: 0:00:00  iter: 89999  total_loss: 0.509  loss_cls: 0"
    ".100  loss_box_reg: 0.200  time: 0.5600  data_time: 0.0100  lr: 0.0002  max_mem: 5120M\n"
    "[05/01 19:35:10 d2.engine.hooks]: Overall training speed: 89997 iterations in 13:59:57 (0.56"
    "00 s / it)\n"
    "[05/01 19:35:10 d2.engine.hooks]: Total training time: 14:05:12 (0:05:15 on hooks)\n"
)
F["maskrcnn-benchmark"] = (
    "2024-05-01 19:29:40,000 maskrcnn_benchmark.trainer INFO: eta: 0:00:05  iter: 89980  loss: 0."
    "5123 (0.5200)  loss_classifier: 0.1012 (0.1100)  time: 0.2657 (0.2657)  data: 0.0040 (0.0050"
    ")  lr: 0.000200  max mem: 3312\n"
    "2024-05-01 19:30:00,000 maskrcnn_benchmark.trainer INFO: eta: 0:00:00  iter: 90000  loss: 0."
    "5101 (0.5200)  loss_classifier: 0.1010 (0.1100)  time: 0.2657 (0.2657)  data: 0.0040 (0.0050"
    ")  lr: 0.000200  max mem: 3312\n"
    "2024-05-01 19:30:01,000 maskrcnn_benchmark.utils.checkpoint INFO: Saving checkpoint to ./out"
    "put/model_final.pth\n"
    "2024-05-01 19:30:02,000 maskrcnn_benchmark.trainer INFO: Total training time: 6:38:41.123456"
    " (0.2657 s / it)\n"
    "2024-05-01 19:30:05,000 maskrcnn_benchmark.inference INFO: Start evaluation on coco_2014_min"
    "ival dataset(5000 images).\n"
    "2024-05-01 19:37:05,000 maskrcnn_benchmark.inference INFO: Total inference time: 0:07:00.123"
    "456 (0.0840 s / img per device, on 1 devices)\n"
    "2024-05-01 19:37:05,000 maskrcnn_benchmark.inference INFO: Preparing results for COCO format"
    "\n"
    "2024-05-01 19:38:05,000 maskrcnn_benchmark.inference INFO: Evaluating predictions\n"
    "2024-05-01 19:39:05,000 maskrcnn_benchmark.inference INFO: OrderedDict([('bbox', OrderedDict"
    "([('AP', 0.3661), ('AP50', 0.5841)]))])\n"
)
F["BasicSR (Real-ESRGAN, NAFNet, HAT ...)"] = (
    "2024-05-01 19:28:00,123 INFO: [train..][epoch:299, iter: 399,900, lr:(1.000e-07,)] [eta: 0:0"
    "0:41, time (data): 0.412 (0.001)] l_pix: 1.2345e-02 \n"
    "2024-05-01 19:29:00,123 INFO: [train..][epoch:299, iter: 400,000, lr:(1.000e-07,)] [eta: 0:0"
    "0:00, time (data): 0.412 (0.001)] l_pix: 1.2301e-02 \n"
    "2024-05-01 19:29:00,123 INFO: Saving models and training states.\n"
    "2024-05-01 19:31:00,123 INFO: Validation Set5\n"
    "\t # psnr: 32.1234\tBest: 32.2000 @ 395000 iter\n"
    "\n"
    "2024-05-01 19:31:00,123 INFO: End of training. Time consumed: 2 days, 3:04:05\n"
    "2024-05-01 19:31:00,123 INFO: Save the latest model.\n"
    "2024-05-01 19:32:00,123 INFO: Validation Set5\n"
    "\t # psnr: 32.1234\tBest: 32.2000 @ 395000 iter\n"
    "\n"
)
F["YOLOv7"] = (
    "     Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n"
    "   299/299     10.1G   0.02512   0.02012  0.001012   0.04624       112       640: 100%|"
    "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 7393/7393 [41:12<00:00,  2.99i"
    "t/s]\n"
    "               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95"
    ": 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 157/157 [01:12<00:00,  "
    "2.17it/s]\n"
    "                 all        5000       36335       0.712       0.642       0.695        0.50"
    "1\n"
    "300 epochs completed in 212.123 hours.\n"
    "\n"
    "Optimizer stripped from runs/train/yolov7/weights/last.pt, 75.6MB\n"
    "Optimizer stripped from runs/train/yolov7/weights/best.pt, 75.6MB\n"
)
F["diffusers train_dreambooth"] = (
    "05/01/2024 19:20:00 - INFO - __main__ - ***** Running training *****\n"
    "05/01/2024 19:20:00 - INFO - __main__ -   Total optimization steps = 400\n"
    "Steps:  99%|#########9| 396/400 [05:10<00:03,  1.28it/s, loss=0.0412, lr=5e-6]\n"
    "Steps: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 400/400 [05:12<00:"
    "00,  1.28it/s, loss=0.0401, lr=5e-6]\n"
    "Configuration saved in out/unet/config.json\n"
    "Model weights saved in out/unet/diffusion_pytorch_model.safetensors\n"
    "Steps: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 400/400 [05:20<00:"
    "00,  1.25it/s, loss=0.0401, lr=5e-6]\n"
)

# YOLOv5's train.py (ultralytics/yolov5 5081342f04fb): the epoch header, its bar
# (`{epoch}/{epochs - 1}`), val.py's table, then after the loop `{n} epochs completed in {h:.3f}
# hours.`, strip_optimizer's lines and the best weights' validation
F["YOLOv5"] = (
    "\n"
    "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size\n"
    "      99/99      3.81G    0.02871    0.02173   0.004382         71        640: 100%|\u2588"
    "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 8/8 [00:02<00:00,  3.10it/s]\n"
    "                 Class     Images  Instances          P          R      mAP50   mAP50-95: 1"
    "00%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 4/4 [00:01<00:00,  3.41it/"
    "s]\n"
    "                   all        128        929      0.812      0.745      0.823      0.612\n"
    "\n"
    "100 epochs completed in 0.089 hours.\n"
    "Optimizer stripped from runs/train/exp/weights/last.pt, 14.8MB\n"
    "Optimizer stripped from runs/train/exp/weights/best.pt, 14.8MB\n"
    "\n"
    "Validating runs/train/exp/weights/best.pt...\n"
    "Fusing layers... \n"
    "Model summary: 157 layers, 7225885 parameters, 0 gradients, 16.4 GFLOPs\n"
    "                 Class     Images  Instances          P          R      mAP50   mAP50-95: 1"
    "00%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 4/4 [00:01<00:00,  3.41it/"
    "s]\n"
    "                   all        128        929      0.812      0.745      0.823      0.612\n"
    "Results saved to \x1b[1mruns/train/exp\x1b[0m\n"
)
# Swin Transformer's main.py and logger.py (microsoft/Swin-Transformer f82860bfb522): rank 0's
# console handler's colored format (`[time name]` green, `(file line)` yellow), train_one_epoch's
# `Train: [{epoch}/{EPOCHS}][{idx}/{num_steps}]` line, the epoch's time, the last epoch's save,
# validate's lines, then after the loop `Training time {timedelta}`
_SWIN = ("\x1b[32m[2024-05-01 19:{} swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py {})\x1b"
         "[0m: INFO ")
F["Swin Transformer"] = (
    "\x1b[32m[2024-05-01 19:28:00 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 222)\x1b[0m"
    ": INFO Train: [299/300][1240/1251]\teta 0:00:04 lr 0.000001\t wd 0.0500\ttime 0.4012 (0.4120)"
    "\tloss 2.8123 (2.9012)\tgrad_norm 3.1234 (3.4012)\tloss_scale 65536.0000 (65536.0000)\tmem 12"
    "012MB\n"
    "\x1b[32m[2024-05-01 19:28:05 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 231)\x1b[0m"
    ": INFO EPOCH 299 training takes 0:08:35\n"
    "\x1b[32m[2024-05-01 19:28:06 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 150)\x1b[0m"
    ": INFO ckpt/swin_tiny/default/ckpt_epoch_299.pth saving......\n"
    "\x1b[32m[2024-05-01 19:28:08 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 152)\x1b[0m"
    ": INFO ckpt/swin_tiny/default/ckpt_epoch_299.pth saved !!!\n"
    "\x1b[32m[2024-05-01 19:29:00 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 271)\x1b[0m"
    ": INFO Test: [190/196]\tTime 0.112 (0.312)\tLoss 0.9012 (0.9321)\tAcc@1 81.250 (81.190)\tAcc@"
    "5 95.312 (95.512)\tMem 12012MB\n"
    "\x1b[32m[2024-05-01 19:29:02 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 278)\x1b[0m"
    ": INFO  * Acc@1 81.190 Acc@5 95.512\n"
    "\x1b[32m[2024-05-01 19:29:02 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 165)\x1b[0m"
    ": INFO Accuracy of the network on the 50000 test images: 81.2%\n"
    "\x1b[32m[2024-05-01 19:29:02 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 167)\x1b[0m"
    ": INFO Max accuracy: 81.19%\n"
    "\x1b[32m[2024-05-01 19:29:02 swin_tiny_patch4_window7_224]\x1b[0m\x1b[33m(main.py 171)\x1b[0m"
    ": INFO Training time 1 day, 19:01:02\n"
)
# ConvNeXt's main.py (facebookresearch/ConvNeXt 2313ff8e), as DeiT's: MetricLogger's lines, the
# epoch's evaluation, `Max accuracy: …`, then after the loop `Training time {timedelta}`
F["DeiT / ConvNeXt"] = (
    "Epoch: [299]  [1250/1251]  eta: 0:00:00  lr: 0.000001  min_lr: 0.000001  loss: 2.8123 (2.90"
    "12)  weight_decay: 0.0500 (0.0500)  time: 0.4012  data: 0.0012  max mem: 20121\n"
    "Epoch: [299] Total time: 0:08:31 (0.4089 s / it)\n"
    "Averaged stats: lr: 0.000001  min_lr: 0.000001  loss: 2.9012 (2.9012)\n"
    "Test:  [  0/196]  eta: 0:05:00  loss: 0.6123 (0.6123)  acc1: 84.3750 (84.3750)  acc5: 96.093"
    "8 (96.0938)  time: 1.5312  data: 1.2012  max mem: 20121\n"
    "Test: Total time: 0:00:41 (0.2092 s / it)\n"
    "* Acc@1 82.112 Acc@5 95.861 loss 0.812\n"
    "Accuracy of the model on the 50000 test images: 82.1%\n"
    "Max accuracy: 82.11%\n"
    "Training time 2 days, 1:02:03\n"
)
# nnU-Net v2's nnUNetTrainer (MIC-DKFZ/nnUNet nnunetv2/training/nnUNetTrainer/nnUNetTrainer.py
# 0e495086eb10): print_to_log_file's `{datetime}: ` and its arguments joined by blanks, an
# epoch's lines, on_train_end's `Training done.` after the final save, then run_training.py's
# perform_actual_validation
_NNUNET = "2024-05-01 19:{}.{:06d}: "
F["nnU-Net v2"] = (
    "2024-05-01 19:20:00.000012: \n"
    "2024-05-01 19:20:00.000013: Epoch 999\n"
    "2024-05-01 19:20:00.000014: Current learning rate: 2e-05\n"
    "2024-05-01 19:22:30.000012: train_loss -0.9012\n"
    "2024-05-01 19:22:30.000013: val_loss -0.8912\n"
    "2024-05-01 19:22:30.000014: Pseudo dice [np.float32(0.9123), np.float32(0.8812)]\n"
    "2024-05-01 19:22:30.000015: Epoch time: 150.12 s\n"
    "2024-05-01 19:22:33.000012: Training done.\n"
    "2024-05-01 19:22:33.000020: predicting case_001\n"
    "2024-05-01 19:22:34.000012: case_001, shape torch.Size([1, 138, 512, 512]), rank 0\n"
    "2024-05-01 19:24:00.000012: Validation complete\n"
    "2024-05-01 19:24:00.000013: Mean Validation Dice:  0.8912312\n"
)
# nnU-Net v1's NetworkTrainer.run_training (MIC-DKFZ/nnUNet nnunetv1 branch c673c349,
# nnunet/training/network_training/network_trainer.py): `\nepoch: ` and the epoch (its
# max_num_epochs, 1000, is printed nowhere), the epoch's losses and `This epoch took …`, then the
# final save (save_checkpoint's `saving checkpoint...`, every save's) and run_training.py's
# validate (`finished prediction`, determine_postprocessing's prints), which --validation_only
# runs alike
F["nnU-Net v1"] = (
    "2024-05-01 19:20:00.000012: \n"
    "epoch:  999\n"
    "2024-05-01 19:22:30.000012: train loss : -0.9012\n"
    "2024-05-01 19:22:30.000013: validation loss: -0.8912\n"
    "2024-05-01 19:22:30.000014: Average global foreground Dice: [0.9123, 0.8812]\n"
    "2024-05-01 19:22:30.000015: (interpret this as an estimate for the Dice of the different clas"
    "ses. This is not exact.)\n"
    "2024-05-01 19:22:31.000012: lr: 0.0\n"
    "2024-05-01 19:22:31.000013: This epoch took 150.123456 s\n"
    "\n"
    "2024-05-01 19:22:31.000020: saving checkpoint...\n"
    "2024-05-01 19:22:33.000012: done, saving took 2.12 seconds\n"
    "case_001 (2, 138, 512, 512)\n"
    "2024-05-01 19:23:59.000012: finished prediction\n"
    "2024-05-01 19:23:59.000013: evaluation of raw predictions\n"
    "2024-05-01 19:24:00.000012: determining postprocessing\n"
    "done\n"
    "for which classes:\n"
    "[]\n"
    "min_object_sizes\n"
    "None\n"
)
# open_clip's training (mlfoundations/open_clip src/open_clip_train/legacy_main.py and
# legacy_train.py 89fb801f1e60, the classic main): its logger's `{time} | INFO | root | `,
# train_one_epoch's `Train Epoch: {epoch} [{samples}/{samples_per_epoch} ({percent:.0f}%)] …`
# (the epoch's samples, no epoch total), then evaluate's zero-shot lines; after the loop only an
# opt-in remote sync's lines
_OPEN_CLIP = "2024-05-01,19:{} | INFO | root | "
F["open_clip"] = (
    "2024-05-01,19:28:02:00 | INFO | root | Train Epoch: 31 [ 409600/409600 (100%)] Data (t): 0.01"
    "2 Batch (t): 0.412, 9942.1/s, 1242.8/s/gpu LR: 0.000000 Logit Scale: 100.000 Contrastive_loss"
    ": 0.81123 (0.82101) Loss: 0.81123 (0.82101)\n"
    "2024-05-01,19:28:09:00 | INFO | root | Finished zero-shot imagenet.\n"
    "2024-05-01,19:28:09:00 | INFO | root | Eval Epoch: 32 imagenet-zeroshot-val-top1: 0.3612\tima"
    "genet-zeroshot-val-top5: 0.6412\n"
)
# torchtitan's Trainer.train (pytorch/torchtitan torchtitan/trainer.py b5bcd76c66d0): torchrun's
# `[rank0]:` prefix, its logger's `[titan] {time} - root - INFO - `, MetricsProcessor.log's
# colored step line, the last step's save, then after the loop `Training completed`
_TITAN = "[rank0]:[titan] 2024-05-01 19:{},123 - root - INFO - "
F["torchtitan"] = (
    "[rank0]:[titan] 2024-05-01 19:38:40,123 - root - INFO - \x1b[31mstep: 9990  \x1b[32mloss:  2."
    "1134  \x1b[38;2;180;60;0mgrad_norm:  0.3121  \x1b[38;2;54;234;195mmemory: 60.12GiB(75.91%)  "
    "\x1b[34mtps: 3,012  \x1b[36mtflops: 150.12  \x1b[35mmfu: 48.12%\x1b[39m\n"
    "[rank0]:[titan] 2024-05-01 19:38:50,123 - root - INFO - \x1b[31mstep: 10000  \x1b[32mloss:  2"
    ".1101  \x1b[38;2;180;60;0mgrad_norm:  0.3101  \x1b[38;2;54;234;195mmemory: 60.12GiB(75.91%)  "
    "\x1b[34mtps: 3,012  \x1b[36mtflops: 150.12  \x1b[35mmfu: 48.12%\x1b[39m\n"
    "[rank0]:[titan] 2024-05-01 19:38:51,123 - root - INFO - Saving the checkpoint (or staging if "
    "async is enabled).\n"
    "[rank0]:[titan] 2024-05-01 19:38:58,123 - root - INFO - Finished saving the checkpoint (or st"
    "aging if async is enabled)in 7.12 seconds.\n"
    "[rank0]:[titan] 2024-05-01 19:39:00,123 - root - INFO - Training completed\n"
    "[rank0]:[titan] 2024-05-01 19:39:00,123 - root - INFO - Process group destroyed\n"
)
# LitGPT's pretrain.py (Lightning-AI/litgpt 26857050): fit()'s iteration line, the final
# validation and save, then after fit() returned `Training time: {s:.2f}s` and the memory used
F["LitGPT pretrain"] = (
    "Epoch 1 | iter 99800 step 12475 | loss train: 2.113, val: 2.201 | iter time: 412.12 ms (step)"
    " remaining time: 0:01:12\n"
    "Epoch 1 | iter 100000 step 12500 | loss train: 2.110, val: 2.199 | iter time: 412.12 ms (ste"
    "p) remaining time: 0:00:00\n"
    "Validating ...\n"
    "Final evaluation | val loss: 2.198 | val ppl: 9.007\n"
    "Saving checkpoint to 'out/pretrain/final/lit_model.pth'\n"
    "Training time: 41212.12s\n"
    "Memory used: 61.21 GB\n"
)

# StyleGAN2-ADA's training_loop (NVlabs/stylegan2-ada-pytorch training/training_loop.py
# d72cc7d041b4; StyleGAN3's alike): `Training for {total_kimg} kimg...`, each tick's line, the
# tick at the total, its snapshot's metrics, then after the loop `Exiting...`
F["StyleGAN2-ADA / StyleGAN3"] = (
    "Training for 25000 kimg...\n"
    "\n"
    "tick 0     kimg 0.1      time 1m 02s       sec/tick 98.1    sec/kimg 24.52   maintenance 0.0 "
    "   cpumem 5.21   gpumem 12.11  augment 0.412\n"
    "tick 1     kimg 4.1      time 2m 40s       sec/tick 98.1    sec/kimg 24.52   maintenance 0.0 "
    "   cpumem 5.21   gpumem 12.11  augment 0.412\n"
    "tick 6249  kimg 24996.0  time 6d 23h 10m   sec/tick 98.1    sec/kimg 24.52   maintenance 0.0 "
    "   cpumem 5.21   gpumem 12.11  augment 0.412\n"
    "tick 6250  kimg 25000.0  time 6d 23h 12m   sec/tick 98.1    sec/kimg 24.52   maintenance 0.0 "
    "   cpumem 5.21   gpumem 12.11  augment 0.412\n"
    "Evaluating metrics...\n"
    "{\"results\": {\"fid50k_full\": 2.9212}, \"metric\": \"fid50k_full\", \"total_time\": 612.1, "
    "\"total_time_str\": \"10m 12s\", \"num_gpus\": 8, \"snapshot_pkl\": \"network-snapshot-025000"
    ".pkl\", \"timestamp\": 1714591234.12}\n"
    "\n"
    "Exiting...\n"
)
# OpenPCDet's tools/train.py and train_utils.py (open-mmlab/OpenPCDet 8cacccec11db): its
# logger's `%(asctime)s  %(levelname)5s  %(message)s`, train_one_epoch's `Train: {epoch}/{total}
# ... [{cur_it}/{steps} ...]` lines (cur_it from 0: `3711/3712` is the epoch's last step, done),
# `End training ...` after train_model, then its evaluation of the last checkpoints
F["OpenPCDet"] = (
    "2024-05-01 19:28:00,123   INFO  Train:   80/80 (100%) [3700/3712 (100%)]  Loss: 0.4123 (0.42"
    "1)  LR: 1.000e-06  Time cost: 28:31/00:05 [1 day, 14:01:02/00:05]  Acc_iter 296950      Data "
    "time: 0.01(0.01)  Forward time: 0.40(0.41)  Batch time: 0.41(0.42)\n"
    "2024-05-01 19:28:05,123   INFO  Train:   80/80 (100%) [3711/3712 (100%)]  Loss: 0.4101 (0.42"
    "1)  LR: 1.000e-06  Time cost: 28:36/00:00 [1 day, 14:01:07/00:00]  Acc_iter 296960      Data "
    "time: 0.01(0.01)  Forward time: 0.40(0.41)  Batch time: 0.41(0.42)\n"
    "2024-05-01 19:28:06,123   INFO  **********************End training cfgs/kitti_models/pointpil"
    "lar(default)**********************\n"
    "\n"
    "\n"
    "\n"
    "2024-05-01 19:28:06,123   INFO  **********************Start evaluation cfgs/kitti_models/poin"
    "tpillar(default)**********************\n"
    "2024-05-01 19:28:07,123   INFO  ==> Loading parameters from checkpoint output/kitti_models/po"
    "intpillar/default/ckpt/checkpoint_epoch_80.pth to GPU\n"
    "2024-05-01 19:28:07,123   INFO  *************** EPOCH 80 EVALUATION *****************\n"
    "2024-05-01 19:31:00,123   INFO  *************** Performance of EPOCH 80 *****************\n"
    "2024-05-01 19:31:00,123   INFO  Generate label finished(sec_per_example: 0.0312 second).\n"
    "2024-05-01 19:31:00,123   INFO  recall_roi_0.3: 0.000000\n"
    "2024-05-01 19:31:10,123   INFO  Result is saved to output/kitti_models/pointpillar/default/ev"
    "al/eval_with_train/epoch_80/val\n"
    "2024-05-01 19:31:10,123   INFO  ****************Evaluation done.*****************\n"
    "2024-05-01 19:31:10,123   INFO  **********************End evaluation cfgs/kitti_models/pointp"
    "illar(default)**********************\n"
)
# SlowFast's tools/train_net.py (facebookresearch/SlowFast 287ec0076846): its logger's
# `[%m/%d %H:%M:%S][INFO] file: line: `, the meters' json_stats (keys sorted), then after the
# loop `training done: {result_string}`
F["SlowFast"] = (
    "[05/01 19:28:00][INFO] logging.py:   97: json_stats: {\"RAM\": \"41.21/503.81G\", \"_type\": "
    "\"train_iter_\", \"dt\": 0.41, \"dt_data\": 0.001, \"dt_net\": 0.40, \"epoch\": \"196/196\", "
    "\"eta\": \"0:00:04\", \"gpu_mem\": \"9.12G\", \"grad_norm\": 3.12, \"iter\": \"1240/1250\", "
    "\"loss\": 1.21, \"lr\": 1e-05, \"top1_err\": 25.0, \"top5_err\": 6.25}\n"
    "[05/01 19:28:05][INFO] logging.py:   97: json_stats: {\"RAM\": \"41.21/503.81G\", \"_type\": "
    "\"train_epoch\", \"dt\": 0.41, \"dt_data\": 0.001, \"dt_net\": 0.40, \"epoch\": \"196/196\", "
    "\"eta\": \"0:00:00\", \"gpu_mem\": \"9.12G\", \"grad_norm\": 3.12, \"loss\": 1.21, \"lr\": 1e"
    "-05, \"top1_err\": 24.1, \"top5_err\": 6.1}\n"
    "[05/01 19:31:00][INFO] logging.py:   97: json_stats: {\"RAM\": \"41.21/503.81G\", \"_type\": "
    "\"val_epoch\", \"epoch\": \"196/196\", \"gpu_mem\": \"9.12G\", \"min_top1_err\": 22.1, \"min_"
    "top5_err\": 5.9, \"time_diff\": 0.12, \"top1_err\": 22.1, \"top5_err\": 5.9}\n"
    "[05/01 19:31:00][INFO] train_net.py:  756: training done: _p34.57_f49.83 _t12.31_m9.12 _a77.9"
    "0 Top5 Acc: 94.10 MEM: 9.12 f: 49.8300\n"
)
# torchtune's recipes (pytorch/torchtune recipes/full_finetune_single_device.py, torchtune/
# training/checkpointing/_checkpointer.py bd2a0fc7c314): config.log_config's dump (`epochs: 3`),
# the last epoch's bar (`{curr_epoch + 1}|{global_step}|Loss: {loss:.4f}`, its total one
# epoch's steps: a file gets its draws after carriage returns), then the final save's lines
_TUNE = "INFO:torchtune.utils._logging:"
_TUNE_BAR = "3|{}|Loss: 0.8123: {:3.0f}%|{:<10}| {}/1000 [{}<{},  2.47s/it]"
F["torchtune"] = (
    _TUNE + "Running FullFinetuneRecipeSingleDevice with resolved config:\n"
    "\n"
    "batch_size: 2\n"
    "device: cuda\n"
    "epochs: 3\n"
    "max_steps_per_epoch: null\n"
    "\n"
    + "\r".join(_TUNE_BAR.format(2000 + n, n / 10, "\u2588" * (n // 100), n,
                                 f"{n * 247 // 6000:02d}:00", f"{(1000 - n) * 247 // 6000:02d}:00")
                for n in (250, 500, 750, 999, 1000)) + "\n"
    + _TUNE + "Model checkpoint of size 4.98 GiB saved to /tmp/out/epoch_2/model-00001-of-0000"
    "2.safetensors\n"
    + _TUNE + "Model checkpoint of size 1.12 GiB saved to /tmp/out/epoch_2/model-00002-of-0000"
    "2.safetensors\n"
    + _TUNE + "Saving final epoch checkpoint.\n"
    + _TUNE + "The full model checkpoint, including all weights and configurations, has been sa"
    "ved successfully.You can now use this checkpoint for further training or inference.\n"
    + _TUNE + "Saving checkpoint took 41.23 secs\n"
)
# MosaicML composer's Trainer (mosaicml/composer 6405188805a0, composer/trainer/trainer.py,
# composer/loggers/progress_bar_logger.py): ProgressBarLogger's `Config:` of the hyperparameters
# it was given, then its bars, drawn at position 1 (each draw after a newline and a carriage
# return, then tqdm's cursor-up): with max_duration in batches one bar to it (`train` padded to
# 29), each evaluation's bar (`eval           Batch   4800: `); in epochs a bar per epoch
# (`train          Epoch   2: `, its epoch from 0, no epochs' total) and each evaluation's. Fit
# prints nothing of its own after its loop
_COMPOSER_CONFIG = (
    "******************************\n"
    "Config:\n"
    "composer_commit_hash: None\n"
    "composer_version: 0.32.0\n"
    "node_name: unknown because NODENAME environment variable not set\n"
    "num_gpus_per_node: 8\n"
    "num_nodes: 1\n"
    "rank_zero_seed: 17\n"
    "\n"
    "******************************\n")
_COMPOSER_BAR = "{:15}{} {:3.0f}%|{:<25}| {}/{} [{}<{}, {}{}]"


def _composer_draws(label: str, point: str, counts: tuple[int, ...], total: int,
                    postfix: str = "") -> str:
    """A composer bar's draws of `counts` of `total`, as a file gets them."""
    return "".join(
        "\n\r" + _COMPOSER_BAR.format(label, point, 100 * n / total, "\u2588" * (25 * n // total),
                                      n, total, "01:02", "00:00", "18.93ba/s", postfix) + "\x1b[A"
        for n in counts)


# its training bar up to a batch short of max_duration
_COMPOSER_SHORT = _COMPOSER_CONFIG + _composer_draws(
    "train", " " * 14, (4200, 4600, 4799), 4800, ", loss/train/total=2.1102")
F["composer (max_duration in batches)"] = (
    _COMPOSER_SHORT
    + _composer_draws("train", " " * 14, (4800,), 4800, ", loss/train/total=2.1102")
    + _composer_draws("eval", "Batch   4800: ", (0, 10, 20), 20) + "\n")
F["composer (max_duration in epochs)"] = (
    _COMPOSER_CONFIG
    + _composer_draws("train", "Epoch   2: ", (600, 781, 782), 782, ", loss/train/total=0.4123")
    + _composer_draws("eval", "Epoch   2: ", (0, 10, 20), 20) + "\n")
# pycls's train_model (facebookresearch/pycls pycls/core/trainer.py, meters.py, logging.py
# 5719de641657): its logger's `[%(filename)s: %(lineno)3d]: `, the meters' json_stats (keys
# sorted; LOG_PERIOD 10 leaves the last 5 of 5005 steps unlogged), the epoch's summary, its
# test and its EMA model's, then the epoch's save, the last thing it prints
_PYCLS = "[meters.py: {}]: json_stats: "
F["pycls"] = (
    _PYCLS.format(153) + '{"_type": "train_iter", "epoch": "100/100", "eta": "0:00:02", "iter": "'
    '5000/5005", "loss": 1.2101, "lr": 0.0001, "mem": 9123, "time_avg": 0.2012, "time_diff": 0.20'
    '09, "top1_err": 25.0000, "top5_err": 6.2500}\n'
    + _PYCLS.format(177) + '{"_type": "train_epoch", "epoch": "100/100", "eta": "0:00:00", "loss"'
    ': 1.1900, "lr": 0.0001, "mem": 9123, "time_avg": 0.2012, "time_epoch": 1007.0060, "top1_err"'
    ': 24.1000, "top5_err": 6.1000}\n'
    + _PYCLS.format(238) + '{"_type": "test_iter", "epoch": "100/100", "iter": "190/196", "mem": '
    '9123, "time_avg": 0.1001, "time_diff": 0.0998, "top1_err": 22.1000, "top5_err": 5.9000}\n'
    + _PYCLS.format(260) + '{"_type": "test_epoch", "epoch": "100/100", "mem": 9123, "min_top1_er'
    'r": 22.1000, "min_top5_err": 5.9000, "time_avg": 0.1001, "time_epoch": 19.6196, "top1_err": 2'
    '2.1000, "top5_err": 5.9000}\n'
    + _PYCLS.format(238) + '{"_type": "test_ema_iter", "epoch": "100/100", "iter": "190/196", "me'
    'm": 9123, "time_avg": 0.1001, "time_diff": 0.0998, "top1_err": 21.9000, "top5_err": 5.8000}\n'
    + _PYCLS.format(260) + '{"_type": "test_ema_epoch", "epoch": "100/100", "mem": 9123, "min_top'
    '1_err": 21.9000, "min_top5_err": 5.8000, "time_avg": 0.1001, "time_epoch": 19.6196, "top1_er'
    'r": 21.9000, "top5_err": 5.8000}\n'
    "[trainer.py: 193]: Wrote checkpoint to: /tmp/pycls/checkpoints/model_epoch_0100.pyth\n"
)
# SpeechBrain's Brain.fit and a recipe's evaluate (speechbrain/speechbrain speechbrain/core.py,
# speechbrain/utils/epoch_loop.py, train_logger.py, checkpoints.py 9c826ef3937b; the recipes'
# template templates/speech_recognition/ASR/train.py): its console's `%(name)s - %(message)s`,
# EpochCounter's `Going into epoch {N}` (its limit printed nowhere), each epoch's unlabelled bars,
# the recipe's `epoch: {N}, lr: … - train loss: … - valid loss: …` line, the checkpointer's save,
# then after fit() the best checkpoint's load and the test stage's `Epoch loaded: {N} - test …`
_SPEECHBRAIN = "speechbrain.{} - "
F["SpeechBrain"] = (
    "speechbrain.utils.epoch_loop - Going into epoch 15\n"
    "speechbrain.utils.train_logger - epoch: 15, lr: 8.00e-01 - train loss: 5.12e-01 - valid loss"
    ": 6.01e-01, valid CER: 2.91, valid WER: 8.12\n"
    "speechbrain.utils.checkpoints - Saved an end-of-epoch checkpoint in results/CRDNN_BPE_960h_L"
    "M/2602/save/CKPT+2024-05-01+19-28-00+00\n"
    "speechbrain.utils.checkpoints - Deleted checkpoint in results/CRDNN_BPE_960h_LM/2602/save/CK"
    "PT+2024-05-01+18-07-00+00\n"
    "speechbrain.utils.checkpoints - Loading a checkpoint from results/CRDNN_BPE_960h_LM/2602/save"
    "/CKPT+2024-05-01+19-28-00+00\n"
    "speechbrain.utils.train_logger - Epoch loaded: 15 - test loss: 6.12e-01, test CER: 2.80, tes"
    "t WER: 7.91\n"
)
# its EpochCounterWithStopper ending the epochs on patience (one message on two lines)
F["SpeechBrain early stop"] = (
    "speechbrain.utils.train_logger - epoch: 31, lr: 1.00e-04 - train loss: 2.12e-01 - valid loss"
    ": 3.01e-01, valid error: 8.12e-02\n"
    "speechbrain.utils.epoch_loop - 5 epochs without improvement.\n"
    "Patience of 5 is exhausted, stopping.\n"
    "speechbrain.utils.checkpoints - Saved an end-of-epoch checkpoint in results/ecapa/1986/save/"
    "CKPT+2024-05-01+19-28-00+00\n"
)
# MONAI's SupervisedTrainer as its tutorials run it (Project-MONAI/MONAI d388d1c6fec8;
# logging.basicConfig(level=INFO), so ignite's engines log too: pytorch/ignite
# ignite/engine/engine.py de08e799cfb5): StatsHandler's `Epoch: {e}/{max_epochs}, Iter:
# {i}/{epoch_length} -- loss: …` (monai.apps.get_logger's format) every iteration, the trainer's
# `Epoch[100] Complete. Time taken: …`, the evaluator's run and its StatsHandler's metrics, then
# the trainer's own `Engine run finished. Time taken: …` (ignite's logger names its engine)
_MONAI = "2024-05-01 19:{} - INFO - "
F["MONAI"] = "".join(
    f"2024-05-01 19:28:{i:02d},123 - INFO - Epoch: 100/100, Iter: {i}/20 -- loss: 0.{i}23 \n"
    for i in (18, 19, 20)) + (
    "INFO:ignite.engine.engine.SupervisedTrainer:Epoch[100] Complete. Time taken: 00:00:24.123\n"
    "INFO:ignite.engine.engine.SupervisedEvaluator:Engine run starting with max_epochs=100.\n"
    "INFO:ignite.engine.engine.SupervisedEvaluator:Epoch[100] Complete. Time taken: 00:00:03.012\n"
    "2024-05-01 19:28:24,123 - INFO - Epoch[100] Metrics -- val_mean_dice: 0.8123 \n"
    "2024-05-01 19:28:24,124 - INFO - Key metric: val_mean_dice best value: 0.8123 at epoch: 100\n"
    "INFO:ignite.engine.engine.SupervisedEvaluator:Engine run finished. Time taken: 00:00:03.012\n"
    "INFO:ignite.engine.engine.SupervisedTrainer:Engine run finished. Time taken: 00:41:12.345\n"
)
# latent-diffusion's main.py (CompVis/latent-diffusion a506df575647; stable-diffusion's and
# taming-transformers' alike), Lightning 1.4: each epoch's bar (`Epoch {n}:`, no epoch total:
# its configs set no max_epochs and Lightning 1.4 prints none), CUDACallback's `Average Epoch
# time` and `Average Peak memory` after it; after fit() nothing of its own (trainer.test's output
# when a test set is configured, then the profiler's summary: an empty line by default)
_LDM_BAR = ("Epoch {}: {:3d}%|{:<10}| {}/1000 [{}<{},  1.50it/s, loss=0.0123, v_num=0, train/los"
            "s_simple_step=0.0123, train/loss_vlb_step=0.000123, train/loss_step=0.0123, global_st"
            "ep={}.000]")
F["latent-diffusion main.py"] = "".join(
    "\r".join(_LDM_BAR.format(epoch, n // 10, "\u2588" * (n // 100), n, f"{n * 10 // 1000:02d}:00",
                              f"{10 - n * 10 // 1000:02d}:00", epoch * 1000 + n - 1)
              for n in (250, 500, 750, 1000))
    + "\nAverage Epoch time: 612.34 seconds\nAverage Peak memory 30123.45MiB\n"
    for epoch in (41, 42)) + "\n"

#: the frameworks whose finished run has no line of its own to go on: they read `none`
#: (still running) as a run cut at the same place does
NO_LINE_OF_THEIR_OWN = frozenset({
    # its table's rows name no epoch total, nor does anything fit() prints in a log that is no
    # terminal (fastprogress draws its bars, `Epoch 3/3 :`, on a tty only; after_fit prints
    # nothing)
    "fastai",
    # its `epoch:  999` names no total (max_num_epochs is printed nowhere); after the loop the
    # final save's lines are every save's and validate's are --validation_only's too
    "nnU-Net v1",
    # its `Train Epoch: 31 [...]` lines count the epoch's samples, not the epochs; after the
    # loop it prints nothing but an opt-in remote sync's lines
    "open_clip",
    # its bar per epoch counts the epoch's batches (`train          Epoch   2:`, from 0) and
    # names no epochs' total (max_duration is printed only with auto_log_hparams); fit prints
    # nothing after its loop
    "composer (max_duration in epochs)",
    # its `Epoch 42:` bars name no epoch total; after fit() it prints nothing of its own (its
    # `Summoning checkpoint.` is an exception's or a signal's: no end)
    "latent-diffusion main.py",
})
#: the frameworks whose end is read by a line of its own (a signature), and that line's words;
#: the others are read by progress (a counter at its total) or a closing summary
MARKERS: dict[str, str] = {
    "transformers run_clm": "Training completed.",
    "fairseq": "done training in",
    "detectron2": "Total training time",
    "maskrcnn-benchmark": "Total training time",
    "ultralytics yolov8": "epochs completed in",
    "YOLOv7": "epochs completed in",
    "deepspeed launcher": "exits successfully",
    "deepspeed-chat step1": "saving the final model",
    "megatron-lm": "[after training is done]",
    "lightning": "Trainer.fit` stopped",
    "NeMo (Lightning)": "Trainer.fit` stopped",
    "ESPnet2": "The training was finished at 40 epochs",
    "OpenNMT-py early stop": "Early Stop!",
    "torchvision references": "Training time 1 day",
    "DETR / Deformable-DETR": "Training time 3 days",
    "MAE/DINO/BEiT (MetricLogger)": "Training time 3 days",
    "YOLOX": "Training of experiment is done",
    "keras early stop": "Restoring model weights",
    "torchreid": "Elapsed 0:42:07",
    "BasicSR (Real-ESRGAN, NAFNet, HAT ...)": "End of training. Time consumed",
    "YOLOv5": "epochs completed in",
    "Swin Transformer": "Training time 1 day",
    "DeiT / ConvNeXt": "Training time 2 days",
    "nnU-Net v2": "Training done.",
    "torchtitan": "Training completed",
    "LitGPT pretrain": "Training time: 41212.12s",
    "OpenPCDet": "End training cfgs/kitti_models/pointpillar",
    "SlowFast": "training done: _p34.57",
    "torchtune": "Saving final epoch checkpoint.",
    "SpeechBrain": "Epoch loaded: 15 - test loss",
    "SpeechBrain early stop": "Patience of 5 is exhausted",
    "MONAI": "SupervisedTrainer:Engine run finished",
}
#: the frameworks read `completed` by a total their log printed before the loop, by the word
#: after their last save or by a line of their own, each one's log cut at the same point short
#: of the lines that prove the end: it reads `none`
CUT_SHORT: dict[str, str] = {
    # its last evaluation, and not the step after it (`iter 5000`)
    "nanoGPT": F["nanoGPT"].split("iter 5000:")[0],
    # its last epoch's last logged steps, not the save once the epoch is over
    "mmengine/mmdet": F["mmengine/mmdet"].split("05/01 19:28:12")[0],
    "mmcv 1.x / mmdet 2.x": F["mmcv 1.x / mmdet 2.x"].split("2021-03-01 19:28:12")[0],
    "mmcv 1.x IterBasedRunner / mmseg 0.x": F["mmcv 1.x IterBasedRunner / mmseg 0.x"].split(
        "2021-03-01 19:28:12")[0],
    # its save at the end step, not the `Done!` after it
    "k-diffusion": F["k-diffusion"].removesuffix("Done!\n"),
    # the last epoch's validation, not the line after the loop
    "Swin Transformer": F["Swin Transformer"].split(_SWIN.format("29:02", 171))[0],
    "DeiT / ConvNeXt": F["DeiT / ConvNeXt"].removesuffix("Training time 2 days, 1:02:03\n"),
    # the last epoch's lines, not on_train_end's
    "nnU-Net v2": F["nnU-Net v2"].split(_NNUNET.format("22:33", 12))[0],
    "torchtitan": F["torchtitan"].split(_TITAN.format("39:00"))[0],
    "LitGPT pretrain": F["LitGPT pretrain"].split("Training time")[0],
    # its tick short of the kimg it announced
    "StyleGAN2-ADA / StyleGAN3": F["StyleGAN2-ADA / StyleGAN3"].split("tick 6250 ")[0],
    # a step short of the last epoch's last (its `Train:` line reaches the total)
    "OpenPCDet": F["OpenPCDet"].split("2024-05-01 19:28:05,123")[0],
    # the last epoch's evaluation, not train()'s line after the loop
    "SlowFast": F["SlowFast"].split("[05/01 19:31:00][INFO] train_net.py")[0],
    # its bar a batch short of max_duration
    "composer (max_duration in batches)": _COMPOSER_SHORT + "\n",
    # its last epoch's test and its EMA model's, not the save after them
    "pycls": F["pycls"].split("[trainer.py: 193]")[0],
    # its last epoch's bar short of the epoch's total (its draws up to `999/1000`)
    "torchtune": F["torchtune"].split("\r3|3000|")[0] + "\n",
    # its last epoch's lines and save, not the test stage after fit()
    "SpeechBrain": F["SpeechBrain"].split(_SPEECHBRAIN.format("utils.checkpoints") + "Loading")[0],
    # the epoch before patience ran out
    "SpeechBrain early stop": F["SpeechBrain early stop"].split(
        _SPEECHBRAIN.format("utils.epoch_loop"))[0],
    # its last epoch short of its last iteration
    "MONAI": F["MONAI"].split(_MONAI.format("28:20,123"))[0],
}
ENDS: dict[str, tuple[str, str]] = {
    name: (log, "none" if name in NO_LINE_OF_THEIR_OWN else "completed")
    for name, log in F.items()}
