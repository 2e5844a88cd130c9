"""GPU tests of the Flow drop-in (warpstream.flow.LTXVideoTransformer) inside diffusers' LTXPipeline.

A random-weight LTX-Video transformer (tools/ltx_goldens.py's model builder: diffusers' own
LTXVideoTransformer3DModel, 2B block sizes, $WS_FLOW_LAYERS blocks, default 4) is saved with diffusers'
save_pretrained and loaded by WarpStream. diffusers' LTXPipeline then runs its denoising loop twice from the
same latents and random prompt embeddings (no text encoder, no VAE: output_type="latent"): once with diffusers'
transformer, once with ``pipe.transformer = ours`` (resident, streamed under a 1 GiB budget, fp8 blocks). The
final latents are compared (cosine, max-abs, printed; the bf16 bar is asserted) and both loops are timed.

Needs: a CUDA build of the extension, torch with CUDA, diffusers 0.42.1 (scripts/lib/python.sh carries it).
Seeded by $WS_SEED (printed). Run with -s to see the figures; scripts/lib/python.sh does.
"""
import importlib.util
import json
import os
import sys
import pathlib
import time

import numpy as np
import pytest

import warpstream

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.skipif(not warpstream.has_cuda, reason="this warpstream build has no CUDA executor"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="torch without CUDA"),
]
diffusers = pytest.importorskip("diffusers")

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAYERS = int(os.environ.get("WS_FLOW_LAYERS", "4"))
# Pipeline geometry: 512 x 768 pixels, 25 frames -> latent grid 4 x 16 x 24 = 1536 tokens; T = 64 text tokens.
HEIGHT, WIDTH, FRAMES, TEXT, STEPS = 512, 768, 25, 64, 4
RESULTS = {}


def _ltx_goldens():
    # tools/ltx_goldens.py imports its sibling tools/ltx_common.py: the tools folder must be importable.
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location("ltx_goldens", ROOT / "tools" / "ltx_goldens.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def seed():
    s = int(os.environ.get("WS_SEED", np.random.SeedSequence().entropy % (2**31)))
    print(f"seed {s} (WS_SEED={s} reproduces)")
    return s


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, seed):
    """diffusers' transformer with random bf16 weights (2B block sizes, LAYERS blocks) and its saved folder."""
    lg = _ltx_goldens()
    cfg = dict(lg.CONFIG_2B, num_layers=LAYERS)
    model = lg.build_model(diffusers, cfg, seed, torch.device("cuda"), torch.bfloat16)
    folder = tmp_path_factory.mktemp("ltx") / "transformer"
    model.save_pretrained(folder, safe_serialization=True)
    return model, folder


@pytest.fixture(scope="module")
def pipeline_inputs(checkpoint, seed):
    """Random prompt embeddings (T5-sized, bf16) with masks, and the initial packed latents."""
    model, _ = checkpoint
    g = torch.Generator(device="cpu").manual_seed(seed + 10)
    cap = model.config.caption_channels

    def embeds():
        e = torch.randn((1, TEXT, cap), generator=g).to("cuda", torch.bfloat16)
        m = torch.ones((1, TEXT), dtype=torch.long)
        m[:, TEXT * 3 // 4:] = 0  # padded tail, as a tokenizer would give
        return e, m.to("cuda")

    pe, pm = embeds()
    ne, nm = embeds()
    f, h, w = (FRAMES - 1) // 8 + 1, HEIGHT // 32, WIDTH // 32
    latents = torch.randn((1, f * h * w, model.config.in_channels), generator=g).to("cuda")
    return dict(prompt_embeds=pe, prompt_attention_mask=pm, negative_prompt_embeds=ne,
                negative_prompt_attention_mask=nm, latents=latents)


def make_pipe(transformer):
    from diffusers import FlowMatchEulerDiscreteScheduler, LTXPipeline
    sched = FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True, base_shift=0.95, max_shift=2.05,
                                            base_image_seq_len=1024, max_image_seq_len=4096, shift_terminal=0.1)
    return LTXPipeline(scheduler=sched, vae=None, text_encoder=None, tokenizer=None, transformer=transformer)


def denoise(pipe, inputs, repeats=2):
    """The pipeline's denoising loop (CFG 3.0, STEPS steps), output_type='latent'; returns (latents, best s)."""
    best, out = float("inf"), None
    for _ in range(repeats):  # the first run of ours builds + captures the model: report the best
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = pipe(height=HEIGHT, width=WIDTH, num_frames=FRAMES, num_inference_steps=STEPS, guidance_scale=3.0,
                       output_type="latent", return_dict=False, **{k: v.clone() for k, v in inputs.items()})[0]
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return out.float(), best


def compare(got, ref):
    g, r = got.flatten().double(), ref.flatten().double()
    cos = float(torch.dot(g, r) / (g.norm() * r.norm()))
    return cos, float((g - r).abs().max()), float(r.abs().max())


