#!/usr/bin/env python3
"""Goldens for WarpStream's LTX-Video transformer from diffusers itself.

Builds diffusers' `LTXVideoTransformer3DModel` (or one `LTXVideoTransformerBlock`) with random weights
(fixed seed; q/k RMSNorm weights and the scale_shift_tables perturbed so the affine paths are exercised),
writes the weights as safetensors with diffusers' key names, runs diffusers' own forward and dumps inputs,
intermediates (captured with forward hooks on diffusers' submodules) and outputs to a second safetensors file.

Pinned: diffusers==0.42.1 (+ its hard dependency importlib_metadata), torch >= 2.4, numpy, safetensors.
The C++ side: src/reference/ltx.h (CPU oracle), tests/unit/ltx_reference_golden_test.cpp (tiny case).

Usage
-----
  # tiny (committed under tests/data/ltx_tiny, fp32, CPU; takes seconds):
  python3 tools/ltx_goldens.py --case tiny --out tests/data/ltx_tiny
  # one full-size 2B block on the GPU machine (bf16 weights, S = 6144, T = 128), plus diffusers' block time:
  python3 tools/ltx_goldens.py --case block-2b --out /tmp/ltx_block_2b --device cuda --dtype bfloat16 --time 50
  # the whole 2B model (bf16, S = 6144, T = 128) — ~3.9 GB of weights written:
  python3 tools/ltx_goldens.py --case model-2b --out /tmp/ltx_model_2b --device cuda --dtype bfloat16
Each run prints one summary line ("ltx_goldens: case=... files=... output max-abs=... [block median=... ms]").

Files written into --out
------------------------
case tiny (two configs, all tensors F32):
  config.json, diffusion_pytorch_model.safetensors   diffusers' own save_pretrained() output for the `tiny`
                                                     config (diffusers' unit-test config, but num_layers 2)
  small/config.json, small/diffusion_pytorch_model.safetensors   config `small`: heads 4 x 8 = 32 (dim % 6 = 2,
                                                     like the 2B model), cross 32, caption 24, in/out 8, 1 layer
  goldens.safetensors                                inputs, intermediates and outputs, names below
  Cases inside goldens.safetensors (<c> = case prefix):
    base     config tiny, B=2, grid 2x4x6 (S=48), T=16, per-sample integer timesteps, mask with zeros, no RoPE scale
    tok      config tiny, B=2, same grid, per-token timesteps [B, S]
    scaled   config tiny, B=1, same grid, rope_interpolation_scale (8/25, 32, 32)
    small    config small, B=2, grid 3x4x5 (S=60), T=7, per-sample timesteps, mask with zeros, RoPE scale
  Tensor names (F32; B batch, S video tokens, T text tokens, D inner dim, S' = 1 or S):
    <c>.in.hidden_states [B,S,in]          <c>.in.encoder_hidden_states [B,T,caption]
    <c>.in.timestep [B] or [B,S]           <c>.in.encoder_attention_mask [B,T] (1 keep, 0 drop)
    <c>.in.grid [3] (F,H,W as floats)      <c>.in.rope_interpolation_scale [3] (only when used)
    <c>.rope_cos, <c>.rope_sin [B,S,D]     (diffusers' LTXVideoRotaryPosEmbed output)
    <c>.mask_bias [B,T]                    ((1 - mask) * -10000)
    <c>.proj_in [B,S,D]                    <c>.timestep_proj [B*S',256] (sinusoid, cos first)
    <c>.embedded_timestep [B,S',D]         <c>.temb [B,S',6D]
    <c>.caption [B,T,D]                    (caption_projection output = the blocks' encoder states)
    <c>.block<i>.norm1_mod [B,S,D]         attn1's input: RMSNorm(x) * (1 + scale_msa) + shift_msa
    <c>.block<i>.q_rope, .k_rope [B,S,D]   attn1 q / k after norm_q / norm_k and RoPE (before the head split)
    <c>.block<i>.attn1_out [B,S,D]         attn1 output (after to_out, before the gate)
    <c>.block<i>.hidden_attn1 [B,S,D]      x + attn1_out * gate_msa (attn2's query input)
    <c>.block<i>.attn2_out [B,S,D]         attn2 output (after to_out)
    <c>.block<i>.hidden_attn2 [B,S,D]      hidden_attn1 + attn2_out
    <c>.block<i>.norm2_mod [B,S,D]         ff's input: RMSNorm(x) * (1 + scale_mlp) + shift_mlp
    <c>.block<i>.ff_out [B,S,D]            ff output (before the gate)
    <c>.block<i>.out [B,S,D]               block output
    <c>.norm_out_mod [B,S,D]               proj_out's input: LayerNorm(x) * (1 + scale) + shift
    <c>.output [B,S,out]                   the model output
case block-2b (one 2B block, weights in --dtype, goldens F32 converted from the --dtype run):
  block.safetensors      the block's 25 tensors with diffusers' block-relative keys (scale_shift_table,
                         attn1.to_q.weight, ..., ff.net.2.bias) — prefix them with "transformer_blocks.<i>." for
                         a model; metadata: heads, head_dim, cross_dim, ff_inner, dtype, seed
  goldens.safetensors    in.hidden [B,S,D], in.encoder [B,T,D], in.temb [B,1,6D], in.rope_cos / in.rope_sin [B,S,D]
                         (grid 16x16x24, scale (8/25, 32, 32)), in.mask_bias [B,T], and block.<name> for every
                         intermediate above plus block.out. Inputs are exactly representable in --dtype.
  timing.json            with --time N: diffusers' block forward, median / p99 / mean ms of N runs after warm-up,
                         CUDA events per run
case model-2b: config.json + diffusion_pytorch_model.safetensors (--dtype), goldens.safetensors with the
  model-level tensors above under "model." (inputs, rope, temb, embedded_timestep, caption, block0.out, output);
  --layers N to build fewer than 28 blocks.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from ltx_common import (CONFIG_2B, SMALL_CONFIG, T2V_ROPE_SCALE, TINY_CONFIG, import_diffusers as _import_diffusers,
                        perturb_, time_cuda)

BLOCK_NAMES = ["norm1_mod", "q_rope", "k_rope", "attn1_out", "hidden_attn1", "attn2_out", "hidden_attn2",
               "norm2_mod", "ff_out", "out"]


def import_diffusers():
    return _import_diffusers("ltx_goldens")


def f32(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(device="cpu", dtype=torch.float32).contiguous()


class BlockRecorder:
    """Forward hooks on one LTXVideoTransformerBlock's diffusers submodules -> the BLOCK_NAMES tensors."""

    def __init__(self, block, apply_rotary_emb):
        self.block = block
        self.apply_rotary_emb = apply_rotary_emb
        self.rope = None  # (cos, sin) set by the caller (model.rope output, or the block's input)
        self.raw = {}
        self.handles = [
            block.attn1.register_forward_pre_hook(self._pre("norm1_mod"), with_kwargs=True),
            block.attn1.norm_q.register_forward_hook(self._out("q_norm")),
            block.attn1.norm_k.register_forward_hook(self._out("k_norm")),
            block.attn1.register_forward_hook(self._out("attn1_out")),
            block.attn2.register_forward_pre_hook(self._pre("hidden_attn1"), with_kwargs=True),
            block.attn2.register_forward_hook(self._out("attn2_out")),
            block.ff.register_forward_pre_hook(self._pre("norm2_mod"), with_kwargs=True),
            block.ff.register_forward_hook(self._out("ff_out")),
            block.register_forward_hook(self._out("out")),
        ]

    def _pre(self, name):
        def hook(_module, args, kwargs):
            x = args[0] if args else kwargs["hidden_states"]
            self.raw[name] = x.detach().clone()
        return hook

    def _out(self, name):
        def hook(_module, _args, output):
            self.raw[name] = output.detach().clone()
        return hook

    def tensors(self) -> dict:
        r = dict(self.raw)
        # q/k after RoPE: diffusers' own apply_rotary_emb on norm_q / norm_k's outputs.
        r["q_rope"] = self.apply_rotary_emb(r.pop("q_norm"), self.rope)
        r["k_rope"] = self.apply_rotary_emb(r.pop("k_norm"), self.rope)
        r["hidden_attn2"] = r["hidden_attn1"] + r["attn2_out"]
        assert set(r) == set(BLOCK_NAMES), sorted(r)
        return {k: f32(v) for k, v in r.items()}

    def remove(self):
        for h in self.handles:
            h.remove()


