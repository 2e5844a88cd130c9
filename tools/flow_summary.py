#!/usr/bin/env python3
"""Summary table of `warpstream h2d` and `warpstream overlap` JSON reports (scripts/lib/bench-flow.sh).
   tools/flow_summary.py h2d.json overlap.json"""
import json, sys
try:
    h = json.load(open(sys.argv[1]))
    ceil = h["pinned_h2d_ceiling_gbps"]
    print("  h2d pinned ceiling %.2f GB/s, d2h %.2f GB/s (%s)" % (ceil, h["pinned_d2h_ceiling_gbps"], h["status"]))
    for mem, d in (("pinned", "h2d"), ("pinned", "d2h"), ("pageable", "h2d"), ("pageable", "d2h"), ("mapped", "kernel_read")):
        rs = [r for r in h["rows"] if r["memory"] == mem and r["direction"] == d and r["chunk_bytes"] == 0 and r["streams"] == 1]
        print("  %-8s %-11s 1 stream: %s" % (mem, d, " ".join("%dM:%.1f" % (r["bytes"] >> 20, r["gbps_median"]) for r in rs)))
    best = max((r for r in h["rows"] if r["memory"] == "pinned" and r["direction"] == "h2d"), key=lambda r: r["gbps_median"])
    print("  best pinned h2d: %d streams, chunk %d MiB, %d MiB: %.2f GB/s" % (best["streams"], best["chunk_bytes"] >> 20, best["bytes"] >> 20, best["gbps_median"]))
except Exception as e:
    ceil = None; print("  no h2d.json:", e)
try:
    o = json.load(open(sys.argv[2]))
except Exception as e:
    print("  no overlap.json:", e); sys.exit()
print("  overlap (%s), balanced tokens %d" % (o["status"], o["balanced_tokens"]))
print("  %-14s %-10s %6s %9s %9s %6s %8s %s" % ("config", "mode", "tokens", "ms", "graph_ms", "eff", "copyGB/s", "verdict"))
for r in o["rows"]:
    print("  %-14s %-10s %6d %9.3f %9.3f %6.3f %8.2f %s" % (r["config"], r["mode"], r["tokens"], r["ms_median"], r["graph_ms_median"], r["efficiency"], r["copy_gbps"], r["verdict"]))
for cfg in ("balanced", "compute_heavy", "transfer_heavy"):
    rs = {r["mode"]: r for r in o["rows"] if r["config"] == cfg}
    if "triple" not in rs: continue
    t = rs["triple"]; fl = max(rs["compute"]["ms_median"], rs["transfer"]["ms_median"])
    streamed = min(t["ms_median"], t["graph_ms_median"])
    line = "  target %-14s triple %.3f ms vs 1.05 x %.3f = %.3f ms: %s" % (cfg, streamed, fl, 1.05 * fl, "MET" if streamed <= 1.05 * fl else "MISSED by %.1f%%" % (100 * (streamed / fl - 1.05)))
    if ceil:
        line += "; pipeline copy %.2f GB/s = %.1f%% of ceiling (target 95%%)" % (t["copy_gbps"], 100 * t["copy_gbps"] / ceil)
    print(line)
