#!/usr/bin/env python3
"""Benchmark mcc's CPU code against ONNX Runtime on the models/ entries.

For every manifest entry: compile models/<name>/model.onnx with
`mcc compile --target cpu --shape ...` (shapes pinned from the manifest),
load the .so in-process through the runtime C API (libmccrt, via the
ctypes binding in python/mcc),
check its outputs against models/<name>/reference.npz, then time mcc_run
with preallocated output buffers. The peer is ONNX Runtime's CPU execution
provider (intra_op_num_threads = threads, inter_op 1, ORT_ENABLE_ALL,
sequential execution). Both sides are timed per call with
time.perf_counter() from Python, so both include a small Python call
overhead (ctypes call for mcc, InferenceSession.run for ORT).

    python3 scripts/bench_cpu.py --models models --threads 1,2 --runs 50 \\
        --markdown /tmp/bench.md
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import mcc  # noqa: E402  (python/mcc: the ctypes binding of libmccrt)


def prepare(model, feeds, out_shapes):
    """Binds the inputs (cast to the model's dtypes, as inputs.npz may hold
    other integer widths) and preallocated outputs once; returns (call,
    outputs dict). call() runs mcc_run and raises mcc.MccError on failure."""
    cast = {}
    for info in model.inputs:
        if info.name not in feeds:
            raise RuntimeError(f"no input named {info.name!r} in inputs.npz ({sorted(feeds)})")
        if info.dtype is None:
            raise RuntimeError(f"input {info.name}: unsupported dtype")
        cast[info.name] = np.ascontiguousarray(feeds[info.name], dtype=info.dtype)
    return model.prepare(cast, out_shapes)


def rel_err(got, ref):
    """max|got - ref| / max|ref| (as in scripts/e2e_models.py)."""
    if got.shape != ref.shape:
        return float("inf")
    if ref.dtype == np.bool_ or np.issubdtype(ref.dtype, np.integer):
        return 0.0 if np.array_equal(got, ref) else float("inf")
    if not ref.size:
        return 0.0
    scale = float(np.max(np.abs(ref)))
    diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    if np.isnan(diff):
        return float("inf")
    return diff / scale if scale > 0 else diff


def call_times(fn, warmup, runs):
    """Each of `runs` calls' time in ms, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return ts


def time_calls(fn, warmup, runs):
    return statistics.median(call_times(fn, warmup, runs))


def compile_model(mcc, entry, folder, so):
    cmd = [mcc, "compile", os.path.join(folder, "model.onnx"), "-o", so, "--target", "cpu"]
    for inp, spec in entry["inputs"].items():
        cmd += ["--shape", inp + "=" + "x".join(str(d) for d in spec["shape"])]
    for attempt in range(5):  # the binary may be replaced by a rebuild under us
        if os.path.exists(mcc):
            break
        time.sleep(3)
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise RuntimeError("compile failed: " + " | ".join(tail))
    return time.time() - t0


