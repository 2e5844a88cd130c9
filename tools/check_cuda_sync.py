#!/usr/bin/env python3
"""Fails on a legacy-stream CUDA call whose completion a non-blocking stream would not wait for.

    tools/check_cuda_sync.py [REPO_ROOT]    # exit 0 clean, 1 with one line (file:line: call) per violation
    tools/check_cuda_sync.py --self-test    # checks the checker on a synthetic tree

Every stream this project creates is cudaStreamNonBlocking, so work on it is not ordered after the legacy
default stream. Two synchronous-looking calls run there and return before their work has landed (CUDA Runtime
API, "API synchronization behavior"):
  - cudaMemcpy(..., cudaMemcpyHostToDevice) from pageable memory returns once the data is staged, before the DMA;
  - cudaMemset(...) is asynchronous.
A kernel enqueued next on one of our streams can then read the old bytes (four torchvision zoo models gave
wrong logits on a busy H200 and matched on an idle one, device runs 18 and 19 of 2026-12-02: the cause found in the
code). Use ws::cuda::copy_to_device /
ws::cuda::fill_device (src/cuda/cuda_util.h) or, in GPU tests, ws::test::upload_sync / memset_sync
(tests/support/cuda_check.h); stream-ordered cudaMemcpyAsync / cudaMemsetAsync on the consuming stream are fine.
Scanned: src/, apps/, bench/, python/src/, tests/ (.cpp .cu .h .cuh .hpp). Exempt: the helpers' own definitions.
"""
import os
import re
import sys
import tempfile

SCANNED = ("src", "apps", "bench", "python/src", "tests")
EXTS = (".cpp", ".cu", ".h", ".cuh", ".hpp", ".cc")
EXEMPT = {os.path.join("src", "cuda", "cuda_util.cpp"), os.path.join("tests", "support", "cuda_check.h")}
MEMCPY = re.compile(r"(?<![A-Za-z0-9_])cudaMemcpy\s*\(")
MEMSET = re.compile(r"(?<![A-Za-z0-9_])cudaMemset\s*\(")


def call_text(text, start):
    """The call's text from `start` (at the name) to its closing parenthesis (or the end of the file)."""
    depth = 0
    for i in range(text.index("(", start), len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def strip_comments(text):
    # Keep line structure: replace comments with spaces of the same length.
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    return re.sub(r"//[^\n]*", blank, text)


def scan(root):
    bad = []
    for top in SCANNED:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for d, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith(EXTS):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                if rel in EXEMPT:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = strip_comments(fh.read())
                for m in MEMCPY.finditer(text):
                    call = call_text(text, m.start())
                    if "cudaMemcpyHostToDevice" in call:
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append(f"{rel}:{line}: cudaMemcpy host->device returns before its DMA lands; "
                                   "use ws::cuda::copy_to_device (tests: ws::test::upload_sync)")
                for m in MEMSET.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{rel}:{line}: cudaMemset is asynchronous on the legacy stream; "
                               "use ws::cuda::fill_device (tests: ws::test::memset_sync) or cudaMemsetAsync on the consuming stream")
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "src", "x"))
        os.makedirs(os.path.join(t, "src", "cuda"))
        with open(os.path.join(t, "src", "x", "bad.cpp"), "w") as f:
            f.write("void f(){\n  cudaMemcpy(d, h,\n    n, cudaMemcpyHostToDevice);\n  cudaMemset(d, 0, n);\n}\n")
        with open(os.path.join(t, "src", "x", "ok.cpp"), "w") as f:
            f.write("void g(){\n  cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);\n  cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);\n"
                    "  cudaMemsetAsync(d, 0, n, s);\n  // cudaMemset(d, 0, n) in a comment\n  my_cudaMemset(d);\n}\n")
        with open(os.path.join(t, "src", "cuda", "cuda_util.cpp"), "w") as f:
            f.write("cudaMemset(d, 0, n); cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);\n")
        got = scan(t)
        want = ["src/x/bad.cpp:2:", "src/x/bad.cpp:4:"]
        ok = len(got) == 2 and all(g.startswith(w) for g, w in zip(got, want))
        print("self-test", "passed" if ok else "FAILED", *got, sep="\n  ")
        return 0 if ok else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    bad = scan(root)
    for b in bad:
        print(b)
    print(f"check_cuda_sync: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
