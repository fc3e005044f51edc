#!/usr/bin/env python3
"""Conformance runner: ONNX backend node tests through `mcc compile` / `mcc run`.

For every test folder (model.onnx + test_data_set_*/input_*.pb, output_*.pb) the
model is compiled for the cpu target, run on each data set, and every output is
compared with the expected output_<i>.pb (output i = graph output i):

  * shapes and dtypes must match exactly;
  * floating outputs: NaN positions must match, the rest must satisfy
    np.allclose(got, expected, rtol=1e-3, atol=1e-5) (tunable via --rtol/--atol);
  * integer, bool and string outputs must match exactly;
  * bfloat16 outputs (uint16 bit patterns in mcc's .npz) compare as float32
    values like floats; against ONNX 1.12/1.13 data, which stores them as
    UINT16 made by truncation, within one bfloat16 ulp (as_bf16_values);
  * float8/int4/... outputs (uint8 bytes in mcc's .npz) are viewed as the
    expected ml_dtypes type and compared as above.

Each test ends in one category: pass, compile-fail, run-fail, mismatch, timeout,
or skipped (excluded families: training ops, sequence/optional ops, models with
non-tensor graph inputs/outputs). Failures carry a normalized cause
("unsupported op X", "unsupported dtype STRING", ...) used to group them.

Typical use (regenerates docs/supported-ops.md):

    python3 scripts/onnx_node_tests.py --mcc build/tools/mcc/mcc --jobs 2 \\
        --json /tmp/node_tests.json --markdown docs/supported-ops.md

CI regression check:

    python3 scripts/onnx_node_tests.py --mcc build/tools/mcc/mcc --min-pass 300
"""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
except ImportError:  # pragma: no cover
    sys.exit("onnx_node_tests.py needs the `onnx` package: pip install onnx numpy")

DEFAULT_SUITE = "/usr/share/libonnx-testdata/data/node"
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5

# Excluded families, matched against the test folder name.
EXCLUDE_PATTERNS = [
    ("sequence", "sequence ops"),  # except ReverseSequence (a tensor op)
    ("optional", "optional ops"),
    ("training", "training mode"),
    ("adagrad", "training op"),
    ("adam", "training op"),
    ("momentum", "training op"),  # also nesterov_momentum
    ("gradient", "training op"),
]


# --------------------------------------------------------------------------
# Discovery and classification
# --------------------------------------------------------------------------

def exclusion_reason_by_name(name):
    # ReverseSequence is a plain tensor op, not part of the sequence family.
    low = name.lower().replace("reversesequence", "reverse_seq")
    for pat, why in EXCLUDE_PATTERNS:
        if pat in low:
            return "%s (name contains '%s')" % (why, pat)
    return None


def non_tensor_io(model):
    """Names of graph inputs/outputs whose type is not a plain tensor."""
    bad = []
    for vi in list(model.graph.input) + list(model.graph.output):
        if vi.type.WhichOneof("value") != "tensor_type":
            bad.append("%s:%s" % (vi.name, vi.type.WhichOneof("value")))
    return bad


def first_op_type(model):
    for node in model.graph.node:
        if node.op_type != "Constant":
            return node.op_type
    return model.graph.node[0].op_type if model.graph.node else "(empty)"


EXPANDED_RE = re.compile(r"_expanded(_ver\d+)?$")


