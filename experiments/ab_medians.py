#!/usr/bin/env python3
"""Medians of alternated A/B bench rows, for the experiments/*_ab.sh scripts.

Reads lines `<tag>_<rep>  rc=0 host p50/p99/p99.9 A/B/C ... gpu p50 D ...` (as their row() helpers print them) from the
file given, groups them by <tag>, and prints per tag the median over reps of each number and the GPU p50 of every rep.
Rows with rc != 0 are left out (their line says why). Usage: python3 experiments/ab_medians.py RESULTS.txt
"""
import re
import statistics
import sys

ROW = re.compile(r"([\w-]+?)_(\d+)\s+rc=0 host p50/p99/p99.9 ([\d.]+)/([\d.]+)/([\d.]+) gpu p50 ([\d.]+)")


def main(path):
    rows = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows.setdefault(m.group(1), []).append([float(m.group(i)) for i in (3, 4, 5, 6)])
    width = max((len(k) for k in rows), default=8) + 2
    for k, v in rows.items():
        med = [statistics.median(x[i] for x in v) for i in range(4)]
        print(f"{k:{width}s} {len(v)} reps: median of host p50 {med[0]:.1f}, p99 {med[1]:.1f}, p99.9 {med[2]:.1f}, "
              f"gpu p50 {med[3]:.1f} us  (gpu p50 per rep {' '.join(f'{x[3]:.1f}' for x in v)})")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ab_medians.py RESULTS.txt")
    main(sys.argv[1])
