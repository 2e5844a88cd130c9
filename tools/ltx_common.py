"""Shared parts of the LTX-Video tools (tools/ltx_goldens.py, tools/make_ltx_checkpoint.py, bench/peers/ltx_peer.py).

- The configs (diffusers' `LTXVideoTransformer3DModel.__init__` arguments; research file
  ../shared/research/ltx-video-and-streaming.md section 1.1): TINY / SMALL (tests), 2B, 13B.
- `tensor_specs(cfg)`: every tensor of the model as diffusers' state_dict() lists it (names, shapes, order) and how
  diffusers initialises it, without importing diffusers (the CPU test machine has none).
- `init_tensor_()` / `perturb`: diffusers' default init (nn.Linear's U(-1/sqrt(in), 1/sqrt(in)), RMSNorm 1,
  scale_shift_table N(0,1)/sqrt(D)) plus the goldens' perturbation (q/k norm weights 1 + 0.25 N(0,1),
  scale_shift_tables += 0.1 N(0,1)) so the affine paths matter.
- `time_cuda()`: median / p99 of N CUDA-event-timed calls after warm-up.
- `diffusers_config_json(cfg)`: the config.json diffusers' save_pretrained() writes for the config.
- `write_safetensors()`: a streaming safetensors writer (header first, then each tensor as it is produced), so a
  26 GB checkpoint never sits in host memory at once and needs no `safetensors` package.
torch is imported lazily (only the functions that need it import it).
"""

from __future__ import annotations

import json
import math
import re
import struct
import sys

DIFFUSERS_PIN = "0.42.1"
T2V_ROPE_SCALE = (8.0 / 25.0, 32.0, 32.0)

TINY_CONFIG = dict(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8, cross_attention_dim=16,
                   num_layers=2, qk_norm="rms_norm_across_heads", caption_channels=16)
SMALL_CONFIG = dict(in_channels=8, out_channels=8, num_attention_heads=4, attention_head_dim=8,
                    cross_attention_dim=32, num_layers=1, qk_norm="rms_norm_across_heads", caption_channels=24)
CONFIG_2B = dict(in_channels=128, out_channels=128, num_attention_heads=32, attention_head_dim=64,
                 cross_attention_dim=2048, num_layers=28, caption_channels=4096)
# LTX-Video 0.9.7 (13B): diffusers' scripts/convert_ltx_to_diffusers.py get_transformer_config("0.9.7").
CONFIG_13B = dict(in_channels=128, out_channels=128, num_attention_heads=32, attention_head_dim=128,
                  cross_attention_dim=4096, num_layers=48, caption_channels=4096)
CONFIGS = {"tiny": TINY_CONFIG, "small": SMALL_CONFIG, "2b": CONFIG_2B, "13b": CONFIG_13B}

# diffusers' defaults for the fields the dicts above leave out (LTXVideoTransformer3DModel.__init__, 0.42.1).
_DEFAULTS = dict(in_channels=128, out_channels=128, patch_size=1, patch_size_t=1, num_attention_heads=32,
                 attention_head_dim=64, cross_attention_dim=2048, num_layers=28, activation_fn="gelu-approximate",
                 qk_norm="rms_norm_across_heads", norm_elementwise_affine=False, norm_eps=1e-6, caption_channels=4096,
                 attention_bias=True, attention_out_bias=True)

TIMESTEP_CHANNELS = 256  # Timesteps(num_channels=256) in AdaLayerNormSingle / PixArtAlphaCombinedTimestepSizeEmbeddings


def full_config(cfg: dict) -> dict:
    out = dict(_DEFAULTS)
    out.update(cfg)
    return out


def diffusers_config_json(cfg: dict) -> str:
    """config.json text as diffusers' save_pretrained() writes it (sorted keys, indent 2)."""
    c = full_config(cfg)
    c["_class_name"] = "LTXVideoTransformer3DModel"
    c["_diffusers_version"] = DIFFUSERS_PIN
    return json.dumps(c, indent=2, sort_keys=True) + "\n"


