#!/usr/bin/env python3
"""Wraps a tensor-level @forward with dynamic dims into a runnable check.

For each --case (the concrete shapes of @forward's dynamic arguments, in
order, e.g. `--case 2x7x64 --case 1x1x64`) the module gets a static twin,
@forward_static_<k>: the same body with static argument types cast to the
dynamic ones at entry, so that canonicalization makes it static again and
the pipeline compiles it by the static paths. @main fills the arguments
with deterministic values, calls both functions and prints, per result,
its shape and `ok` (or `MISMATCH`) for max |dyn - static| / (1 + |static|)
<= --tol. Run the output through mcc-opt --mcc-cpu-pipeline and mlir-runner.
Only f32 arguments and results.
"""

import argparse
import re
import sys

ARG = re.compile(r"%([\w.$-]+)\s*:\s*(tensor<[^>]*>)")
TYPE = re.compile(r"tensor<([^>]*)>")


def dims_of(ty):
    body = TYPE.fullmatch(ty).group(1)
    parts = body.split("x")
    assert parts[-1] == "f32", f"only f32 tensors: {ty}"
    return parts[:-1]


def tensor(dims):
    return "tensor<" + "".join(f"{d}x" for d in dims) + "f32>"


def function_text(text, name):
    # Not a mention in a comment (a FileCheck line): a line that starts
    # with the definition.
    start = re.search(rf"^\s*func\.func @{name}\(", text, re.M).start()
    depth, i = 0, text.index("{", text.index(")", start))
    # The body's brace is the first `{` after the signature that is not an
    # argument attribute dict: skip balanced (...) of the signature first.
    paren, j = 0, text.index("(", start)
    while True:
        if text[j] == "(":
            paren += 1
        elif text[j] == ")":
            paren -= 1
            if paren == 0:
                break
        j += 1
    sig_end = j + 1
    i = text.index("{", sig_end)
    # A result list `-> (...)` has no braces; attributes may.
    if "attributes" in text[sig_end:i]:
        k = text.index("{", i + 1)
        depth = 0
        for m in range(i, len(text)):
            if text[m] == "{":
                depth += 1
            elif text[m] == "}":
                depth -= 1
                if depth == 0:
                    i = text.index("{", m + 1)
                    break
    depth = 0
    for end in range(i, len(text)):
        if text[end] == "{":
            depth += 1
        elif text[end] == "}":
            depth -= 1
            if depth == 0:
                return start, sig_end, i, end + 1
    raise ValueError("unbalanced function")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("input")
    p.add_argument("--case", action="append", required=True,
                   help="shapes of the dynamic args, comma-separated")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--repeat", type=int, default=0,
                   help="time this many calls of each (needs runner utils)")
    p.add_argument("--forward-out", required=True)
    p.add_argument("--main-out", required=True)
    a = p.parse_args()
    text = open(a.input).read()
    start, sig_end, body, end = function_text(text, "forward")
    args = ARG.findall(text[start:sig_end])
    results = TYPE.findall(text[sig_end:body])
    results = [f"tensor<{r}>" for r in results]
    out = [text]
    for k, case in enumerate(a.case):
        shapes = iter(case.partition(";")[0].split(","))
        static = []
        for name, ty in args:
            d = dims_of(ty)
            if "?" in d:
                s = next(shapes).split("x")
                assert len(s) == len(d), f"{name}: rank of {case}"
                static.append(tensor(s))
            else:
                static.append(ty)
        sig = ", ".join(f"%{n}__s: {t}" for (n, _), t in zip(args, static))
        casts = "".join(
            f"\n  %{n} = tensor.cast %{n}__s : {t} to {ty}"
            for (n, ty), t in zip(args, static))
        res = ", ".join(results)
        fn = (f"func.func @forward_static_{k}({sig}) -> ({res}) {{" + casts +
              text[body + 1:end] + "\n")
        out.append(fn)
    with open(a.forward_out, "w") as f:
        f.write("\n".join(out))
    with open(a.main_out, "w") as f:
        f.write(main_module(args, results, a.case, a.tol, a.repeat))


