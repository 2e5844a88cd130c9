# Suite python of scripts/device.sh (sourced): the `warpstream` Python package WITH CUDA on the GPU machine.
#  1. The extension built in the suite's build directory (build-dev; device.sh configures it with WS_BUILD_PYTHON=ON,
#     WS_PYTHON_CUDA=ON and this python3 when `python` is among the suites, so the other suites share one build):
#     targets warpstream (the CLI the tests compare with), _warpstream, _warpstream_stub, ws_gpu_tests (for the C++
#     test of ExecutionContext::set_input_address, run first).
#  2. pytest python/tests: the CPU tests, test_cuda.py (CUDA engine vs CPU engine, DLPack torch tensors bound
#     zero-copy: data pointers checked, the stream contract, lanes from Python) and test_flow.py (diffusers'
#     LTXPipeline denoising loop with diffusers' transformer vs warpstream.flow.LTXVideoTransformer: resident,
#     1 GiB streamed, fp8; latents cosine / max-abs and both loops timed).
#  3. bench/python_overhead.py: Python vs C++ host time per engine.run on a device tensor and per lane round trip.
#  4. `pip install .` into /tmp/ws-pip through the same build directory (incremental), then import it from there.
# Needs .whl carried (nanobind + scikit-build-core for the build, diffusers + importlib_metadata for test_flow).
# Under $OUT: python.txt (pytest and overhead output), python-overhead.json, flow.json.
PYO=$OUT/python.txt; : > "$PYO"
if [ -z "${WS_PY_READY:-}" ]; then
  row "python suite" "SKIPPED: python3 lacks nanobind or its headers (carry .whl): $(tail -1 "$L/python-check.txt" | cut -c1-90)"
  FAILED=1; return
fi
# A build-dev kept from an earlier call without the extension: reconfigure it (device.sh set WS_CMAKE_ARGS).
if [ -f "$B/CMakeCache.txt" ] && ! grep -q '^WS_BUILD_PYTHON:BOOL=ON' "$B/CMakeCache.txt"; then
  cmake -S . -B "$B" ${WS_CMAKE_ARGS:-} >> "$L/configure.txt" 2>&1 || { row "configure $B (python)" "FAILED"; FAILED=1; return; }
fi
ws_build warpstream _warpstream _warpstream_stub ws_gpu_tests || { FAILED=1; return; }
# The C++ side of the zero-copy input (ExecutionContext::set_input_address) first.
timeout 60 "$GT" --gtest_filter='CudaEngineModel.SetInputAddress*' > "$L/python-gtest.txt" 2>&1
rc=$?; mark $rc
row "gpu test CudaEngineModel.SetInputAddress*" "rc=$rc $(gtest_result "$L/python-gtest.txt")"
row "python extension" "$(grep -E 'warpstream: Python extension' "$L/configure.txt" | tail -1 | sed 's/^-- //' | cut -c1-100)"

export PYTHONPATH=$PWD/$B/python${PYTHONPATH:+:$PYTHONPATH}
python3 -c 'import pytest' 2>/dev/null || { row "python tests" "SKIPPED: no pytest for python3 (carry it in .whl)"; FAILED=1; return; }
timeout $(( $(left) > 240 ? 240 : $(left) )) env WS_BUILD_DIR=$PWD/$B WS_CLI=$PWD/$B/warpstream WS_FLOW_RESULTS=$OUT \
  WS_NATIVE_BACKTRACE=1 python3 -m pytest -q -s -rs -p no:cacheprovider python/tests > "$L/python-tests.txt" 2>&1
rc=$?; mark $rc
# A crash: the extension printed its native frames ("<object>(+0xOFFSET)"); resolve ours with addr2line.
if grep -q 'warpstream: native backtrace' "$L/python-tests.txt"; then
  { echo "## native backtrace, resolved (addr2line -f -C -i)"
    grep -A64 'warpstream: native backtrace' "$L/python-tests.txt" | grep -oE '^[^ ]+\([^)]*\+0x[0-9a-f]+\)' | head -40 |
      while IFS= read -r fr; do
        obj=${fr%%(*}; sym=${fr#*(}; sym=${sym%%+*}; off=${fr##*+}; off=${off%)}
        if [ -n "$sym" ]; then  # an exported symbol + offset: demangle it
          printf '%s %s+%s\n' "$(basename "$obj")" "$(echo "$sym" | c++filt | cut -c1-200)" "$off"
        else                    # a file offset: resolve it
          printf '%s %s: ' "$(basename "$obj")" "$off"
          addr2line -f -C -i -e "$obj" "$off" 2>&1 | paste -sd' ' | cut -c1-300
        fi
      done; } > "$L/python-backtrace.txt" 2>&1
  cat "$L/python-backtrace.txt" >> "$PYO"
  head -24 "$L/python-backtrace.txt" | cut -c1-200 | sed 's/^/    /' | tee -a "$SUM"
fi
row "python tests (pytest python/tests, CUDA)" "rc=$rc $(tail -1 "$L/python-tests.txt" | cut -c1-110) ($(elapsed) s)"
{ echo "## pytest python/tests"; grep -E '^flow:|seed|cosine|PASS|FAIL|Error|SKIP|passed|failed' "$L/python-tests.txt" | head -60; } >> "$PYO"
grep -E '^flow: ' "$L/python-tests.txt" | head -8 | cut -c1-160 | sed 's/^/    /' | tee -a "$SUM"
if [ "$(left)" -gt 40 ]; then
  "$WS" make-demo-model /tmp/ws-demo.onnx --seed 7 > /dev/null 2>&1
  timeout 60 python3 bench/python_overhead.py --model /tmp/ws-demo.onnx --n 3000 --json "$OUT/python-overhead.json" \
    > "$L/python-overhead.txt" 2>&1
  rc=$?
  row "python overhead (report)" "rc=$rc"
  sed 's/^/    /' "$L/python-overhead.txt" | tail -4 | tee -a "$SUM"
  { echo "## bench/python_overhead.py"; cat "$L/python-overhead.txt"; } >> "$PYO"
else
  row "python overhead" "SKIPPED (budget)"
fi
# pip install . through the same build directory: scikit-build-core reconfigures it (its install rules, BUILD_TESTING
# OFF) and rebuilds nothing that is current. BUILD_TESTING is restored after, for suites that follow.
if [ "$(left)" -gt 60 ]; then
  rm -rf /tmp/ws-pip
  timeout $(( $(left) - 20 )) python3 -m pip install --no-build-isolation --no-deps --no-index --no-cache-dir \
    --target /tmp/ws-pip --config-settings=build-dir="$PWD/$B" . > "$L/python-pip.txt" 2>&1
  rc=$?; mark $rc
  cmake -S . -B "$B" -DBUILD_TESTING=ON -U "SKBUILD*" > /dev/null 2>&1
  imp=$(cd /tmp && PYTHONPATH=/tmp/ws-pip python3 -c 'import warpstream; print(warpstream.__file__, "has_cuda", warpstream.has_cuda)' 2>&1 | tail -1)
  row "pip install . (--target /tmp/ws-pip)" "rc=$rc $imp ($(elapsed) s)"
  [ $rc -eq 0 ] || tail -15 "$L/python-pip.txt" | tee -a "$PYO"
else
  row "pip install ." "SKIPPED (budget)"
fi