def model_goldens(model, tl, prefix: str, inputs: dict, record_blocks: bool = True) -> dict:
    """Run the model once with hooks; returns {prefix + name: F32 tensor}."""
    out = {}
    cap = {}
    hooks = [
        model.rope.register_forward_hook(lambda m, a, o: cap.__setitem__("rope", o)),
        model.proj_in.register_forward_hook(lambda m, a, o: cap.__setitem__("proj_in", o.detach().clone())),
        model.time_embed.emb.time_proj.register_forward_hook(
            lambda m, a, o: cap.__setitem__("timestep_proj", o.detach().clone())),
        model.time_embed.register_forward_hook(lambda m, a, o: cap.__setitem__("time_embed", o)),
        model.caption_projection.register_forward_hook(lambda m, a, o: cap.__setitem__("caption", o.detach().clone())),
        model.proj_out.register_forward_pre_hook(lambda m, a: cap.__setitem__("norm_out_mod", a[0].detach().clone())),
    ]
    recorders = []
    blocks = list(model.transformer_blocks) if record_blocks else list(model.transformer_blocks)[:1]
    for blk in blocks:
        recorders.append(BlockRecorder(blk, tl.apply_rotary_emb))
    # The RoPE tables are needed by the recorders' apply_rotary_emb; set them after model.rope ran.
    def set_rope(_m, _a, o):
        for rec in recorders:
            rec.rope = o
    hooks.append(model.rope.register_forward_hook(set_rope))
    with torch.no_grad():
        result = model(**inputs, return_dict=False)[0]
    for h in hooks:
        h.remove()
    batch = inputs["hidden_states"].shape[0]
    cos, sin = cap["rope"]
    out[prefix + "rope_cos"] = f32(cos)
    out[prefix + "rope_sin"] = f32(sin)
    mask = inputs.get("encoder_attention_mask")
    if mask is not None:
        out[prefix + "mask_bias"] = f32((1 - mask.to(inputs["hidden_states"].dtype)) * -10000.0)
    out[prefix + "proj_in"] = f32(cap["proj_in"])
    out[prefix + "timestep_proj"] = f32(cap["timestep_proj"])
    temb, emb = cap["time_embed"]
    out[prefix + "temb"] = f32(temb.view(batch, -1, temb.shape[-1]))
    out[prefix + "embedded_timestep"] = f32(emb.view(batch, -1, emb.shape[-1]))
    out[prefix + "caption"] = f32(cap["caption"])
    for i, rec in enumerate(recorders):
        for k, v in rec.tensors().items():
            if record_blocks or k == "out":
                out[f"{prefix}block{i}.{k}"] = v
        rec.remove()
    out[prefix + "norm_out_mod"] = f32(cap["norm_out_mod"])
    out[prefix + "output"] = f32(result)
    return out


