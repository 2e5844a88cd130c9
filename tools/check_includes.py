#!/usr/bin/env python3
"""Fails on an #include that crosses the module arrows of docs/architecture.md.

    tools/check_includes.py [REPO_ROOT]     # exit 0 clean, 1 with one line per violation
    tools/check_includes.py --self-test     # checks the checker on a synthetic tree

Rules (each violation prints file:line, the include and the rule broken):
  1. include/warpstream/*.h includes only "warpstream/..." and standard/system headers -- nothing
     from src/, bench/, apps/, tests/, experiments/, and no CUDA or third-party library headers
     (public headers are host-only and self-contained).
  2. A file in src/<module> includes only its own module, the modules it depends on (ALLOWED below,
     the arrows core <- cuda <- kernels <- {engine_cuda, lanes, flow}; core <- reference <- engine_ir
     <- {engine_cpu, engine_cuda} <- lanes; core <- {io, reference} <- flow_host <- flow) and the public headers
     of those modules (PUBLIC_HEADER_MODULE).
  3. Nothing in src/ includes apps/, bench/, experiments/ or tests/.
  4. src/reference is plain C++: no CUDA header at all.
CMake enforces the same arrows at link time (one target per module); this check also catches a
header-only include that the linker would never notice.
"""
import os
import re
import sys
import tempfile

# module -> the modules it may include (its dependencies, transitively; itself implied).
ALLOWED = {
    "core": set(),
    "reference": {"core"},
    "io": {"core"},
    "engine_ir": {"reference", "core"},
    "engine_cpu": {"engine_ir", "reference", "io", "core"},
    "flow_host": {"io", "reference", "core"},  # reference: the CPU LTX forward binds WeightStore tensors
    "cuda": {"core"},
    "kernels": {"cuda", "core"},
    "engine_cuda": {"engine_ir", "kernels", "cuda", "core"},
    "lanes": {"engine_cuda", "engine_ir", "kernels", "cuda", "core"},
    "flow": {"flow_host", "io", "kernels", "cuda", "core", "reference"},  # reference: RoPE tables at build (diffusers goldens check them)
}

# The module that implements each public header (include/warpstream/<name>). A header not listed
# belongs to core (header-only vocabulary types) -- list it here when it belongs to a higher module.
PUBLIC_HEADER_MODULE = {
    "graph.h": "engine_ir",
    "arena.h": "engine_ir",
    "engine.h": "engine_cpu",
    "classifier.h": "engine_cpu",
    "image.h": "io",
    "safetensors.h": "io",
    "cuda_engine.h": "engine_cuda",
    "lanes.h": "lanes",
    "flow.h": "flow",
}

OUTSIDE_SRC = ("apps/", "bench/", "experiments/", "tests/", "support/")
CUDA_HEADER = re.compile(r"^(cuda[^/]*\.h|cuda/|cudnn|cublas|curand|cufft|cusparse|nvtx|nvToolsExt|cub/|thrust/|"
                         r"cuda_fp16|cuda_bf16|cuda_fp8|mma\.h|cooperative_groups|cutlass/|cute/|.*\.cuh$)")
THIRD_PARTY = re.compile(r"^(onnx/|google/|nlohmann/|CLI/|gtest/|gmock/|png\.h|jpeglib\.h|openssl/|cudnn_frontend)")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")


def module_of_src(rel):
    """'src/engine/cuda/ops/conv.cpp' -> 'engine_cuda'; None outside a known module."""
    parts = rel.split("/")
    if len(parts) < 3 or parts[0] != "src":
        return None
    top = parts[1]
    if top == "engine" and len(parts) >= 4:
        return {"ir": "engine_ir", "cpu": "engine_cpu", "cuda": "engine_cuda"}.get(parts[2])
    if top == "flow":
        return "flow_host" if parts[2] == "host" and len(parts) >= 4 else "flow"
    return top if top in ALLOWED else None


def module_of_include(path):
    """Module of a quoted include written from src/'s root ("kernels/topk/topk.h"), or None."""
    if path.startswith("warpstream/"):
        return PUBLIC_HEADER_MODULE.get(path[len("warpstream/"):], "core")
    return module_of_src("src/" + path)


