"""WarpStream: a C++20/CUDA inference runtime, from Python.

The package wraps the public C++ API (``include/warpstream``) through a nanobind extension
(``warpstream._warpstream``):

* :class:`Engine` -- a fixed-shape ONNX engine on the CPU executor (``device="cpu"``) or, in builds
  with CUDA, the CUDA executor (``device="cuda"``). ``Engine.from_onnx(path).run(x)``.
* :class:`Classifier` -- batch-1 image classification on the CPU (what ``warpstream classify`` runs).
* :func:`read_image` -- PNG/JPEG decoding to a uint8 ``[H, W, 3]`` array.
* :class:`Pipeline` (CUDA builds) -- the latency rail: N lanes, ``try_acquire`` / ``input`` (a numpy view of
  mapped memory) / ``submit`` / ``wait`` (GIL released) / ``release``.
* :mod:`warpstream.flow` (CUDA builds, needs torch) -- ``LTXVideoTransformer``: the streamed LTX-Video transformer
  as a drop-in for diffusers' (``pipe.transformer = ...``), over :class:`LtxTransformer`.
* :class:`Error` -- raised for every runtime error; ``str(e)`` is the C++ message, ``e.code`` its class.
  :class:`InvalidArgumentError` (an ``Error`` and a ``ValueError``) for wrong caller values.

``has_cuda`` says whether this build includes the CUDA executor.

Example::

    import numpy as np
    import warpstream
    engine = warpstream.Engine.from_onnx("model.onnx")
    print(engine.inputs, engine.outputs)
    y = engine.run(np.random.rand(*engine.inputs[0].shape).astype(np.float32))
"""

from ._warpstream import (  # noqa: F401
    Classifier,
    Engine,
    Error,
    InvalidArgumentError,
    TensorInfo,
    has_cuda,
    read_image,
)

__all__ = ["Classifier", "Engine", "Error", "InvalidArgumentError", "TensorInfo", "has_cuda", "read_image"]
if has_cuda:
    from ._warpstream import Lane, LtxTransformer, Pipeline  # noqa: F401

    __all__ += ["Lane", "LtxTransformer", "Pipeline"]
__version__ = "0.1.0"
