#!/usr/bin/env python3
"""Run every models/ entry compiled with --target cuda on the GPU machine.

The .so files are built on the development machine (no GPU there):

    mcc compile models/<name>/model.onnx -o SO_DIR/<name>.so --target cuda --shape ...

then carried here. For each entry: load through the Python loader, run on
inputs.npz, compare with PyTorch's reference.npz (max|Δ|/max|ref| ≤ tol),
and time the median of --runs runs (host buffers in and out, so H2D and
D2H copies are included). Prints a table; exit 1 if any entry fails.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import mcc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="models")
    ap.add_argument("--so-dir", required=True)
    ap.add_argument("--runtime", default=None)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--only", default=None, help="comma-separated entry names")
    ap.add_argument("--isolate", action="store_true",
                    help="run each entry in its own process (a CUDA fault "
                         "poisons the process that hits it)")
    args = ap.parse_args()
    if args.isolate:
        import subprocess
        entries = json.load(open(os.path.join(args.models, "manifest.json")))
        entries = entries["entries"] if isinstance(entries, dict) else entries
        lines, failed = [], 0
        for e in entries:
            cmd = [sys.executable, os.path.abspath(__file__), "--models", args.models,
                   "--so-dir", args.so_dir, "--tol", str(args.tol), "--runs", str(args.runs),
                   "--only", e["name"]]
            if args.runtime:
                cmd += ["--runtime", args.runtime]
            r = subprocess.run(cmd, capture_output=True, text=True)
            row = [l for l in r.stdout.splitlines() if l.startswith(e["name"] + " ")]
            lines.append(row[0] if row else f"{e['name']:22} CRASH     {r.stderr.strip()[-120:]}")
            failed += r.returncode != 0
        print(f"{'model':22} {'result':9} {'rel.err':>10} {'median ms':>10}")
        print("\n".join(lines))
        print(f"{len(lines) - failed}/{len(lines)} entries match the PyTorch reference on the GPU")
        return 1 if failed else 0
    entries = json.load(open(os.path.join(args.models, "manifest.json")))
    entries = entries["entries"] if isinstance(entries, dict) else entries
    rows, failed = [], 0
    for e in entries:
        name = e["name"]
        if args.only and name not in args.only.split(","):
            continue
        so = os.path.join(args.so_dir, name + ".so")
        if not os.path.exists(so):
            rows.append((name, "missing", "", ""))
            failed += 1
            continue
        try:
            model = mcc.load(so, runtime=args.runtime)
            feeds = dict(np.load(os.path.join(args.models, name, "inputs.npz")))
            feeds = {i.name: feeds[i.name].astype(i.dtype) for i in model.inputs}
            ref = np.load(os.path.join(args.models, name, "reference.npz"))
            worst = 0.0
            # Run 1 launches directly, run 2 captures a CUDA graph, run 3
            # replays it: all three must be right.
            for _ in range(3):
                out = model.run(feeds)
                for k in ref.files:
                    r, g = ref[k].astype(np.float64), out[k].astype(np.float64)
                    worst = max(worst, float(np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-30)))
            times = []
            for _ in range(5):
                model.run(feeds)
            for _ in range(args.runs):
                t = time.perf_counter()
                model.run(feeds)
                times.append((time.perf_counter() - t) * 1e3)
            ok = worst <= args.tol
            failed += 0 if ok else 1
            rows.append((name, "ok" if ok else "MISMATCH", f"{worst:.2e}", f"{np.median(times):.3f}"))
        except Exception as ex:  # report and go on
            failed += 1
            rows.append((name, "ERROR", str(ex)[:150], ""))
    print(f"{'model':22} {'result':9} {'rel.err':>10} {'median ms':>10}")
    for r in rows:
        print(f"{r[0]:22} {r[1]:9} {r[2]:>10} {r[3]:>10}")
    print(f"{len(rows) - failed}/{len(rows)} entries match the PyTorch reference on the GPU")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
