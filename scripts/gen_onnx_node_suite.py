#!/usr/bin/env python3
"""Writes the ONNX backend node-test suite of the installed onnx package.

The PyPI onnx wheels up to 1.17 carried `onnx/backend/test/data/node`; later
ones (1.23 here) carry only the test-case code that produces it
(`onnx.backend.test.case.node`). This writes each case as the suite's usual
folder: model.onnx and test_data_set_<i>/{input,output}_<j>.pb, so that
scripts/onnx_node_tests.py can run it with --suite.

    python3 scripts/gen_onnx_node_suite.py -o /tmp/onnx-node-suite
    python3 scripts/onnx_node_tests.py --suite /tmp/onnx-node-suite/node
"""
import argparse
import os
import shutil
import warnings

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def proto(value, vi):
    t = vi.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, vi.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, vi.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, vi.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, vi.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    root = os.path.join(args.output, "node")
    if os.path.exists(root):
        shutil.rmtree(root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    written = 0
    for case in cases:
        folder = os.path.join(root, case.name)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets or []):
            ds = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(ds)
            for j, v in enumerate(inputs):
                with open(os.path.join(ds, f"input_{j}.pb"), "wb") as f:
                    f.write(proto(v, case.model.graph.input[j]).SerializeToString())
            for j, v in enumerate(outputs):
                with open(os.path.join(ds, f"output_{j}.pb"), "wb") as f:
                    f.write(proto(v, case.model.graph.output[j]).SerializeToString())
        written += 1
    print(f"wrote {written} node tests of onnx {onnx.__version__} to {root}")


if __name__ == "__main__":
    main()