def make_inputs(cfg: dict, batch: int, grid, text: int, gen: torch.Generator, *, per_token=False, scale=None,
                device="cpu", dtype=torch.float32, masked=(3, 7)) -> dict:
    f, h, w = grid
    s = f * h * w
    hidden = torch.randn((batch, s, cfg["in_channels"]), generator=gen)
    enc = torch.randn((batch, text, cfg["caption_channels"]), generator=gen)
    if per_token:
        # image-to-video style: first-frame tokens conditioned (t = 0), the rest at the sample's t,
        # plus a few random per-token values so every token row differs.
        t = torch.randint(1, 1000, (batch, 1), generator=gen).float().repeat(1, s)
        t[:, : h * w] = 0.0
        t[:, -5:] = torch.randint(0, 1000, (batch, 5), generator=gen).float()
    else:
        t = torch.randint(0, 1000, (batch,), generator=gen).float()
    mask = torch.ones((batch, text))
    for b in range(batch):
        m = masked[b % len(masked)]
        if m > 0:
            mask[b, text - min(m, text - 1):] = 0.0
    inputs = dict(hidden_states=hidden.to(device, dtype), encoder_hidden_states=enc.to(device, dtype),
                  timestep=t.to(device), encoder_attention_mask=mask.to(device, dtype), num_frames=f, height=h,
                  width=w)
    if scale is not None:
        inputs["rope_interpolation_scale"] = scale
    return inputs