def ort_session(ort, path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def fmt_err(e):
    return "n/a" if e is None else ("inf" if e == float("inf") else f"{e:.1e}")


def fmt_ms(x):
    return "-" if x is None else f"{x:.3f}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(root, "models"))
    ap.add_argument("--only", default=None, help="comma-separated entry names")
    ap.add_argument("--runs", type=int, default=50, help="timed runs per measurement (>= 20)")
    ap.add_argument("--warmup", type=int, default=10, help="warm-up runs (>= 5)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--mcc", default=os.path.join(root, "build/tools/mcc/mcc"))
    ap.add_argument("--runtime-lib", default=os.path.join(root, "build/lib/Runtime/libmccrt.so"))
    ap.add_argument("--workdir", default=None, help="where the compiled .so files go (default: a temp dir)")
    ap.add_argument("--markdown", default=None, help="append the result table (markdown) to this file")
    args = ap.parse_args()
    args.runs = max(args.runs, 20)
    args.warmup = max(args.warmup, 5)
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    only = set(n.strip() for n in args.only.split(",")) if args.only else None

    import onnxruntime as ort

    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)
    entries = manifest["entries"] if isinstance(manifest, dict) else manifest
    if only:
        unknown = only - {e["name"] for e in entries}
        if unknown:
            sys.exit(f"unknown entries: {sorted(unknown)}")
    work = args.workdir or tempfile.mkdtemp(prefix="mcc-bench-")
    os.makedirs(work, exist_ok=True)
    load1 = os.getloadavg()[0]
    ncpu = os.cpu_count() or 1
    print(f"load average {load1:.2f} on {ncpu} CPUs", flush=True)
    if load1 > 0.5 * ncpu:
        print("warning: the machine is busy; timings will be noisy", file=sys.stderr, flush=True)

    rows = []  # (model, threads, mcc_ms, ort_ms, err, note)
    for e in entries:
        name = e["name"]
        if "error" in e or (only and name not in only):
            continue
        folder = os.path.join(args.models, name)
        feeds = dict(np.load(os.path.join(folder, "inputs.npz")))
        ref = dict(np.load(os.path.join(folder, "reference.npz")))
        so = os.path.join(work, name + ".so")
        model, call, err, note = None, None, None, ""
        try:
            csec = compile_model(args.mcc, e, folder, so)
            model = mcc.load(so, runtime=args.runtime_lib)
            call, outs = prepare(model, feeds, {k: v.shape for k, v in ref.items()})
            call()
            missing = [k for k in ref if k not in outs]
            err = max([rel_err(outs[k], ref[k]) for k in ref if k in outs] or [float("inf")])
            if missing:
                note = f"missing outputs {missing}"
            print(f"[{name}] compiled in {csec:.1f} s ({model.target}/{model.arch}), rel.err {fmt_err(err)}",
                  flush=True)
        except Exception as ex:  # keep going: ORT still gets timed
            note = f"mcc: {ex}"
            call = None
            print(f"[{name}] {note}", flush=True)

        ort_feeds = None
        for t in threads:
            mcc_ms = ort_ms = None
            if call is not None:
                try:
                    mcc.set_num_threads(t, runtime=model.runtime)
                    mcc_ms = time_calls(call, args.warmup, args.runs)
                except Exception as ex:
                    note = (note + "; " if note else "") + f"mcc: {ex}"
            # let the OpenMP workers of the mcc runs stop spinning (libomp
            # KMP_BLOCKTIME, 200 ms by default) before ORT is timed
            time.sleep(0.5)
            try:
                sess = ort_session(ort, os.path.join(folder, "model.onnx"), t)
                if ort_feeds is None:
                    ort_feeds = {}
                    for i in sess.get_inputs():
                        a = feeds[i.name]
                        if i.type == "tensor(int64)":
                            a = a.astype(np.int64)
                        elif i.type == "tensor(float)":
                            a = a.astype(np.float32)
                        ort_feeds[i.name] = np.ascontiguousarray(a)
                ort_ms = time_calls(lambda: sess.run(None, ort_feeds), args.warmup, args.runs)
                del sess
            except Exception as ex:
                note = (note + "; " if note else "") + f"ort: {ex}"
            ratio = mcc_ms / ort_ms if mcc_ms is not None and ort_ms else None
            rows.append((name, t, mcc_ms, ort_ms, ratio, err, note))
            print(f"[{name}] threads={t} mcc {fmt_ms(mcc_ms)} ms, ORT {fmt_ms(ort_ms)} ms, "
                  f"ratio {'-' if ratio is None else f'{ratio:.2f}'}", flush=True)
        if model is not None:
            model.close()

    header = ["model", "threads", "mcc ms (median)", "ORT ms (median)", "ratio mcc/ORT", "mcc rel err"]
    print()
    print(f"{header[0]:22} {header[1]:>7} {header[2]:>16} {header[3]:>16} {header[4]:>14} {header[5]:>12}  note")
    for name, t, m, o, r, err, note in rows:
        print(f"{name:22} {t:>7} {fmt_ms(m):>16} {fmt_ms(o):>16} {'-' if r is None else f'{r:.2f}':>14} "
              f"{fmt_err(err):>12}  {note}")
    print(f"(warm-up {args.warmup}, {args.runs} timed runs per cell; ratio < 1 means mcc is faster; "
          f"load average {load1:.2f} at start, {os.getloadavg()[0]:.2f} at end)")

    if args.markdown:
        lines = []
        lines.append(f"Warm-up {args.warmup} runs, then {args.runs} timed runs per cell; medians in ms. "
                     f"Ratio = mcc / ORT (lower is better for mcc). Generated {datetime.date.today().isoformat()}.")
        lines.append("")
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join(["---", "--:", "--:", "--:", "--:", "--:"]) + "|")
        for name, t, m, o, r, err, note in rows:
            cells = [name, str(t), fmt_ms(m), fmt_ms(o), "-" if r is None else f"{r:.2f}", fmt_err(err)]
            if note:
                cells[-1] += f" ({note})"
            lines.append("| " + " | ".join(cells) + " |")
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
