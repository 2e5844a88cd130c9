#!/usr/bin/env python3
"""Random-weight LTX-Video transformer checkpoints in diffusers' format, for `warpstream ltx` and the peers.

Writes a diffusers model folder: config.json (as save_pretrained() writes it) and the weights under diffusers'
`LTXVideoTransformer3DModel` state_dict key names, either one diffusion_pytorch_model.safetensors or, with
--shard-size, shards diffusion_pytorch_model-0000i-of-0000n.safetensors plus
diffusion_pytorch_model.safetensors.index.json ({"metadata": {"total_size": N}, "weight_map": {name: shard}}),
split like diffusers' save_pretrained(max_shard_size=...) (tensors in state_dict order, a new shard when the next
tensor would pass the size; a single shard is written under the plain name without an index, as diffusers does). Names, shapes and order come from tools/ltx_common.py tensor_specs() (checked against
diffusers' own state_dict by tests/unit/ltx_checkpoint_tool_test.cpp through the committed diffusers-written tiny
checkpoint, and by bench/peers/ltx_peer.py, which loads these files into diffusers with strict=True).

Values: diffusers' default init (nn.Linear U(-1/sqrt(in), 1/sqrt(in)) for weights and biases, scale_shift_table
N(0,1)/sqrt(D)) with the goldens' perturbation (q/k RMSNorm weights 1 + 0.25 N(0,1), scale_shift_tables
+= 0.1 N(0,1)); each tensor from its own generator seeded with --seed + its index, drawn in float32 on --device and
rounded (RNE) to --dtype. The values depend on the device's generator (cpu and cuda differ); the safetensors
metadata records seed, device and dtype. Same arguments, same bytes.

Weight formats: --dtype bf16 (default) or fp32 for every tensor; --block-weights fp8|int8 stores the block linear
weights (transformer_blocks.N.attn1/attn2.to_q/to_k/to_v/to_out.0 and ff.net.0.proj/ff.net.2 .weight) pre-quantised
instead: F8_E4M3 or I8 codes [out, in] plus a F32 [out] per-output-channel scale tensor under "<layer>.weight_scale"
(the compressed-tensors spelling), w ~ code * scale. The codes are computed from the --dtype-rounded weights with
WarpStream's own rule (s = absmax / 448 or / 127, RNE; tools/ltx_common.py quantize_rows), so they equal what
`warpstream ltx --stream-weights fp8|int8` makes at load from the bf16 twin of the same seed (a CPU test checks it
bit for bit). diffusers cannot load such a file (its LTX transformer has no 8-bit layer); WarpStream's loader
(WeightStore, the CPU reference) reads it directly.

Speed: tensors are generated on --device (default cuda when available) and written by a second thread while the
next one is generated; host memory stays at about two tensors. 13B bf16 (26.1 GB) is bounded by the disk.

Usage
-----
  python3 tools/make_ltx_checkpoint.py --config tiny --out /tmp/ltx_tiny --dtype fp32 --shard-size 20KB
  python3 tools/make_ltx_checkpoint.py --config 2b --out /tmp/ltx_2b                      # one 3.85 GB file
  python3 tools/make_ltx_checkpoint.py --config 13b --out /tmp/ltx_13b --shard-size 10GB  # 3 shards, 26.1 GB
  --layers N overrides num_layers (a quicker 13B-shaped model). Prints one line:
  "make_ltx_checkpoint: config=... params=... bytes=... files=... wall=...s (... GB/s)".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ltx_common import (CONFIGS, ST_CODE_DTYPES, ST_DTYPES, diffusers_config_json, init_tensor_,  # noqa: E402
                        is_block_linear_weight, quantize_rows, safetensors_header, scale_name, tensor_bytes_view,
                        tensor_specs)

WEIGHTS_NAME = "diffusion_pytorch_model"


def parse_size(text: str) -> int:
    """'10GB', '512MiB', '20KB', '1000' -> bytes (diffusers' max_shard_size spelling); 0 = no sharding."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"size {text!r} is not a number with an optional unit (KB MB GB KiB MiB GiB)")
    unit = (m.group(2) or "B").upper()
    mult = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
            "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}.get(unit)
    if mult is None:
        raise argparse.ArgumentTypeError(f"size {text!r}: unknown unit {m.group(2)!r}")
    return int(float(m.group(1)) * mult)


def plan_shards(entries, shard_bytes: int):
    """entries: [(name, dt, shape, nbytes, spec)] -> list of shards (lists of entries), diffusers' rule: append while
    the shard stays <= shard_bytes; a tensor larger than the limit gets a shard of its own."""
    if shard_bytes <= 0:
        return [entries]
    shards, cur, size = [], [], 0
    for e in entries:
        if cur and size + e[3] > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(e)
        size += e[3]
    if cur:
        shards.append(cur)
    return shards


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--config", required=True, choices=sorted(CONFIGS), help="model size (tools/ltx_common.py)")
    ap.add_argument("--out", required=True, help="output folder (created; existing weight files are replaced)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"], help="tensor dtype (default bf16)")
    ap.add_argument("--shard-size", type=parse_size, default=0,
                    help="max bytes per shard, e.g. 10GB (diffusers' default), 5GB, 20KB; 0 = one file (default)")
    ap.add_argument("--block-weights", default="dtype", choices=["dtype", "fp8", "int8"],
                    help="block linear weights: as --dtype (default), or pre-quantised fp8 e4m3 / int8 codes with "
                         "per-output-channel F32 scales (<layer>.weight_scale)")
    ap.add_argument("--layers", type=int, default=None, help="override num_layers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None, help="generator device: cuda (default when available) or cpu")
    args = ap.parse_args()

    import torch
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        torch.device(device)
    except (RuntimeError, ValueError) as e:
        ap.error(f"--device {device!r}: {e}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        ap.error("--device cuda but torch sees no CUDA device")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        ap.error(f"--out {args.out!r} exists and is not a folder")
    cfg = dict(CONFIGS[args.config])
    if args.layers is not None:
        if args.layers < 1:
            ap.error("--layers must be >= 1")
        cfg["num_layers"] = args.layers
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    st_dtype, esize = ST_DTYPES[str(torch_dtype).replace("torch.", "")]

    specs = tensor_specs(cfg)
    quant = None if args.block_weights == "dtype" else args.block_weights
    entries = []
    for name, shape, kind, fan_in in specs:
        n = 1
        for s in shape:
            n *= s
        if quant and is_block_linear_weight(name):
            code_dt, code_size = ST_CODE_DTYPES[quant]
            entries.append((name, code_dt, shape, n * code_size, ("codes", kind, fan_in)))
            entries.append((scale_name(name), "F32", (shape[0],), shape[0] * 4, ("scales", name)))
        else:
            entries.append((name, st_dtype, shape, n * esize, (kind, fan_in)))
    shards = plan_shards(entries, args.shard_size)
    os.makedirs(args.out, exist_ok=True)
    # Remove weight files a previous run left (a different shard count would leave stale shards behind).
    for f in os.listdir(args.out):
        if f.startswith(WEIGHTS_NAME) and (f.endswith(".safetensors") or f.endswith(".safetensors.index.json")):
            os.remove(os.path.join(args.out, f))
    n = len(shards)
    # One shard: diffusers writes the plain file name and no index.
    names = ([f"{WEIGHTS_NAME}.safetensors"] if n == 1 else
             [f"{WEIGHTS_NAME}-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)])
    meta = {"format": "pt", "generator": "tools/make_ltx_checkpoint.py", "config": args.config,
            "num_layers": cfg["num_layers"], "seed": args.seed, "device": device, "dtype": args.dtype,
            "block_weights": args.block_weights}

    # Writer thread: tensors arrive in file order as CPU tensors; at most 2 in flight (host memory bound).
    q: queue.Queue = queue.Queue(maxsize=2)
    err: list = []

    def writer():
        fh = None
        try:
            while True:
                item = q.get()
                if item is None:
                    break
                kind, payload = item
                if kind == "open":
                    if fh:
                        fh.close()
                    fh = open(payload[0], "wb")
                    fh.write(payload[1])
                else:
                    fh.write(tensor_bytes_view(payload))
            if fh:
                fh.close()
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            err.append(e)
            while q.get() is not None:  # drain so the producer never blocks
                pass

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    t0 = time.time()
    index = 0
    total = 0
    weight_map = {}
    pending_scales = {}
    for shard, fname in zip(shards, names):
        header = safetensors_header([(e[0], e[1], e[2], e[3]) for e in shard], meta)
        q.put(("open", (os.path.join(args.out, fname), header)))
        for name, _dt, shape, nbytes, spec in shard:
            weight_map[name] = fname
            total += nbytes
            if spec[0] == "scales":  # the scales of the codes just written (computed with them)
                q.put(("tensor", pending_scales.pop(spec[1])))
                continue
            kind, fan_in = spec[-2], spec[-1]
            # The generator index counts the model's tensors only (scale tensors draw nothing): the same seed gives
            # the same weights with or without --block-weights.
            gen = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + index)
            t = torch.empty(shape, dtype=torch.float32, device=device)
            init_tensor_(t, kind, fan_in, gen)
            t = t.to(torch_dtype).cpu()
            if spec[0] == "codes":
                codes, scales = quantize_rows(t.float().numpy(), quant)
                pending_scales[name] = scales
                q.put(("tensor", codes))
            else:
                q.put(("tensor", t))
            index += 1
            if err:
                break
        if err:
            break
    q.put(None)
    th.join()
    if err:
        raise SystemExit(f"make_ltx_checkpoint: writing {args.out}: {err[0]}")
    with open(os.path.join(args.out, "config.json"), "w") as fh:
        fh.write(diffusers_config_json(cfg))
    if len(names) > 1:
        with open(os.path.join(args.out, f"{WEIGHTS_NAME}.safetensors.index.json"), "w") as fh:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, fh, indent=2, sort_keys=True)
            fh.write("\n")
    wall = time.time() - t0
    params = sum(math.prod(e[1]) for e in specs)
    print(f"make_ltx_checkpoint: config={args.config} layers={cfg['num_layers']} dtype={args.dtype} "
          f"block_weights={args.block_weights} params={params} "
          f"bytes={total} files={len(names)} out={args.out} device={device} wall={wall:.1f}s "
          f"({total / max(wall, 1e-9) / 1e9:.2f} GB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
