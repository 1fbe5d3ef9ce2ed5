#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""YOLOv8n showcase: synthetic data -> CPU training -> ONNX FP32/FP16/INT8 -> onnxruntime check.

Fully offline. Steps:
  1. generate a synthetic detection dataset (make_dataset.py, YOLO txt labels, absolute paths);
  2. train YOLOv8n from its model YAML ('yolov8n.yaml', random init, no downloaded weights)
     with Ultralytics on the CPU, under mlOS: an MLOSTrainingContext on --cpus CPUs, and
     mlos_training.integrations.ultralytics marking phases (mlOS's phase profile is the report's
     phase table), sizing torch's threads, placing DataLoader workers and writing checkpoints atomically;
  3. export ONNX FP32 (Ultralytics exporter), convert it to FP16 (onnxruntime.transformers.float16)
     and quantize it to INT8 (onnxruntime.quantization.quantize_static, QDQ, calibrated on dataset images);
  4. run each ONNX file with onnxruntime on a validation image, check output shapes and that the FP16
     and INT8 outputs are close to FP32 within the tolerances below;
  5. print markdown tables (model sizes, time per epoch, phase profile) and write results.json.

Exit status: 0 when every check passed, every checkpoint write went through mlOS's atomic writer and no
network access was attempted; 1 otherwise.

Full run (5 epochs, 320 px):   python showcase.py --out /tmp/yolo_showcase
CI run (1 epoch, tiny images): python showcase.py --quick --out /tmp/yolo_showcase_quick
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Presets. "full" is the showcase; "quick" is the reduced CI end-to-end run.
PRESETS = {
    "full": dict(epochs=5, imgsz=320, images=1000, batch=16, calib=32),
    "quick": dict(epochs=1, imgsz=64, images=40, batch=8, calib=8),
}

# Closeness of FP16 / INT8 outputs to FP32, checked on --verify-images validation images (the first is "the sample
# image"); the worst image counts. The raw output is (1, 4 + nc, anchors): rows 0-3 are box centre x, y, width,
# height in input pixels (0..imgsz), rows 4.. are sigmoid class scores (0..1).
#   score: max |score - score_fp32| over ALL anchors and classes.
#   box:   max |box - box_fp32| over the TOP_K anchors with the highest FP32 class score (the would-be detections),
#          as a fraction of imgsz so one rule fits every image size. Background anchors are reported but not judged:
#          their DFL box distribution is flat, so tiny logit changes move the decoded box a lot without any effect
#          on detections (INT8 measured: up to ~10 % of imgsz on background anchors, < 2 % on the top anchors).
# Measured on the full preset (trained 5 epochs, 20 val images): FP16 score 0.0004, box 0.04 % of imgsz;
# INT8 score 0.028, box 1.7 % of imgsz. The tolerances leave about 2x (INT8) or more (FP16) headroom.
TOP_K = 10
TOLERANCES = {
    "fp16": {"box_frac": 0.005, "score": 0.01},  # box <= 0.5 % of imgsz (1.6 px at 320), score <= 0.01
    "int8": {"box_frac": 0.04, "score": 0.05},  # box <= 4 % of imgsz (12.8 px at 320), score <= 0.05
}


# ----------------------------------------------------------------------------------------------------------------------
# Offline set-up. Everything here must run BEFORE `import ultralytics`: Ultralytics reads YOLO_OFFLINE, YOLO_CONFIG_DIR
# and its settings file at import time (utils/__init__.py: ONLINE = is_online(), USER_CONFIG_DIR, SETTINGS).
# ----------------------------------------------------------------------------------------------------------------------
class NetworkGuard:
    """Refuse and record every attempt to resolve or connect to a non-loopback host.

    Installed process-wide (DataLoader workers are forked and inherit it). Ultralytics treats the resulting OSError
    like being offline, so a missed offline setting shows up here as a recorded attempt instead of a hang.
    """

    LOCAL = {"localhost", "127.0.0.1", "::1", "", None}

    def __init__(self):
        self.attempts: list[str] = []
        self._getaddrinfo = socket.getaddrinfo
        self._connect = socket.socket.connect
        self._connect_ex = socket.socket.connect_ex

    def install(self):
        guard = self

        def getaddrinfo(host, *args, **kwargs):
            if host not in guard.LOCAL and not str(host).startswith("127."):
                guard._record(f"getaddrinfo({host!r})")
                raise socket.gaierror(socket.EAI_NONAME, f"network disabled by showcase NetworkGuard: {host}")
            return guard._getaddrinfo(host, *args, **kwargs)

        def _check(sock, address):
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                host = address[0] if isinstance(address, tuple) else address
                if host not in guard.LOCAL and not str(host).startswith("127."):
                    guard._record(f"connect({address!r})")
                    raise OSError(f"network disabled by showcase NetworkGuard: {address}")

        def connect(sock, address):
            _check(sock, address)
            return guard._connect(sock, address)

        def connect_ex(sock, address):
            _check(sock, address)
            return guard._connect_ex(sock, address)

        socket.getaddrinfo = getaddrinfo
        socket.socket.connect = connect
        socket.socket.connect_ex = connect_ex
        return self

    def _record(self, what: str):
        self.attempts.append(what)
        print(f"[showcase] BLOCKED network access: {what}", file=sys.stderr, flush=True)


