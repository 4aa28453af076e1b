#!/usr/bin/env python3
"""Ratios from a Google Benchmark JSON file (run with --benchmark_repetitions=N).

Benchmarks are named <case>_<implementation><template args>, e.g. expr_attend<64, 1024>. For each
case and size it prints every implementation's median time, its ratio to attend (the `attend` or `fused`
implementation; > 1: attend is faster) and, where a benchmark reports a FLOPS counter, its share of the fma_peak measured in the
same run.

    bench/report.py results.json [--markdown]
"""
import json
import re
import sys
from collections import defaultdict


def main() -> None:
    data = json.load(open(sys.argv[1]))
    markdown = "--markdown" in sys.argv
    medians = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        name = b.get("run_name", b["name"]).split("/")[0]
        medians[name] = b
    peak = next((b.get("FLOPS") for n, b in medians.items() if "fma_peak" in n), None)

    groups = defaultdict(dict)
    for name, b in medians.items():
        m = re.match(r"(?:bench::)?([a-z0-9]+)_([a-z0-9_]+?)(<.*>)?$", name)
        if not m or m.group(1) == "fma":
            continue
        case, impl, args = m.group(1), m.group(2), m.group(3) or ""
        groups[(case, args)][impl] = b

    if peak:
        print(f"FMA peak measured in this run: {peak / 1e9:.1f} GFLOP/s\n")
    header = ["case", "size", "implementation", "median", "attend speed-up", "share of peak"]
    rows = []
    for (case, args), impls in sorted(groups.items()):
        ref = impls.get("attend") or impls.get("fused")
        for impl, b in sorted(impls.items(), key=lambda kv: kv[0] not in ("attend", "fused")):
            t = b["real_time"]
            unit = b["time_unit"]
            ratio = f"{t / ref['real_time']:.2f}x" if ref else "-"
            share = f"{100 * b['FLOPS'] / peak:.1f} %" if peak and "FLOPS" in b else "-"
            rows.append([case, args, impl, f"{t:.4g} {unit}", ratio, share])
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        for r in [header] + rows:
            print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()