def input_tensors(prefix: str, inputs: dict) -> dict:
    out = {
        prefix + "in.hidden_states": f32(inputs["hidden_states"]),
        prefix + "in.encoder_hidden_states": f32(inputs["encoder_hidden_states"]),
        prefix + "in.timestep": f32(inputs["timestep"]),
        prefix + "in.encoder_attention_mask": f32(inputs["encoder_attention_mask"]),
        prefix + "in.grid": torch.tensor([inputs["num_frames"], inputs["height"], inputs["width"]],
                                         dtype=torch.float32),
    }
    if inputs.get("rope_interpolation_scale") is not None:
        out[prefix + "in.rope_interpolation_scale"] = torch.tensor(inputs["rope_interpolation_scale"],
                                                                   dtype=torch.float32)
    return out


def build_model(diffusers, cfg: dict, seed: int, device, dtype):
    torch.manual_seed(seed)
    model = diffusers.LTXVideoTransformer3DModel(**cfg)
    perturb_(model, torch.Generator().manual_seed(seed + 1))
    if torch.device(device).type != "cpu" or dtype != torch.float32:
        model = model.to(device=device, dtype=dtype)
    return model.eval()


def case_tiny(args) -> str:
    diffusers, tl = import_diffusers()
    os.makedirs(args.out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    goldens = {}
    tiny = build_model(diffusers, TINY_CONFIG, args.seed, "cpu", torch.float32)
    tiny.save_pretrained(args.out, safe_serialization=True)
    gen = torch.Generator().manual_seed(args.seed + 2)
    grid = (2, 4, 6)
    cases = [
        ("base.", make_inputs(TINY_CONFIG, 2, grid, 16, gen)),
        ("tok.", make_inputs(TINY_CONFIG, 2, grid, 16, gen, per_token=True)),
        ("scaled.", make_inputs(TINY_CONFIG, 1, grid, 16, gen, scale=T2V_ROPE_SCALE)),
    ]
    for prefix, inputs in cases:
        goldens.update(input_tensors(prefix, inputs))
        goldens.update(model_goldens(tiny, tl, prefix, inputs))
    small = build_model(diffusers, SMALL_CONFIG, args.seed + 10, "cpu", torch.float32)
    small.save_pretrained(os.path.join(args.out, "small"), safe_serialization=True)
    inputs = make_inputs(SMALL_CONFIG, 2, (3, 4, 5), 7, gen, scale=T2V_ROPE_SCALE, masked=(2, 4))
    goldens.update(input_tensors("small.", inputs))
    goldens.update(model_goldens(small, tl, "small.", inputs))
    from safetensors.torch import save_file
    meta = {"diffusers": diffusers.__version__, "torch": torch.__version__, "seed": str(args.seed),
            "generator": "tools/ltx_goldens.py --case tiny"}
    path = os.path.join(args.out, "goldens.safetensors")
    save_file(goldens, path, metadata=meta)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(args.out) for f in fs)
    out = goldens["base.output"]
    return (f"case=tiny files={args.out} tensors={len(goldens)} bytes={total} "
            f"base.output max-abs={out.abs().max().item():.4g}")


