#!/usr/bin/env python3
"""The dynamic-shape matrix: compile each model ONCE with its symbolic dims
left free (or bounded), then run the one .so at many sizes and compare each
run with ONNX Runtime on the same ONNX file (the reference; never mcc).

Text models run at batch 1, 3, 17, 64 x sequence 1, 7, 128, 512 (sizes past
a model's position table are skipped and listed); vision models at batch 1,
5, 32. Relative error per output: max|mcc - ref| / max|ref|. Prints the
table (and --markdown writes it); exits non-zero if any run exceeds --tol or
fails. Used by ctest (`dynamic-shapes`) and for docs/benchmarks.md:

    python3 scripts/dynamic_matrix.py --mcc build/tools/mcc/mcc \\
        --models models test/e2e/dynamic-models

On the GPU machine (no compiler there) the .so files come precompiled:
compile each model with `--target cuda` (no --shape) into a folder here,
carry it, and run there with `--target cuda --so-dir DIR` (--mcc is then
unused). For cuda each size runs --repeat times (default 3: a direct run,
the run that captures the shape's CUDA graph, a replay), all compared.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

TEXT_BATCHES = [1, 3, 17, 64]
TEXT_SEQS = [1, 7, 128, 512]
VISION_BATCHES = [1, 5, 32]


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


def entries(folder):
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    for e in manifest["entries"] if isinstance(manifest, dict) else manifest:
        if "error" not in e:
            yield folder, e


def text_feeds(e, batch, seq, rng):
    vocab = e["config"].get("vocab_size", 512)
    feeds = {}
    for name in e["inputs"]:
        if name == "input_ids":
            feeds[name] = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
        elif name == "attention_mask":
            # Right padding of random length, at least one real token a row.
            mask = np.ones((batch, seq), dtype=np.int64)
            for r in range(batch):
                mask[r, rng.integers(1, seq + 1):] = 0
            feeds[name] = mask
        elif name == "token_type_ids":
            feeds[name] = rng.integers(0, 2, size=(batch, seq), dtype=np.int64)
        else:
            raise KeyError(f"{e['name']}: no recipe for text input {name}")
    return feeds


def vision_feeds(e, batch, rng):
    feeds = {}
    for name, spec in e["inputs"].items():
        shape = [batch] + list(spec["shape"][1:])
        feeds[name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def positions(e):
    c = e["config"]
    return c.get("max_position_embeddings", c.get("n_positions"))


def pivot(rows, target):
    """Model x size tables (text, then vision) of relative errors."""
    out = []
    for sizes in ([f"b{b} s{q}" for b in TEXT_BATCHES for q in TEXT_SEQS],
                  [f"b{b}" for b in VISION_BATCHES]):
        models = []
        for n, sz, _, _ in rows:
            if sz in sizes and n not in models:
                models.append(n)
        if not models:
            continue
        cell = {(n, sz): (r, e) for n, sz, r, e in rows}
        out.append(f"| model ({target}) | " + " | ".join(sizes) + " |")
        out.append("|---" * (len(sizes) + 1) + "|")
        for n in models:
            cells = []
            for sz in sizes:
                r, e = cell.get((n, sz), ("—", None))
                cells.append("—" if r == "—" else (f"{e:.0e}" if r == "ok" else r))
            out.append(f"| {n} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcc", default=None)
    ap.add_argument("--so-dir", default=None,
                    help="use DIR/<name>.so, compiled beforehand, instead of compiling")
    ap.add_argument("--repeat", type=int, default=None,
                    help="runs per size, each compared (default: 3 on cuda, else 1)")
    ap.add_argument("--models", nargs="+", default=["models"],
                    help="folders with a manifest.json (models/ layout)")
    ap.add_argument("--only", nargs="*", help="entry names")
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--runtime", default=None, help="libmccrt.so for the Python loader")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if not args.mcc and not args.so_dir:
        ap.error("give --mcc (to compile) or --so-dir (precompiled)")
    repeat = args.repeat or (3 if args.target == "cuda" else 1)

    import mcc
    import onnxruntime as ort

    if args.threads:
        mcc.set_num_threads(args.threads, runtime=args.runtime)
    work = args.workdir or tempfile.mkdtemp(prefix="mcc-dyn-")
    os.makedirs(work, exist_ok=True)
    rows, skipped, failures = [], [], 0
    for folder, e in [x for f in args.models for x in entries(f)]:
        name = e["name"]
        if args.only and name not in args.only:
            continue
        text = "input_ids" in e["inputs"]
        model = os.path.join(folder, name, "model.onnx")
        if args.so_dir:
            so = os.path.join(args.so_dir, name + ".so")
            if not os.path.exists(so):
                failures += 1
                rows.append((name, "-", "no precompiled .so", None))
                print(f"{name}: {so} missing", flush=True)
                continue
        else:
            so = os.path.join(work, name + ".so")
            t0 = time.time()
            res = subprocess.run([args.mcc, "compile", model, "-o", so, "--target", args.target],
                                 capture_output=True, text=True)
            compile_s = time.time() - t0
            if res.returncode != 0:
                failures += 1
                msg = (res.stderr.strip().splitlines() or ["?"])[-1]
                rows.append((name, "-", "compile failed: " + msg[:150], None))
                print(f"{name}: compile FAILED: {res.stderr.strip()[:2000]}", flush=True)
                continue
            print(f"{name}: compiled once in {compile_s:.1f} s", flush=True)
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        m = mcc.load(so, runtime=args.runtime)
        rng = np.random.default_rng(7)
        if text:
            sizes = [(b, s) for b in TEXT_BATCHES for s in TEXT_SEQS]
        else:
            sizes = [(b, None) for b in VISION_BATCHES]
        for b, s in sizes:
            label = f"b{b} s{s}" if text else f"b{b}"
            if text and s > positions(e):
                skipped.append(f"{name} {label} (position table of {positions(e)})")
                continue
            feeds = text_feeds(e, b, s, rng) if text else vision_feeds(e, b, rng)
            ref = sess.run(None, feeds)
            err, ok, failed = 0.0, True, None
            for _ in range(repeat):
                try:
                    got = m(**feeds)
                except Exception as ex:  # noqa: a failed run is a result
                    failed = ex
                    break
                if isinstance(got, dict):
                    got = list(got.values())
                elif not isinstance(got, (list, tuple)):
                    got = [got]
                err = max(err, max(rel_err(np.asarray(g), r) for g, r in zip(got, ref)))
                ok = ok and len(got) == len(ref)
            if failed is not None:
                failures += 1
                rows.append((name, label, f"run failed: {failed}"[:200], None))
                print(f"  {label:>10}  run failed: {failed}"[:300], flush=True)
                continue
            ok = ok and err <= args.tol
            failures += not ok
            rows.append((name, label, "ok" if ok else "MISMATCH", err))
            print(f"  {label:>10}  rel.err {err:.2e}  {'ok' if ok else 'MISMATCH'}", flush=True)
        m.close()

    header = f"| model | size | result | rel. error |\n|---|---|---|---|"
    lines = [header] + [f"| {n} | {sz} | {r} | {'' if e is None else f'{e:.1e}'} |"
                        for n, sz, r, e in rows]
    table = "\n".join(lines)
    print()
    print(table)
    if skipped:
        print("\nskipped (beyond the model's positions):", ", ".join(skipped))
    runs = sum(1 for r in rows if r[3] is not None)
    print(f"\n{runs} runs, {failures} failures")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(pivot(rows, args.target) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
