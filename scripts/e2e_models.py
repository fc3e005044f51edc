#!/usr/bin/env python3
"""Compile every models/ entry with mcc, run it, compare with PyTorch's outputs.

Relative error per output: max|mcc - ref| / max|ref|; an entry passes when
every output is within --tol (default 1e-4, fp32). Prints a table and exits
non-zero if any entry fails. Used by ctest (test/e2e) and by hand:

    python3 scripts/e2e_models.py --mcc build/bin/mcc --models models

With --precision bf16x3 (AMX products) the script exits 77 (skipped) on a
host without AMX-BF16; the entries named by --require-amx must compute on
AMX tiles (tdpbf16ps in their code), so a silent fallback cannot pass.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def rel_err(got, ref):
    if got.shape != ref.shape:
        return float("inf")
    if ref.dtype == np.bool_ or np.issubdtype(ref.dtype, np.integer):
        return 0.0 if np.array_equal(got, ref) else float("inf")
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
    if np.isnan(diff):
        return float("inf")
    return diff / scale if scale > 0 else diff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcc", required=True)
    ap.add_argument("--models", default="models")
    ap.add_argument("--only", nargs="*", help="entry names to run")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--cpu", default=None, help="pass --cpu to mcc compile (e.g. x86-64-v3)")
    ap.add_argument("--precision", default=None, help="pass --precision to mcc compile (e.g. bf16x3)")
    ap.add_argument("--require-amx", nargs="*", default=[],
                    help="entries whose library must contain AMX tile products")
    args = ap.parse_args()
    amx = args.precision == "bf16x3"
    if amx:
        with open("/proc/cpuinfo") as f:
            if " amx_bf16" not in f.read():
                print("SKIP: this host has no AMX-BF16")
                return 77

    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)
    entries = manifest["entries"] if isinstance(manifest, dict) else manifest
    work = args.workdir or tempfile.mkdtemp(prefix="mcc-e2e-")
    os.makedirs(work, exist_ok=True)
    rows, failed = [], 0
    for e in entries:
        name = e["name"]
        if "error" in e or (args.only and name not in args.only):
            continue
        folder = os.path.join(args.models, name)
        so = os.path.join(work, name + ".so")
        out = os.path.join(work, name + ".out.npz")
        cmd = [args.mcc, "compile", os.path.join(folder, "model.onnx"), "-o", so,
               "--target", "cpu"]
        if args.cpu:
            cmd += ["--cpu", args.cpu]
        if args.precision:
            cmd += ["--precision", args.precision]
        for inp, spec in e["inputs"].items():
            cmd += ["--shape", inp + "=" + "x".join(str(d) for d in spec["shape"])]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        compile_s = time.time() - t0
        if r.returncode != 0:
            rows.append((name, e.get("exporter", ""), "compile failed", r.stderr.strip().splitlines()[-1:] ))
            failed += 1
            continue
        uses_amx = amx and "tdpbf16ps" in subprocess.run(
            ["objdump", "-d", so], capture_output=True, text=True).stdout
        if amx:
            if name in args.require_amx and not uses_amx:
                rows.append((name, e.get("exporter", ""), "no AMX code", "no tdpbf16ps in the library"))
                failed += 1
                continue
        r = subprocess.run([args.mcc, "run", so, "--input", os.path.join(folder, "inputs.npz"),
                            "--output", out], capture_output=True, text=True)
        if r.returncode != 0:
            rows.append((name, e.get("exporter", ""), "run failed", r.stderr.strip().splitlines()[-1:]))
            failed += 1
            continue
        got = np.load(out)
        ref = np.load(os.path.join(folder, "reference.npz"))
        worst = 0.0
        missing = [k for k in ref.files if k not in got.files]
        for k in ref.files:
            if k in got.files:
                worst = max(worst, rel_err(got[k], ref[k]))
        ok = not missing and worst <= args.tol
        failed += 0 if ok else 1
        rows.append((name, e.get("exporter", ""), "ok" if ok else "MISMATCH",
                     f"rel.err {worst:.2e}, compile {compile_s:.1f} s" + (f", missing {missing}" if missing else "")
                     + (", AMX" if uses_amx else ", no AMX product" if amx else "")))
    print(f"{'model':24} {'exporter':8} {'result':15} detail")
    for r in rows:
        print(f"{r[0]:24} {r[1]:8} {r[2]:15} {r[3]}")
    print(f"{len(rows) - failed}/{len(rows)} entries match the PyTorch reference (tol {args.tol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
