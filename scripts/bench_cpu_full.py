#!/usr/bin/env python3
"""Full-size models on this CPU: mcc against ONNX Runtime and OpenVINO.

The CPU-speed issue's table. Each row is a folder written by
scripts/export_full.py (model.onnx with external data, inputs.npz, and
reference.npz from PyTorch). For each row: compile with
`mcc compile --target cpu` (timed), check mcc's outputs against PyTorch's,
then time mcc, ONNX Runtime (CPU EP, ORT_ENABLE_ALL, sequential) and
OpenVINO (CPU plugin, LATENCY hint) at each thread count on the same inputs:
warm-up, then the median of --runs calls timed from Python. Ratio = mcc /
best peer (below 1: mcc is faster).

    for a in bert-base:1 gpt2:1 resnet50:1 mobilenetv3_large_100:1 resnext101_32x8d:1; do
      python3 scripts/export_full.py --arch ${a%:*} --batch ${a#*:} --out /tmp/full/${a%:*}-b${a#*:}
    done
    python3 scripts/bench_cpu_full.py --full /tmp/full --threads 1,2 --runs 20
"""
import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import mcc  # noqa: E402
from bench_cpu import ort_session, rel_err, time_calls  # noqa: E402

ROWS = ["bert-base-b1", "gpt2-b1", "resnet50-b1", "mobilenetv3_large_100-b1",
        "resnext101_32x8d-b1"]


def settle():
    """Frees a finished runtime and lets its worker threads go idle: on two
    cores, ONNX Runtime's or OpenVINO's pool still spinning after its last
    call slowed the next runtime measured (mcc's two-thread resnet50 took
    58 ms right after OpenVINO's one-thread run, 51 ms alone)."""
    gc.collect()
    time.sleep(1.0)


def openvino_call(path, threads, feeds):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(path, "CPU", {
        "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
    })
    req = compiled.create_infer_request()
    # OpenVINO may name a port after an internal tensor; match any of its
    # names, else go by position (the ONNX graph's input order).
    order = list(feeds)
    inputs = {}
    for k, port in enumerate(compiled.inputs):
        names = [n for n in port.get_names() if n in feeds]
        inputs[k] = feeds[names[0] if names else order[k]]
    return lambda: req.infer(inputs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", required=True, help="folder of export_full.py outputs")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build/tools/mcc/mcc"))
    ap.add_argument("--runtime-lib", default=os.path.join(ROOT, "build/lib/Runtime/libmccrt.so"))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--precision", default="fp32",
                    help="mcc compile --precision (fp32, or bf16x3 on AMX CPUs); "
                         "the peers run fp32")
    args = ap.parse_args()
    args.runs = max(args.runs, 20)
    threads = [int(t) for t in args.threads.split(",")]
    work = args.workdir or tempfile.mkdtemp(prefix="mcc-full-")
    os.makedirs(work, exist_ok=True)
    import onnxruntime as ort
    try:
        import openvino  # noqa: F401
        have_ov = True
    except ImportError:
        have_ov = False
        print("openvino is not installed: its column stays empty", file=sys.stderr)

    table = []
    for row in args.rows.split(","):
        folder = os.path.join(args.full, row)
        onnx_path = os.path.join(folder, "model.onnx")
        if not os.path.exists(onnx_path):
            print(f"[{row}] no {onnx_path}, skipped", flush=True)
            continue
        feeds = dict(np.load(os.path.join(folder, "inputs.npz")))
        ref = dict(np.load(os.path.join(folder, "reference.npz")))
        so = os.path.join(work, row + ".so")
        t0 = time.time()
        r = subprocess.run([args.mcc, "compile", onnx_path, "-o", so, "--target", "cpu",
                            "--precision", args.precision],
                           capture_output=True, text=True)
        csec = time.time() - t0
        if r.returncode:
            print(f"[{row}] compile failed: {r.stderr.strip()[-400:]}", flush=True)
            continue
        model = mcc.load(so, runtime=args.runtime_lib)
        cast = {i.name: np.ascontiguousarray(feeds[i.name], dtype=i.dtype) for i in model.inputs}
        call, outs = model.prepare(cast, {k: v.shape for k, v in ref.items()})
        call()
        err = max(rel_err(outs[k], ref[k]) for k in ref)
        print(f"[{row}] compiled in {csec:.1f} s, rel.err vs PyTorch {err:.1e}", flush=True)
        ort_feeds = {i.name: feeds[i.name].astype(np.int64 if "int64" in i.type else np.float32)
                     for i in ort_session(ort, onnx_path, 1).get_inputs()}
        for t in threads:
            mcc.set_num_threads(t, runtime=model.runtime)
            m = time_calls(call, args.warmup, args.runs)
            time.sleep(0.5)  # let libomp's spinning workers sleep
            sess = ort_session(ort, onnx_path, t)
            o = time_calls(lambda: sess.run(None, ort_feeds), args.warmup, args.runs)
            del sess
            settle()
            v = None
            if have_ov:
                fn = openvino_call(onnx_path, t, ort_feeds)
                v = time_calls(fn, args.warmup, args.runs)
                del fn
                settle()
            best = min(x for x in (o, v) if x is not None)
            table.append((row, t, csec, err, m, o, v, m / best))
            print(f"[{row}] threads={t} mcc {m:.1f} ms, ORT {o:.1f} ms, OpenVINO "
                  f"{'-' if v is None else f'{v:.1f}'} ms, mcc/best {m / best:.2f}", flush=True)

    lines = ["| model | threads | compile s | rel.err | mcc ms | ORT ms | OpenVINO ms | mcc / best peer |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for row, t, csec, err, m, o, v, ratio in table:
        lines.append(f"| {row} | {t} | {csec:.1f} | {err:.1e} | {m:.1f} | {o:.1f} | "
                     f"{'-' if v is None else f'{v:.1f}'} | {ratio:.2f} |")
    print("\n" + "\n".join(lines))
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