def tensor_specs(cfg: dict):
    """[(name, shape, kind, fan_in)] in diffusers' state_dict() order (a module's own parameters first, then its
    children in registration order). kind: 'linear_w' / 'linear_b' (U(-1/sqrt(fan_in), 1/sqrt(fan_in))),
    'qk_norm' (RMSNorm weight), 'sst' (scale_shift_table, N(0,1)/sqrt(D))."""
    c = full_config(cfg)
    d = c["num_attention_heads"] * c["attention_head_dim"]
    cross, ff = c["cross_attention_dim"], 4 * d
    specs = []

    def linear(name, out_f, in_f):
        specs.append((name + ".weight", (out_f, in_f), "linear_w", in_f))
        specs.append((name + ".bias", (out_f,), "linear_b", in_f))

    specs.append(("scale_shift_table", (2, d), "sst", d))
    linear("proj_in", d, c["in_channels"])
    linear("time_embed.emb.timestep_embedder.linear_1", d, TIMESTEP_CHANNELS)
    linear("time_embed.emb.timestep_embedder.linear_2", d, d)
    linear("time_embed.linear", 6 * d, d)
    linear("caption_projection.linear_1", d, c["caption_channels"])
    linear("caption_projection.linear_2", d, d)
    for i in range(c["num_layers"]):
        p = f"transformer_blocks.{i}."
        specs.append((p + "scale_shift_table", (6, d), "sst", d))
        for attn, kv_in in (("attn1", d), ("attn2", cross)):
            specs.append((p + attn + ".norm_q.weight", (d,), "qk_norm", d))
            specs.append((p + attn + ".norm_k.weight", (d,), "qk_norm", d))
            linear(p + attn + ".to_q", d, d)
            linear(p + attn + ".to_k", d, kv_in)
            linear(p + attn + ".to_v", d, kv_in)
            linear(p + attn + ".to_out.0", d, d)
        linear(p + "ff.net.0.proj", ff, d)
        linear(p + "ff.net.2", d, ff)
    linear("proj_out", c["out_channels"], d)
    return specs


def param_count(cfg: dict) -> int:
    return sum(math.prod(s) for _, s, _, _ in tensor_specs(cfg))


def init_tensor_(t, kind: str, fan_in: int, gen, perturb: bool = True):
    """Fills float32 tensor `t` in place (on t's device, with generator `gen` on the same device)."""
    import torch
    with torch.no_grad():
        if kind in ("linear_w", "linear_b"):
            bound = 1.0 / math.sqrt(fan_in)
            t.uniform_(-bound, bound, generator=gen)
        elif kind == "qk_norm":
            if perturb:
                t.normal_(0.0, 1.0, generator=gen).mul_(0.25).add_(1.0)
            else:
                t.fill_(1.0)
        elif kind == "sst":
            t.normal_(0.0, 1.0, generator=gen).div_(math.sqrt(t.shape[-1]))
            if perturb:
                t.add_(0.1 * torch.empty_like(t).normal_(0.0, 1.0, generator=gen))
        else:
            raise ValueError(f"unknown init kind {kind}")
    return t


def perturb_(module, gen) -> None:
    """Make the affine paths matter: q/k norm weights 1 + 0.25 N(0,1); scale_shift_tables += 0.1 N(0,1)."""
    import torch
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm_q.weight") or name.endswith("norm_k.weight"):
                p.copy_(1.0 + 0.25 * torch.randn(p.shape, generator=gen))
            elif name.endswith("scale_shift_table"):
                p.add_(0.1 * torch.randn(p.shape, generator=gen))


def import_diffusers(tool: str = "ltx"):
    import diffusers  # noqa: WPS433
    if diffusers.__version__ != DIFFUSERS_PIN:
        print(f"{tool}: warning: diffusers {diffusers.__version__} (pinned {DIFFUSERS_PIN})", file=sys.stderr)
    from diffusers.models.transformers import transformer_ltx
    return diffusers, transformer_ltx


def time_cuda(fn, iters: int, warmup: int = 5, samples: list | None = None) -> dict:
    """CUDA events around each of `iters` calls after `warmup` calls; ms statistics (+ raw ms in `samples`)."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    if samples is not None:
        samples.extend(times)
    times.sort()
    p99 = times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)]
    return {"iters": iters, "warmup": warmup, "median_ms": times[len(times) // 2] if len(times) % 2 else
            0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2]), "p99_ms": p99,
            "mean_ms": sum(times) / len(times), "min_ms": times[0]}


# ---- safetensors (https://github.com/huggingface/safetensors: u64 LE header length, JSON header, data) ----------
ST_DTYPES = {"float32": ("F32", 4), "bfloat16": ("BF16", 2), "float16": ("F16", 2)}
ST_CODE_DTYPES = {"int8": ("I8", 1), "fp8": ("F8_E4M3", 1)}


def safetensors_header(entries, metadata: dict | None = None) -> bytes:
    """entries: [(name, st_dtype, shape, nbytes)] laid out back to back in that order. Returns the 8-byte length +
    JSON header (padded with spaces to a multiple of 8, as the reference writer does)."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    off = 0
    for name, dt, shape, nbytes in entries:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + nbytes]}
        off += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


