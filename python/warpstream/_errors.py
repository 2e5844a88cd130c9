"""The exceptions the extension raises (kept in pure Python so the stubs and help() describe them)."""


class Error(RuntimeError):
    """An error reported by the WarpStream runtime.

    ``str(e)`` is the runtime's message, ``Status::to_string()`` of include/warpstream/status.h: the
    error class, then what a user can act on (file and byte offset, node name and op type, attribute and
    opset, both sizes of a refused shape). ``e.code`` is the class alone: ``"not found"``,
    ``"invalid model"``, ``"unsupported"``, ``"invalid argument"``, ``"resource exhausted"``,
    ``"invalid image"``, ``"failed precondition"``, ``"cuda"`` or ``"internal"``.
    """

    code: str

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class InvalidArgumentError(Error, ValueError):
    """A caller-supplied value is wrong (an input's shape or dtype, an option); code ``"invalid argument"``."""
