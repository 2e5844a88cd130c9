"""Shared fixtures of the Python tests (python/tests; run by scripts/test-python.sh).

The CLI (`warpstream make-demo-model`, `warpstream classify`) is the C++ side the bindings are compared
with: $WS_CLI, else <$WS_BUILD_DIR or build>/warpstream. Tests that need it skip when it is absent (e.g. a
plain `pip install .`). Random inputs print their seed and take $WS_SEED to reproduce.
"""
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("WS_CACHE_DIR", pathlib.Path.home() / ".cache" / "warpstream"))


def _find_cli():
    cands = [os.environ.get("WS_CLI")]
    build = os.environ.get("WS_BUILD_DIR")
    cands += [build and os.path.join(build, "warpstream"), str(ROOT / "build" / "warpstream")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture(scope="session")
def cli():
    path = _find_cli()
    if path is None:
        pytest.skip("the warpstream CLI is not built (set WS_CLI or WS_BUILD_DIR)")
    return path


@pytest.fixture(scope="session")
def demo_model(cli, tmp_path_factory):
    """The demo CNN written by `warpstream make-demo-model` (input [1,3,32,32] -> logits [1,10])."""
    path = tmp_path_factory.mktemp("demo") / "demo.onnx"
    subprocess.run([cli, "make-demo-model", str(path), "--seed", "7"], check=True, capture_output=True)
    return path


@pytest.fixture
def rng():
    seed = int(os.environ.get("WS_SEED", np.random.SeedSequence().entropy % (2**31)))
    print(f"seed {seed} (WS_SEED={seed} reproduces)")
    return np.random.default_rng(seed)


def assert_close(actual, expected, rtol, atol, what):
    """np.allclose with a message naming the first bad index and both operands."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    assert np.isfinite(actual).all(), f"{what}: non-finite values in the result"
    bad = ~np.isclose(actual, expected, rtol=rtol, atol=atol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} mismatches; first at {idx}: got {actual[idx]!r}, "
                             f"expected {expected[idx]!r} (rtol {rtol}, atol {atol})")
