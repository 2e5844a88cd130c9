# Suite bench-flow of scripts/device.sh (sourced): the capacity rail's transfer study. Flow streamer GPU tests,
# `warpstream h2d` (pinned/pageable/mapped bandwidth vs chunk and stream count), `warpstream overlap` (the
# streaming scheduler: compute-only, transfer-only and overlapped, with the 1.05x target), a Gantt chart.
# Under $OUT: h2d.json, overlap.json, overlap-gantt.png.
ws_build warpstream ws_gpu_tests || { FAILED=1; return; }
timeout 60 "$GT" --gtest_filter='FlowStreamer*' > "$L/flow-tests.txt" 2>&1
rc=$?; mark $rc; row "ws_gpu_tests FlowStreamer*" "rc=$rc $(gtest_result "$L/flow-tests.txt")"
timeout ${WS_FLOW_H2D_TIMEOUT:-60} "$WS" h2d ${WS_FLOW_H2D_ARGS:-} --json "$OUT/h2d.json" > "$L/h2d.txt" 2>&1
row "warpstream h2d" "rc=$? ($(elapsed) s)"
timeout ${WS_FLOW_OVERLAP_TIMEOUT:-60} "$WS" overlap ${WS_FLOW_OVERLAP_ARGS:-} --json "$OUT/overlap.json" > "$L/overlap.txt" 2>&1
row "warpstream overlap" "rc=$? ($(elapsed) s) $(tail -1 "$L/overlap.txt")"
python3 tools/plot_overlap.py "$OUT/overlap.json" "$OUT/overlap-gantt.png" > "$L/gantt.txt" 2>&1
python3 tools/flow_summary.py "$OUT/h2d.json" "$OUT/overlap.json" | tee -a "$SUM"
