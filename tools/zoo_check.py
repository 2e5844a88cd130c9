#!/usr/bin/env python3
"""Zoo check (issue 14, CPU side): torchvision classification models → ONNX → our CPU executor vs
ONNX Runtime.

For every model: build it with random weights (torch.manual_seed(seed)), calibrate BatchNorm's
running statistics on random images (calibrate_batch_norm) so activations keep a realistic scale,
export at --opset (17 by default; torch >= 1.13 supports 17) with a
static [1, 3, S, S] input, run ONNX Runtime (CPUExecutionProvider) on a seeded random input, and
write an ONNX backend-test case folder (model.onnx + test_data_set_0/input_0.pb, output_0.pb).
Then `warpstream onnx-test CASE --rtol R --atol A` compares our CPU executor with ORT's output
exactly as the conformance suites are compared, with rtol --rtol and atol = --atol × the largest
|logit| of that model — in fp32, or twice ORT's own spread (the largest difference between ORT with its graph
optimisations and ORT without them, two valid fp32 summation orders) when that is larger: deep nets (resnet101)
differ from ORT by as much as ORT differs from itself. Prints one line per model and, with --markdown,
a table for docs/conformance.md.

  python3 tools/zoo_check.py --warpstream build-cpu/warpstream --out /tmp/zoo [--models resnet18,...]

`--device cuda [--precision fp32|fp16|fp32,fp16]` runs the same comparison on our CUDA executor (passed through
to `onnx-test`; a list runs each precision on the same exported case); fp16 defaults to rtol 2e-2 and atol
2e-2 × the largest |logit| (float16 activations and weights), or twice the error of PyTorch's own float16
forward of the same model on the GPU (the fp16 peer, when torch has CUDA) when that is larger. Without a usable CUDA device onnx-test exits 3
and this script exits 2 (skipped).

The reference is ONNX Runtime's output when onnxruntime is importable, else PyTorch's own forward pass of the
same eval-mode model on the CPU in float32 (the GPU machine has torch + torchvision but maybe not onnxruntime;
the `reference` column says which). Without the `onnx` package the test-data .pb files are written by a
minimal TensorProto encoder here. torch >= 2.5 exports with the TorchScript exporter (dynamo=False), which
needs no onnx / onnxscript. `--time-budget S` starts no new model after S seconds (the rest are listed as
"not run (time budget)", which counts as a failure).

Needs torch + torchvision (Debian python3-torch / python3-torchvision; onnx + onnxruntime optional, the venv of
scripts/install-deps.sh). Exit code: 0 all passed, 1 a model failed, was refused or was not run, 2 a
dependency is missing or no CUDA device (the CTest wrapper maps 2 to "skipped").
"""
import argparse
import inspect
import os
import struct
import subprocess
import sys
import time

DEFAULT_MODELS = [
    "resnet18", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2_x1_0", "mnasnet1_0",
    "squeezenet1_1", "densenet121", "efficientnet_b0", "regnet_y_400mf", "googlenet", "convnext_tiny", "vit_b_16",
]
# The rest of the issue-14 zoo that torchvision 0.14 (the CPU machine's) and 0.26 (the GPU machine's) both have;
# `--models all` = DEFAULT_MODELS + these (inception_v3 runs at 299²).
EXTENDED_MODELS = ["efficientnet_b3", "efficientnet_v2_s", "resnext50_32x4d", "wide_resnet50_2", "inception_v3", "swin_t",
                   "maxvit_t"]
# Other sizes of the same architectures (`--models full` = all + these): the families' remaining members that
# differ in depth / width / resolution-scaling only.
SIZE_MODELS = ["resnet34", "resnet101", "efficientnet_b1", "efficientnet_b2", "efficientnet_b4", "efficientnet_b5",
               "efficientnet_b6", "efficientnet_b7", "efficientnet_v2_m", "efficientnet_v2_l", "regnet_x_400mf",
               "mnasnet0_5", "swin_v2_t"]


