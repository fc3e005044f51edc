#!/usr/bin/env python3
"""compare_npz.py GOT.npz REF.npz [--tol 1e-4]: max|Δ|/max|ref| per array."""
import argparse
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("got")
ap.add_argument("ref")
ap.add_argument("--tol", type=float, default=1e-4)
a = ap.parse_args()
got, ref = np.load(a.got), np.load(a.ref)
ok = True
for k in ref.files:
    if k not in got.files:
        print(f"{k}: MISSING from {a.got}")
        ok = False
        continue
    g, r = got[k].astype(np.float64), ref[k].astype(np.float64)
    if g.shape != r.shape:
        print(f"{k}: shape {g.shape} != reference {r.shape}")
        ok = False
        continue
    err = np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-30)
    good = err <= a.tol
    ok &= bool(good)
    print(f"{k}: shape {list(g.shape)} relative error {err:.2e} "
          f"({'matches' if good else 'DOES NOT MATCH'} the reference, tol {a.tol:g})")
print("OK: mcc output matches the PyTorch reference" if ok else "FAIL")
sys.exit(0 if ok else 1)
