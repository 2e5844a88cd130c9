#!/usr/bin/env python3
"""Per-block Gantt chart of a streamed `warpstream ltx` forward (the stage-04 chart, for the whole LTX model).

Reads the `--json` report(s) of `warpstream ltx ... --timeline --json R.json` and draws, per report, two lanes
from the CUDA events of one timed forward: the copy stream (block i's weights into its ring slot) and the compute
stream (block i). Times are ms since the blocks' fork; a copy that starts near the end of the forward is the tail
prefetch of the next forward's first blocks (layer < slots - 1). The panel title carries the forward's median,
copy, compute and wait totals from the same report.

Usage: python3 tools/plot_ltx_timeline.py OUT.png R.json [R.json ...]
Needs matplotlib (Debian python3-matplotlib). Exit 0 = written, 1 = a report has no streamed timeline, 2 = usage.
"""
import json
import os
import sys


def load(path):
    with open(path, encoding="utf-8") as fh:
        d = json.load(fh)
    s = d.get("streamed")
    if not isinstance(s, dict) or not isinstance(s.get("timeline"), dict) or not s["timeline"].get("layers"):
        return None, f"{path}: no streamed timeline (run `warpstream ltx` with --timeline and a --vram-budget)"
    return d, None


def title(path, d):
    s, t = d["streamed"], d["streamed"]["timeline"]
    grid = d.get("grid")
    grid = "x".join(str(g) for g in grid) if isinstance(grid, list) else str(grid)
    return (f"{os.path.basename(path)}: {s.get('stream_weights', '?')} weights, {s.get('slots', '?')} slots, batch "
            f"{d.get('batch', '?')}, grid {grid}; forward median {s.get('median_ms', 0):.2f} ms; copies "
            f"{t.get('copy_ms', 0):.1f} ms, block compute {t.get('compute_ms', 0):.1f} ms, compute waiting "
            f"{t.get('wait_ms', 0):.1f} ms")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    out, paths = argv[1], argv[2:]
    reports = []
    for p in paths:
        d, err = load(p)
        if err:
            print("error:", err, file=sys.stderr)
            return 1
        reports.append((p, d))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(reports), 1, figsize=(15, 1.7 * len(reports) + 0.8), squeeze=False)
    for ax, (p, d) in zip(axes[:, 0], reports):
        layers = d["streamed"]["timeline"]["layers"]  # [copy_start, copy_end, compute_start, compute_end] ms
        for i, (c0, c1, k0, k1) in enumerate(layers):
            colour = f"C{i % 10}"
            ax.broken_barh([(c0, c1 - c0)], (10, 8), facecolors=colour, edgecolor="k", linewidth=0.3)
            ax.broken_barh([(k0, k1 - k0)], (0, 8), facecolors=colour, edgecolor="k", linewidth=0.3)
        end = max(max(l[1], l[3]) for l in layers)
        ax.set_xlim(0, end * 1.01)
        ax.set_yticks([4, 14])
        ax.set_yticklabels(["compute", "copy"])
        ax.set_title(title(p, d), fontsize=8, loc="left")
    axes[-1, 0].set_xlabel("ms since the blocks' fork (one timed forward; CUDA events)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot_ltx_timeline: {len(reports)} timeline(s) -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