# ---- 8-bit block weights with per-output-channel scales (the same rule as src/flow/host/weight_store.cpp) -------
# LTX block linear weights: transformer_blocks.N.{attn1,attn2}.{to_q,to_k,to_v,to_out.0}.weight, ff.net.0.proj.weight,
# ff.net.2.weight. A pre-quantised checkpoint stores such a weight as I8 or F8_E4M3 codes [out, in] and its scales as
# F32 [out] under the weight's name with ".weight" replaced by ".weight_scale" (the compressed-tensors spelling):
# w ~ code * scale[row].
BLOCK_LINEAR_RE = re.compile(r"(?:^|\.)transformer_blocks\.\d+\.(?:attn[12]\.(?:to_q|to_k|to_v|to_out\.0)|"
                             r"ff\.net\.0\.proj|ff\.net\.2)\.weight$")
QMAX = {"int8": 127.0, "fp8": 448.0}


def is_block_linear_weight(name: str) -> bool:
    return BLOCK_LINEAR_RE.search(name) is not None


def scale_name(weight_name: str) -> str:
    return weight_name[: -len(".weight")] + ".weight_scale"


def fp8_e4m3_codes(x):
    """float32 array -> uint8 e4m3fn codes: round to nearest even, saturating at +-448, NaN -> 0x7F (sign kept):
    the bit-level algorithm of include/warpstream/numeric.h float_to_fp8_e4m3, vectorised."""
    import numpy as np
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    sign = (u >> 24) & 0x80
    a = u & 0x7FFFFFFF
    e = (a >> 23).astype(np.int64) - 127
    r = (a + 0x7FFFF + ((a >> 20) & 1)) >> 20
    code_n = np.minimum(((((r >> 3).astype(np.int64) - 127 + 7) << 3) | (r & 7).astype(np.int64)), 0x7E)
    m = (a & 0x7FFFFF) | 0x800000
    shift = 14 - e
    sh = np.clip(shift, 1, 63).astype(np.uint64)
    q = m >> sh
    rem = m & ((np.uint64(1) << sh) - np.uint64(1))
    half = np.uint64(1) << (sh - np.uint64(1))
    q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1))).astype(np.uint64)
    code_s = np.where(shift > 31, 0, q).astype(np.int64)
    code = np.where(e >= -6, code_n, np.where((a >> 23) == 0, 0, code_s))
    code = np.where(a > 0x43E00000, 0x7E, code)
    code = np.where(a > 0x7F800000, 0x7F, code)
    return (code.astype(np.uint64) | sign).astype(np.uint8)


def quantize_rows(w, fmt: str):
    """w: float32 [out, in] (the stored bf16/fp32 values, widened) -> (codes int8 or uint8 [out, in], scales float32
    [out]). s_r = absmax_r / qmax (float32 division; 0 or an underflow -> 1), q = RNE(w / s_r): int8 clamped to
    +-127, fp8 e4m3fn saturating. Bit-identical to WeightStore's conversion at load (tests/unit/ltx_checkpoint_tool_test)."""
    import numpy as np
    w = np.ascontiguousarray(w, dtype=np.float32)
    if not np.isfinite(w).all():
        raise ValueError("a non-finite weight has no per-channel scale")
    absmax = np.abs(w).max(axis=1).astype(np.float32)
    scale = (absmax / np.float32(QMAX[fmt])).astype(np.float32)
    scale[~(scale > 0)] = np.float32(1.0)
    v = (w / scale[:, None]).astype(np.float32)
    if fmt == "int8":
        return np.clip(np.rint(v), -127, 127).astype(np.int8), scale
    return fp8_e4m3_codes(v), scale


def tensor_bytes_view(t):
    """A zero-copy byte view of a contiguous CPU tensor (bf16 through an int16 view: numpy has no bfloat16)."""
    import numpy as np
    if isinstance(t, np.ndarray):
        return memoryview(np.ascontiguousarray(t)).cast("B")
    import torch
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return memoryview(t.numpy()).cast("B")