def discover(suites, filt):
    tests = []
    multi = len(suites) > 1
    for suite in suites:
        for name in sorted(os.listdir(suite)):
            folder = os.path.join(suite, name)
            model_path = os.path.join(folder, "model.onnx")
            if not os.path.isfile(model_path):
                continue
            tid = ("%s:%s" % (os.path.basename(os.path.normpath(suite)), name)) if multi else name
            if filt and not re.search(filt, tid):
                continue
            tests.append({"id": tid, "name": name, "suite": suite, "folder": folder})
    # Op types: the first non-Constant node of the model. For *_expanded tests the
    # model is the op's function body, so use the non-expanded sibling's op type.
    op_cache = {}

    def op_of(folder):
        if folder not in op_cache:
            try:
                op_cache[folder] = first_op_type(onnx.load(os.path.join(folder, "model.onnx"),
                                                            load_external_data=False))
            except Exception as e:  # noqa: BLE001
                op_cache[folder] = "(unloadable: %s)" % e.__class__.__name__
        return op_cache[folder]

    for t in tests:
        base = EXPANDED_RE.sub("", t["name"])
        sibling = os.path.join(t["suite"], base)
        if base != t["name"] and os.path.isfile(os.path.join(sibling, "model.onnx")):
            t["op_type"] = op_of(sibling)
            t["expanded"] = True
        else:
            t["op_type"] = op_of(t["folder"])
            t["expanded"] = base != t["name"]
    return tests


# --------------------------------------------------------------------------
# Error normalization
# --------------------------------------------------------------------------

def dtype_name(num):
    try:
        return onnx.TensorProto.DataType.Name(int(num))
    except Exception:  # noqa: BLE001
        return str(num)


LOC_RE = re.compile(r'loc\((?:"[^"]*"|[^()])*(?:\([^()]*\))?(?:"[^"]*"|[^()])*\):\s*')
NODE_RE = re.compile(r"^node '[^']*'(?: \([A-Za-z0-9_.]+\))?:\s*")


def first_error_line(stderr):
    lines = [l.strip() for l in (stderr or "").splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l
    return lines[0] if lines else ""


def strip_error(line):
    msg = line
    for prefix in ("mcc: error:", "error:"):
        if msg.startswith(prefix):
            msg = msg[len(prefix):].strip()
    msg = LOC_RE.sub("", msg, count=1).strip()
    if msg.startswith("error:"):
        msg = msg[len("error:"):].strip()
    msg = NODE_RE.sub("", msg).strip()
    return msg


def normalize_cause(line):
    """Map a first error line to a short cause used for grouping."""
    msg = strip_error(line)
    if not msg:
        return "no error message"
    m = re.search(r"unsupported op '([^']+)'", msg)
    if m:
        return "unsupported op %s" % m.group(1)
    m = re.search(r"default-domain opset (\d+) is not supported(?: \(supported: ([^)]*)\))?", msg)
    if m:  # one group for all old opsets; the number stays in the detail
        return "default-domain opset not supported" + (
            " (supported: %s)" % m.group(2) if m.group(2) else "")
    m = re.search(r"(?:unsupported|not supported)[^0-9]*(?:dtype|element type|data type)\s*(\d+)", msg)
    if m:
        return "unsupported dtype %s" % dtype_name(m.group(1))
    if re.search(r"(dtype|element type|data type)", msg) and re.search(r"unsupported|not supported", msg):
        m = re.search(r"\b(float16|bfloat16|f16|bf16|string|complex\w*|float8\w*|int4|uint4|i4|ui4)\b",
                      msg, re.I)
        return "unsupported dtype" + (" " + m.group(1) if m else "")
    # Generic: drop quoted identifiers so similar messages group; keep the op name
    # of MLIR verifier errors ("'math.ipowi' op ...").
    m = re.match(r"'([a-z_]+\.[a-z_.]+)' op (.*)$", msg)
    if m:
        return "MLIR verifier: '%s' op %s" % (m.group(1), re.sub(r"'[^']*'", "'…'", m.group(2)))[:160]
    msg = re.sub(r"\s*\('[^']*'\)", "", msg)  # input 1 ('axes') -> input 1
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r'"[^"]*"', '"…"', msg)
    return msg[:160]


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

