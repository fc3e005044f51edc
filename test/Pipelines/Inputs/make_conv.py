"""make_conv.py DIR [H W [CIN COUT [K]]]: a K x K convolution (default 1 x
1; "same" padding) from CIN to COUT channels (default 64 -> 64) over H x W
(default 16 x 14), with ReLU, its inputs and ONNX Runtime's outputs
(DIR/model.onnx, inputs.npz, reference.npz), for tests of the products a
convolution becomes (1 x 1: its weight is A; 3 x 3 over 28 x 28: Winograd's
batched products)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
h, w_ = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (16, 14)
cin, cout = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (64, 64)
k = int(sys.argv[6]) if len(sys.argv) > 6 else 1
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
w = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
b = (rng.standard_normal(cout) / 10).astype(np.float32)
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                          pads=[k // 2] * 4),
         helper.make_node("Relu", ["c"], ["y"])]
graph = helper.make_graph(
    nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w_])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, h, w_])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(out, "model.onnx")
onnx.save(model, path)
x = rng.standard_normal((1, cin, h, w_)).astype(np.float32)
y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
np.savez(os.path.join(out, "inputs.npz"), x=x)
np.savez(os.path.join(out, "reference.npz"), y=y)
