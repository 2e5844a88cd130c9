"""The Flow rail from Python: WarpStream's LTX-Video transformer as a drop-in for diffusers.

:class:`LTXVideoTransformer` is a ``torch.nn.Module`` with the forward arguments and results of diffusers'
``LTXVideoTransformer3DModel`` (diffusers 0.42.1), so that it replaces diffusers' transformer inside
``LTXPipeline``::

    import torch, diffusers, warpstream.flow
    pipe = diffusers.LTXPipeline.from_pretrained("Lightricks/LTX-Video", transformer=None, torch_dtype=torch.bfloat16)
    pipe.transformer = warpstream.flow.LTXVideoTransformer.from_pretrained(
        "LTX-Video/transformer", vram_budget="1GiB", weights="fp8")
    video = pipe(prompt="...", num_frames=121).frames[0]

The transformer runs on the GPU in bf16 (include/warpstream/flow.h): its block weights stay in pinned host
memory and stream through a ring of device slots under ``vram_budget`` (``None``: every block resident), as bf16
or as fp8/int8 codes dequantised on the device before each block. torch is needed (CUDA tensors in and out).

Tensors: the forward reads torch CUDA tensors through DLPack (no host round trip): ``hidden_states`` and
``encoder_hidden_states`` in bfloat16 (other float dtypes are cast first, a copy), ``timestep`` float32 ``[B]``
or ``[B, S]``, ``encoder_attention_mask`` ``[B, T]`` (1 keep, 0 drop; cast to float32). The work is enqueued on
torch's current CUDA stream and not synchronised. The device model is planned for one problem size (batch,
latent grid, text tokens): the first call builds it (allocations, one CUDA-graph capture), a call with another
size rebuilds it; within a denoising loop the size is fixed and a call allocates only its output tensor.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from types import SimpleNamespace

from ._warpstream import has_cuda

if not has_cuda:  # before importing torch: a CPU-only build cannot run the Flow rail whatever else is installed
    raise ImportError("warpstream.flow needs a warpstream build with CUDA (this one is CPU-only: nvcc or cuDNN was "
                      "missing at build, or it was built with WS_ENABLE_CUDA=OFF / WS_PYTHON_CUDA=OFF)")
import torch  # noqa: E402

from ._warpstream import LtxTransformer as _LtxTransformer  # noqa: E402

__all__ = ["LTXVideoTransformer", "parse_bytes"]

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_bytes(value) -> int:
    """``"1GiB"``, ``"512MiB"``, ``"1.5GB"``, ``1073741824`` -> bytes; ``None`` / ``0`` -> 0 (resident)."""
    if value is None:
        return 0
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"vram_budget: {value} is negative")
        return value
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"vram_budget: {value!r} is not a size (e.g. '1GiB', '512MiB', '2GB', 1073741824)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


class _Output(SimpleNamespace):
    """Stand-in for diffusers' Transformer2DModelOutput when diffusers is not importable (``.sample``)."""


def _output_type():
    try:
        from diffusers.models.modeling_outputs import Transformer2DModelOutput
        return Transformer2DModelOutput
    except Exception:  # diffusers absent or moved: same field, plain object
        return _Output


