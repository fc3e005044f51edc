"""Rewrites a .weights.json as if the model had been re-exported by another
exporter that numbers its initializers differently: every initializer name
gets a suffix (so none is found by name); with --swap two records of one
size trade names; with --corrupt, one record's
fingerprint is changed too (so it cannot be found at all)."""
import json
import sys

plan = json.load(open(sys.argv[1]))
renamed = 0
named = [r for r in plan["records"] if "initializer" in r]
if "--swap" in sys.argv:
    # Two same-size records trade names: each name exists, but is the
    # other tensor (what a renumbering exporter does).
    sizes = {}
    for r in named:
        sizes.setdefault(r["size"], []).append(r)
    a, b = next(v for v in sizes.values() if len(v) >= 2)[:2]
    a["initializer"], b["initializer"] = b["initializer"], a["initializer"]
    renamed = 2
else:
    for r in named:
        r["initializer"] += "_elsewhere"
        renamed += 1
if "--corrupt" in sys.argv:
    first = next(r for r in plan["records"] if "initializer" in r)
    first["fingerprint"] = "00" * (len(first["fingerprint"]) // 2)
json.dump(plan, open(sys.argv[2], "w"))
print(f"renamed {renamed}")
