"""GPU tests (CUDA builds, on a machine with a GPU; skipped otherwise): the CUDA engine against the CPU
engine, DLPack device tensors with torch (in place: data pointers checked), the stream contract, and the
lanes from Python against the CPU classifier."""
import numpy as np
import pytest

import warpstream
from conftest import assert_close

pytestmark = pytest.mark.skipif(not warpstream.has_cuda, reason="this warpstream build has no CUDA executor")


def build_or_skip(path, **kw):
    try:
        return warpstream.Engine.from_onnx(path, device="cuda", **kw)
    except warpstream.Error as e:
        if e.code == "cuda error":
            pytest.skip(f"no usable GPU: {e}")
        raise


def torch_cpu_gpu(path):
    """torch with CUDA (else skip), and the CPU and CUDA engines of `path`."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch, warpstream.Engine.from_onnx(path), build_or_skip(path)


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-3), ("fp16", 3e-2)])
def test_cuda_engine_vs_cpu_engine(demo_model, rng, precision, tol):
    cpu = warpstream.Engine.from_onnx(demo_model)
    gpu = build_or_skip(demo_model, precision=precision)
    in_dtype = np.float16 if precision == "fp16" else np.float32
    assert gpu.inputs[0].dtype == np.dtype(in_dtype).name and gpu.outputs[0].dtype == "float32"
    for _ in range(3):
        x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        ref = cpu.run(x)
        y = gpu.run(x.astype(in_dtype))
        assert_close(y, ref, rtol=tol, atol=tol, what=f"cuda {precision} vs cpu engine")
    with pytest.raises(warpstream.InvalidArgumentError, match="dtype float64"):
        gpu.run(np.zeros((1, 3, 32, 32), np.float64))


def test_dlpack_torch_in_place_with_stream(demo_model, rng):
    torch, cpu, gpu = torch_cpu_gpu(demo_model)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = cpu.run(x)
    xt = torch.from_numpy(x).cuda()
    out = torch.full((1, 10), float("nan"), device="cuda")
    ptr = out.data_ptr()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())  # the producer (the copy above) is ordered before
    r = gpu.run(xt, out=out, stream=s)
    assert r is out and out.data_ptr() == ptr, "out= must be written in place (no copy, no new tensor)"
    s.synchronize()
    assert_close(out.cpu().numpy(), ref, rtol=1e-3, atol=1e-3, what="torch out= vs cpu engine")
    # Without out=: a new torch tensor on the device; stream=None synchronises.
    y = gpu.run(xt)
    assert isinstance(y, torch.Tensor) and y.is_cuda
    assert_close(y.cpu().numpy(), ref, rtol=1e-3, atol=1e-3, what="torch result vs cpu engine")


def test_pipeline_vs_cpu_classifier(demo_model, rng):
    gpu = build_or_skip(demo_model)
    clf = warpstream.Classifier.from_onnx(demo_model)
    p = warpstream.Pipeline(gpu, lanes=2, src_size=(48, 40), k=5)
    lanes = [p.try_acquire(), p.try_acquire()]
    assert all(lanes) and p.try_acquire() is None  # backpressure: no third lane, no queue
    frames = [rng.integers(0, 256, size=(48, 40, 3), dtype=np.uint8) for _ in lanes]
    for lane, frame in zip(lanes, frames):
        view = p.input(lane)
        assert view.shape == (48, 40, 3) and view.dtype == np.uint8
        view[:] = frame
        p.submit(lane)
    for lane, frame in zip(lanes, frames):
        idx, scores = p.wait(lane)
        top = clf.classify(frame, k=5)
        assert list(idx) == [i for i, _ in top]
        assert_close(scores, [s for _, s in top], rtol=1e-3, atol=1e-3, what="lane top-5 vs CPU classifier")
        assert p.gpu_time_ms(lane) > 0
        p.release(lane)
    with pytest.raises(warpstream.Error) as e:
        p.release(lanes[0])  # released twice
    assert e.value.code == "failed precondition"


def test_device_input_is_bound_zero_copy(demo_model, rng):
    """A contiguous, aligned torch CUDA input is read in place (set_input_address): the engine's input address is
    the tensor's data pointer; results equal the CPU engine. A misaligned view is copied (address = the engine's
    slot) and still correct; a later host input restores the slot."""
    torch, cpu, gpu = torch_cpu_gpu(demo_model)
    slot = gpu.input_address(0)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = cpu.run(x)
    xt = torch.from_numpy(x).cuda()
    out = torch.full((1, 10), float("nan"), device="cuda")
    gpu.run(xt, out=out)
    assert gpu.input_address(0) == xt.data_ptr() != slot, "device input must be bound in place, not copied"
    assert_close(out.cpu().numpy(), ref, rtol=1e-3, atol=1e-3, what="zero-copy input vs cpu engine")
    # The engine reads the tensor itself: change it, run again, the result follows.
    x2 = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    xt.copy_(torch.from_numpy(x2))
    gpu.run(xt, out=out)
    assert_close(out.cpu().numpy(), cpu.run(x2), rtol=1e-3, atol=1e-3, what="zero-copy input after an in-place update")
    # A view 4 bytes into its allocation is not 256-byte aligned: copied into the slot.
    big = torch.empty(1 + 3 * 32 * 32, device="cuda")
    view = big[1:].view(1, 3, 32, 32)
    view.copy_(torch.from_numpy(x))
    out.fill_(float("nan"))
    gpu.run(view, out=out)
    assert gpu.input_address(0) == slot
    assert_close(out.cpu().numpy(), ref, rtol=1e-3, atol=1e-3, what="misaligned (copied) input vs cpu engine")
    # Bind again, then a host input: the slot is used again.
    gpu.run(xt, out=out)
    assert gpu.input_address(0) == xt.data_ptr()
    y = gpu.run(x)
    assert gpu.input_address(0) == slot
    assert_close(y, ref, rtol=1e-3, atol=1e-3, what="host input after a bound run")


def test_bound_run_reads_and_writes_the_bound_tensors(demo_model, rng):
    """Engine.bind resolves the tensors once (TensorRT's set_tensor_address + execute_async_v3): run() follows
    in-place updates of the bound input, writes the bound out=, matches the CPU engine; a bound stream orders it.
    Refusals: a CPU engine, host arrays, no out=, a wrong shape."""
    torch, cpu, gpu = torch_cpu_gpu(demo_model)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    xt = torch.from_numpy(x).cuda()
    out = torch.full((1, 10), float("nan"), device="cuda")
    b = gpu.bind(xt, out=out)
    assert b.out is out
    b.run()  # stream=None at bind: synchronised on return
    assert_close(out.cpu().numpy(), cpu.run(x), rtol=1e-3, atol=1e-3, what="bound run vs cpu engine")
    assert gpu.input_address(0) == xt.data_ptr(), "a bound device input is read in place"
    for _ in range(3):  # the bound input is read where it is: update it in place, run again
        x2 = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        xt.copy_(torch.from_numpy(x2))
        out.fill_(float("nan"))
        b.run()
        assert_close(out.cpu().numpy(), cpu.run(x2), rtol=1e-3, atol=1e-3, what="bound run after an in-place update")
    s = torch.cuda.Stream()
    bs = gpu.bind([xt], out=[out], stream=s)
    s.wait_stream(torch.cuda.current_stream())
    out.fill_(float("nan"))
    s.wait_stream(torch.cuda.current_stream())
    bs.run()
    s.synchronize()
    assert torch.isfinite(out).all()
    assert_close(out.cpu().numpy(), cpu.run(x2), rtol=1e-3, atol=1e-3, what="bound run on a torch stream")
    with pytest.raises(warpstream.InvalidArgumentError, match="CUDA engines only"):
        cpu.bind(x, out=np.zeros((1, 10), np.float32))
    with pytest.raises(warpstream.InvalidArgumentError, match="C-contiguous tensor on cuda"):
        gpu.bind(x, out=out)
    with pytest.raises(warpstream.InvalidArgumentError, match="pass out="):
        gpu.bind(xt, out=None)
    with pytest.raises(warpstream.InvalidArgumentError):
        gpu.bind(torch.zeros((1, 3, 16, 16), device="cuda"), out=out)
