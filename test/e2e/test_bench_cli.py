#!/usr/bin/env python3
"""`mcc bench` (and `mcc-run bench`, the runtime-only tool) on a compiled
cpu model: JSON with ordered percentiles, and the same numbers' shape in
text mode; --kernels gives a per-op profile; bad arguments are errors."""
import json
import subprocess
import sys

mcc, so, mcc_run = sys.argv[1], sys.argv[2], sys.argv[3]
r = subprocess.run([mcc, "bench", so, "--warmup", "2", "--iterations", "15", "--json"],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
j = json.loads(r.stdout)
assert j["iterations"] == 15 and j["target"] == "cpu", j
assert 0 < j["min_ms"] <= j["p50_ms"] <= j["p90_ms"] <= j["p99_ms"], j
assert "device" not in j and "kernels" not in j, j  # GPU models only
r = subprocess.run([mcc_run, "bench", so, "--warmup", "1", "--iterations", "4", "--json"],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
k = json.loads(r.stdout)
assert k["iterations"] == 4 and 0 < k["min_ms"] <= k["p99_ms"], k
for tool in (mcc, mcc_run):
    r = subprocess.run([tool, "bench", so, "--iterations", "3", "--kernels", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    prof = json.loads(r.stdout)["kernels"]
    ops = prof["by_name"]
    assert prof["runs"] == 3 and len(ops) > 5 and prof["launches_per_run"] == len(ops), prof
    assert all(o["name"].startswith("#") and o["launches_per_run"] == 1 for o in ops), ops
    assert ops == sorted(ops, key=lambda o: -o["ms_per_run"]), ops
    r = subprocess.run([tool, "bench", so, "--iterations", "3", "--kernels"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "per op, 3 profiled runs" in r.stdout and "matmul" in r.stdout, r
r = subprocess.run([mcc, "bench", so, "--iterations", "5"], capture_output=True, text=True)
assert r.returncode == 0 and "p50" in r.stdout and "p99" in r.stdout, r
r = subprocess.run([mcc, "bench", so, "--iterations", "0"], capture_output=True, text=True)
assert r.returncode != 0 and "--iterations" in r.stderr, r
r = subprocess.run([mcc, "bench", "/nonexistent.so"], capture_output=True, text=True)
assert r.returncode != 0 and "no such file" in r.stderr, r
print("mcc bench: ok", j)
