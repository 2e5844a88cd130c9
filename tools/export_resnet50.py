#!/usr/bin/env python3
"""ResNet-50 for timing: torchvision architecture, random weights (torch.manual_seed(0)), exported to ONNX.

Writes <out-dir>/resnet50.onnx (opset 13, static 1x3x224x224 "input" -> [1,1000] "logits", eval mode,
BatchNorm folded by the exporter's constant folding) and <out-dir>/resnet50.pt (the state dict the PyTorch
peer loads, so both sides run the same weights even if the generator changes between torch versions) and
<out-dir>/resnet50.json (ImageNet mean/std sidecar). The ONNX is ~100 MB: made on the device machine by
`scripts/device.sh bench-latency` rather than carried. Random weights are fine for timing, meaningless for accuracy.

  python3 tools/export_resnet50.py --out-dir .assets/models
"""
import argparse
import json
from pathlib import Path

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opset", type=int, default=13)
    a = ap.parse_args()
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(a.seed)
    m = torchvision.models.resnet50(weights=None).eval()
    torch.save(m.state_dict(), out / "resnet50.pt")
    x = torch.randn(1, 3, 224, 224)
    kw = dict(input_names=["input"], output_names=["logits"], opset_version=a.opset, do_constant_folding=True)
    try:  # torch >= 2.5: the TorchScript exporter is opt-in (dynamo=False); older versions lack the argument
        torch.onnx.export(m, x, str(out / "resnet50.onnx"), dynamo=False, **kw)
    except TypeError:
        torch.onnx.export(m, x, str(out / "resnet50.onnx"), **kw)
    (out / "resnet50.json").write_text(json.dumps({
        "input": "input", "output": "logits", "height": 224, "width": 224, "layout": "NCHW float32 RGB",
        "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
        "source": f"torchvision {torchvision.__version__} resnet50(weights=None), torch.manual_seed({a.seed}), "
                  f"torch {torch.__version__}, opset {a.opset}: random weights, for timing only"}, indent=2) + "\n")
    print(f"wrote {out / 'resnet50.onnx'} ({(out / 'resnet50.onnx').stat().st_size / 1e6:.1f} MB), resnet50.pt, resnet50.json")


if __name__ == "__main__":
    main()
