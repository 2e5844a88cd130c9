#!/usr/bin/env python3
"""Issue 13's targets from one bench-latency call's reports (scripts/lib/bench-latency.sh writes them; schema in
docs/benchmarking.md): for each model, every fp16 one-lane row of ours (graph, mapped input, end to end; the default
configuration and each opt-in variant) against the best PyTorch network-only p99 of the same call (the lowest host p99
over the peer's network reports: eager, CUDA Graph, torch.compile).

  target    ours p99 <= ratio x best peer p99            (default ratio 0.5)
  tail      ours p99.9 / p50 <= tail                     (default 1.15)
  moonshot  ours p99 <= the model's moonshot in us       (--moonshot MODEL=US; issue 13: resnet50=350, efficientnet_lite0=150)

Prints one markdown table per model: met, or missed by how many microseconds; unreadable or incomplete reports are
named on a "skipped" line. A benchmark summary, not a test: the exit status is 0 whatever the numbers (2 for bad
arguments).
  python3 tools/lanes_targets.py --reports DIR [--ratio 0.5] [--tail 1.15] [--moonshot resnet50=350 ...]
  python3 tools/lanes_targets.py --self-test
"""
import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

OURS = re.compile(r"^ours_(?P<model>.+?)_fp16(?:_(?P<variant>[a-z0-9]+))?_graph_mapped_1L\.json$")
PEER = re.compile(r"^torch_(?P<model>.+?)_fp16_(?P<mode>eager|cuda_graph|compile)_network\.json$")


def host(report):
    m = report["metrics"]["host_latency_us"]
    return m["p50"], m["p99"], m["p99_9"]


def usable(report):
    """A report with host p50 / p99 / p99.9 as positive numbers (a run with no samples has none)."""
    try:
        return all(isinstance(v, (int, float)) and v > 0 for v in host(report))
    except (KeyError, TypeError):
        return False


def collect(directory, skipped):
    """Our fp16 one-lane graph/mapped rows and the peer's network-only reports, by model; unreadable or incomplete
    reports are named in `skipped` instead."""
    ours, peers = {}, {}
    for p in sorted(Path(directory).glob("*.json")):
        m = OURS.match(p.name)
        kind = "ours" if m and (m["variant"] or "") not in ("nchw", "nhwc") else None
        if not kind and (m := PEER.match(p.name)):
            kind = "peer"
        if not kind:
            continue
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            skipped.append(f"{p.name}: {e}")
            continue
        if not usable(r):
            skipped.append(f"{p.name}: no host p50 / p99 / p99.9")
            continue
        if kind == "ours":
            ours.setdefault(m["model"], []).append((m["variant"] or "default", r))
        else:
            peers.setdefault(m["model"], []).append((m["mode"], r))
    return ours, peers


def table(model, rows, peers, ratio, tail, moonshot):
    out = [f"## {model} fp16: 1 lane, CUDA Graph, mapped 1080p input, end to end, against the best PyTorch network-only p99"]
    if not peers:
        return out + ["no PyTorch network-only report in this call: no ratio", ""]
    mode, best = min(peers, key=lambda mr: host(mr[1])[1])
    bp50, bp99, _ = host(best)
    rounds = best.get("peer_rounds", {}).get("host_latency_us", [])
    per_round = "/".join(f"{r['p99']:.1f}" for r in rounds)
    extra = f"; p99 per round {per_round}" if rounds else ""
    out.append(f"best peer: {best.get('label', mode)} p50 {bp50:.1f} / p99 {bp99:.1f} us{extra}; target p99 <= {ratio} x {bp99:.1f} "
               f"= {ratio * bp99:.1f} us")
    out.append("")
    out.append("| ours (row) | p50 | p99 | p99.9 | p99 / peer p99 | target | p99.9 / p50 | moonshot |")
    out.append("|---|---:|---:|---:|---:|---|---:|---|")
    for variant, r in sorted(rows, key=lambda vr: (vr[0] != "default", vr[0])):
        p50, p99, p999 = host(r)
        need = ratio * bp99
        verdict = f"met by {need - p99:.1f} us" if p99 <= need else f"missed by {p99 - need:.1f} us"
        t = p999 / p50 if p50 else float("inf")
        tail_s = f"{t:.3f} ({'ok' if t <= tail else 'over ' + str(tail)})"
        if moonshot is None:
            moon = "-"
        else:
            moon = f"met ({moonshot:.0f})" if p99 <= moonshot else f"missed by {p99 - moonshot:.1f} us ({moonshot:.0f})"
        out.append(f"| {variant} | {p50:.1f} | {p99:.1f} | {p999:.1f} | {p99 / bp99:.3f} | {verdict} | {tail_s} | {moon} |")
    out.append("")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", help="directory of the call's JSON reports")
    ap.add_argument("--ratio", type=float, default=0.5)
    ap.add_argument("--tail", type=float, default=1.15)
    ap.add_argument("--moonshot", action="append", default=[], help="MODEL=US")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.reports or not Path(a.reports).is_dir():
        ap.error("--reports DIR is required (a directory)")  # exit status 2
    if not (0 < a.ratio <= 10) or not (1 <= a.tail <= 10):
        ap.error("--ratio must be in (0, 10], --tail in [1, 10]")
    moon = {}
    for item in a.moonshot:
        name, _, us = item.partition("=")
        try:
            moon[name] = float(us)
        except ValueError:
            ap.error(f"--moonshot {item!r}: expected MODEL=US")
    skipped = []
    ours, peers = collect(a.reports, skipped)
    if not ours:
        print("no fp16 one-lane graph/mapped report of ours in " + a.reports)
    for model in sorted(ours):
        print("\n".join(table(model, ours[model], peers.get(model, []), a.ratio, a.tail, moon.get(model))))
    for s in skipped:
        print(f"skipped {s}")
    return 0


