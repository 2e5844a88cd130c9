#!/usr/bin/env python3
"""Goldens for the safetensors reader, numeric.h and the WeightStore, made by PyTorch, safetensors and diffusers.

Writes (all small, committed under tests/data/safetensors/):
  torch_goldens.safetensors  written by safetensors.torch.save_file:
    src.f32            F32 [N]       random floats (normal, wide-range log-uniform, exact fp8/bf16 ties), |x| <= 448
    src.to_bf16        BF16 [N]      torch: src.to(torch.bfloat16)              (round-to-nearest-even)
    src.to_fp8         F8_E4M3 [N]   torch: src.to(torch.float8_e4m3fn)
    weight             BF16 [64, 96] random normal * 0.05 with one outlier per row and one all-zero row
    int8.q / int8.scale   I8 [64, 96] / F32 [64]:  s = absmax/127 (1 for a zero row), q = round(w/s).clamp(-127, 127)
    fp8.q  / fp8.scale    F8_E4M3 [64, 96] / F32 [64]: s = absmax/448 (1 for a zero row), q = (w/s).to(float8_e4m3fn)
  ltx_tiny_sharded/  diffusers' LTXVideoTransformer3DModel with its unit-test config, save_pretrained with a small
                     max_shard_size: shards + diffusion_pytorch_model.safetensors.index.json + config.json, exactly
                     as diffusers writes a real checkpoint folder.

Run with the LTX venv (torch, safetensors, diffusers 0.42.1):
  ~/.cache/warpstream/ltx-venv/bin/python tools/safetensors_goldens.py tests/data/safetensors
"""
import os
import shutil
import sys

import torch
from safetensors.torch import save_file


def goldens(out_dir: str) -> None:
    g = torch.Generator().manual_seed(20261201)
    parts = [
        torch.randn(1024, generator=g) * 3,
        torch.exp2(torch.empty(1024).uniform_(-16, 8.8, generator=g)) * torch.sign(torch.randn(1024, generator=g)),
    ]
    # exact midpoints between consecutive positive fp8 codes and between bf16 neighbours (ties to even)
    codes = torch.arange(0, 0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).float()
    parts.append((codes[:-1] + codes[1:]) / 2)
    base = torch.randn(256, generator=g).to(torch.bfloat16).float()
    parts.append((base.view(torch.int32) + 0x8000).view(torch.float32))  # bf16 tie above each value
    src = torch.cat(parts).clamp(-448, 448).contiguous()

    w = (torch.randn(64, 96, generator=g) * 0.05)
    w[torch.arange(64), torch.randint(0, 96, (64,), generator=g)] = torch.randn(64, generator=g)
    w[7] = 0
    w = w.to(torch.bfloat16)
    wf = w.float()
    absmax = wf.abs().amax(dim=1)
    s8 = torch.where(absmax > 0, absmax / 127, torch.ones_like(absmax))
    q8 = torch.round(wf / s8[:, None]).clamp(-127, 127).to(torch.int8)
    sf = torch.where(absmax > 0, absmax / 448, torch.ones_like(absmax))
    qf = (wf / sf[:, None]).to(torch.float8_e4m3fn)

    tensors = {
        "src.f32": src, "src.to_bf16": src.to(torch.bfloat16), "src.to_fp8": src.to(torch.float8_e4m3fn),
        "weight": w, "int8.q": q8, "int8.scale": s8, "fp8.q": qf, "fp8.scale": sf,
    }
    save_file(tensors, os.path.join(out_dir, "torch_goldens.safetensors"),
              metadata={"generator": "tools/safetensors_goldens.py", "torch": torch.__version__})


def sharded(out_dir: str) -> None:
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    # diffusers' tests/models/transformers/test_models_transformer_ltx.py init dict
    model = LTXVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8,
                                       cross_attention_dim=16, num_layers=1, qk_norm="rms_norm_across_heads",
                                       caption_channels=16)
    path = os.path.join(out_dir, "ltx_tiny_sharded")
    shutil.rmtree(path, ignore_errors=True)
    model.save_pretrained(path, safe_serialization=True, max_shard_size="16KB")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/safetensors"
    os.makedirs(out, exist_ok=True)
    goldens(out)
    sharded(out)
    print("wrote", out)
