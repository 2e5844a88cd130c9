#!/usr/bin/env python3
"""Latency CDFs of benchmark reports (warpstream-bench/1) on a log time axis, p50/p99/p99.9 marked.

  python3 tools/plot_latency_cdf.py -o cdf.png ours.json torch_graph.json ...

One curve per report, from its per-sample CSV (the report's samples_csv, or <report>.csv beside it) for the
report's primary metric. A report without samples is drawn as its percentile points only (p50, p90, p95,
p99, p99.9, max) joined by a dashed line. The y axis is the CDF on a "nines" scale (-log10(1 - F)), so the
tail is readable: 0.5, 0.9, 0.99, 0.999 are evenly spaced.
"""
import argparse
import csv
import json
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def load_samples(report_path, rep, metric):
    cands = []
    if rep.get("samples_csv"):
        p = Path(rep["samples_csv"])
        cands += [p, Path(report_path).parent / p.name]
    cands.append(Path(report_path).with_suffix(".csv"))
    for p in cands:
        if p.is_file():
            with open(p) as f:
                r = csv.DictReader(f)
                vals = [float(row[metric]) for row in r if row.get(metric)]
            if vals:
                return np.sort(np.asarray(vals))
    return None


def nines(f):
    return -np.log10(np.clip(1.0 - f, 1e-6, 1.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--title", default="Latency CDF")
    a = ap.parse_args()
    fig, ax = plt.subplots(figsize=(10, 6.5))
    marks = [(50, "o"), (99, "s"), (99.9, "^")]
    for path in a.reports:
        rep = json.loads(Path(path).read_text())
        metric = rep.get("primary", "host_latency_us")
        st = rep["metrics"][metric]
        label = f"{rep.get('label', Path(path).stem)} (p50 {st['p50']:.0f} / p99 {st['p99']:.0f} / p99.9 {st['p99_9']:.0f} us)"
        x = load_samples(path, rep, metric)
        if x is not None:
            f = (np.arange(1, x.size + 1) - 0.5) / x.size
            (line,) = ax.plot(x, nines(f), lw=1.4, label=label)
        else:
            qs = [50, 90, 95, 99, 99.9]
            xs = [st["p50"], st["p90"], st["p95"], st["p99"], st["p99_9"]]
            (line,) = ax.plot(xs, nines(np.array(qs) / 100), ls="--", lw=1.2, label=label + " [percentiles only]")
        for q, m in marks:
            key = {50: "p50", 99: "p99", 99.9: "p99_9"}[q]
            ax.plot([st[key]], [nines(q / 100)], marker=m, color=line.get_color(), ms=7, mec="black", mew=0.6)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.0f}"))
    ticks = [0.5, 0.9, 0.99, 0.999, 0.9999]
    ax.set_yticks([nines(t) for t in ticks])
    ax.set_yticklabels(["p50", "p90", "p99", "p99.9", "p99.99"])
    for t in (0.5, 0.99, 0.999):
        ax.axhline(nines(t), color="grey", lw=0.5, ls=":")
    ax.set_ylim(0, nines(0.9999))
    ax.set_xlabel("latency (µs, log scale)")
    ax.set_ylabel("fraction of frames at or below (nines scale)")
    ax.set_title(a.title + "  (markers: ○ p50, □ p99, △ p99.9)")
    ax.grid(True, which="both", axis="x", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(a.output, dpi=130)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