@pytest.fixture(scope="module")
def diffusers_result(checkpoint, pipeline_inputs):
    model, _ = checkpoint
    lat, secs = denoise(make_pipe(model), pipeline_inputs)
    assert torch.isfinite(lat).all()
    RESULTS["diffusers"] = dict(seconds=secs)
    print(f"\nflow: diffusers transformer ({LAYERS} blocks, 2B sizes): {STEPS} steps CFG, {secs * 1e3:.1f} ms")
    return lat


@pytest.mark.parametrize("budget,weights", [(None, "bf16"), ("1GiB", "bf16"), ("1GiB", "fp8")])
def test_pipeline_drop_in(checkpoint, pipeline_inputs, diffusers_result, budget, weights):
    from warpstream.flow import LTXVideoTransformer
    _, folder = checkpoint
    ours = LTXVideoTransformer.from_pretrained(folder, vram_budget=budget, weights=weights)
    pipe = make_pipe(None)
    pipe.transformer = ours  # the drop-in: diffusers' own loop calls our forward
    assert pipe.transformer is ours and pipe._execution_device.type == "cuda"
    lat, secs = denoise(pipe, pipeline_inputs)
    cos, max_abs, max_ref = compare(lat, diffusers_result)
    lat0 = pipeline_inputs["latents"].float()
    dcos, dmax, dref = compare(lat - lat0, diffusers_result - lat0)  # what the loop added to the initial noise
    name = f"{weights} {'resident' if budget is None else budget}"
    RESULTS[name] = dict(seconds=secs, cosine=cos, max_abs=max_abs, max_ref=max_ref, update_cosine=dcos,
                         update_max_abs=dmax, update_max_ref=dref, describe=ours.engine.describe())
    print(f"\nflow: ours {name}: {secs * 1e3:.1f} ms ({RESULTS['diffusers']['seconds'] / secs:.2f}x faster than diffusers); "
          f"final latents vs diffusers: cosine {cos:.6f}, max-abs {max_abs:.4g} (max|ref| {max_ref:.4g}); "
          f"update (latents - initial noise): cosine {dcos:.6f}, max-abs {dmax:.4g} (max|ref| {dref:.4g})\n"
          f"flow:   {ours.engine.describe()}")
    assert ours.engine.builds == 1, "one shape across the loop: one device model"
    assert torch.isfinite(lat).all()
    # bf16 bar (as tests/gpu/ltx_model_test.cpp): cosine >= 0.999; fp8 weights carry their quantisation error too.
    assert cos >= (0.999 if weights == "bf16" else 0.99), f"{name}: cosine {cos} vs diffusers"
    out_dir = os.environ.get("WS_FLOW_RESULTS")
    if out_dir:
        pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
        with open(os.path.join(out_dir, "flow.json"), "w") as fh:
            json.dump(dict(RESULTS, layers=LAYERS, grid=[(FRAMES - 1) // 8 + 1, HEIGHT // 32, WIDTH // 32],
                           text_tokens=TEXT, steps=STEPS), fh, indent=1)


def test_forward_contract(checkpoint, seed):
    """One forward vs diffusers' forward (return_dict both ways), output dtype/shape, and refused arguments."""
    from warpstream.flow import LTXVideoTransformer
    model, folder = checkpoint
    ours = LTXVideoTransformer.from_pretrained(folder)
    g = torch.Generator(device="cpu").manual_seed(seed + 20)
    f, h, w, t = 2, 4, 6, 16
    x = torch.randn((2, f * h * w, 128), generator=g).to("cuda", torch.bfloat16)
    e = torch.randn((2, t, model.config.caption_channels), generator=g).to("cuda", torch.bfloat16)
    ts = torch.tensor([500.0, 20.0], device="cuda")
    m = torch.ones((2, t), device="cuda")
    m[1, t // 2:] = 0
    kw = dict(hidden_states=x, encoder_hidden_states=e, timestep=ts, encoder_attention_mask=m, num_frames=f,
              height=h, width=w, rope_interpolation_scale=(8 / 25, 32, 32))
    with torch.no_grad():
        ref = model(**kw, return_dict=False)[0]
        out = ours(**kw)
        (tup,) = ours(**kw, return_dict=False)
    assert out.sample.dtype == torch.bfloat16 and out.sample.shape == ref.shape and out.sample.is_cuda
    assert torch.equal(out.sample, tup), "two forwards of the same inputs must be identical"
    cos, max_abs, max_ref = compare(out.sample.float(), ref.float())
    print(f"\nflow: one forward vs diffusers: cosine {cos:.6f}, max-abs {max_abs:.4g} (max|ref| {max_ref:.4g})")
    assert cos >= 0.999
    with pytest.raises(warpstream.InvalidArgumentError, match="hidden_states: shape"):
        ours(**dict(kw, num_frames=3))
    with pytest.raises(NotImplementedError):
        ours(**dict(kw, video_coords=torch.zeros(1)))
    with pytest.raises(warpstream.Error):
        LTXVideoTransformer.from_pretrained(folder.parent / "missing")
