#!/usr/bin/env python3
"""Small ONNX graphs for cases the backend node tests lack, with onnxruntime's outputs: the
reference of onnx/tests/ort_cases.rs. (onnx.reference 1.22 computes SAME_UPPER wrongly for an
odd total padding; onnxruntime is the reference here.)

    onnx_cases.py OUT_DIR    # OUT_DIR/<case>/model.onnx, input_<i>.npy, output_<i>.npy
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(17)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def case(name, nodes, inputs, outputs, inits, feeds, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    for i, x in enumerate(feeds):
        np.save(os.path.join(d, f"input_{i}.npy"), x)
    for i, y in enumerate(sess.run(None, dict(zip(names, feeds)))):
        np.save(os.path.join(d, f"output_{i}.npy"), y)


def vi(name, dtype, shape):
    """A value info; an empty shape list means the rank is left unknown (outputs)."""
    info = helper.make_tensor_value_info(name, dtype, shape or None)
    if not shape:
        info.type.tensor_type.ClearField("shape")
    return info


def main():
    case("depthwise_5x5_s2_same_upper",
         [helper.make_node("Conv", ["x", "w", "b"], ["y"], group=8, kernel_shape=[5, 5],
                           strides=[2, 2], auto_pad="SAME_UPPER")],
         [vi("x", TensorProto.FLOAT, [1, 8, 15, 15])], [vi("y", TensorProto.FLOAT, [])],
         [("w", f32(8, 1, 5, 5)), ("b", f32(8))], [f32(1, 8, 15, 15)])
    case("stem_pads_0011",
         [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                           pads=[0, 0, 1, 1])],
         [vi("x", TensorProto.FLOAT, [1, 3, 16, 16])], [vi("y", TensorProto.FLOAT, [])],
         [("w", f32(4, 3, 3, 3))], [f32(1, 3, 16, 16)])
    case("softmax_axis1_4d",
         [helper.make_node("Softmax", ["x"], ["y"], axis=1)],
         [vi("x", TensorProto.FLOAT, [2, 5, 3, 4])], [vi("y", TensorProto.FLOAT, [])],
         [], [f32(2, 5, 3, 4)])
    case("resize_2x_asymmetric_floor",
         [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                           coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
         [vi("x", TensorProto.FLOAT, [1, 2, 3, 4])], [vi("y", TensorProto.FLOAT, [])],
         [("scales", np.array([1, 1, 2, 2], np.float32))], [f32(1, 2, 3, 4)])
    # 1x1 convolutions (the GPU's tiled GEMM) at sizes that are no multiple of its tiles, a
    # batch folded into its columns, and the activations fused into it.
    case("pointwise_relu6_batch3",
         [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]),
          helper.make_node("Clip", ["c", "lo", "hi"], ["y"])],
         [vi("x", TensorProto.FLOAT, [3, 37, 9, 7])], [vi("y", TensorProto.FLOAT, [])],
         [("w", f32(70, 37, 1, 1)), ("b", f32(70)), ("lo", np.array(0, np.float32)),
          ("hi", np.array(6, np.float32))], [f32(3, 37, 9, 7) * 2])
    case("pointwise_silu",
         [helper.make_node("Conv", ["x", "w"], ["c"]),
          helper.make_node("Sigmoid", ["c"], ["s"]),
          helper.make_node("Mul", ["c", "s"], ["y"])],
         [vi("x", TensorProto.FLOAT, [2, 20, 5, 5])], [vi("y", TensorProto.FLOAT, [])],
         [("w", f32(16, 20, 1, 1))], [f32(2, 20, 5, 5)])
    # A 3x3 convolution through the GPU's implicit GEMM with K (360) split across workgroups:
    # few output tiles, asymmetric pads, stride 2, a batch of 2, ReLU fused.
    case("conv3x3_split_k_relu",
         [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 0, 0, 1]),
          helper.make_node("Relu", ["c"], ["y"])],
         [vi("x", TensorProto.FLOAT, [2, 40, 9, 9])], [vi("y", TensorProto.FLOAT, [])],
         [("w", f32(24, 40, 3, 3)), ("b", f32(24))], [f32(2, 40, 9, 9)])
    # Depthwise with dilation 2, asymmetric pads, a batch of 2 and SiLU fused (Mul operands
    # in the other order).
    case("depthwise_3x3_dilated_tiles_silu",
         [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=5, kernel_shape=[3, 3],
                           dilations=[2, 2], pads=[2, 1, 2, 3]),
          helper.make_node("Sigmoid", ["c"], ["s"]),
          helper.make_node("Mul", ["s", "c"], ["y"])],
         [vi("x", TensorProto.FLOAT, [2, 5, 37, 21])], [vi("y", TensorProto.FLOAT, [])],
         [("w", f32(5, 1, 3, 3)), ("b", f32(5))], [f32(2, 5, 37, 21)])
    case("cast_int64_to_float",
         [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
         [vi("x", TensorProto.INT64, [2, 3])], [vi("y", TensorProto.FLOAT, [])],
         [], [np.array([[-(2**40), -3, 0], [7, 2**24 + 1, 2**53]], np.int64)])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    OUT = sys.argv[1]
    main()
