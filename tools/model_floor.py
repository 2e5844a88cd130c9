#!/usr/bin/env python3
"""Latency floor of a model on the H200, from counted work (issue 4 item 7; METHOD.md "two numbers first").

For each ONNX model: FLOPs (Conv: 2·Cout·Hout·Wout·Cin/group·kh·kw; Gemm/MatMul: 2·M·N·K; every other op
one FLOP per output element) and bytes (weights read once; activations written once and read once, at the
precision's element size; the input frame's sampled rows over PCIe for end-to-end). Each is divided by a
ceiling, and the floor is

  floor_network = max(FLOPs / peak, bytes / DRAM bandwidth) + kernels × per-node graph launch cost
  floor_e2e     = floor_network + sampled frame bytes / mapped-read bandwidth + Top-K kernel (one node)

Ceilings (defaults; ../shared/research/h200-measurements.md, KINDS.md, measured on the lent H200):
  fp16 tensor-core rate 684e12 FLOP/s (PyTorch bf16 matmul 4096³; fp16 runs at the same rate on Hopper)
  fp32 rate 67e12 FLOP/s (datasheet CUDA-core FP32 — a lead, not measured: no fp32 GEMM was timed)
  DRAM 4.3e12 B/s (device-to-device copy through PyTorch, bytes read + written)
  mapped host read 51.3e9 B/s (a kernel reading mapped host memory, int4 loads)
  per-node launch 0.52 µs (100-node empty-kernel graph GPU time / node); --launch-json takes the
  measurement of experiments/graph_launch_00_empty_kernel.cu from the same run instead.
Kernel count: --kernels NAME=N (e.g. from a bench report's env.engine_kernels_per_enqueue) or, by default,
the ONNX node count after dropping shape-only ops (Flatten, Reshape, Identity, Squeeze, Unsqueeze).
Batch-1 activations of these models fit the 60 MB L2, so the DRAM term with activations is an upper
variant; the weights-only term is the strict floor. Both are printed.

  python3 tools/model_floor.py --model efficientnet_lite0=m1.onnx --model resnet50=m2.onnx \
      [--launch-json launch.json] [--reports out/*.json] [--json floor.json]

--reports: our bench JSONs; prints measured p50 / floor for each (matching model file and precision).
"""
import argparse
import json
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

