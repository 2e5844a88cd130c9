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
|logit| of that model. Prints one line per model and, with --markdown,
a table for docs/conformance.md.

  python3 tools/zoo_check.py --warpstream build-cpu/warpstream --out /tmp/zoo [--models resnet18,...]

`--device cuda [--precision fp32|fp16]` runs the same comparison on our CUDA executor (passed through to
`onnx-test`); fp16 defaults to rtol 2e-2 and atol 2e-2 × the largest |logit| (float16 activations and
weights). Without a usable CUDA device onnx-test exits 3 and this script exits 2 (skipped).

Needs torch + torchvision (Debian python3-torch / python3-torchvision) and onnx + onnxruntime
(the venv of scripts/install-deps.sh). Exit code: 0 all passed, 1 a model failed or was refused,
2 a dependency is missing (the CTest wrapper maps 2 to "skipped").
"""
import argparse
import os
import subprocess
import sys
import time

DEFAULT_MODELS = [
    "resnet18", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2_x1_0", "mnasnet1_0",
    "squeezenet1_1", "densenet121", "efficientnet_b0", "regnet_y_400mf", "googlenet", "convnext_tiny", "vit_b_16",
]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warpstream", required=True, help="path to the warpstream CLI")
    ap.add_argument("--out", required=True, help="folder for the exported case folders")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("WS_SEED", "0")))
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="executor onnx-test runs (--device)")
    ap.add_argument("--precision", choices=["fp32", "fp16"], default="fp32", help="CUDA executor precision (--precision)")
    ap.add_argument("--rtol", type=float, default=None, help="relative tolerance (default 1e-3; fp16: 2e-2)")
    ap.add_argument("--atol", type=float, default=None,
                    help="absolute tolerance as a fraction of the model's largest |logit| (random weights give "
                         "logits of very different scales; a fixed absolute tolerance would be loose for small ones)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if args.device == "cpu" and args.precision != "fp32":
        ap.error("--precision fp16 needs --device cuda")
    if args.rtol is None:
        args.rtol = 2e-2 if args.precision == "fp16" else 1e-3
    if args.atol is None:
        args.atol = 2e-2 if args.precision == "fp16" else 1e-4
    try:
        import numpy as np
        import torch
        import torchvision
        import onnx
        from onnx import numpy_helper
        import onnxruntime as ort
    except ImportError as e:
        print(f"zoo_check: skipped: {e}", file=sys.stderr)
        return 2
    print(f"zoo_check: torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}, "
          f"onnxruntime {ort.__version__}, opset {args.opset}, seed {args.seed} (WS_SEED), rtol {args.rtol}, atol {args.atol} × max |logit|")
    os.makedirs(args.out, exist_ok=True)
    rows = []
    failed = 0
    for name in [m for m in args.models.split(",") if m]:
        t0 = time.time()
        case = os.path.join(args.out, f"zoo_{name}")
        status, detail = "?", ""
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
            export_kwargs = {}
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
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want = sess.run(None, {"input": x.numpy()})[0]
            with open(os.path.join(case, "test_data_set_0", "input_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(x.numpy(), "input").SerializeToString())
            with open(os.path.join(case, "test_data_set_0", "output_0.pb"), "wb") as f:
                f.write(numpy_helper.from_array(want, "logits").SerializeToString())
            scale = float(np.max(np.abs(want)))
            atol = max(args.atol * scale, 1e-12)
            detail = f"max abs logit {scale:.3g}, atol {atol:.2g}"
            r = subprocess.run([args.warpstream, "onnx-test", case, "--device", args.device, "--precision", args.precision,
                                "--rtol", str(args.rtol), "--atol", str(atol), "-v"],
                               capture_output=True, text=True, timeout=1800)
            out = r.stdout + r.stderr
            if r.returncode == 3:  # onnx-test --device cuda: no usable CUDA device
                print(out.strip(), file=sys.stderr)
                return 2
            if r.returncode == 0 and "1 passed" in out:
                status = "pass"
            elif "SKIP" in out:
                status = "refused"
                detail = next((l for l in out.splitlines() if l.startswith("SKIP")), "").split(": ", 1)[-1]
            else:
                status = "FAIL"
                detail += "; " + next((l for l in out.splitlines() if l.startswith("FAIL")), out.strip()[-300:]).split(": ", 1)[-1]
        except Exception as e:  # export or ORT failure: reported, not hidden
            status, detail = "export failed", f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        failed += status != "pass"
        rows.append((name, status, detail, time.time() - t0))
        print(f"{name:24s} {status:14s} {rows[-1][3]:6.1f}s {detail}", flush=True)
    if args.markdown:
        executor = "CPU executor" if args.device == "cpu" else f"CUDA executor ({args.precision})"
        print(f"\n| model | {executor} vs ONNX Runtime | note |\n|---|---|---|")
        for name, status, detail, _ in rows:
            print(f"| {name} | {status} | {detail.replace('|', '/')[:160]} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