def check_file(root, rel, errors):
    in_public = rel.startswith("include/warpstream/")
    module = module_of_src(rel)
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, path = m.group(1), m.group(2).strip()
            close = ">" if kind == "<" else '"'
            where = f"{rel}:{lineno}: #include {kind}{path}{close}"
            if in_public:
                if kind == '"' and not path.startswith("warpstream/"):
                    errors.append(f"{where}: public headers include only warpstream/* and system headers")
                elif kind == "<" and (CUDA_HEADER.match(path) or THIRD_PARTY.match(path) or
                                      module_of_include(path) is not None or path.startswith(OUTSIDE_SRC)):
                    errors.append(f"{where}: public headers are host-only and self-contained (no CUDA, "
                                  "third-party or project-internal headers)")
                continue
            if module is None:
                continue
            if module == "reference" and CUDA_HEADER.match(path):
                errors.append(f"{where}: src/reference is plain C++ and never includes CUDA")
                continue
            if kind == "<":
                continue
            if path.startswith(OUTSIDE_SRC):
                errors.append(f"{where}: src/ never includes apps/, bench/, experiments/ or tests/")
                continue
            target = module_of_include(path)
            if target is None:
                local = os.path.normpath(os.path.join(os.path.dirname(rel), path))
                if os.path.exists(os.path.join(root, local)):
                    target = module_of_src(local)
            if target is None or target == module:
                continue
            if target not in ALLOWED[module]:
                errors.append(f"{where}: module {module} may not depend on {target} "
                              f"(allowed: {', '.join(sorted(ALLOWED[module])) or 'std only'})")


def check_tree(root):
    errors = []
    for top in ("include/warpstream", "src"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(SOURCE_EXT):
                    rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                    check_file(root, rel, errors)
    return sorted(errors)


def self_test():
    cases = {  # file -> (content, number of violations expected)
        "include/warpstream/ok.h": ('#include <vector>\n#include "warpstream/status.h"\n', 0),
        "include/warpstream/bad.h": ('#include "reference/reference.h"\n#include <cuda_runtime.h>\n', 2),
        "src/core/ok.cpp": ('#include "warpstream/status.h"\n#include "core/file_io.h"\n', 0),
        "src/core/bad.cpp": ('#include "reference/reference.h"\n', 1),
        "src/reference/bad.cpp": ('#include <cuda_runtime.h>\n#include "kernels/topk/topk.h"\n', 2),
        "src/kernels/topk/bad.cu": ('#include "reference/reference.h"\n#include "engine/ir/op_table.h"\n', 2),
        "src/kernels/topk/ok.cu": ('#include "cuda/cuda_util.h"\n#include "kernels/topk/topk.h"\n#include "cutlass/cutlass.h"\n', 0),
        "src/engine/cuda/ops/bad.cpp": ('#include "engine/cpu/x.h"\n#include "lanes/x.h"\n#include "warpstream/engine.h"\n', 3),
        "src/lanes/ok.cpp": ('#include "engine/cuda/cuda_ops.h"\n#include "warpstream/lanes.h"\n', 0),
        "src/flow/bad.cpp": ('#include "bench/flow/h2d_bench.h"\n#include "engine/ir/op_table.h"\n', 2),
        "src/flow/host/bad.cpp": ('#include "cuda/cuda_util.h"\n', 1),
        "src/io/ok.cpp": ('#include "warpstream/image.h"\n', 0),
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, (text, _) in cases.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        errors = check_tree(root)
    failed = 0
    for rel, (_, want) in cases.items():
        got = sum(1 for e in errors if e.startswith(rel + ":"))
        if got != want:
            failed += 1
            print(f"self-test: {rel}: expected {want} violation(s), found {got}:")
            for e in errors:
                if e.startswith(rel + ":"):
                    print("   ", e)
    print(f"self-test: {len(cases) - failed}/{len(cases)} cases as expected")
    return 1 if failed else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    errors = check_tree(os.path.abspath(root))
    for e in errors:
        print(e)
    print(f"check_includes: {len(errors)} forbidden include(s)" if errors else "check_includes: ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
