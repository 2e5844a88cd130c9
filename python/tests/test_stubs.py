"""The .pyi stubs (nanobind stubgen, generated at build) describe the extension that is imported, and
help() shows the documentation carried over from the C++ headers."""
import ast
import pathlib
import pydoc

import warpstream
import warpstream._warpstream as ext


def stub_tree():
    path = pathlib.Path(ext.__file__).with_name("_warpstream.pyi")
    assert path.exists(), f"missing stubs {path} (the _warpstream_stub build target writes them)"
    return ast.parse(path.read_text())


def test_stub_names_match_module():
    tree = stub_tree()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):  # re-exports: `from warpstream._errors import Error as Error`
            names.update(a.asname for a in node.names if a.asname == a.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    public = {n for n in dir(ext) if not n.startswith("_")}
    assert public <= names, f"names missing from the stubs: {public - names}"
    assert names - public <= {"TypeVar"}, f"stub names not in the module: {names - public}"


def test_stub_engine_methods():
    tree = stub_tree()
    (engine,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Engine"]
    members = {n.name for n in engine.body if isinstance(n, ast.FunctionDef)}
    assert {"from_onnx", "from_onnx_bytes", "run", "inputs", "outputs", "device", "precision"} <= members
    (run,) = [n for n in engine.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    assert [a.arg for a in run.args.args] == ["self", "inputs", "out", "stream"]


def test_help_is_useful():
    text = pydoc.render_doc(warpstream.Engine, renderer=pydoc.plaintext)
    for needle in ("from_onnx", "timing_cache", "stream=", "warpstream.Error", "out=", "input_shapes"):
        assert needle in text, f"help(warpstream.Engine) lacks {needle!r}"
    assert warpstream.__doc__ and "Engine" in warpstream.__doc__