def block_2b_inputs(d: int, batch: int, grid, text: int, gen, device, dtype, tl):
    f, h, w = grid
    s = f * h * w
    hidden = torch.randn((batch, s, d), generator=gen).to(device, dtype)
    enc = torch.randn((batch, text, d), generator=gen).to(device, dtype)
    # temb as time_embed would give it: [B, 1, 6D], moderate magnitude.
    temb = (0.5 * torch.randn((batch, 1, 6 * d), generator=gen)).to(device, dtype)
    rope = tl.LTXVideoRotaryPosEmbed(dim=d, base_num_frames=20, base_height=2048, base_width=2048, patch_size=1,
                                     patch_size_t=1, theta=10000.0)
    cos, sin = rope(hidden, f, h, w, T2V_ROPE_SCALE, None)
    mask = torch.ones((batch, text))
    mask[:, text - 28:] = 0.0  # a 100-token prompt padded to 128
    bias = ((1 - mask.to(dtype)) * -10000.0).unsqueeze(1).to(device)  # [B, 1, T] as the model passes it
    return hidden, enc, temb, (cos, sin), bias


def case_block_2b(args) -> str:
    diffusers, tl = import_diffusers()
    os.makedirs(args.out, exist_ok=True)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    heads, head_dim, cross = 32, 64, 2048
    d = heads * head_dim
    torch.manual_seed(args.seed)
    block = tl.LTXVideoTransformerBlock(dim=d, num_attention_heads=heads, attention_head_dim=head_dim,
                                        cross_attention_dim=cross, qk_norm="rms_norm_across_heads",
                                        activation_fn="gelu-approximate", attention_bias=True,
                                        attention_out_bias=True, eps=1e-6, elementwise_affine=False)
    perturb_(block, torch.Generator().manual_seed(args.seed + 1))
    block = block.to(device=device, dtype=dtype).eval()
    gen = torch.Generator().manual_seed(args.seed + 2)
    grid = tuple(args.grid)
    hidden, enc, temb, rope, bias = block_2b_inputs(d, args.batch, grid, args.text_tokens, gen, device, dtype, tl)
    rec = BlockRecorder(block, tl.apply_rotary_emb)
    rec.rope = rope
    call = lambda: block(hidden, enc, temb, rope, bias)  # noqa: E731
    with torch.no_grad():
        call()
    tensors = {f"block.{k}": v for k, v in rec.tensors().items()}
    rec.remove()
    tensors.update({"in.hidden": f32(hidden), "in.encoder": f32(enc), "in.temb": f32(temb),
                    "in.rope_cos": f32(rope[0]), "in.rope_sin": f32(rope[1]), "in.mask_bias": f32(bias[:, 0, :]),
                    "in.grid": torch.tensor(grid, dtype=torch.float32)})
    from safetensors.torch import save_file
    meta = {"diffusers": diffusers.__version__, "torch": torch.__version__, "seed": str(args.seed),
            "heads": str(heads), "head_dim": str(head_dim), "cross_dim": str(cross), "ff_inner": str(4 * d),
            "dtype": args.dtype, "device": str(device), "generator": "tools/ltx_goldens.py --case block-2b"}
    weights = {k: v.detach().to("cpu").contiguous() for k, v in block.state_dict().items()}
    save_file(weights, os.path.join(args.out, "block.safetensors"), metadata=meta)
    save_file(tensors, os.path.join(args.out, "goldens.safetensors"), metadata=meta)
    line = (f"case=block-2b files={args.out} S={hidden.shape[1]} T={enc.shape[1]} B={args.batch} dtype={args.dtype} "
            f"block.out max-abs={tensors['block.out'].abs().max().item():.4g}")
    if args.time:
        if device.type != "cuda":
            raise SystemExit("ltx_goldens: --time needs --device cuda (CUDA events)")
        with torch.no_grad():
            timing = time_cuda(call, args.time)
        s = hidden.shape[1]
        flops = 2 * s * 14 * d * d + 4 * s * s * d  # the count (self-attn + projections + FF)
        timing.update({"what": "diffusers LTXVideoTransformerBlock forward", "S": s, "T": args.text_tokens,
                       "batch": args.batch, "dtype": args.dtype, "flops_per_sample": flops,
                       "tflops_at_median": args.batch * flops / (timing["median_ms"] * 1e-3) / 1e12,
                       "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "diffusers": diffusers.__version__,
                       "attention_backend": os.environ.get("DIFFUSERS_ATTN_BACKEND", "native")})
        with open(os.path.join(args.out, "timing.json"), "w") as fh:
            json.dump(timing, fh, indent=1)
        line += (f" block median={timing['median_ms']:.3f} ms p99={timing['p99_ms']:.3f} ms "
                 f"({timing['tflops_at_median']:.1f} TFLOP/s, n={args.time})")
    return line


