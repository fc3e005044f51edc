#!/usr/bin/env python3
"""Runs a bundle of compiled ONNX node tests where mcc itself is not built.

The bundle is written on the development machine by

    python3 scripts/onnx_node_tests.py --target cuda --bundle DIR ...

(each test's .so, its inputs and expected outputs by name, DIR/manifest.json).
This script loads every .so through the Python loader (python/mcc, over
libmccrt), runs each data set and compares with exactly the rules of
onnx_node_tests.py. A worker process runs the tests in order; when a run
fails or the worker dies (a CUDA fault poisons its context), the test is
recorded and a fresh worker continues with the next one.

    python3 scripts/run_node_bundle.py --bundle DIR --runtime libmccrt.so [--json F]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
RESTART = 3  # the worker's exit code after a failed test: start a fresh one


def run_one(bundle, t, rtol, atol, runtime):
    """One test in this process: {status, cause?, detail?}."""
    import mcc
    from onnx_node_tests import as_bf16_values, compare
    BF16 = 16
    bdir = os.path.join(bundle, t["dir"])
    models = {}
    try:
        for ds in t["data_sets"]:
            so = ds["so"]
            if so not in models:
                models[so] = mcc.load(os.path.join(bdir, so), runtime=runtime)
            with np.load(os.path.join(bdir, ds["name"] + "-inputs.npz")) as z:
                feeds = {k: z[k] for k in z.files}
            with np.load(os.path.join(bdir, ds["name"] + "-expected.npz")) as z:
                expected = {k: z[k] for k in z.files}
            for name, code, _ in models[so]._in:
                # older suites store bfloat16 data as its uint16 bit patterns
                if name in feeds and code == BF16 and feeds[name].dtype == np.uint16:
                    feeds[name] = feeds[name].view(mcc.DTYPES[BF16])
            try:
                got_all = models[so].run(feeds)
            except mcc.MccError as e:
                return {"status": "run-fail", "cause": str(e).split("\n")[0][:120],
                        "detail": str(e)[:500], "data_set": ds["name"]}
            for i, name in enumerate(t["outputs"]):
                if name not in expected:
                    break
                if name not in got_all:
                    return {"status": "run-fail", "cause": "missing output",
                            "detail": "output %d (%r) not returned" % (i, name)}
                got, exp, r, a = np.asarray(got_all[name]), expected[name], rtol, atol
                if t["out_types"][i] == BF16:
                    got = got.view(np.uint16)  # as mcc run's .npz has them
                    got, exp, r, a = as_bf16_values(got, exp, r, a)
                diff = compare(got, exp, r, a)
                if diff is not None:
                    why, err = diff
                    return {"status": "mismatch",
                            "cause": "values differ" if why.startswith("values differ") else why,
                            "detail": "output %d '%s': %s%s" % (
                                i, name, why, "" if err is None else ", max abs err %.3g" % err),
                            "data_set": ds["name"]}
        return {"status": "pass"}
    finally:
        for m in models.values():
            m.close()


def worker(args):
    """Reads test indices from stdin, prints one JSON result per line."""
    manifest = json.load(open(os.path.join(args.bundle, "manifest.json")))
    tests = manifest["tests"]
    for line in sys.stdin:
        i = int(line)
        t0 = time.time()
        try:
            res = run_one(args.bundle, tests[i], manifest["rtol"], manifest["atol"], args.runtime)
        except Exception as e:  # noqa: BLE001  (harness error: report, keep going)
            res = {"status": "run-fail", "cause": "harness error: " + e.__class__.__name__,
                   "detail": str(e)[:300]}
        res["seconds"] = round(time.time() - t0, 3)
        print(json.dumps(res), flush=True)
        if res["status"] != "pass":
            return RESTART  # a failed run may have poisoned the CUDA context
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--runtime", help="libmccrt.so (default: as python/mcc finds it)")
    ap.add_argument("--json", help="write per-test results here")
    ap.add_argument("--filter", help="substring of test ids")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    manifest = json.load(open(os.path.join(args.bundle, "manifest.json")))
    tests = manifest["tests"]
    todo = [i for i, t in enumerate(tests) if not args.filter or args.filter in t["id"]]
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--bundle", args.bundle]
    if args.runtime:
        cmd += ["--runtime", args.runtime]
    results, t0, pos = {}, time.time(), 0
    while pos < len(todo):
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        proc.stdin.write("".join("%d\n" % i for i in todo[pos:]))
        proc.stdin.close()
        for line in proc.stdout:
            results[todo[pos]] = json.loads(line)
            pos += 1
        proc.wait()
        if pos < len(todo) and proc.returncode != RESTART:  # the worker died in this test
            err = proc.stderr.read().strip().splitlines()
            results[todo[pos]] = {"status": "run-fail",
                                  "cause": "run crashed (exit %d)" % proc.returncode,
                                  "detail": (err[-1] if err else "")[:300]}
            pos += 1
    elapsed = time.time() - t0
    rows = []
    for i in todo:
        t = tests[i]
        rows.append(dict(results[i], id=t["id"], name=t["name"], op_type=t["op_type"],
                         expanded=t["expanded"]))
    counts = collections.Counter(r["status"] for r in rows)
    print("%d of %d compiled tests pass on %s (%s); %.0f s" % (
        counts["pass"], len(rows), manifest["target"],
        ", ".join("%s %d" % kv for kv in sorted(counts.items())), elapsed))
    groups = collections.defaultdict(list)
    for r in rows:
        if r["status"] != "pass":
            groups[(r["status"], r.get("cause", "?"))].append(r["name"])
    for (status, cause), names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print("  %4d  %s: %s  (%s)" % (len(names), status, cause, ", ".join(names[:4])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bundle_command": manifest["command"], "target": manifest["target"],
                       "elapsed_s": round(elapsed, 1), "counts": dict(counts),
                       "results": rows}, f, indent=1)
    return 0 if counts["pass"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
