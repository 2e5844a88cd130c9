#!/usr/bin/env python3
"""Gantt chart of `warpstream overlap --json` timelines: one panel per (config, streamed mode), two lanes
(copy stream, compute stream) of per-layer bars from the CUDA events.
Usage: python3 tools/plot_overlap.py overlap.json overlap-gantt.png"""
import json
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = json.load(open(src))
    tls = data.get("timelines", [])
    if not tls:
        print("no timelines in", src)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("matplotlib unavailable:", e)
        return 2
    fig, axes = plt.subplots(len(tls), 1, figsize=(14, 1.3 * len(tls) + 1), squeeze=False)
    for ax, t in zip(axes[:, 0], tls):
        for e in t["layers"]:
            c = "C%d" % (e["layer"] % 10)
            ax.broken_barh([(e["copy_start_ms"], e["copy_end_ms"] - e["copy_start_ms"])], (10, 8), facecolors=c, edgecolor="k", linewidth=0.3)
            ax.broken_barh([(e["compute_start_ms"], e["compute_end_ms"] - e["compute_start_ms"])], (0, 8), facecolors=c, edgecolor="k", linewidth=0.3)
        end = max(e["compute_end_ms"] for e in t["layers"])
        ax.set_yticks([4, 14])
        ax.set_yticklabels(["compute", "copy"])
        ax.set_title("%s / %s (S=%d): %.2f ms" % (t["config"], t["mode"], t["slots"], end), fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("ms since pass start (CUDA events)")
    fig.tight_layout()
    fig.savefig(dst, dpi=90)
    print("wrote", dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
