#!/usr/bin/env python3
"""Rebuild a model's external weights file from its ONNX model.

`mcc compile --weights external -o M.so` writes M.so.weights (the packed
weights), M.so.weights.json (which ONNX initializer each record is) and
M.so.weights.derived (the few records computed while compiling). Where a
weights file is too big to carry, carry the .so, the .json and the
.derived file, regenerate the ONNX model there the same way (same seed),
and run:

    python3 scripts/pack_weights.py model.onnx M.so.weights.json -o M.so.weights

The result is checked against the checksum the .so carries.
"""
import argparse
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def to_bf16(x):
    """bf16 bits of f32 array x, round to nearest even (NaN stays a quiet
    NaN): what mcc's compiler and vcvtneps2bf16 compute."""
    u = x.view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    return np.where(nan, (u >> 16) | 0x40, r).astype(np.uint16)


def amx_tiles(data, d0, d1, layout):
    """d0 x d1 f32 bytes as mcc's AMX bf16x3 tiles, parts bf16(x) and
    bf16(x - it). "k_pairs" (B, K x N): [N/16][K/32][2 parts][16][16
    columns][2 steps of K]; "rows" (A, M x K): [M/16][K/32][2 parts][16
    rows][32 steps of K]."""
    x = np.frombuffer(data, dtype=np.float32).reshape(d0, d1)
    hi = to_bf16(x)
    back = (hi.astype(np.uint32) << 16).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        rest = (x - back).astype(np.float32)
    lo = np.where(np.isfinite(back), to_bf16(rest), np.uint16(0)).astype(np.uint16)
    parts = np.stack([hi, lo])                                # [2][d0][d1]
    if layout == "k_pairs":
        t = parts.reshape(2, d0 // 32, 16, 2, d1 // 16, 16)   # part, step, row, j, block, col
        t = t.transpose(4, 1, 0, 2, 5, 3)                     # block, step, part, row, col, j
    else:
        t = parts.reshape(2, d0 // 16, 16, d1 // 32, 32)      # part, block, row, step, c
        t = t.transpose(1, 3, 0, 2, 4)                        # block, step, part, row, c
    return np.ascontiguousarray(t).tobytes()


def checksum(data):
    """The .so's check: FNV-1a over the first and last 64 KiB and the size."""
    h = 1469598103934665603
    mask = (1 << 64) - 1
    size = len(data)
    window = 65536
    for b in data[:min(size, window)]:
        h = ((h ^ b) * 1099511628211) & mask
    for b in data[max(size - window, 0):]:
        h = ((h ^ b) * 1099511628211) & mask
    for i in range(8):
        h = ((h ^ ((size >> (8 * i)) & 0xFF)) * 1099511628211) & mask
    return h


def fingerprint(data):
    edge = min(16, len(data))
    return (data[:edge] + data[len(data) - edge:]).hex()


def match_renumbered(records, inits):
    """Another torch version's exporter may number its initializers
    differently ("onnx::MatMul_1504" here is another tensor, or none, in a
    re-export). A record whose name is missing, or names a tensor of
    another size or fingerprint (its first and last 16 bytes, written by
    mcc into the plan), is found by size and fingerprint instead. The
    checksum and the benchmark's comparison with torch check the result."""
    arrays = {}

    def data_of(name):
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(inits[name]).tobytes()
        return arrays[name]

    def same(r, name):
        if name not in inits:
            return False
        d = data_of(name)
        return len(d) == r["size"] and ("fingerprint" not in r or fingerprint(d) == r["fingerprint"])

    moved = [r for r in records if "initializer" in r and not same(r, r["initializer"])]
    if not moved:
        return {}
    by_print = {}
    for name in inits:
        d = data_of(name)
        by_print.setdefault((len(d), fingerprint(d)), name)
    out = {}
    for r in moved:
        name = by_print.get((r["size"], r.get("fingerprint")))
        if name is not None:
            out[r["initializer"]] = inits[name]
    print(f"found {len(out)} of {len(moved)} renamed initializers by fingerprint", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("plan")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    plan = json.load(open(args.plan))
    derived_path = args.plan[:-len(".json")] + ".derived" if args.plan.endswith(".json") else None
    derived = open(derived_path, "rb").read() if derived_path and os.path.exists(derived_path) else b""
    model = onnx.load(args.model, load_external_data=True)
    inits = {t.name: t for t in model.graph.initializer}
    renamed = match_renumbered(plan["records"], inits)
    blob = bytearray(plan["bytes"])
    for r in plan["records"]:
        if "initializer" in r:
            t = renamed.get(r["initializer"])
            if t is None:
                t = inits.get(r["initializer"])
            if t is None:
                sys.exit(f"initializer {r['initializer']!r} is not in {args.model}")
            data = numpy_helper.to_array(t).tobytes()
        else:
            data = derived[r["derived_offset"]: r["derived_offset"] + r["size"]]
        if len(data) != r["size"]:
            sys.exit(f"record at {r['offset']}: {len(data)} bytes, the plan says {r['size']}")
        if "panels" in r:
            # K x N f32 as [N / nr][K][nr] column panels (mcc's CPU products
            # read weights that way).
            k, n = r["shape"]
            nr = r["panels"]
            a = np.frombuffer(data, dtype=np.float32).reshape(k, n // nr, nr)
            data = np.ascontiguousarray(a.transpose(1, 0, 2)).tobytes()
        if r.get("amx_tiles"):
            data = amx_tiles(data, *r["shape"], r["amx_tiles"])
        blob[r["offset"]: r["offset"] + r["size"]] = data
    got = checksum(blob)
    if got != plan["checksum"]:
        sys.exit(f"checksum {got} != {plan['checksum']}: this ONNX model's weights are "
                 "not the ones the .so was compiled from")
    tmp = args.output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, args.output)
    print(f"wrote {args.output}: {len(blob)} bytes, checksum ok")


if __name__ == "__main__":
    main()
