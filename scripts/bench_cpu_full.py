#!/usr/bin/env python3
"""Full-size models on this CPU: mcc against ONNX Runtime and OpenVINO.

The CPU-speed issue's table. Each row is a folder written by
scripts/export_full.py (model.onnx with external data, inputs.npz, and
reference.npz from PyTorch). For each row: compile with
`mcc compile --target cpu` (timed), check mcc's outputs against PyTorch's,
then time mcc, ONNX Runtime (CPU EP, ORT_ENABLE_ALL, sequential) and
OpenVINO (CPU plugin, LATENCY hint) at each thread count on the same inputs:
warm-up, then the median of --runs calls timed from Python, each runtime
at each thread count in a process of its own (in one process, a peer's
thread pool left from its previous run slowed the next runtime measured:
mcc's two-thread mobilenetv3 took 4.8-5.0 ms in two of four runs, 2.8 ms
alone). Each thread count runs --rounds rounds of the three runtimes in
turn and pools each runtime's runs, so that the drift of a shared host's
speed falls on all three alike. Ratio = mcc / best peer (below 1: mcc is
faster), of the pooled medians; "per round" gives the range of the
rounds' own ratios.

    for a in bert-base:1 gpt2:1 resnet50:1 mobilenetv3_large_100:1 resnext101_32x8d:1; do
      python3 scripts/export_full.py --arch ${a%:*} --batch ${a#*:} --out /tmp/full/${a%:*}-b${a#*:}
    done
    python3 scripts/bench_cpu_full.py --full /tmp/full --threads 1,2 --runs 20
"""
import argparse
import os
import statistics
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
from bench_cpu import call_times, ort_session, rel_err  # noqa: E402

ROWS = ["bert-base-b1", "gpt2-b1", "resnet50-b1", "mobilenetv3_large_100-b1",
        "resnext101_32x8d-b1"]


def measure(args):
    """One runtime at one thread count (this script run with --measure):
    prints `MS <median>` and, for mcc, `ERR <max rel. error vs PyTorch>`."""
    folder = os.path.dirname(args.onnx)
    feeds = dict(np.load(os.path.join(folder, "inputs.npz")))
    t = int(args.threads)
    if args.measure == "mcc":
        model = mcc.load(args.so, runtime=args.runtime_lib)
        ref = dict(np.load(os.path.join(folder, "reference.npz")))
        cast = {i.name: np.ascontiguousarray(feeds[i.name], dtype=i.dtype) for i in model.inputs}
        call, outs = model.prepare(cast, {k: v.shape for k, v in ref.items()})
        call()
        print(f"ERR {max(rel_err(outs[k], ref[k]) for k in ref)!r}")
        mcc.set_num_threads(t, runtime=model.runtime)
    else:
        import onnxruntime as ort
        ort_feeds = {i.name: feeds[i.name].astype(np.int64 if "int64" in i.type else np.float32)
                     for i in ort_session(ort, args.onnx, 1).get_inputs()}
        if args.measure == "ort":
            sess = ort_session(ort, args.onnx, t)
            call = lambda: sess.run(None, ort_feeds)  # noqa: E731
        else:
            call = openvino_call(args.onnx, t, ort_feeds)
    times = call_times(call, args.warmup, args.runs)
    print(f"MS {statistics.median(times)!r}", flush=True)
    print("TIMES " + ",".join(f"{x:.4f}" for x in times), flush=True)


