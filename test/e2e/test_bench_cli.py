#!/usr/bin/env python3
"""`mcc bench` on a compiled model: JSON with ordered percentiles, and the
same numbers' shape in text mode; bad arguments are errors."""
import json
import subprocess
import sys

mcc, so = sys.argv[1], sys.argv[2]
r = subprocess.run([mcc, "bench", so, "--warmup", "2", "--iterations", "15", "--json"],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
j = json.loads(r.stdout)
assert j["iterations"] == 15 and j["target"] == "cpu", j
assert 0 < j["min_ms"] <= j["p50_ms"] <= j["p90_ms"] <= j["p99_ms"], j
r = subprocess.run([mcc, "bench", so, "--iterations", "5"], capture_output=True, text=True)
assert r.returncode == 0 and "p50" in r.stdout and "p99" in r.stdout, r
r = subprocess.run([mcc, "bench", so, "--iterations", "0"], capture_output=True, text=True)
assert r.returncode != 0 and "--iterations" in r.stderr, r
r = subprocess.run([mcc, "bench", "/nonexistent.so"], capture_output=True, text=True)
assert r.returncode != 0 and "no such file" in r.stderr, r
print("mcc bench: ok", j)