def run_cmd(cmd, timeout, env=None):
    """subprocess.run with one retry if the binary is briefly missing/busy (mid-rebuild)."""
    for attempt in range(2):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  errors="replace", env=env)
        except OSError:  # FileNotFoundError, "Text file busy", ...
            if attempt == 1:
                raise
            time.sleep(5)
    raise AssertionError("unreachable")


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def compare(got, exp, rtol, atol):
    """Returns None when equal, else (reason, max_abs_err or None)."""
    got = np.asarray(got)
    exp = np.asarray(exp)
    if got.shape != exp.shape:
        return ("shape %s != expected %s" % (list(got.shape), list(exp.shape)), None)
    if exp.dtype == object or exp.dtype.kind in "USO":
        same = got.shape == exp.shape and all(
            (a.decode() if isinstance(a, bytes) else str(a)) == (b.decode() if isinstance(b, bytes) else str(b))
            for a, b in zip(got.ravel().tolist(), exp.ravel().tolist()))
        return None if same else ("string values differ", None)
    if got.dtype != exp.dtype:
        return ("dtype %s != expected %s" % (got.dtype, exp.dtype), None)
    if exp.dtype.kind in "fc" or str(exp.dtype) in ("bfloat16",) or exp.dtype.kind == "V":
        try:
            g = got.astype(np.float64) if exp.dtype.kind != "c" else got.astype(np.complex128)
            e = exp.astype(np.float64) if exp.dtype.kind != "c" else exp.astype(np.complex128)
        except (TypeError, ValueError):
            return (None if got.tobytes() == exp.tobytes() else ("raw bytes differ", None))
        gn, en = np.isnan(g), np.isnan(e)
        if not np.array_equal(gn, en):
            return ("NaN positions differ (%d vs %d NaNs)" % (int(gn.sum()), int(en.sum())), None)
        mask = ~en
        if not mask.any():
            return None
        gv, ev = g[mask], e[mask]
        if np.allclose(gv, ev, rtol=rtol, atol=atol, equal_nan=True):
            return None
        with np.errstate(invalid="ignore"):
            diff = np.abs(gv - ev)
        finite = np.isfinite(diff)
        err = float(diff[finite].max()) if finite.any() else float("inf")
        if not finite.all():
            err = float("inf")
        return ("values differ", err)
    # ints / bools: exact
    if np.array_equal(got, exp):
        return None
    if exp.dtype.kind in "iu":
        err = float(np.max(np.abs(got.astype(np.float64) - exp.astype(np.float64))))
        return ("values differ", err)
    return ("values differ (%d of %d)" % (int(np.sum(got != exp)), exp.size), None)


BF16_ULP_RTOL = 2.0 ** -7  # one unit in the last place of bfloat16, relative


def as_bf16_values(got, exp, rtol, atol):
    """A bfloat16 graph output: `mcc run` writes its uint16 bit patterns to
    the .npz; the expected .pb holds bfloat16 (onnx >= 1.14) or, in ONNX
    1.12/1.13 test data, the same bit patterns typed UINT16. Both become
    float32 values. That older data was made by truncating float32 (newer
    onnx and mcc round to nearest even), so against it one bfloat16 ulp is
    allowed. Returns (got, exp, rtol, atol)."""
    def f32(bits):
        return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)
    if got.dtype == np.uint16:
        got = f32(got)
    if exp.dtype == np.uint16:
        exp = f32(exp)
        rtol = max(rtol, BF16_ULP_RTOL)
    elif str(exp.dtype) == "bfloat16":
        exp = f32(exp.view(np.uint16))
    return got, exp, rtol, atol


# float8, 4-bit and 2-bit types, float8e8m0 (17-26): `mcc run` writes them
# as uint8 bytes laid out as ml_dtypes (numpy_helper.to_array) has them, one
# element per byte (docs/design/0009), so they are viewed as the expected
# ml_dtypes type and compared like the other types.
SMALL_TYPES = set(range(17, 27))


NEEDS_VALUE_RE = re.compile(r"input \d+ \('([^']+)'\) must be known at compile time")
# mcc names the graph inputs a computed value comes from.
COMPUTED_FROM_RE = re.compile(r"computed from graph inputs? ((?:'[^']+'(?:, )?)+)")


