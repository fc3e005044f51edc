"""make_conv1x1.py DIR [H W [CIN COUT]]: a 1x1 convolution (CIN -> COUT
channels, default 64 -> 64, over H x W, default 16 x 14) with ReLU, its inputs and ONNX Runtime's outputs, for
tests of products whose weight is A (DIR/model.onnx, inputs.npz,
reference.npz)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
h, w_ = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (16, 14)
cin, cout = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (64, 64)
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
w = (rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
b = (rng.standard_normal(cout) / 10).astype(np.float32)
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]),
         helper.make_node("Relu", ["c"], ["y"])]
graph = helper.make_graph(
    nodes, "conv1x1", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w_])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, h, w_])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(out, "model.onnx")
onnx.save(model, path)
x = rng.standard_normal((1, cin, h, w_)).astype(np.float32)
y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
np.savez(os.path.join(out, "inputs.npz"), x=x)
np.savez(os.path.join(out, "reference.npz"), y=y)
