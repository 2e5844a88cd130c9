"""warpstream.Engine on the CPU executor: against ONNX Runtime and numpy (independent implementations),
its input forms (array, list, dict, strided, DLPack), out= and its description of inputs/outputs."""
import numpy as np
import pytest

import warpstream
from conftest import assert_close

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def tiny_model(rng):
    """a [2,4], b [2,4] -> s = Softmax(a + b, axis=1) [2,4], m = Relu(a) @ W + c [2,3] (W, c initializers)."""
    w = rng.standard_normal((4, 3)).astype(np.float32)
    c = rng.standard_normal((3,)).astype(np.float32)
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"], name="add"),
        helper.make_node("Softmax", ["sum"], ["s"], name="softmax", axis=1),
        helper.make_node("Relu", ["a"], ["ra"], name="relu"),
        helper.make_node("MatMul", ["ra", "W"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "c"], ["m"], name="bias"),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(c, "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString(), w, c


def numpy_tiny(a, b, w, c):
    z = a + b
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True), np.maximum(a, 0) @ w + c


def ort_run(model_bytes, feeds):
    sess = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_demo_model_matches_onnxruntime(demo_model, rng):
    engine = warpstream.Engine.from_onnx(demo_model)
    assert [(t.name, list(t.shape), t.dtype) for t in engine.inputs] == [("input", [1, 3, 32, 32], "float32")]
    assert [(t.name, list(t.shape), t.dtype) for t in engine.outputs] == [("logits", [1, 10], "float32")]
    # The demo model declares opset 13 but uses HardSwish, which ONNX added in opset 14: ONNX Runtime
    # refuses it as written, so its copy is relabelled opset 14 (the model's other ops mean the same there).
    proto = onnx.load_from_string(demo_model.read_bytes())
    for o in proto.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = max(o.version, 14)
    model_bytes = proto.SerializeToString()
    for _ in range(3):
        x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        y = engine.run(x)
        assert isinstance(y, np.ndarray) and y.dtype == np.float32
        (ref,) = ort_run(model_bytes, {"input": x})
        assert_close(y, ref, rtol=1e-4, atol=1e-5, what="demo model logits vs onnxruntime")


def test_demo_model_path_as_str_and_repr(demo_model):
    engine = warpstream.Engine.from_onnx(str(demo_model), device="cpu", precision="fp32")
    assert engine.device == "cpu" and engine.precision == "fp32"
    assert engine.arena_bytes > 0
    assert "input [1, 3, 32, 32] float32" in repr(engine)
    assert repr(engine.inputs[0]) == "TensorInfo(name='input', shape=[1, 3, 32, 32], dtype='float32')"
    assert engine.inputs[0].nbytes == 3 * 32 * 32 * 4


def test_tiny_model_vs_numpy_and_onnxruntime(rng):
    data, w, c = tiny_model(rng)
    engine = warpstream.Engine.from_onnx_bytes(data)
    assert [t.name for t in engine.inputs] == ["a", "b"]
    assert [t.name for t in engine.outputs] == ["s", "m"]
    a = rng.standard_normal((2, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4)).astype(np.float32)
    s, m = engine.run([a, b])
    s_np, m_np = numpy_tiny(a, b, w, c)
    assert_close(s, s_np, rtol=1e-5, atol=1e-6, what="softmax vs numpy")
    assert_close(m, m_np, rtol=1e-5, atol=1e-5, what="relu-matmul vs numpy")
    s_ort, m_ort = ort_run(data, {"a": a, "b": b})
    assert_close(s, s_ort, rtol=1e-5, atol=1e-6, what="softmax vs onnxruntime")
    assert_close(m, m_ort, rtol=1e-5, atol=1e-5, what="relu-matmul vs onnxruntime")
    # The same through a dict, in reverse key order.
    s2, m2 = engine.run({"b": b, "a": a})
    np.testing.assert_array_equal(s2, s)
    np.testing.assert_array_equal(m2, m)


def test_strided_and_dlpack_inputs_are_copied(rng):
    data, w, c = tiny_model(rng)
    engine = warpstream.Engine.from_onnx_bytes(data)
    big = rng.standard_normal((4, 8)).astype(np.float32)
    a = big[::2, ::2]                    # non-contiguous view [2, 4]
    assert not a.flags.c_contiguous
    b = np.asfortranarray(rng.standard_normal((2, 4)).astype(np.float32))
    s, m = engine.run((a, b))
    s_np, m_np = numpy_tiny(np.ascontiguousarray(a), np.ascontiguousarray(b), w, c)
    assert_close(s, s_np, rtol=1e-5, atol=1e-6, what="softmax, strided inputs")
    assert_close(m, m_np, rtol=1e-5, atol=1e-5, what="matmul, strided inputs")
    # Inputs are copied: changing them afterwards does not change a finished result, and a read-only
    # array is accepted.
    ro = np.ascontiguousarray(a)
    ro.setflags(write=False)
    s3, _ = engine.run([ro, np.ascontiguousarray(b)])
    np.testing.assert_array_equal(s3, s)
    torch = pytest.importorskip("torch")
    s4, m4 = engine.run([torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(np.ascontiguousarray(b))])
    np.testing.assert_array_equal(s4, s)
    np.testing.assert_array_equal(m4, m)


def test_out_preallocated(rng):
    data, w, c = tiny_model(rng)
    engine = warpstream.Engine.from_onnx_bytes(data)
    a = rng.standard_normal((2, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4)).astype(np.float32)
    out_s = np.full((2, 4), np.nan, np.float32)   # poisoned: a skipped write would show
    out_m = np.full((2, 3), np.nan, np.float32)
    r = engine.run([a, b], out=[out_s, out_m])
    assert r[0] is out_s and r[1] is out_m
    s_np, m_np = numpy_tiny(a, b, w, c)
    assert_close(out_s, s_np, rtol=1e-5, atol=1e-6, what="out= softmax")
    assert_close(out_m, m_np, rtol=1e-5, atol=1e-5, what="out= matmul")
    with pytest.raises(warpstream.InvalidArgumentError, match=r"out 'm': shape \[3, 2\]"):
        engine.run([a, b], out=[out_s, np.zeros((3, 2), np.float32)])
    with pytest.raises(warpstream.InvalidArgumentError, match="1 array for an engine with 2 output"):
        engine.run([a, b], out=out_s)
    ro = np.zeros((2, 3), np.float32)
    ro.setflags(write=False)
    with pytest.raises(warpstream.InvalidArgumentError, match="writable"):
        engine.run([a, b], out=[out_s, ro])
