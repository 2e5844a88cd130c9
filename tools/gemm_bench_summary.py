#!/usr/bin/env python3
"""Summary table of a `warpstream gemm --bench --json` report (the device scripts print it last):
per backend and large-suite shape, the median TOPS over campaigns and the median % of cuBLASLt;
'!' marks a cell where any campaign's validation was not ok.

    python3 tools/gemm_bench_summary.py bench.json
"""
import collections
import json
import statistics as st
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: gemm_bench_summary.py BENCH.json", file=sys.stderr)
        return 2
    try:
        j = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        print("  no bench.json:", e)
        return 0  # the device scripts go on to their other stages
    rows = [r for r in j.get("rows", []) if r.get("suite") == "large"]
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["shape"], r["backend"])].append(r)
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    backs = list(dict.fromkeys(r["backend"] for r in rows))
    print("  TOPS (median over campaigns) and % of cuBLASLt; '!' = a campaign's validation was not ok")
    for b in backs:
        cells = []
        for s in shapes:
            v = [r["tops"] for r in by[(s, b)]]
            p = [r["pct_cublaslt"] for r in by[(s, b)]]
            ok = all(r["verdict"].startswith("ok") for r in by[(s, b)])
            cells.append("%7.1f(%3.0f%%)%s" % (st.median(v), st.median(p), "" if ok else "!"))
        print("  %-52s %s" % (b[:52], " ".join(cells)))
    print("  shapes:", " ".join(shapes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