SHAPE_ONLY = {"Flatten", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Shape", "Constant"}


def dims(vi):
    return [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]


def count(path):
    m = onnx.load(path)
    m = shape_inference.infer_shapes(m)
    g = m.graph
    shapes = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        shapes[vi.name] = dims(vi)
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n, a in inits.items():
        shapes[n] = list(a.shape)
    weight_elems = sum(int(a.size) for a in inits.values())
    flops = 0
    act_elems = 0
    kernels = 0
    per_op = {}
    for node in g.node:
        out = shapes.get(node.output[0], [])
        out_elems = int(np.prod(out)) if out else 0
        if node.op_type == "Conv":
            w = shapes[node.input[1]]  # Cout, Cin/group, kh, kw
            f = 2 * out_elems * int(np.prod(w[1:]))
        elif node.op_type in ("Gemm", "MatMul"):
            a, b = shapes[node.input[0]], shapes[node.input[1]]
            k = a[-1]
            f = 2 * out_elems * k
        else:
            f = out_elems
        flops += f
        per_op[node.op_type] = per_op.get(node.op_type, 0) + f
        if node.op_type not in SHAPE_ONLY:
            kernels += 1
            act_elems += out_elems
    in_elems = int(np.prod(dims(g.input[0]))) if g.input else 0
    return {"flops": flops, "weight_elems": weight_elems, "activation_elems": act_elems + in_elems,
            "nodes": len(g.node), "kernels_estimate": kernels, "flops_by_op": per_op,
            "input_hw": dims(g.input[0])[2:4] if g.input else [224, 224]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="NAME=path.onnx")
    ap.add_argument("--kernels", action="append", default=[], help="NAME=N kernels per enqueue (our engine)")
    ap.add_argument("--launch-json", help="experiments/graph_launch_00_empty_kernel.cu JSON output")
    ap.add_argument("--per-node-us", type=float, default=0.52)
    ap.add_argument("--fp16-flops", type=float, default=684e12)
    ap.add_argument("--fp32-flops", type=float, default=67e12)
    ap.add_argument("--dram-bps", type=float, default=4.3e12)
    ap.add_argument("--mapped-bps", type=float, default=51.3e9)
    ap.add_argument("--source", default="1920x1080")
    ap.add_argument("--reports", nargs="*", default=[])
    ap.add_argument("--json")
    a = ap.parse_args()
    per_node = a.per_node_us
    launch_src = "default 0.52 us/node (h200-measurements.md, 100-node graph)"
    if a.launch_json:
        lj = json.loads(Path(a.launch_json).read_text())
        per_node = lj["gpu_us_per_node"]
        launch_src = f"measured {per_node:.3f} us/node ({a.launch_json})"
    kern_over = dict(kv.split("=") for kv in a.kernels)
    sw, sh = (int(v) for v in a.source.lower().split("x"))
    rows = []
    print(f"launch cost: {launch_src}")
    print("| model | precision | GFLOP | weights MB | act MB | kernels | compute us | DRAM us (w / w+act) | launch us | "
          "frame PCIe us | floor network us | floor e2e us | bound |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for spec in a.model:
        name, path = spec.split("=", 1)
        c = count(path)
        kernels = int(kern_over.get(name, c["kernels_estimate"]))
        oh, ow = c["input_hw"]
        # bilinear taps read 2 source rows per output row (at most all rows): bytes actually sampled
        frame_bytes = min(sh, 2 * oh) * sw * 3
        for prec, es, peak in (("fp32", 4, a.fp32_flops), ("fp16", 2, a.fp16_flops)):
            t_c = c["flops"] / peak * 1e6
            wb = c["weight_elems"] * es
            ab = 2 * c["activation_elems"] * es
            t_w = wb / a.dram_bps * 1e6
            t_wa = (wb + ab) / a.dram_bps * 1e6
            t_l = kernels * per_node
            t_f = frame_bytes / a.mapped_bps * 1e6
            floor_net = max(t_c, t_w) + t_l
            floor_e2e = floor_net + t_f + per_node * 2  # + preprocess and Top-K nodes
            bound = "launch" if t_l >= max(t_c, t_w) else ("compute" if t_c >= t_w else "memory")
            r = {"model": name, "onnx": path, "precision": prec, "flops": c["flops"], "weight_bytes": wb,
                 "activation_bytes_rw": ab, "kernels": kernels, "onnx_nodes": c["nodes"], "compute_us": t_c,
                 "dram_weights_us": t_w, "dram_weights_act_us": t_wa, "launch_us": t_l, "frame_bytes_sampled": frame_bytes,
                 "frame_pcie_us": t_f, "floor_network_us": floor_net, "floor_e2e_us": floor_e2e, "bound": bound,
                 "per_node_us": per_node}
            rows.append(r)
            print(f"| {name} | {prec} | {c['flops'] / 1e9:.2f} | {wb / 1e6:.1f} | {ab / 1e6:.1f} | {kernels} | {t_c:.1f} | "
                  f"{t_w:.1f} / {t_wa:.1f} | {t_l:.1f} | {t_f:.1f} | {floor_net:.1f} | {floor_e2e:.1f} | {bound} |")
    if a.reports:
        print("\n| report | p50 us | p99 us | floor us | p50 / floor | p99 / floor |\n|---|---:|---:|---:|---:|---:|")
        for rp in a.reports:
            rep = json.loads(Path(rp).read_text())
            cfg = rep["config"]
            st = rep["metrics"][rep.get("primary", "host_latency_us")]
            for r in rows:
                if Path(r["onnx"]).name == cfg.get("model") and r["precision"] == cfg.get("precision"):
                    fl = r["floor_e2e_us"] if cfg.get("scope") == "end_to_end" else r["floor_network_us"]
                    print(f"| {rep.get('label')} | {st['p50']:.1f} | {st['p99']:.1f} | {fl:.1f} | {st['p50'] / fl:.2f} | "
                          f"{st['p99'] / fl:.2f} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"launch": launch_src, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