def find_local_font() -> Path:
    """A TrueType font that is on this machine without downloading anything."""
    candidates = []
    try:  # matplotlib (an Ultralytics dependency) ships DejaVu Sans
        import matplotlib

        candidates.append(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")
    except ImportError:
        pass
    candidates += [  # Debian: fonts-dejavu-core
        Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
        Path("/usr/share/fonts/dejavu/DejaVuSans.ttf"),
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError("no local TTF font found; install fonts-dejavu-core (apt) or matplotlib (pip)")


def configure_offline(config_root: Path) -> None:
    """Environment + font so that Ultralytics never tries to reach the network."""
    config_root.mkdir(parents=True, exist_ok=True)
    os.environ["YOLO_OFFLINE"] = "1"  # is_online() -> False: no asset/GitHub/PyPI checks, no telemetry
    os.environ["YOLO_AUTOINSTALL"] = "False"  # never `pip install` a missing requirement (could also move torch)
    os.environ["YOLO_CONFIG_DIR"] = str(config_root)  # private settings.json + font dir, not ~/.config
    os.environ["MPLCONFIGDIR"] = str(config_root / "matplotlib")  # matplotlib font cache, writable
    os.environ.pop("ULTRALYTICS_API_KEY", None)  # Ultralytics Platform streaming stays off
    os.environ.setdefault("WANDB_MODE", "disabled")
    os.environ.setdefault("COMET_MODE", "disabled")
    os.environ.setdefault("MLFLOW_TRACKING_URI", "")
    # check_det_dataset() always calls check_font("Arial.ttf"), which downloads it from GitHub assets unless
    # USER_CONFIG_DIR/Arial.ttf exists (USER_CONFIG_DIR = $YOLO_CONFIG_DIR/Ultralytics). Any TTF will do.
    font_dir = config_root / "Ultralytics"
    font_dir.mkdir(parents=True, exist_ok=True)
    font = find_local_font()
    for name in ("Arial.ttf", "Arial.Unicode.ttf"):
        if not (font_dir / name).exists():
            shutil.copyfile(font, font_dir / name)


def configure_settings(out: Path) -> None:
    """Ultralytics settings (persisted in $YOLO_CONFIG_DIR/Ultralytics/settings.json) for an offline run."""
    from ultralytics.utils import SETTINGS

    SETTINGS.update(
        datasets_dir=str(out / "dataset"), weights_dir=str(out / "weights"), runs_dir=str(out / "runs"),
        sync=False,  # no anonymous usage events / crash reports
        api_key="",  # no Ultralytics Platform / HUB session
        clearml=False, comet=False, dvc=False, mlflow=False, raytune=False, tensorboard=False, wandb=False,
        vscode_msg=False, openvino_msg=False,
    )


# ----------------------------------------------------------------------------------------------------------------------
# Timing: wall time of the steps outside training, and of each epoch (Ultralytics callbacks). The phases INSIDE
# training (data wait, forward, backward, optimizer, checkpoint) come from mlOS's own phase profile, marked by
# mlos_training.integrations.ultralytics.
# ----------------------------------------------------------------------------------------------------------------------
class Timeline:
    def __init__(self):
        self.steps: dict[str, float] = {}
        self.epochs: list[dict] = []
        self._t: dict[str, float] = {}

    def timed(self, step: str):
        timeline = self

        class _Ctx:
            def __enter__(self):
                self.t0 = time.perf_counter()

            def __exit__(self, *exc):
                timeline.steps[step] = timeline.steps.get(step, 0.0) + time.perf_counter() - self.t0

        return _Ctx()

    def on_train_epoch_start(self, trainer):
        self._t["epoch"] = time.perf_counter()
        self._epoch = {"epoch": trainer.epoch + 1, "batches": 0}

    def on_train_batch_end(self, trainer):
        self._epoch["batches"] += 1

    def on_train_epoch_end(self, trainer):
        self._epoch["train"] = time.perf_counter() - self._t["epoch"]

    def on_fit_epoch_end(self, trainer):
        if "epoch" not in self._t:  # the extra call from final_eval() after the last epoch
            return
        ep = self._epoch
        ep["total"] = time.perf_counter() - self._t.pop("epoch")
        ep["val_and_save"] = ep["total"] - ep["train"]
        self.epochs.append(ep)

    def install(self, model):
        for name in ("on_train_epoch_start", "on_train_batch_end", "on_train_epoch_end", "on_fit_epoch_end"):
            model.add_callback(name, getattr(self, name))


# ----------------------------------------------------------------------------------------------------------------------
# ONNX: FP16 conversion, INT8 quantization, verification.
# ----------------------------------------------------------------------------------------------------------------------
def load_image(path: Path, imgsz: int):
    """Ultralytics-style preprocessing: letterbox to imgsz x imgsz (pad 114), BGR->RGB, CHW, float32 / 255."""
    import cv2
    import numpy as np

    im = cv2.imread(str(path))
    h, w = im.shape[:2]
    r = min(imgsz / h, imgsz / w)
    nh, nw = int(round(h * r)), int(round(w * r))
    if (nh, nw) != (h, w):
        im = cv2.resize(im, (nw, nh), interpolation=cv2.INTER_LINEAR)
    top, left = (imgsz - nh) // 2, (imgsz - nw) // 2
    im = cv2.copyMakeBorder(im, top, imgsz - nh - top, left, imgsz - nw - left, cv2.BORDER_CONSTANT,
                            value=(114, 114, 114))
    x = im[:, :, ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0
    return np.ascontiguousarray(x)


def convert_fp16(src: Path, dst: Path) -> None:
    """FP32 -> FP16 weights and compute; keep_io_types keeps the float32 input/output (same feed as FP32)."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    m = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
    onnx.save(m, str(dst))


def quantize_int8(src: Path, dst: Path, calib_images: list[Path], imgsz: int, tmp: Path) -> dict:
    """Static INT8 quantization (QDQ, per-channel int8 weights, uint8 activations, MinMax calibration).

    Static, not dynamic: dynamic quantization only quantizes weights up front and computes activation scales per
    run, which onnxruntime supports for MatMul/Gemm-style ops (ConvInteger on CPU only, slow, and not in QDQ form);
    a conv net like YOLO gets its INT8 speed/size benefit from static QDQ with scales calibrated on real images.
    Only Conv nodes are quantized: the detection head's decode (DFL softmax, box arithmetic, concat of pixel boxes
    with 0..1 scores) stays float, because one INT8 scale spanning box pixels and probabilities destroys the scores.
    """
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self._it = iter(calib_images)

        def get_next(self):
            p = next(self._it, None)
            return None if p is None else {"images": load_image(p, imgsz)}

    prep = tmp / "fp32_prep.onnx"
    quant_pre_process(str(src), str(prep), skip_symbolic_shape=True)  # shape inference + graph optimisation
    exclude = [n.name for n in onnx.load(str(prep)).graph.node if n.op_type != "Conv"]
    quantize_static(
        str(prep), str(dst), Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        nodes_to_exclude=exclude,
    )
    prep.unlink(missing_ok=True)
    return {"method": "static QDQ, per-channel, MinMax", "calibration_images": len(calib_images),
            "quantized_ops": "Conv", "excluded_nodes": len(exclude)}


def run_onnx(path: Path, xs: list, threads: int, repeats: int = 10):
    """Outputs of one ONNX file for every input, and its mean latency (ms) on the first input after a warm-up."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    outs = [sess.run(None, {name: x})[0] for x in xs]  # results (+ warm-up)
    t0 = time.perf_counter()
    for _ in range(repeats):
        sess.run(None, {name: xs[0]})
    return outs, (time.perf_counter() - t0) / repeats * 1000.0


def compare(ref, out, imgsz: int) -> dict:
    """Differences of one output against the FP32 reference (both (1, 4 + nc, anchors))."""
    import numpy as np

    top = np.argsort(-ref[0, 4:].max(0))[:TOP_K]  # anchors with the highest FP32 class score
    db_all = np.abs(out[0, :4] - ref[0, :4])
    db_top = db_all[:, top]
    ds = np.abs(out[0, 4:] - ref[0, 4:])
    return {
        "score_max_abs": float(ds.max()),
        "box_top_max_px": float(db_top.max()),
        "box_top_max_frac": float(db_top.max() / imgsz),
        "box_all_max_px": float(db_all.max()),
        "rel_max": float(np.abs(out - ref).max() / max(1e-12, float(np.abs(ref).max()))),
        "fp32_max_score": float(ref[0, 4:].max()),
    }


def worst(diffs: list[dict]) -> dict:
    """Elementwise worst case over images (max of every difference; max FP32 score for information)."""
    return {k: max(d[k] for d in diffs) for k in diffs[0]}


# ----------------------------------------------------------------------------------------------------------------------
def mb(p: Path) -> float:
    return p.stat().st_size / 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI preset: " + json.dumps(PRESETS["quick"]))
    ap.add_argument("--epochs", type=int, help=f"default {PRESETS['full']['epochs']} (quick: 1)")
    ap.add_argument("--imgsz", type=int, help=f"train/export image size, multiple of 32; default "
                                               f"{PRESETS['full']['imgsz']} (quick: {PRESETS['quick']['imgsz']})")
    ap.add_argument("--images", type=int, help=f"dataset size, train+val (20%% val); default "
                                                f"{PRESETS['full']['images']} (quick: {PRESETS['quick']['images']})")
    ap.add_argument("--batch", type=int, help="training batch size")
    ap.add_argument("--calib", type=int, help="INT8 calibration images")
    ap.add_argument("--workers", type=int, default=1, help="DataLoader workers (default 1)")
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)),
                    help="CPUs to request from mlOS (default: all this process may use)")
    ap.add_argument("--threads", type=int, help="onnxruntime threads (default: the allocation's recommended threads; "
                                                "torch's are sized by mlOS)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verify-images", type=int, default=8, help="validation images for the ONNX checks (default 8)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/yolo_showcase"), help="output directory")
    ap.add_argument("--allow-network", action="store_true", help="do not install the network guard")
    a = ap.parse_args(argv)

    cfg = dict(PRESETS["quick" if a.quick else "full"])
    for k in ("epochs", "imgsz", "images", "batch", "calib"):
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    if cfg["imgsz"] % 32:
        ap.error("--imgsz must be a multiple of 32 (YOLOv8 max stride)")
    out = a.out.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)

    guard = None if a.allow_network else NetworkGuard().install()
    configure_offline(out / "config")

    timeline = Timeline()
    t_start = time.perf_counter()

    # 1. dataset -------------------------------------------------------------------------------------------------------
    sys.path.insert(0, str(HERE))
    from make_dataset import make_dataset

    with timeline.timed("dataset"):
        data_yaml = make_dataset(out / "dataset", images=cfg["images"], imgsz=cfg["imgsz"], seed=a.seed)

    # 2. train, under mlOS ---------------------------------------------------------------------------------------------
    with timeline.timed("import"):
        import torch  # noqa: F401  (import cost reported separately)
        from ultralytics import YOLO

        configure_settings(out)
    import mlos_training
    from mlos_training.integrations.ultralytics import add_mlos_callbacks

    with mlos_training.MLOSTrainingContext(num_cpus=a.cpus, exclusive_cpus=False) as ctx:
        threads = a.threads or ctx.resources.recommended_threads
        model = YOLO("yolov8n.yaml")  # architecture from the packaged YAML, random init: no weights involved
        timeline.install(model)
        mlos = add_mlos_callbacks(model, ctx, workers=a.workers)
        t_train = time.perf_counter()
        model.train(
            data=str(data_yaml),
            epochs=cfg["epochs"],
            imgsz=cfg["imgsz"],
            batch=cfg["batch"],
            device="cpu",
            workers=a.workers,
            pretrained=False,  # never look for yolov8n.pt
            amp=False,  # AMP check would download yolo26n.pt (CUDA only anyway)
            plots=False,  # plotting needs fonts and writes PNGs; nothing to learn from it here
            val=True,
            seed=a.seed,
            deterministic=True,
            project=str(out / "runs"),
            name="train",
            exist_ok=True,
            verbose=True,
        )
        train_wall = time.perf_counter() - t_train
        placement = ctx.resources.placement()
    run = mlos.reports[-1]
    trainer = model.trainer
    best = Path(trainer.best if Path(trainer.best).exists() else trainer.last)

    # 3. export --------------------------------------------------------------------------------------------------------
    onnx_dir = out / "onnx"
    onnx_dir.mkdir(exist_ok=True)
    f32, f16, i8 = onnx_dir / "yolov8n_fp32.onnx", onnx_dir / "yolov8n_fp16.onnx", onnx_dir / "yolov8n_int8.onnx"
    with timeline.timed("export_fp32"):
        exported = YOLO(str(best)).export(format="onnx", imgsz=cfg["imgsz"], batch=1, device="cpu", simplify=True,
                                          dynamic=False, nms=False)
        shutil.copyfile(exported, f32)
    with timeline.timed("convert_fp16"):
        convert_fp16(f32, f16)
    calib_images = sorted((out / "dataset" / "images" / "train").glob("*.jpg"))[: cfg["calib"]]
    with timeline.timed("quantize_int8"):
        qinfo = quantize_int8(f32, i8, calib_images, cfg["imgsz"], onnx_dir)

    # 4. verify --------------------------------------------------------------------------------------------------------
    import numpy as np

    samples = sorted((out / "dataset" / "images" / "val").glob("*.jpg"))[: max(1, a.verify_images)]
    xs = [load_image(p, cfg["imgsz"]) for p in samples]
    nc = 3
    anchors = sum((cfg["imgsz"] // s) ** 2 for s in (8, 16, 32))
    expected_shape = (1, 4 + nc, anchors)
    rows, ok = [], True
    with timeline.timed("verify"):
        refs = None
        for tag, path in (("fp32", f32), ("fp16", f16), ("int8", i8)):
            ys, ms = run_onnx(path, xs, threads)
            refs = refs or ys
            d = worst([compare(r, y, cfg["imgsz"]) for r, y in zip(refs, ys)])
            shape_ok = all(tuple(y.shape) == expected_shape and y.dtype == np.float32 and bool(np.isfinite(y).all())
                           for y in ys)
            tol = TOLERANCES.get(tag)
            close = tol is None or (d["box_top_max_frac"] <= tol["box_frac"] and d["score_max_abs"] <= tol["score"])
            ok &= shape_ok and close
            rows.append({"model": tag, "file": str(path), "size_mb": mb(path), "latency_ms": ms,
                         "shape": list(ys[0].shape), "shape_ok": shape_ok, "tolerance": tol,
                         "pass": shape_ok and close, **d})
    total = time.perf_counter() - t_start

    # 5. report --------------------------------------------------------------------------------------------------------
    net_attempts = guard.attempts if guard else []
    ok &= not net_attempts
    # Every checkpoint write of the training loop went through mlOS's atomic writer.
    ok &= len(run["atomic_writes"]) >= len(timeline.epochs)
    lines = [
        f"## YOLOv8n showcase ({'quick' if a.quick else 'full'}): {cfg['epochs']} epoch(s), imgsz {cfg['imgsz']}, "
        f"{cfg['images']} images, batch {cfg['batch']}, workers {a.workers}; under mlOS on CPUs {run['cpus']} "
        f"(NUMA node {placement['numa_node']}), torch threads {run['torch_threads']}, onnxruntime threads {threads}",
        "",
        f"Outputs compared with ONNX FP32 on {len(samples)} validation image(s), worst image shown. score: max abs "
        f"diff over all anchors; box top-{TOP_K}: max abs diff of the boxes of the {TOP_K} highest-scoring FP32 "
        f"anchors (px, and as % of imgsz, judged); box all: over all anchors (px, not judged). Max FP32 class score "
        f"seen: {rows[0]['fp32_max_score']:.3f}.",
        "",
        f"| artifact | size (MB) | ORT latency (ms) | output shape | max abs diff score | max abs diff box top-{TOP_K} "
        "| max abs diff box all | tolerance (score; box top) | check |",
        "|---|---:|---:|---|---:|---:|---:|---|---|",
        f"| best.pt (Ultralytics checkpoint, FP16 weights) | {mb(best):.2f} | | | | | | | |",
    ]
    for r in rows:
        t = r["tolerance"]
        tol = (f"<= {t['score']}; <= {100 * t['box_frac']:g} % ({t['box_frac'] * cfg['imgsz']:.1f} px)"
               if t else "reference")
        lines.append(
            f"| ONNX {r['model'].upper()} | {r['size_mb']:.2f} | {r['latency_ms']:.1f} "
            f"| {'x'.join(map(str, r['shape']))} "
            f"| {r['score_max_abs']:.4f} | {r['box_top_max_px']:.3f} px ({100 * r['box_top_max_frac']:.2f} %) "
            f"| {r['box_all_max_px']:.2f} px | {tol} | {'PASS' if r['pass'] else 'FAIL'} |"
        )
    ep_times = [e["total"] for e in timeline.epochs]
    lines += ["", "| epoch | total (s) | train (s) | val + checkpoint (s) | batches |", "|---:|---:|---:|---:|---:|"]
    for e in timeline.epochs:
        lines.append(f"| {e['epoch']} | {e['total']:.1f} | {e['train']:.1f} | {e['val_and_save']:.1f} "
                     f"| {e['batches']} |")
    lines.append(f"| mean | {sum(ep_times) / max(1, len(ep_times)):.1f} | | | |")

    prof = run["phase_profile"]
    marked = sum(prof["seconds"])
    lines += ["", f"Phase profile of the training run, as mlOS recorded it (set_phase from the Ultralytics callbacks "
                  f"and torch hooks; {prof['set_phase_calls']} set_phase calls, {run['batches']} batches, "
                  f"{run['optimizer_steps']} optimizer steps). data_loading is the wait for the next batch; forward "
                  f"includes validation; checkpoint covers last.pt/best.pt writes ({len(run['atomic_writes'])} "
                  f"atomic) and the final strip.",
              "", "| phase | seconds | % of training | entries |", "|---|---:|---:|---:|"]
    for name, sec, n in zip(mlos_training.PHASE_NAMES, prof["seconds"], prof["entries"]):
        lines.append(f"| {name} | {sec:.2f} | {100 * sec / max(marked, 1e-9):.1f} | {n} |")
    lines.append(f"| **training** | {marked:.2f} | 100.0 | |")

    lines += ["", "| step | seconds | % of total |", "|---|---:|---:|"]
    steps = dict(timeline.steps, training=train_wall)
    for k in ("dataset", "import", "training", "export_fp32", "convert_fp16", "quantize_int8", "verify"):
        if k in steps:
            lines.append(f"| {k} | {steps[k]:.2f} | {100 * steps[k] / total:.1f} |")
    other = total - sum(steps.values())
    lines.append(f"| other | {other:.2f} | {100 * other / total:.1f} |")
    lines.append(f"| **total** | {total:.2f} | 100.0 |")
    lines += ["", f"INT8: {qinfo['method']}, {qinfo['calibration_images']} calibration images, quantized ops: "
                  f"{qinfo['quantized_ops']}. Train wall time {train_wall:.1f} s; "
                  f"per epoch: mean of the 'total' column.",
              f"Network access attempts blocked: {len(net_attempts)}.",
              f"RESULT: {'PASS' if ok else 'FAIL'}"]
    table = "\n".join(lines)
    print("\n" + table)
    (out / "report.md").write_text(table + "\n")
    (out / "results.json").write_text(json.dumps({
        "ok": ok, "preset": "quick" if a.quick else "full", "config": cfg, "threads": threads, "workers": a.workers,
        "total_s": total, "train_wall_s": train_wall, "epochs": timeline.epochs, "steps": timeline.steps,
        "mlos": {**run, "placement": placement}, "models": rows, "best_pt": str(best), "best_pt_mb": mb(best),
        "int8": qinfo, "network_attempts": net_attempts, "versions": _versions(),
    }, indent=1, default=str) + "\n")
    return 0 if ok else 1


def _versions() -> dict:
    from importlib import metadata

    v = {}
    for p in ("mlos-training", "torch", "torchvision", "numpy", "ultralytics", "onnx", "onnxruntime", "onnxslim", "opencv-python"):
        try:
            v[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return v


if __name__ == "__main__":
    sys.exit(main())