def case_model_2b(args) -> str:
    diffusers, tl = import_diffusers()
    os.makedirs(args.out, exist_ok=True)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    cfg = dict(CONFIG_2B)
    if args.layers is not None:
        cfg["num_layers"] = args.layers
    model = build_model(diffusers, cfg, args.seed, device, dtype)
    model.save_pretrained(args.out, safe_serialization=True)
    gen = torch.Generator().manual_seed(args.seed + 2)
    inputs = make_inputs(cfg, args.batch, tuple(args.grid), args.text_tokens, gen, scale=T2V_ROPE_SCALE,
                         device=device, dtype=dtype, masked=(28, 40))
    inputs["timestep"] = inputs["timestep"].to(dtype)
    goldens = input_tensors("model.", inputs)
    goldens.update(model_goldens(model, tl, "model.", inputs, record_blocks=False))
    from safetensors.torch import save_file
    meta = {"diffusers": diffusers.__version__, "torch": torch.__version__, "seed": str(args.seed),
            "dtype": args.dtype, "generator": "tools/ltx_goldens.py --case model-2b"}
    save_file(goldens, os.path.join(args.out, "goldens.safetensors"), metadata=meta)
    line = (f"case=model-2b files={args.out} layers={cfg['num_layers']} S={inputs['hidden_states'].shape[1]} "
            f"B={args.batch} dtype={args.dtype} output max-abs={goldens['model.output'].abs().max().item():.4g}")
    if args.time:
        with torch.no_grad():
            timing = time_cuda(lambda: model(**inputs, return_dict=False), args.time, warmup=2)
        with open(os.path.join(args.out, "timing.json"), "w") as fh:
            json.dump(dict(timing, what="diffusers LTXVideoTransformer3DModel forward (resident)"), fh, indent=1)
        line += f" forward median={timing['median_ms']:.2f} ms p99={timing['p99_ms']:.2f} ms"
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", required=True, choices=["tiny", "block-2b", "model-2b"])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (block-2b/model-2b)")
    ap.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                    help="weights/activations dtype (tiny: float32 only; default bfloat16 for the 2B cases)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1, help="2B cases: batch (2 = classifier-free guidance)")
    ap.add_argument("--grid", type=int, nargs=3, default=[16, 16, 24], metavar=("F", "H", "W"),
                    help="2B cases: latent grid (default 16 16 24 = 6144 tokens, 768x512x121)")
    ap.add_argument("--text-tokens", type=int, default=128)
    ap.add_argument("--layers", type=int, default=None, help="model-2b: number of blocks (default 28)")
    ap.add_argument("--time", type=int, default=0, metavar="N",
                    help="also time diffusers' forward N times (>= 20) after warm-up with CUDA events")
    args = ap.parse_args()
    if args.time and args.time < 20:
        ap.error("--time needs N >= 20")
    if args.case == "tiny":
        if args.dtype not in (None, "float32"):
            ap.error("--case tiny is float32 only")
        args.dtype = "float32"
        line = case_tiny(args)
    else:
        args.dtype = args.dtype or "bfloat16"
        t0 = time.time()
        line = case_block_2b(args) if args.case == "block-2b" else case_model_2b(args)
        line += f" wall={time.time() - t0:.1f}s"
    print("ltx_goldens: " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
