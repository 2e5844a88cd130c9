"""warpstream.Classifier / read_image against the C++ CLI (`warpstream classify --device cpu --json`) on
the same files: the demo model with a random PNG, and EfficientNet-Lite0 on the fetched photos when
scripts/fetch-assets.sh has run."""
import json
import subprocess

import numpy as np
import pytest

import warpstream
from conftest import CACHE, assert_close


def cli_classify(cli, model, labels, image, k):
    r = subprocess.run([cli, "classify", "--model", str(model), "--labels", str(labels), "--device", "cpu",
                        "--topk", str(k), "--json", str(image)], check=True, capture_output=True, text=True)
    (result,) = json.loads(r.stdout)
    return [(e["index"], e["score"]) for e in result["top"]]


def compare_top(py_top, cli_top, what):
    assert [i for i, _ in py_top] == [i for i, _ in cli_top], f"{what}: {py_top} vs CLI {cli_top}"
    assert_close([s for _, s in py_top], [s for _, s in cli_top], rtol=1e-5, atol=1e-5, what=f"{what} scores")


def test_read_image_matches_pil(tmp_path, rng):
    Image = pytest.importorskip("PIL.Image")
    pixels = rng.integers(0, 256, size=(21, 34, 3), dtype=np.uint8)
    path = tmp_path / "img.png"
    Image.fromarray(pixels).save(path)
    img = warpstream.read_image(path)
    assert img.dtype == np.uint8 and img.shape == (21, 34, 3)
    np.testing.assert_array_equal(img, pixels)


def test_demo_classifier_vs_cli(cli, demo_model, tmp_path, rng):
    Image = pytest.importorskip("PIL.Image")
    path = tmp_path / "frame.png"
    Image.fromarray(rng.integers(0, 256, size=(48, 40, 3), dtype=np.uint8)).save(path)
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"class{i}\n" for i in range(10)))
    clf = warpstream.Classifier.from_onnx(demo_model)
    assert clf.classes == 10 and clf.input_size == (32, 32)
    py_top = clf.classify(warpstream.read_image(path), k=5)
    compare_top(py_top, cli_classify(cli, demo_model, labels, path, 5), "demo model top-5")
    with pytest.raises(warpstream.Error, match="11"):
        clf.classify(warpstream.read_image(path), k=11)
    with pytest.raises(warpstream.InvalidArgumentError, match=r"uint8 \[height, width, 3\]"):
        clf.classify(np.zeros((8, 8, 3), np.float32))


def test_efficientnet_lite0_vs_cli(cli):
    model = CACHE / "models" / "efficientnet_lite0.onnx"
    labels = CACHE / "labels" / "imagenet_classes.txt"
    images = sorted((CACHE / "images").glob("*.png"))[:2]
    if not model.exists() or not labels.exists() or not images:
        pytest.skip("EfficientNet-Lite0 assets absent (scripts/fetch-assets.sh)")
    clf = warpstream.Classifier.from_onnx(model)  # normalisation from efficientnet_lite0.json, as the CLI
    assert clf.classes == 1000
    for image in images:
        compare_top(clf.classify(warpstream.read_image(image), k=5), cli_classify(cli, model, labels, image, 5),
                    f"EfficientNet-Lite0 {image.name}")