def compile_model(args, model_path, so, graph_inputs, ddir, frozen, res):
    """Compiles the test model; on an error that asks for a graph input's value
    at compile time (a shape, axes, scales ... input), freezes that input to
    its value in `ddir` with --const-input and tries again. Returns True when
    the .so is written, else records the failure in `res`."""
    while True:
        cmd = [args.mcc, "compile", model_path, "-o", so, "--target", args.target]
        for name in frozen:
            cmd += ["--const-input", "%s=%s" % (
                name, os.path.join(ddir, "input_%d.pb" % graph_inputs.index(name)))]
        try:
            r = run_cmd(cmd, args.timeout)
        except subprocess.TimeoutExpired:
            res.update(status="timeout", cause="compile timed out after %ss" % args.timeout)
            return False
        if r.returncode == 0 and os.path.isfile(so):
            return True
        line = first_error_line(r.stderr) or ("exit code %d" % r.returncode)
        m = NEEDS_VALUE_RE.search(line)
        if m and r.returncode > 0 and not args.no_freeze:
            behind = COMPUTED_FROM_RE.search(line)
            if m.group(1) in graph_inputs:
                needed = [m.group(1)]
            elif behind:
                # computed from graph inputs (an expanded function body)
                needed = [n for n in re.findall(r"'([^']+)'", behind.group(1))
                          if n in graph_inputs]
            else:
                # freeze the scalar ones it can only come from
                needed = [n for k, n in enumerate(graph_inputs)
                          if load_pb(os.path.join(ddir, "input_%d.pb" % k)).size == 1]
            needed = [n for n in needed if n not in frozen]
            if needed:
                frozen.extend(needed)
                continue
        cause = normalize_cause(line)
        if r.returncode < 0:
            cause = "compile crashed (signal %d)" % -r.returncode
            line = "crashed with signal %d" % -r.returncode + (
                "; " + line if r.stderr.strip() else "")
        res.update(status="compile-fail", cause=cause, detail=line[:500])
        return False


def bundle_dir(args, t):
    return os.path.join(args.bundle, re.sub(r"[^A-Za-z0-9_.-]", "_", t["id"]))


def bundle_data_set(args, t, so, ddir, ds, graph_inputs, frozen, out_names, res):
    """--bundle: keeps the .so (compiled for one data set's frozen values),
    that data set's inputs and its expected outputs, by name, to be run on
    another machine by scripts/run_node_bundle.py."""
    bdir = bundle_dir(args, t)
    os.makedirs(bdir, exist_ok=True)
    so_name = "model.so" if not frozen else "model-%s.so" % ds
    shutil.copyfile(so, os.path.join(bdir, so_name))
    inputs = {n: load_pb(os.path.join(ddir, "input_%d.pb" % k))
              for k, n in enumerate(graph_inputs) if n not in frozen}
    expected, i = {}, 0
    while os.path.isfile(os.path.join(ddir, "output_%d.pb" % i)) and i < len(out_names):
        expected[out_names[i]] = load_pb(os.path.join(ddir, "output_%d.pb" % i))
        i += 1
    np.savez_compressed(os.path.join(bdir, ds + "-inputs.npz"), **inputs)
    np.savez_compressed(os.path.join(bdir, ds + "-expected.npz"), **expected)
    res.setdefault("data_sets", []).append({"name": ds, "so": so_name})


def run_test(t, args, workdir):
    res = {"id": t["id"], "name": t["name"], "suite": t["suite"], "op_type": t["op_type"],
           "expanded": t["expanded"]}
    start = time.time()
    try:
        _run_test(t, args, workdir, res)
    except Exception as e:  # noqa: BLE001  (harness bug: report, keep going)
        res.update(status="run-fail", cause="harness error: %s" % e.__class__.__name__,
                   detail=str(e)[:300])
    res["seconds"] = round(time.time() - start, 3)
    return res