def main_module(args, results, cases, tol, repeat=0):
    """@main on buffers, lowered apart from @forward (which the pipeline
    turns into a function of input and output buffers) and linked to it."""
    m = []
    n = 0

    def fresh():
        nonlocal n
        n += 1
        return f"%v{n}"

    def buffer(shape, ty, seed):
        """A flat buffer of sin(0.37 * i + seed), viewed as `ty`."""
        count = 1
        for d in shape:
            count *= int(d)
        flat, view, cast = fresh(), fresh(), fresh()
        m.append(f"  {flat} = memref.alloc() : memref<{count}xf32>")
        m.append(f"  %n{flat[1:]} = arith.constant {count} : index")
        m.append(f"  %s{flat[1:]} = arith.constant {seed}.0 : f32")
        m.append(f"  scf.for %i = %c0 to %n{flat[1:]} step %c1 {{")
        m.append("    %ii = arith.index_cast %i : index to i64")
        m.append("    %if = arith.sitofp %ii : i64 to f32")
        m.append("    %x = arith.mulf %if, %scale : f32")
        m.append(f"    %y = arith.addf %x, %s{flat[1:]} : f32")
        m.append("    %z = math.sin %y : f32")
        m.append(f"    memref.store %z, {flat}[%i] : memref<{count}xf32>")
        m.append("  }")
        st = "memref<" + "".join(f"{d}x" for d in shape) + "f32>"
        if shape:
            grp = "[[" + ", ".join(str(t) for t in range(len(shape))) + "]]"
            m.append(f"  {view} = memref.expand_shape {flat} {grp} output_shape "
                     f"[{', '.join(shape)}] : memref<{count}xf32> into {st}")
        else:
            m.append(f"  {view} = memref.collapse_shape {flat} [] : "
                     f"memref<{count}xf32> into {st}")
        dyn = ty.replace("tensor<", "memref<")
        m.append(f"  {cast} = memref.cast {view} : {st} to {dyn}")
        return flat, count, view, st, cast, dyn

    decls = {}
    calls = []
    for k, case in enumerate(cases):
        ins, _, outs = case.partition(";")
        shapes = iter(ins.split(","))
        out_shapes = outs.split(",")
        assert len(out_shapes) == len(results), f"result shapes of {case}"
        dyn_args, static_args = [], []
        for i, (_, ty) in enumerate(args):
            d = dims_of(ty)
            s = next(shapes).split("x") if "?" in d else d
            _, _, view, st, cast, dyn = buffer(s, ty, i)
            dyn_args.append((cast, dyn))
            static_args.append((view, st))
        outs_dyn, outs_static = [], []
        for j, rt in enumerate(results):
            s = out_shapes[j].split("x")
            for side in (outs_dyn, outs_static):
                flat, count, _, _, cast, dyn = buffer(s, rt, 100 + j)
                side.append((flat, count, cast, dyn))
        for name, ins_ in ((f"forward", dyn_args),
                           (f"forward_static_{k}", static_args)):
            outs_ = outs_dyn if name == "forward" else outs_static
            operands = ins_ + [(c, t) for _, _, c, t in outs_]
            decls[name] = ", ".join(t for _, t in operands)
            call = (f"func.call @{name}({', '.join(v for v, _ in operands)}) : "
                    f"({decls[name]}) -> ()")
            if repeat:
                # Timing (not for lit): a warm-up call, then `repeat` calls.
                t0, t1, dt = fresh(), fresh(), fresh()
                m.append(f"  {call}")
                m.append(f"  %r{t0[1:]} = arith.constant {repeat} : index")
                m.append(f"  {t0} = func.call @rtclock() : () -> f64")
                m.append(f"  scf.for %i = %c0 to %r{t0[1:]} step %c1 {{")
                m.append(f"    {call}")
                m.append("  }")
                m.append(f"  {t1} = func.call @rtclock() : () -> f64")
                m.append(f"  {dt} = arith.subf {t1}, {t0} : f64")
                m.append(f'  vector.print str "case {k} {name} seconds: "')
                m.append(f"  vector.print {dt} : f64")
            else:
                m.append(f"  {call}")
        for j in range(len(results)):
            (fx, count, _, _), (fy, _, _, _) = outs_dyn[j], outs_static[j]
            err, ok = fresh(), fresh()
            m.append(f"  %c{err[1:]} = arith.constant {count} : index")
            m.append(f"  {err} = scf.for %i = %c0 to %c{err[1:]} step %c1 "
                     "iter_args(%acc = %zero) -> (f32) {")
            m.append(f"    %a = memref.load {fx}[%i] : memref<{count}xf32>")
            m.append(f"    %b = memref.load {fy}[%i] : memref<{count}xf32>")
            m.append("    %d = arith.subf %a, %b : f32")
            m.append("    %ad = math.absf %d : f32")
            m.append("    %ab = math.absf %b : f32")
            m.append("    %den = arith.addf %ab, %one : f32")
            m.append("    %r = arith.divf %ad, %den : f32")
            m.append("    %mx = arith.maximumf %r, %acc : f32")
            m.append("    scf.yield %mx : f32")
            m.append("  }")
            m.append(f'  vector.print str "case {k} result {j}: "')
            m.append(f"  {ok} = arith.cmpf ole, {err}, %tol : f32")
            m.append(f"  scf.if {ok} {{")
            m.append('    vector.print str "ok\\n"')
            m.append("  } else {")
            m.append('    vector.print str "MISMATCH "')
            m.append(f"    vector.print {err} : f32")
            m.append("  }")
    head = [f"func.func private @{name}({t})" for name, t in decls.items()]
    if repeat:
        head.append("func.func private @rtclock() -> f64")
    head += ["func.func @main() {",
             "  %c0 = arith.constant 0 : index",
             "  %c1 = arith.constant 1 : index",
             f"  %tol = arith.constant {tol:e} : f32",
             "  %one = arith.constant 1.0 : f32",
             "  %zero = arith.constant 0.0 : f32",
             "  %scale = arith.constant 0.37 : f32"]
    return "\n".join(head + m + ["  return", "}"]) + "\n"


if __name__ == "__main__":
    main()
