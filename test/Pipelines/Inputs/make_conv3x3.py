"""make_conv3x3.py DIR [C H]: a 3x3 convolution (C -> C channels, default
64, over H x H, default 28, padding 1) with ReLU, its inputs and ONNX
Runtime's outputs (DIR/model.onnx, inputs.npz, reference.npz); mcc takes
it through Winograd's transformed products."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
c, h = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (64, 28)
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
b = (rng.standard_normal(c) / 10).astype(np.float32)
nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])]
graph = helper.make_graph(
    nodes, "conv3x3", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, h, h])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
path = os.path.join(out, "model.onnx")
onnx.save(model, path)
x = rng.standard_normal((1, c, h, h)).astype(np.float32)
y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
np.savez(os.path.join(out, "inputs.npz"), x=x)
np.savez(os.path.join(out, "reference.npz"), y=y)