def self_test():
    def report(p50, p99, p999, label="x", rounds=None):
        r = {"label": label, "metrics": {"host_latency_us": {"p50": p50, "p99": p99, "p99_9": p999}}}
        if rounds:
            r["peer_rounds"] = {"selected": 2, "host_latency_us": [{"p50": p50, "p99": q} for q in rounds]}
        return r
    with tempfile.TemporaryDirectory() as d:
        files = {
            "ours_resnet50_fp16_graph_mapped_1L.json": report(392.7, 396.2, 403.3),
            "ours_resnet50_fp16_nhwcall_graph_mapped_1L.json": report(300.0, 305.0, 360.0),
            "ours_resnet50_fp16_nhwc_graph_mapped_1L.json": report(1, 1, 1),        # a layout row: not a variant of auto
            "ours_resnet50_fp16_graph_mapped_4L.json": report(1, 1, 1),              # 4 lanes: not compared
            "torch_resnet50_fp16_cuda_graph_network.json": report(1051.9, 1063.5, 1083.2),
            "torch_resnet50_fp16_compile_network.json": report(613.8, 626.8, 636.3, "torch compile", [700.0, 626.8, 650.0]),
            "torch_resnet50_fp16_compile_end_to_end.json": report(10, 10, 10),       # end to end: not the target's peer
            "torch_resnet50_fp16_eager_network.json": {"metrics": {"host_latency_us": {"count": 0}}},  # no samples
            "ours_resnet50_fp16_splitk2_graph_mapped_1L.json": "{not json",
        }
        for name, r in files.items():
            (Path(d) / name).write_text(r if isinstance(r, str) else json.dumps(r))
        skipped = []
        ours, peers = collect(d, skipped)
        assert sorted(v for v, _ in ours["resnet50"]) == ["default", "nhwcall"], ours
        assert sorted(m for m, _ in peers["resnet50"]) == ["compile", "cuda_graph"], peers
        assert len(skipped) == 2 and "no host p50" in " ".join(skipped), skipped
        lines = table("resnet50", ours["resnet50"], peers["resnet50"], 0.5, 1.15, 350.0)
        text = "\n".join(lines)
        assert "target p99 <= 0.5 x 626.8 = 313.4 us" in text, text
        assert "p99 per round 700.0/626.8/650.0" in text, text
        assert "| default | 392.7 | 396.2 | 403.3 | 0.632 | missed by 82.8 us | 1.027 (ok) | missed by 46.2 us (350) |" in text, text
        assert "| nhwcall | 300.0 | 305.0 | 360.0 | 0.487 | met by 8.4 us | 1.200 (over 1.15) | met (350) |" in text, text
        assert text.index("| default") < text.index("| nhwcall"), text
        assert "no ratio" in "\n".join(table("m", ours["resnet50"], [], 0.5, 1.15, None))
        for bad in (["--reports", str(Path(d) / "missing")], ["--reports", d, "--ratio", "0"], ["--reports", d, "--moonshot", "resnet50=fast"]):
            try:
                main(bad)
                raise AssertionError(f"accepted {bad}")
            except SystemExit as e:
                assert e.code == 2, (bad, e.code)
    print("lanes_targets self-test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
