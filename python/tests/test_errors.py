"""Bad input raises warpstream.Error (a RuntimeError) carrying the C++ runtime's message and code;
caller mistakes raise warpstream.InvalidArgumentError (also a ValueError). Nothing crashes."""
import numpy as np
import pytest

import warpstream


def test_error_types():
    assert issubclass(warpstream.Error, RuntimeError)
    assert issubclass(warpstream.InvalidArgumentError, warpstream.Error)
    assert issubclass(warpstream.InvalidArgumentError, ValueError)
    assert warpstream.Error is warpstream._warpstream.Error


def test_missing_file(tmp_path):
    path = tmp_path / "nope.onnx"
    with pytest.raises(warpstream.Error) as e:
        warpstream.Engine.from_onnx(path)
    assert e.value.code == "not found"
    assert str(path) in str(e.value)
    assert str(e.value).startswith("not found: ")


def test_truncated_model(demo_model, tmp_path):
    data = demo_model.read_bytes()
    cut = tmp_path / "truncated.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(warpstream.Error) as e:
        warpstream.Engine.from_onnx(cut)
    assert e.value.code == "invalid model", str(e.value)
    assert str(cut) in str(e.value)
    with pytest.raises(warpstream.Error) as e2:
        warpstream.Engine.from_onnx_bytes(data[: len(data) // 2])
    assert e2.value.code == "invalid model"
    assert "<bytes>" in str(e2.value)


def test_not_a_model(tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff" * 64)
    with pytest.raises(warpstream.Error, match="junk.onnx"):
        warpstream.Engine.from_onnx(junk)


def test_wrong_shape_dtype_and_count(demo_model):
    engine = warpstream.Engine.from_onnx(demo_model)
    with pytest.raises(warpstream.InvalidArgumentError) as e:
        engine.run(np.zeros((1, 3, 16, 16), np.float32))
    msg = str(e.value)
    assert "input 'input': shape [1, 3, 16, 16]" in msg and "expects [1, 3, 32, 32] float32" in msg, msg
    assert e.value.code == "invalid argument"
    with pytest.raises(ValueError, match=r"input 'input': dtype float64, the engine expects \[1, 3, 32, 32\] float32"):
        engine.run(np.zeros((1, 3, 32, 32), np.float64))
    with pytest.raises(warpstream.InvalidArgumentError, match="2 arrays for an engine with 1 input"):
        engine.run([np.zeros((1, 3, 32, 32), np.float32)] * 2)
    with pytest.raises(warpstream.InvalidArgumentError, match="no input named 'x'"):
        engine.run({"x": np.zeros((1, 3, 32, 32), np.float32)})
    with pytest.raises(warpstream.InvalidArgumentError, match="expected an array"):
        engine.run("not an array")
    with pytest.raises(warpstream.InvalidArgumentError, match="stream"):
        engine.run(np.zeros((1, 3, 32, 32), np.float32), stream=0)
    # The engine still works after refusing bad calls.
    assert engine.run(np.zeros((1, 3, 32, 32), np.float32)).shape == (1, 10)


def test_bad_options(demo_model):
    with pytest.raises(warpstream.InvalidArgumentError, match="float32 only"):
        warpstream.Engine.from_onnx(demo_model, precision="fp16")
    with pytest.raises(warpstream.InvalidArgumentError, match="device 'tpu'"):
        warpstream.Engine.from_onnx(demo_model, device="tpu")
    with pytest.raises(warpstream.InvalidArgumentError, match="timing_cache"):
        warpstream.Engine.from_onnx(demo_model, timing_cache="cache.json")
    with pytest.raises(warpstream.Error, match="input 'nope'|nope"):
        warpstream.Engine.from_onnx(demo_model, input_shapes={"nope": [1, 3, 8, 8]})


@pytest.mark.skipif(warpstream.has_cuda, reason="this build has the CUDA executor")
def test_cuda_device_without_cuda_build(demo_model):
    with pytest.raises(warpstream.Error) as e:
        warpstream.Engine.from_onnx(demo_model, device="cuda")
    assert e.value.code == "unsupported"
    assert "without the CUDA executor" in str(e.value)


def test_read_image_errors(tmp_path):
    with pytest.raises(warpstream.Error) as e:
        warpstream.read_image(tmp_path / "missing.png")
    assert e.value.code == "not found"
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 10)
    with pytest.raises(warpstream.Error) as e:
        warpstream.read_image(bad)
    assert e.value.code == "invalid image" and "bad.png" in str(e.value)


def test_newcomer_bad_inputs_name_the_problem(demo_model, tmp_path):
    """Inputs a new user tried (helper report of 2026-12-01): each raises InvalidArgumentError naming the problem."""
    e = warpstream.Engine.from_onnx(demo_model)
    x = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(warpstream.InvalidArgumentError, match="got None"):
        e.run(None)
    with pytest.raises(warpstream.InvalidArgumentError, match="big-endian"):
        e.run(x.astype(">f4"))
    with pytest.raises(warpstream.InvalidArgumentError, match=r"dtype\('O'\)"):
        e.run(np.empty((1, 3, 32, 32), object))
    with pytest.raises(warpstream.InvalidArgumentError, match="CUDA engines only"):
        e.bind(x)  # a CPU engine (every build): no device addresses to bind
    with pytest.raises(warpstream.InvalidArgumentError, match="expected 'fp32' or 'fp16'"):
        warpstream.Engine.from_onnx(demo_model, precision="int4")
    with pytest.raises(warpstream.InvalidArgumentError, match="cuda:N"):
        warpstream.Engine.from_onnx(demo_model, device="cuda:abc")
    with pytest.raises(warpstream.InvalidArgumentError, match="2 arrays for an engine with 1 output"):
        e.run([x], out=[np.zeros((1, 10), np.float32), np.zeros((1, 10), np.float32)])
    assert ", ]" not in repr(e) and repr(e).endswith("])")

    class Broken:
        def __dlpack__(self, *a, **k):
            raise KeyError("boom")

    with pytest.raises(warpstream.InvalidArgumentError, match="boom"):
        e.run(Broken())


def test_classifier_array_within_the_pixel_budget(demo_model):
    """classify() on an array applies the decoders' pixel budget (kMaxImagePixels = 2^28) before copying it: a
    broadcast view promising 400 Mpx (no memory behind it) is refused, not copied; NaN mean / std are refused."""
    c = warpstream.Classifier.from_onnx(demo_model)
    huge = np.broadcast_to(np.uint8(0), (20000, 20000, 3))
    with pytest.raises(warpstream.Error, match="pixel limit"):
        c.classify(huge, k=3)
    with pytest.raises(warpstream.InvalidArgumentError, match="mean: values must be finite"):
        warpstream.Classifier.from_onnx(demo_model, mean=[float("nan")] * 3, std=[1.0] * 3)
    with pytest.raises(warpstream.InvalidArgumentError, match="std: values must be finite"):
        warpstream.Classifier.from_onnx(demo_model, mean=[0.0] * 3, std=[float("inf")] * 3)