class LTXVideoTransformer(torch.nn.Module):
    """diffusers' ``LTXVideoTransformer3DModel`` interface over WarpStream's GPU transformer.

    Build with :meth:`from_pretrained`. Attributes diffusers' pipelines read: ``config`` (``in_channels``,
    ``out_channels``, ``patch_size``, ``patch_size_t``, ... from config.json), ``dtype`` (bfloat16),
    ``device``, ``cache_context`` (a no-op context manager). ``engine`` is the underlying
    :class:`warpstream.LtxTransformer`; ``engine.describe()`` tells where the weights live.
    """

    def __init__(self, engine: _LtxTransformer, config: dict):
        super().__init__()
        self.engine = engine
        self.config = SimpleNamespace(**config)
        self._device = torch.device("cuda", engine.device)
        self._output_cls = _output_type()

    @classmethod
    def from_pretrained(cls, path, subfolder: str | None = None, vram_budget=None, weights: str = "bf16",
                        max_slots: int = 3, cuda_graph: bool = True, device=None, torch_dtype=None, **_ignored):
        """Opens a diffusers LTX transformer checkpoint (a folder with config.json + safetensors).

        Args:
            path: the transformer folder (or the pipeline folder with ``subfolder="transformer"``).
            vram_budget: device bytes for weights + ring + activations, e.g. ``"1GiB"``; ``None``: resident.
            weights: ``"bf16"``, ``"fp8"`` or ``"int8"``: the block linear weights' format on the device ring
                (fp8/int8 with per-channel scales, dequantised to bf16 before each block).
            max_slots: ring slots at most when streaming (>= 2).
            cuda_graph: capture each forward into a CUDA graph (default) or enqueue it eagerly.
            device: ``"cuda"`` / ``"cuda:N"`` / a torch.device / an int (default: torch's current device).
            torch_dtype: accepted for diffusers compatibility; only ``None`` / ``torch.bfloat16``.
        Raises:
            warpstream.Error: missing or malformed checkpoint (names file and tensor), bad options.
        """
        if torch_dtype not in (None, torch.bfloat16):
            raise ValueError(f"torch_dtype {torch_dtype}: WarpStream's LTX transformer computes in bfloat16")
        folder = os.fspath(path)
        if subfolder:
            folder = os.path.join(folder, subfolder)
        if device is None:
            index = torch.cuda.current_device()
        elif isinstance(device, int):
            index = device
        else:
            d = torch.device(device)
            if d.type != "cuda":
                raise ValueError(f"device {device}: the LTX transformer runs on a CUDA device")
            index = d.index if d.index is not None else torch.cuda.current_device()
        engine = _LtxTransformer(folder, parse_bytes(vram_budget), weights, max_slots, cuda_graph, index)
        unused = engine.unused_tensors
        if unused:  # as diffusers' "Some weights of the model checkpoint ... were not used"
            warnings.warn(f"{len(unused)} tensor(s) of {folder} are not used by the model its config.json describes "
                          f"(first: {', '.join(unused[:3])}); is config.json the checkpoint's?", stacklevel=2)
        config = {}
        cfg_path = os.path.join(folder, "config.json") if os.path.isdir(folder) else os.path.join(
            os.path.dirname(folder), "config.json")
        with open(cfg_path, encoding="utf-8") as fh:
            config = {k: v for k, v in json.load(fh).items() if not k.startswith("_")}
        config.update(engine.config)  # the sizes as the runtime read them
        return cls(engine, config)

    # -- what diffusers' pipelines and ModelMixin users read -----------------------------------------------
    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def dtype(self) -> torch.dtype:
        return torch.bfloat16

    @contextlib.contextmanager
    def cache_context(self, name: str):  # diffusers' CacheMixin: no caching here
        yield

    def to(self, *args, **kwargs):  # weights stay where the runtime put them; dtype/device moves are no-ops
        return self

    def __repr__(self) -> str:
        return f"LTXVideoTransformer({self.engine.describe()})"

    # -- forward ------------------------------------------------------------------------------------------
    def forward(self, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor, timestep: torch.Tensor,
                encoder_attention_mask: torch.Tensor | None = None, num_frames: int | None = None,
                height: int | None = None, width: int | None = None, rope_interpolation_scale=None,
                video_coords: torch.Tensor | None = None, attention_kwargs: dict | None = None,
                return_dict: bool = True):
        """diffusers' ``LTXVideoTransformer3DModel.forward``: returns ``Transformer2DModelOutput(sample=...)``
        (``return_dict=True``) or ``(sample,)``; ``sample`` is bfloat16 ``[B, num_frames*height*width, out_channels]``
        on the model's device. ``video_coords`` is not supported (NotImplementedError); ``attention_kwargs`` must
        carry no LoRA scale (ignored otherwise)."""
        if video_coords is not None:
            raise NotImplementedError("video_coords: WarpStream's LTX transformer computes RoPE from (num_frames, "
                                      "height, width) and rope_interpolation_scale only")
        if num_frames is None or height is None or width is None:
            raise ValueError("num_frames, height and width (the latent grid) are required")
        if attention_kwargs and attention_kwargs.get("scale", 1.0) != 1.0:
            raise NotImplementedError("attention_kwargs['scale'] (LoRA) is not supported")
        dev = self._device
        hidden = hidden_states.to(device=dev, dtype=torch.bfloat16).contiguous()
        encoder = encoder_hidden_states.to(device=dev, dtype=torch.bfloat16).contiguous()
        batch, tokens = hidden.shape[0], hidden.shape[1]
        if not torch.is_tensor(timestep):
            timestep = torch.tensor(timestep, device=dev)
        ts = timestep.to(device=dev, dtype=torch.float32)
        if ts.ndim == 0:
            ts = ts.expand(batch)
        ts = ts.reshape(batch, -1) if ts.numel() != batch else ts.reshape(batch)
        ts = ts.contiguous()
        mask = None
        if encoder_attention_mask is not None:
            if encoder_attention_mask.ndim != 2:
                raise NotImplementedError("encoder_attention_mask: a [batch, text_tokens] keep mask is supported "
                                          "(not an already-converted bias)")
            mask = encoder_attention_mask.to(device=dev, dtype=torch.float32).contiguous()
        scale = None
        if rope_interpolation_scale is not None:
            if torch.is_tensor(rope_interpolation_scale):
                scale = [float(v) for v in rope_interpolation_scale.flatten().tolist()]
            else:
                scale = [float(v) for v in rope_interpolation_scale]
        out = torch.empty((batch, tokens, self.config.out_channels), device=dev, dtype=torch.bfloat16)
        stream = torch.cuda.current_stream(dev).cuda_stream
        self.engine.forward(hidden, encoder, ts, mask, out, (int(num_frames), int(height), int(width)), scale, stream)
        if not return_dict:
            return (out,)
        return self._output_cls(sample=out)