def _run_test(t, args, workdir, res):
    folder = t["folder"]
    reason = exclusion_reason_by_name(t["name"])
    model_path = os.path.join(folder, "model.onnx")
    if reason is None:
        try:
            model = onnx.load(model_path, load_external_data=False)
        except Exception as e:  # noqa: BLE001
            res.update(status="compile-fail", cause="model does not load with onnx",
                       detail=str(e)[:300])
            return
        bad = non_tensor_io(model)
        if bad:
            reason = "non-tensor graph input/output (%s)" % ", ".join(bad)
    if reason:
        res.update(status="skipped", cause=reason)
        return
    out_names = [o.name for o in model.graph.output]
    out_types = [o.type.tensor_type.elem_type for o in model.graph.output]

    tdir = os.path.join(workdir, re.sub(r"[^A-Za-z0-9_.-]", "_", t["id"]))
    os.makedirs(tdir, exist_ok=True)
    so = os.path.join(tdir, "model.so")
    run_env = None
    if args.threads:
        # Through the environment, not `mcc run --threads` (which currently fails
        # with "no OpenMP runtime is loaded" because it is applied before the model loads).
        run_env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    graph_inputs = [i.name for i in model.graph.input
                    if i.name not in {init.name for init in model.graph.initializer}]
    sets = sorted(d for d in os.listdir(folder)
                  if d.startswith("test_data_set_") and os.path.isdir(os.path.join(folder, d)))
    if not sets:
        res.update(status="skipped", cause="no test_data_set_* folder")
        return
    try:
        frozen = []  # graph inputs frozen with --const-input, in the order asked for
        compiled_for = None  # data set whose values the .so has frozen
        max_err = 0.0
        for ds in sets:
            ddir = os.path.join(folder, ds)
            if compiled_for is None or (frozen and compiled_for != ds):
                if not compile_model(args, model_path, so, graph_inputs, ddir, frozen, res):
                    return
                compiled_for = ds
            if args.bundle:
                bundle_data_set(args, t, so, ddir, ds, graph_inputs, frozen, out_names, res)
                continue
            out_npz = os.path.join(tdir, ds + ".npz")
            run_input = ddir
            if frozen:  # the .so takes the other inputs only, by name
                run_input = os.path.join(tdir, ds + "-inputs.npz")
                np.savez(run_input, **{n: load_pb(os.path.join(ddir, "input_%d.pb" % k))
                                       for k, n in enumerate(graph_inputs) if n not in frozen})
            cmd = [args.mcc, "run", so, "--input", run_input, "--output", out_npz]
            try:
                r = run_cmd(cmd, args.timeout, env=run_env)
            except subprocess.TimeoutExpired:
                res.update(status="timeout", cause="run timed out after %ss" % args.timeout,
                           data_set=ds)
                return
            if r.returncode != 0 or not os.path.isfile(out_npz):
                line = first_error_line(r.stderr) or ("exit code %d" % r.returncode)
                if r.returncode < 0:
                    line = "crashed with signal %d" % -r.returncode + ("; " + line if r.stderr.strip() else "")
                    cause = "run crashed (signal %d)" % -r.returncode
                else:
                    cause = normalize_cause(line)
                res.update(status="run-fail", cause=cause, detail=line[:500], data_set=ds)
                return
            with np.load(out_npz, allow_pickle=False) as z:
                got_all = {k: z[k] for k in z.files}
            i = 0
            while os.path.isfile(os.path.join(ddir, "output_%d.pb" % i)):
                exp = load_pb(os.path.join(ddir, "output_%d.pb" % i))
                name = out_names[i] if i < len(out_names) else None
                if name is None or name not in got_all:
                    res.update(status="run-fail", cause="missing output in npz",
                               detail="output %d (%r) not in %s" % (i, name, sorted(got_all)),
                               data_set=ds)
                    return
                got, rtol, atol = got_all[name], args.rtol, args.atol
                if out_types[i] == onnx.TensorProto.BFLOAT16:
                    got, exp, rtol, atol = as_bf16_values(got, exp, rtol, atol)
                elif out_types[i] in SMALL_TYPES and got.dtype == np.uint8 \
                        and exp.dtype.itemsize == 1:
                    got = got.view(exp.dtype)  # ml_dtypes' bytes, see SMALL_TYPES
                diff = compare(got, exp, rtol, atol)
                if diff is not None:
                    why, err = diff
                    cause = "values differ" if why.startswith("values differ") else re.sub(
                        r"\[[^\]]*\]", "[…]", why)
                    if why.startswith("NaN"):
                        cause = "NaN positions differ"
                    res.update(status="mismatch", cause=cause,
                               detail="output %d '%s': %s%s" % (
                                   i, name, why, "" if err is None else ", max abs err %.3g" % err),
                               max_abs_err=err, data_set=ds)
                    return
                i += 1
            if i == 0:
                res.update(status="skipped", cause="no expected outputs")
                return
        res.update(status="compiled" if args.bundle else "pass")
        if frozen:
            res["frozen"] = frozen
        if args.bundle:
            res["outputs"] = out_names
            res["out_types"] = out_types
    finally:
        if not args.keep:
            shutil.rmtree(tdir, ignore_errors=True)


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------

