#!/usr/bin/env python3
"""What the Python binding adds per call, on the GPU machine (issue 15's target: <= 5 us at p50). A report, not a test.

  python3 bench/python_overhead.py --model demo.onnx [--n 3000] [--json out.json]

Two measurements, each as N timed calls after warm-up, host wall time per call (perf_counter_ns in Python,
steady_clock in C++), same engine and tensors:
  engine.run   Engine.run(x, out=y) with x, y torch CUDA tensors (x bound zero-copy; stream=None: the
               legacy default stream, synchronised before returning) vs Engine._bench_cpp(x, y, N): the
               same C++ path (bind, enqueue, output copy, event, synchronise) looped in C++.
  bound.run    Engine.bind(x, out=y) once, then BoundRun.run() per call (nothing converted per call; TensorRT's
               set_tensor_address + execute_async_v3) vs the same Engine._bench_cpp baseline.
  dlpack       x.__dlpack__() + y.__dlpack__() alone (what torch's DLPack export costs per run() call).
  lane         try_acquire -> submit -> wait -> release on a one-lane Pipeline from Python vs
               Pipeline._bench_cpp(N): the same four calls looped in C++.
The Python and C++ loops alternate in rounds (R rounds of N/R calls each) so that a drift of the GPU's time
does not land on one side; overhead = median over rounds of p50(Python) - p50(C++). Both include the GPU work, which is identical; the difference is the
binding (argument conversion, DLPack import, GIL release/reacquire, object creation).
"""
import argparse
import json
import time

import numpy as np
import torch

import warpstream


def pct(ns, p):
    return float(np.percentile(np.asarray(ns, dtype=np.float64), p)) / 1e3  # us


def row(name, py, cpp):
    d = {"python_p50_us": pct(py, 50), "cpp_p50_us": pct(cpp, 50), "python_p90_us": pct(py, 90),
         "cpp_p90_us": pct(cpp, 90)}
    d["overhead_p50_us"] = d["python_p50_us"] - d["cpp_p50_us"]
    print(f"{name:<12} python p50 {d['python_p50_us']:8.2f} us (p90 {d['python_p90_us']:8.2f})   "
          f"C++ p50 {d['cpp_p50_us']:8.2f} us (p90 {d['cpp_p90_us']:8.2f})   added by Python p50 "
          f"{d['overhead_p50_us']:6.2f} us (target <= 5)")
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="ONNX model with one float32 [1,3,H,W] input (the demo model)")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    eng = warpstream.Engine.from_onnx(a.model, device="cuda")
    x = torch.randn(eng.inputs[0].shape, device="cuda")
    y = torch.empty(eng.outputs[0].shape, device="cuda")
    for _ in range(200):
        eng.run(x, out=y)
    assert eng.input_address(0) == x.data_ptr(), "the input must be bound zero-copy"
    rounds, per = 10, max(a.n // 10, 1)
    bound = eng.bind(x, out=y)

    def timed(fn):
        ns = []
        for _ in range(per):
            t0 = time.perf_counter_ns()
            fn()
            ns.append(time.perf_counter_ns() - t0)
        return ns

    py, pyb, dl, cpp, diffs, diffs_b = [], [], [], [], [], []
    for _ in range(rounds):
        r_py = timed(lambda: eng.run(x, out=y))
        r_b = timed(bound.run)
        r_cpp = eng._bench_cpp(x, y, per)
        r_dl = timed(lambda: (x.__dlpack__(), y.__dlpack__()))
        py += r_py; pyb += r_b; cpp += r_cpp; dl += r_dl
        diffs.append(pct(r_py, 50) - pct(r_cpp, 50))
        diffs_b.append(pct(r_b, 50) - pct(r_cpp, 50))
    report = {"engine_run": row("engine.run", py, cpp), "bound_run": row("bound.run", pyb, cpp)}
    report["engine_run"]["overhead_p50_us_median_of_rounds"] = float(np.median(diffs))
    report["bound_run"]["overhead_p50_us_median_of_rounds"] = float(np.median(diffs_b))
    report["dlpack_export_p50_us"] = pct(dl, 50)
    print(f"rounds       {rounds} x {per} calls each, alternating: added by Python, median over rounds: engine.run "
          f"{np.median(diffs):.2f} us, bound.run {np.median(diffs_b):.2f} us; torch __dlpack__ of x and y alone "
          f"p50 {pct(dl, 50):.2f} us")

    h, w = 48, 40
    p = warpstream.Pipeline(eng, lanes=1, src_size=(h, w), k=5)
    lane = p.try_acquire()
    p.input(lane)[:] = np.random.default_rng(0).integers(0, 256, (h, w, 3), dtype=np.uint8)
    p.submit(lane)
    p.wait(lane)
    p.release(lane)
    for _ in range(200):
        lane = p.try_acquire(); p.submit(lane); p.wait(lane); p.release(lane)
    py = []
    for _ in range(a.n):
        t0 = time.perf_counter_ns()
        lane = p.try_acquire()
        p.submit(lane)
        p.wait(lane)
        p.release(lane)
        py.append(time.perf_counter_ns() - t0)
    cpp = p._bench_cpp(a.n)
    report["lane_round_trip"] = row("lane", py, cpp)
    report.update(n=a.n, model=a.model, gpu=torch.cuda.get_device_name(), torch=torch.__version__)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
