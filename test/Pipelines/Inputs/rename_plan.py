"""Rewrites a .weights.json as if the model had been re-exported by another
exporter that numbers its initializers differently: every initializer name
gets a suffix (so none is found by name), or, with --corrupt, one record's
fingerprint is changed too (so it cannot be found at all)."""
import json
import sys

plan = json.load(open(sys.argv[1]))
renamed = 0
for r in plan["records"]:
    if "initializer" in r:
        r["initializer"] += "_elsewhere"
        renamed += 1
if "--corrupt" in sys.argv:
    first = next(r for r in plan["records"] if "initializer" in r)
    first["fingerprint"] = "00" * (len(first["fingerprint"]) // 2)
json.dump(plan, open(sys.argv[2], "w"))
print(f"renamed {renamed}")