def calibrate_batch_norm(torch, model, size, seed, batches=2, batch_size=4):
    """Sets every BatchNorm's running statistics from random N(0, 1) images (cumulative average over
    `batches` forward passes in train mode), so that activations keep a realistic scale through the
    network; with default statistics (mean 0, var 1) randomly initialised networks shrink their
    activations to ~1e-9 and a comparison says little."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative moving average
    gen = torch.Generator().manual_seed(seed + 1)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, 3, size, size, generator=gen))


def tensor_proto_bytes(array, name):
    """A float32 TensorProto (dims = 1, data_type = 2, name = 8, raw_data = 9) without the onnx package."""
    def varint(v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    def field(num, wire, payload):
        return varint((num << 3) | wire) + payload

    out = b"".join(field(1, 0, varint(int(d))) for d in array.shape)
    out += field(2, 0, varint(1))  # FLOAT
    nb = name.encode()
    out += field(8, 2, varint(len(nb)) + nb)
    raw = array.astype("<f4").tobytes()
    out += field(9, 2, varint(len(raw)) + raw)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warpstream", required=True, help="path to the warpstream CLI")
    ap.add_argument("--out", required=True, help="folder for the exported case folders")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma list of torchvision model names, 'all' (the default 13 + " + ", ".join(EXTENDED_MODELS) + ") or 'full' (all + other sizes: " + ", ".join(SIZE_MODELS) + ")")
    ap.add_argument("--shard", default="",
                    help="K/N: run only every N-th model starting at K (0-based), so N processes share one GPU")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("WS_SEED", "0")))
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="executor onnx-test runs (--device)")
    ap.add_argument("--precision", default="fp32",
                    help="CUDA executor precision(s): fp32, fp16, or a comma list (each runs on the same exported case)")
    ap.add_argument("--rtol", type=float, default=None, help="relative tolerance (default 1e-3; fp16: 2e-2)")
    ap.add_argument("--atol", type=float, default=None,
                    help="absolute tolerance as a fraction of the model's largest |logit| (random weights give "
                         "logits of very different scales; a fixed absolute tolerance would be loose for small ones)")
    ap.add_argument("--time-budget", type=float, default=0, help="seconds after which no new model starts (0: none)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    precisions = [p for p in args.precision.split(",") if p]
    if not precisions or any(p not in ("fp32", "fp16") for p in precisions):
        ap.error("--precision takes fp32, fp16 or a comma list of them")
    if args.device == "cpu" and precisions != ["fp32"]:
        ap.error("--precision fp16 needs --device cuda")

    def tolerances(precision):
        rtol = args.rtol if args.rtol is not None else (2e-2 if precision == "fp16" else 1e-3)
        atol = args.atol if args.atol is not None else (2e-2 if precision == "fp16" else 1e-4)
        return rtol, atol

    try:
        import numpy as np
        import torch
        import torchvision
    except ImportError as e:
        print(f"zoo_check: skipped: {e}", file=sys.stderr)
        return 2
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    try:
        from onnx import numpy_helper
    except ImportError:
        numpy_helper = None
    reference = f"onnxruntime {ort.__version__}" if ort else "PyTorch (CPU, float32)"
    export_extra = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        export_extra["dynamo"] = False  # the TorchScript exporter: no onnx / onnxscript needed
    print(f"zoo_check: torch {torch.__version__}, torchvision {torchvision.__version__}, reference {reference}, "
          f"opset {args.opset}, seed {args.seed} (WS_SEED), executor {args.device} {','.join(precisions)}, "
          + "; ".join(f"{p}: rtol {tolerances(p)[0]}, atol {tolerances(p)[1]} × max |logit|" for p in precisions))
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    failed = 0
    names = (DEFAULT_MODELS + EXTENDED_MODELS if args.models == "all" else
             DEFAULT_MODELS + EXTENDED_MODELS + SIZE_MODELS if args.models == "full" else
             [m for m in args.models.split(",") if m])
    if args.shard:
        try:
            k, n = (int(v) for v in args.shard.split("/"))
            assert n >= 1 and 0 <= k < n
        except (ValueError, AssertionError):
            ap.error("--shard takes K/N with 0 <= K < N")
        names = names[k::n]
    for name in names:
        t0 = time.time()
        if args.time_budget and t0 - t_start > args.time_budget:
            for precision in precisions:
                rows.append((name, precision, "not run", f"time budget of {args.time_budget:.0f} s spent", 0.0))
                failed += 1
                print(f"{name:24s} {precision:5s} {'not run':14s} (time budget)", flush=True)
            continue
        case = os.path.join(args.out, f"zoo_{name}")
        try:
            torch.manual_seed(args.seed)
            ctor = getattr(torchvision.models, name)
            kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
            model = ctor(**kwargs)
            size = 299 if name == "inception_v3" else args.size
            # Zero-initialised layers (ViT's head) would make every logit 0 and the comparison empty.
            for m in model.modules():
                if isinstance(m, torch.nn.Linear) and not bool(m.weight.detach().abs().max() > 0):
                    torch.nn.init.normal_(m.weight, std=0.02)
            calibrate_batch_norm(torch, model, size, args.seed)
            model.eval()
            x = torch.from_numpy(np.random.default_rng(args.seed).standard_normal((1, 3, size, size)).astype(np.float32))
            os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
            path = os.path.join(case, "model.onnx")
            export_kwargs = dict(export_extra)
            if name.startswith("vit_"):
                # torch 1.13 exports eval-mode nn.MultiheadAttention through its fused fast path
                # (aten::_native_multi_head_attention), which has no ONNX symbolic. ViT has no
                # BatchNorm and dropout 0 (no stochastic depth), so train mode computes the same
                # function and exports the plain attention ops.
                model.train()
                export_kwargs["training"] = torch.onnx.TrainingMode.PRESERVE
            with torch.no_grad():
                torch.onnx.export(model, x, path, opset_version=args.opset, input_names=["input"],
                                  output_names=["logits"], do_constant_folding=True, **export_kwargs)
                spread = 0.0  # |ORT optimised − ORT unoptimised|: two valid fp32 orders of the same sums
                if ort:
                    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                    want = sess.run(None, {"input": x.numpy()})[0]
                    so = ort.SessionOptions()
                    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
                    plain = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                    spread = float(np.max(np.abs(plain.run(None, {"input": x.numpy()})[0] - want)))
                else:
                    want = model(x).numpy().astype(np.float32)
            for fname, arr, tname in (("input_0.pb", x.numpy(), "input"), ("output_0.pb", want, "logits")):
                data = (numpy_helper.from_array(arr, tname).SerializeToString() if numpy_helper
                        else tensor_proto_bytes(arr, tname))
                with open(os.path.join(case, "test_data_set_0", fname), "wb") as f:
                    f.write(data)
            scale = float(np.max(np.abs(want)))
            # The fp16 peer: PyTorch's own float16 forward of the same model on the GPU (cuDNN / cuBLAS, fp32
            # accumulate), against the same fp32 reference. A deep random-weight net (inception_v3, resnet101) loses
            # more than 2% of max|logit| to fp16 rounding in ANY fp16 executor; fp16 then tolerates twice the peer's
            # own error when that is larger (the note says which bound applied).
            peer16 = None
            if "fp16" in precisions and torch.cuda.is_available():
                import copy
                try:
                    with torch.no_grad():
                        m16 = copy.deepcopy(model).half().cuda()
                        got16 = m16(x.half().cuda()).float().cpu().numpy()
                        peer16 = float(np.max(np.abs(got16 - want)))
                        del m16
                        torch.cuda.empty_cache()
                except Exception as e:  # the peer is a tolerance aid, not the reference: say so and go on
                    print(f"{name}: PyTorch fp16 peer failed ({type(e).__name__}: {str(e)[:120]}); fp16 keeps the 2% rule",
                          flush=True)
        except Exception as e:  # export or reference failure: reported, not hidden
            detail = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            for precision in precisions:
                rows.append((name, precision, "export failed", detail, time.time() - t0))
                failed += 1
                print(f"{name:24s} {precision:5s} {'export failed':14s} {detail}", flush=True)
            continue
        for precision in precisions:
            t1 = time.time()
            rtol, atol_frac = tolerances(precision)
            atol = max(atol_frac * scale, 1e-12)
            # A deep net's fp32 result depends on the summation order by more than 1e-4 x max|logit| (resnet101: ORT
            # against itself with graph optimisations off differs by 1.8e-4 at max|logit| 1.7): fp32 tolerates twice
            # that measured spread when it is larger (without --atol; the note says which bound applied).
            if precision == "fp32" and args.atol is None and 2 * spread > atol:
                atol = 2 * spread
                detail = f"max abs logit {scale:.3g}, atol {atol:.2g} (2 x ORT's own spread {spread:.2g})"
            elif precision == "fp16" and args.atol is None and peer16 is not None and 2 * peer16 > atol:
                atol = 2 * peer16
                detail = f"max abs logit {scale:.3g}, atol {atol:.2g} (2 x PyTorch fp16's own error {peer16:.2g})"
            else:
                detail = f"max abs logit {scale:.3g}, atol {atol:.2g}"
                if precision == "fp16" and peer16 is not None:
                    detail += f" (PyTorch fp16's own error {peer16:.2g})"
            try:
                r = subprocess.run([args.warpstream, "onnx-test", case, "--device", args.device, "--precision", precision,
                                    "--rtol", str(rtol), "--atol", str(atol), "-v"],
                                   capture_output=True, text=True, timeout=600)
                out = r.stdout + r.stderr
            except subprocess.TimeoutExpired:
                r, out = None, "onnx-test timed out after 600 s"
            if r is not None and r.returncode == 3:  # onnx-test --device cuda: no usable CUDA device
                print(out.strip(), file=sys.stderr)
                return 2
            if r is not None and r.returncode == 0 and "1 passed" in out:
                status = "pass"
                # onnx-test -v reports the measured error on a pass: the table's max error column.
                import re
                m = re.search(r"max\|diff\| (\S+) = (\S+) of max\|expected\|", out)
                if m:
                    detail = f"max error {float(m.group(1)):.2g} ({float(m.group(2)):.2g} of the largest logit); " + detail
            elif "SKIP" in out:
                status = "refused"
                detail = next((l for l in out.splitlines() if l.startswith("SKIP")), "").split(": ", 1)[-1]
            else:
                status = "FAIL"
                detail += "; " + next((l for l in out.splitlines() if l.startswith("FAIL")), out.strip()[-300:]).split(": ", 1)[-1]
            failed += status != "pass"
            rows.append((name, precision, status, detail, time.time() - t1))
            print(f"{name:24s} {precision:5s} {status:14s} {rows[-1][4]:6.1f}s {detail}", flush=True)
    if args.markdown:
        executor = "CPU executor" if args.device == "cpu" else "CUDA executor"
        print(f"\n| model | {executor} precision | vs {reference} | note |\n|---|---|---|---|")
        for name, precision, status, detail, _ in rows:
            print(f"| {name} | {precision} | {status} | {detail.replace('|', '/')[:160]} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