STATUS_ORDER = ["pass", "compiled", "compile-fail", "run-fail", "mismatch", "timeout", "skipped"]


def summarize(results):
    counts = collections.Counter(r["status"] for r in results)
    considered = [r for r in results if r["status"] != "skipped"]
    passed = counts["pass"] + counts["compiled"]
    total = len(considered)
    pct = 100.0 * passed / total if total else 0.0
    return counts, passed, total, pct


def failure_groups(results):
    groups = collections.defaultdict(list)
    for r in results:
        if r["status"] in ("pass", "compiled", "skipped"):
            continue
        groups[(r["status"], r.get("cause", "?"))].append(r)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def write_markdown(path, results, args, suites_info, elapsed, command):
    counts, passed, total, pct = summarize(results)
    skipped = [r for r in results if r["status"] == "skipped"]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = []
    L.append("# Supported ONNX ops (backend node-test conformance)")
    L.append("")
    L.append("<!-- Generated file: do not edit by hand. -->")
    L.append("Generated by `scripts/onnx_node_tests.py` on %s with:" % now)
    L.append("")
    L.append("```")
    L.append(command)
    L.append("```")
    L.append("")
    for s, n in suites_info:
        L.append("- Suite: `%s` (%d test folders)" % (s, n))
    if args.filter:
        L.append("- Filter: `%s`" % args.filter)
    L.append("- Target: `%s`%s; runtime %.0f s with %d jobs" % (
        args.target, " (compile only: 'compiled' counts as a pass)" if args.bundle else "",
        elapsed, args.jobs))
    L.append("- Comparison: shapes and dtypes must match; floating outputs must have identical NaN "
             "positions and satisfy `np.allclose(got, expected, rtol=%g, atol=%g)`; integer, "
             "bool and string outputs must match exactly. Every `test_data_set_*` must pass."
             % (args.rtol, args.atol))
    L.append("")
    L.append("**%d of %d tests pass (%.1f%%)**; %d tests excluded (training, sequence, optional "
             "and non-tensor-I/O families; listed at the end)." % (passed, total, pct, len(skipped)))
    L.append("")
    frozen = [r for r in results if r["status"] == "pass" and r.get("frozen")]
    if frozen:
        L.append("%d of the passes compile with a graph input frozen to its test value "
                 "(`mcc compile --const-input NAME=input_K.pb`): the input is a shape, axes, "
                 "scales, repeats or range operand, which mcc's static shapes need at compile "
                 "time (the runner retries when the error names such an input; `--no-freeze` "
                 "turns that off). They are listed at the end." % len(frozen))
        L.append("")
    L.append("| Result | Tests |")
    L.append("|---|---|")
    for st in STATUS_ORDER:
        L.append("| %s | %d |" % (st, counts.get(st, 0)))
    L.append("")

    # Per-op table
    L.append("## Per-op results")
    L.append("")
    L.append("The op type of a test is the `op_type` of the first non-`Constant` node of its model; "
             "`*_expanded` tests (the op's function body) are counted under the op of their "
             "non-expanded sibling. Excluded tests are not counted.")
    L.append("")
    per_op = collections.OrderedDict()
    for r in sorted(results, key=lambda r: r["op_type"].lower()):
        if r["status"] == "skipped":
            continue
        d = per_op.setdefault(r["op_type"], {"pass": 0, "total": 0, "failing": []})
        d["total"] += 1
        if r["status"] == "pass":
            d["pass"] += 1
        else:
            d["failing"].append(r)
    n_full = sum(1 for d in per_op.values() if d["pass"] == d["total"])
    n_part = sum(1 for d in per_op.values() if 0 < d["pass"] < d["total"])
    n_none = sum(1 for d in per_op.values() if d["pass"] == 0)
    L.append("%d op types: %d ✅ all tests pass, %d partial, %d ❌ no test passes." %
             (len(per_op), n_full, n_part, n_none))
    L.append("")
    L.append("| Op | Pass / total | Status | Main failure causes |")
    L.append("|---|---|---|---|")
    for op, d in per_op.items():
        if d["pass"] == d["total"]:
            st = "✅"
        elif d["pass"] == 0:
            st = "❌"
        else:
            st = "partial"
        causes = collections.Counter("%s: %s" % (r["status"], r.get("cause", "?"))
                                     for r in d["failing"])
        cs = "; ".join("%s (%d)" % (c, n) if n > 1 else c for c, n in causes.most_common(3))
        if len(causes) > 3:
            cs += "; …"
        L.append("| %s | %d / %d | %s | %s |" % (md_escape(op), d["pass"], d["total"], st,
                                                  md_escape(cs)))
    L.append("")

    # Failures by cause
    L.append("## Failures by cause")
    L.append("")
    groups = failure_groups(results)
    L.append("%d failing tests in %d causes." % (sum(len(v) for _, v in groups), len(groups)))
    L.append("")
    for (status, cause), rs in groups:
        L.append("### %s: %s (%d)" % (status, md_escape(cause), len(rs)))
        L.append("")
        for r in sorted(rs, key=lambda r: r["id"]):
            extra = ""
            m = re.search(r"default-domain opset (\d+)", r.get("detail", ""))
            if m:
                extra = " (opset %s)" % m.group(1)
            elif r["status"] == "mismatch" and r.get("detail"):
                extra = " — %s" % r["detail"]
            elif r.get("detail") and r["status"] != "compile-fail" and "crash" in r.get("cause", ""):
                extra = " — %s" % r["detail"][:160]
            L.append("- `%s`%s" % (r["id"], md_escape(extra)))
        L.append("")

    if frozen:
        L.append("## Passes with frozen inputs")
        L.append("")
        for r in sorted(frozen, key=lambda r: r["name"]):
            L.append("- `%s`: %s" % (r["name"], ", ".join("`%s`" % n for n in r["frozen"])))
        L.append("")
    # Excluded
    L.append("## Excluded tests")
    L.append("")
    L.append("Excluded by name (containing `sequence` (but not `reversesequence`), `optional`, `training`, `adagrad`, `adam`, "
             "`momentum`, `gradient`) or because the model has a non-tensor (sequence, map, "
             "optional) graph input or output. `*_expanded` variants are not excluded as such.")
    L.append("")
    by_reason = collections.defaultdict(list)
    for r in skipped:
        reason = r.get("cause", "?")
        if reason.startswith("non-tensor"):
            reason = "non-tensor graph input/output"
        by_reason[reason].append(r["id"])
    for reason in sorted(by_reason, key=lambda k: (-len(by_reason[k]), k)):
        ids = sorted(by_reason[reason])
        L.append("**%s** (%d): %s" % (md_escape(reason), len(ids), ", ".join("`%s`" % i for i in ids)))
        L.append("")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(L).rstrip() + "\n")


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="append", help="test folder root (repeatable; default %s)"
                    % DEFAULT_SUITE)
    ap.add_argument("--mcc", default=os.environ.get("MCC", "build/tools/mcc/mcc"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP_NUM_THREADS for `mcc run` (0: leave unset, all cores)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per compile / run")
    ap.add_argument("--filter", help="regex over test names")
    ap.add_argument("--json", help="write per-test results here")
    ap.add_argument("--markdown", help="write the supported-ops document here")
    ap.add_argument("--min-pass", type=int, default=None, help="exit 1 if fewer tests pass")
    ap.add_argument("--workdir", help="scratch folder (default: a temp dir, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep per-test .so/.npz files")
    ap.add_argument("--no-freeze", action="store_true",
                    help="never retry a compile with --const-input for inputs whose value it needs")
    ap.add_argument("--rtol", type=float, default=DEFAULT_RTOL)
    ap.add_argument("--atol", type=float, default=DEFAULT_ATOL)
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--bundle", help="compile only: write each compiled test's .so, inputs and "
                    "expected outputs under this folder (with manifest.json), to run on another "
                    "machine with scripts/run_node_bundle.py; status 'compiled' counts as a pass")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args()
    if args.bundle:
        os.makedirs(args.bundle, exist_ok=True)

    suites = args.suite or [DEFAULT_SUITE]
    for s in suites:
        if not os.path.isdir(s):
            sys.exit("no such suite folder: %s" % s)
    if not (os.path.isfile(args.mcc) or shutil.which(args.mcc)):
        time.sleep(5)  # the binary may be mid-rebuild
        if not (os.path.isfile(args.mcc) or shutil.which(args.mcc)):
            sys.exit("mcc not found: %s" % args.mcc)
    if os.path.isfile(args.mcc):
        args.mcc = os.path.abspath(args.mcc)

    command = "python3 scripts/onnx_node_tests.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    tests = discover(suites, args.filter)
    suites_info = [(s, sum(1 for t in tests if t["suite"] == s)) for s in suites]
    own_workdir = args.workdir is None
    workdir = args.workdir or tempfile.mkdtemp(prefix="mcc-node-tests-")
    os.makedirs(workdir, exist_ok=True)

    t0 = time.time()
    results = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = [pool.submit(run_test, t, args, workdir) for t in tests]
            for n, fut in enumerate(concurrent.futures.as_completed(futs), 1):
                r = fut.result()
                results.append(r)
                if not args.quiet:
                    msg = r["status"] + ("" if r["status"] == "pass" else ": " + r.get("cause", ""))
                    print("[%d/%d %.0fs] %s %s" % (n, len(tests), time.time() - t0, r["id"], msg),
                          file=sys.stderr, flush=True)
    finally:
        if own_workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.time() - t0
    results.sort(key=lambda r: r["id"])

    counts, passed, total, pct = summarize(results)
    print("%d of %d tests pass (%.1f%%); %s; %.0f s" % (
        passed, total, pct, ", ".join("%s %d" % (s, counts.get(s, 0)) for s in STATUS_ORDER),
        elapsed))
    groups = failure_groups(results)
    for (status, cause), rs in groups[:10]:
        print("  %4d  %s: %s" % (len(rs), status, cause))

    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"command": command, "suites": dict(suites_info), "mcc": args.mcc,
                       "rtol": args.rtol, "atol": args.atol, "elapsed_s": round(elapsed, 1),
                       "summary": {"pass": passed, "considered": total, "percent": round(pct, 2),
                                   "counts": dict(counts)},
                       "results": results}, f, indent=1)
    if args.bundle:
        with open(os.path.join(args.bundle, "manifest.json"), "w") as f:
            json.dump({"command": command, "target": args.target, "rtol": args.rtol,
                       "atol": args.atol,
                       "tests": [dict(r, dir=os.path.basename(bundle_dir(args, r)))
                                 for r in results if r["status"] == "compiled"]}, f, indent=1)
    if args.markdown:
        write_markdown(args.markdown, results, args, suites_info, elapsed, command)
    if args.min_pass is not None and passed < args.min_pass:
        print("FAIL: %d tests pass, fewer than --min-pass %d" % (passed, args.min_pass),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
