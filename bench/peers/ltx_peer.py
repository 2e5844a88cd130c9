#!/usr/bin/env python3
"""diffusers peer for `warpstream ltx`: LTXVideoTransformer3DModel forward, resident and with group offloading, on
the same config and workload, same GPU, same run; one warpstream-bench/1 report per mode for `warpstream compare`.

Modes (--modes, in this order):
  resident  the whole model on the GPU (bf16)
  block     enable_group_offload(offload_type="block_level", num_blocks_per_group=1, use_stream=True,
            record_stream=True): diffusers' best streaming for 2B (research file, 1.26x resident)
  leaf      enable_group_offload(offload_type="leaf_level", use_stream=True): its best for 13B (1.86x)
Model: config.json of --checkpoint (diffusers' format: tools/make_ltx_checkpoint.py or tools/ltx_goldens.py output).
Weights: the checkpoint's safetensors (one file or shards + index), loaded straight onto the GPU into a model built
on the meta device (load_state_dict(assign=True, strict=True): every name and shape must match diffusers' own), or
with --random-init diffusers' own init run directly on the GPU in bf16 (seeded; no checkpoint read: a 13B model in
seconds instead of minutes of CPU init). Each mode builds its model afresh (same weights), so offloading starts from
a clean GPU; group offloading then copies the weights to pinned host memory itself.
Inputs (as `warpstream ltx`, random but seeded): hidden [B, S, in] and encoder [B, T, caption] N(0,1), timestep 500,
the last quarter of the text tokens masked out, RoPE interpolation scale (8/25, 32, 32).
Timing: CUDA events around each forward (torch.no_grad), after --warmup forwards; metric gpu_time_us (primary).
Peak device memory: torch.cuda.max_memory_allocated over the timed forwards. Offload outputs are compared with the
resident output bit for bit (reported, not asserted).
Report: --out-dir/ltx_diffusers_<mode>_b<B>.json; model string and config.json hash built exactly as `warpstream ltx
--report` builds them, so `warpstream compare ours.json theirs.json ...` prints ours / diffusers ratios.
--deadline-s S: a mode is SKIPPED (printed, no report) when fewer than --mode-cost-s seconds remain before S seconds
after start (the device suite's budget).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "tools"))
from ltx_common import T2V_ROPE_SCALE, import_diffusers, time_cuda  # noqa: E402
from pytorch_peer import SCHEMA, env_start, nvml_point, stats  # noqa: E402

MODES = {
    "resident": ("resident", None),
    "block": ("group-offload block_level+use_stream+record_stream",
              dict(offload_type="block_level", num_blocks_per_group=1, use_stream=True, record_stream=True)),
    "leaf": ("group-offload leaf_level+use_stream", dict(offload_type="leaf_level", use_stream=True)),
}


def load_config(ckpt: Path) -> tuple[dict, Path]:
    path = ckpt / "config.json" if ckpt.is_dir() else ckpt.parent / "config.json"
    cfg = json.loads(path.read_text())
    return {k: v for k, v in cfg.items() if not k.startswith("_")}, path


def weight_files(ckpt: Path) -> list[Path]:
    if ckpt.is_file():
        return [ckpt]
    index = ckpt / "diffusion_pytorch_model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [ckpt / s for s in shards]
    return [ckpt / "diffusion_pytorch_model.safetensors"]


def build_model(diffusers, cfg: dict, ckpt: Path, random_init: bool, seed: int):
    cls = diffusers.LTXVideoTransformer3DModel
    if random_init:
        torch.manual_seed(seed)
        old = torch.get_default_dtype()
        try:  # parameters created in bf16 straight away (fp32 first would need 2x the memory for a moment)
            torch.set_default_dtype(torch.bfloat16)
        except (TypeError, RuntimeError):
            pass  # this torch refuses a bf16 default: build in fp32 on the GPU, convert below
        try:
            with torch.device("cuda"):
                model = cls(**cfg)
        finally:
            torch.set_default_dtype(old)
        return model.to(torch.bfloat16).eval()
    from safetensors.torch import load_file
    with torch.device("meta"):
        model = cls(**cfg)
    state = {}
    for f in weight_files(ckpt):
        state.update(load_file(str(f), device="cuda"))
    state = {k: (v if v.dtype == torch.bfloat16 else v.to(torch.bfloat16)) for k, v in state.items()}
    model.load_state_dict(state, strict=True, assign=True)
    left = [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.device.type == "meta"]
    if left:
        raise SystemExit(f"ltx_peer: tensors still on the meta device after loading {ckpt}: {left[:5]}")
    return model.eval()


def make_inputs(cfg: dict, batch: int, grid, text: int, seed: int) -> dict:
    f, h, w = grid
    s = f * h * w
    g = torch.Generator(device="cuda").manual_seed(seed)
    hidden = torch.randn((batch, s, cfg.get("in_channels", 128)), generator=g, device="cuda").to(torch.bfloat16)
    enc = torch.randn((batch, text, cfg.get("caption_channels", 4096)), generator=g, device="cuda").to(torch.bfloat16)
    mask = torch.ones((batch, text), device="cuda", dtype=torch.bfloat16)
    mask[:, text * 3 // 4:] = 0
    return dict(hidden_states=hidden, encoder_hidden_states=enc,
                timestep=torch.full((batch,), 500.0, device="cuda", dtype=torch.bfloat16),
                encoder_attention_mask=mask, num_frames=f, height=h, width=w,
                rope_interpolation_scale=T2V_ROPE_SCALE, return_dict=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="diffusers folder (config.json + safetensors)")
    ap.add_argument("--random-init", action="store_true", help="diffusers' init on the GPU instead of the weights")
    ap.add_argument("--grid", default="16x16x24", help="latent grid FxHxW (default 16x16x24 = 6144 tokens)")
    ap.add_argument("--text-tokens", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--modes", default="resident,block,leaf")
    ap.add_argument("--iterations", type=int, default=10, help="timed forwards, resident")
    ap.add_argument("--offload-iterations", type=int, default=3, help="timed forwards, offload modes")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deadline-s", type=float, default=0, help="skip modes that cannot finish by then (0 = none)")
    ap.add_argument("--mode-cost-s", type=float, default=30, help="seconds one mode needs, for --deadline-s")
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    t_start = time.time()
    diffusers, _ = import_diffusers("ltx_peer")
    ckpt = Path(args.checkpoint)
    cfg, cfg_path = load_config(ckpt)
    grid = tuple(int(v) for v in args.grid.lower().split("x"))
    d = cfg.get("num_attention_heads", 32) * cfg.get("attention_head_dim", 64)
    layers = cfg.get("num_layers", 28)
    # The same identity `warpstream ltx --report` writes (apps/cmd_ltx.cpp write_ltx_report).
    model_name = (f"ltx-video D{d} L{layers} grid {grid[0]}x{grid[1]}x{grid[2]} T{args.text_tokens} "
                  f"B{args.batch}")
    model_sha = hashlib.sha256(cfg_path.read_bytes()).hexdigest()
    os.makedirs(args.out_dir, exist_ok=True)
    reference = None
    for mode in args.modes.split(","):
        what, offload = MODES[mode]
        label = f"diffusers {what} b{args.batch}"
        left = args.deadline_s - (time.time() - t_start) if args.deadline_s else float("inf")
        if left < args.mode_cost_s:
            print(f"[ltx_peer] {label}: SKIPPED ({left:.0f} s left, a mode needs ~{args.mode_cost_s:.0f} s)", flush=True)
            continue
        env = env_start()
        t0 = time.time()
        try:
            model = build_model(diffusers, cfg, ckpt, args.random_init, args.seed)
        except Exception as e:  # noqa: BLE001 (a checkpoint diffusers refuses: say so, time its own init instead)
            if args.random_init:
                raise
            print(f"[ltx_peer] loading {ckpt} into diffusers failed ({type(e).__name__}: {str(e)[:300]}); "
                  "falling back to --random-init", flush=True)
            args.random_init = True
            gc.collect()
            torch.cuda.empty_cache()
            model = build_model(diffusers, cfg, ckpt, True, args.seed)
        torch.cuda.synchronize()
        build_s = time.time() - t0
        t0 = time.time()
        if offload is not None:
            model.enable_group_offload(onload_device=torch.device("cuda"), offload_device=torch.device("cpu"),
                                       **offload)
            gc.collect()
            torch.cuda.empty_cache()
        setup_s = time.time() - t0
        inputs = make_inputs(cfg, args.batch, grid, args.text_tokens, args.seed + 1)
        iters = args.iterations if offload is None else args.offload_iterations
        samples_ms: list = []
        with torch.no_grad():
            out = model(**inputs)[0]
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            timing = time_cuda(lambda m=model: m(**inputs), iters, warmup=args.warmup, samples=samples_ms)
            peak = torch.cuda.max_memory_allocated()
        nvml_point(env, "end")
        same = None
        if reference is None and offload is None:
            reference = out.detach().clone()
        elif reference is not None:
            same = bool(torch.equal(out, reference))
        notes = [f"grid {args.grid} (S {grid[0] * grid[1] * grid[2]}), T {args.text_tokens}, batch {args.batch}, "
                 "timestep 500, mask: last quarter of the text tokens dropped, RoPE scale (8/25, 32, 32)",
                 "weights: " + ("diffusers' init on the GPU (seed %d), not the checkpoint's" % args.seed
                                if args.random_init else f"{ckpt} ({len(weight_files(ckpt))} file(s))"),
                 f"diffusers {diffusers.__version__}, torch {torch.__version__}, attention: "
                 f"{os.environ.get('DIFFUSERS_ATTN_BACKEND', 'native (F.scaled_dot_product_attention)')}",
                 what + (f" (enable_group_offload {offload})" if offload else "")]
        rep = {
            "schema": SCHEMA, "label": label, "tool": "bench/peers/ltx_peer.py",
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "config": {"runtime": "diffusers", "scope": "network", "model": model_name, "model_sha256": model_sha,
                       "precision": "bf16", "source_shape": [],
                       "network_input_shape": [args.batch, grid[0] * grid[1] * grid[2], cfg.get("in_channels", 128)],
                       "graph_mode": "eager", "lanes": 1, "input_mode": "device_resident",
                       "transfers_included": offload is not None, "topk": 0, "notes": notes},
            "env": env,
            "metrics": {"gpu_time_us": {**stats([v * 1e3 for v in samples_ms], args.warmup),
                                        "interval": "CUDA events around each forward (synchronised after each)"}},
            "primary": "gpu_time_us", "throughput_fps": 1e3 / timing["mean_ms"], "wall_s": sum(samples_ms) / 1e3,
            "dropped_samples": 0, "warnings": [], "samples_csv": None,
            "ltx": {"mode": mode, "median_ms": timing["median_ms"], "p99_ms": timing["p99_ms"],
                    "peak_device_bytes": peak, "build_s": build_s, "offload_setup_s": setup_s,
                    "bit_identical_to_resident": same},
        }
        out_path = Path(args.out_dir) / f"ltx_diffusers_{mode}_b{args.batch}.json"
        out_path.write_text(json.dumps(rep, indent=1) + "\n")
        print(f"[ltx_peer] {label}: median {timing['median_ms']:.2f} ms p99 {timing['p99_ms']:.2f} ms (n={iters}), "
              f"peak {peak / 2**30:.2f} GiB, build {build_s:.1f} s, offload setup {setup_s:.1f} s"
              + ("" if same is None else f", output {'bit-identical to' if same else 'DIFFERS from'} resident")
              + f" -> {out_path.name}", flush=True)
        del model, out
        gc.collect()
        torch.cuda.empty_cache()
    print(f"[ltx_peer] done in {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