def run_measure(args, runtime, onnx_path, so, t):
    """Runs measure() in a fresh process; returns (times in ms, err or
    None), or None when that runtime failed."""
    cmd = [sys.executable, os.path.abspath(__file__), "--measure", runtime,
           "--onnx", onnx_path, "--so", so or "", "--threads", str(t),
           "--runs", str(args.runs), "--warmup", str(args.warmup),
           "--runtime-lib", args.runtime_lib, "--full", ""]
    r = subprocess.run(cmd, capture_output=True, text=True)
    vals = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
    if r.returncode or "MS" not in vals:
        print(f"  {runtime} at {t} threads failed: {(r.stderr or r.stdout).strip()[-300:]}",
              file=sys.stderr)
        return None
    times = [float(x) for x in vals["TIMES"].split(",")]
    return times, float(vals["ERR"]) if "ERR" in vals else None


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
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of all runtimes in turn; each runtime's runs are pooled")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build/tools/mcc/mcc"))
    ap.add_argument("--runtime-lib", default=os.path.join(ROOT, "build/lib/Runtime/libmccrt.so"))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--precision", default="fp32",
                    help="mcc compile --precision (fp32, or bf16x3 on AMX CPUs); "
                         "the peers run fp32")
    ap.add_argument("--measure", choices=["mcc", "ort", "ov"], help=argparse.SUPPRESS)
    ap.add_argument("--onnx", help=argparse.SUPPRESS)
    ap.add_argument("--so", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.runs = max(args.runs, 20)
    if args.measure:
        return measure(args)
    threads = [int(t) for t in args.threads.split(",")]
    work = args.workdir or tempfile.mkdtemp(prefix="mcc-full-")
    os.makedirs(work, exist_ok=True)
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
        so = os.path.join(work, row + ".so")
        t0 = time.time()
        r = subprocess.run([args.mcc, "compile", onnx_path, "-o", so, "--target", "cpu",
                            "--precision", args.precision],
                           capture_output=True, text=True)
        csec = time.time() - t0
        if r.returncode:
            print(f"[{row}] compile failed: {r.stderr.strip()[-400:]}", flush=True)
            continue
        err = None
        for t in threads:
            # Rounds of mcc, ONNX Runtime, OpenVINO in turn: this machine's
            # speed drifts by 10-30% from minute to minute (another tenant on
            # the host), so each runtime's runs are pooled over rounds spread
            # across the same minutes instead of one block of runs each.
            pooled = {"mcc": [], "ort": [], "ov": []}
            ratios = []
            for _ in range(args.rounds):
                got = {}
                for runtime in ("mcc", "ort", "ov"):
                    if runtime == "ov" and not have_ov:
                        continue
                    r = run_measure(args, runtime, onnx_path, so if runtime == "mcc" else None, t)
                    if r is None:
                        continue
                    got[runtime] = statistics.median(r[0])
                    pooled[runtime] += r[0]
                    if runtime == "mcc" and err is None:
                        err = r[1]
                        print(f"[{row}] compiled in {csec:.1f} s, rel.err vs PyTorch {err:.1e}", flush=True)
                if "mcc" not in got:
                    break
                peers = [got[x] for x in ("ort", "ov") if x in got]
                if peers:
                    ratios.append(got["mcc"] / min(peers))
            if not pooled["mcc"] or not ratios:
                continue
            m = statistics.median(pooled["mcc"])
            o = statistics.median(pooled["ort"]) if pooled["ort"] else None
            v = statistics.median(pooled["ov"]) if pooled["ov"] else None
            best = min(x for x in (o, v) if x is not None)
            spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
            table.append((row, t, csec, err, m, o, v, m / best, spread))
            print(f"[{row}] threads={t} mcc {m:.1f} ms, ORT {'-' if o is None else f'{o:.1f}'} ms, OpenVINO "
                  f"{'-' if v is None else f'{v:.1f}'} ms, mcc/best {m / best:.2f} (rounds {spread})", flush=True)

    lines = ["| model | threads | compile s | rel.err | mcc ms | ORT ms | OpenVINO ms | mcc / best peer | per round |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row, t, csec, err, m, o, v, ratio, spread in table:
        lines.append(f"| {row} | {t} | {csec:.1f} | {err:.1e} | {m:.1f} | {'-' if o is None else f'{o:.1f}'} | "
                     f"{'-' if v is None else f'{v:.1f}'} | {ratio:.2f} | {spread} |")
    print("\n" + "\n".join(lines))
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
