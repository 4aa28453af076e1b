#!/usr/bin/env python3
"""Ratios from a Google Benchmark JSON file (run with --benchmark_repetitions=N).

Benchmarks are named <case>_<implementation><template args>, e.g. expr_attend<64, 1024>. For each
case and size (template arguments, and arguments after a slash) it prints every implementation's
median time (or rate, where every implementation of the group reports items per second), its
ratio to attend (the `attend` or `fused` implementation; > 1: attend is faster), where a benchmark
reports a FLOPS counter its share of the fma_peak measured in the same run, and the ratios a
benchmark measures itself (counters named x_per_y, as decode_paired's).

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
        # Arguments after a slash (tokens_attend/stories15M/1: a config and a thread count) are part
        # of the size; Google Benchmark's own suffixes (/real_time, /min_time:..) are not.
        base, *rest = b.get("run_name", b["name"]).split("/")
        extra = [p for p in rest if p not in ("real_time", "process_time", "manual_time") and ":" not in p]
        medians[(base, "/".join(extra))] = b
    peak = next((b.get("FLOPS") for (n, _), b in medians.items() if "fma_peak" in n), None)

    groups = defaultdict(dict)
    for (name, extra), b in medians.items():
        m = re.match(r"(?:bench::)?([a-z0-9]+)_([a-z0-9_]+?)(<.*>)?$", name)
        if not m or m.group(1) == "fma":
            continue
        case, impl, args = m.group(1), m.group(2), (m.group(3) or "") + ("/" + extra if extra else "")
        groups[(case, args)][impl] = b

    if peak:
        print(f"FMA peak measured in this run: {peak / 1e9:.1f} GFLOP/s\n")
    header = ["case", "size", "implementation", "median", "attend speed-up", "share of peak"]
    # Ratios a benchmark measures itself (counters named x_per_y: decode_paired's attend_per_read)
    def own_ratios(b):
        return ", ".join(f"{k.replace('_per_', ' / ')} {v:.3f}" for k, v in sorted(b.items())
                         if "_per_" in k and k not in ("bytes_per_second", "items_per_second") and isinstance(v, float))
    with_ratios = any(own_ratios(b) for impls in groups.values() for b in impls.values())
    if with_ratios:
        header.append("its own ratios")
    rows = []
    for (case, args), impls in sorted(groups.items()):
        ref = impls.get("attend") or impls.get("fused")
        # Rates where every implementation reports one (bench/llama2: tokens per second, its floor
        # timed per token and the models per run of tokens)
        rates = all("items_per_second" in b for b in impls.values())
        for impl, b in sorted(impls.items(), key=lambda kv: kv[0] not in ("attend", "fused")):
            if rates:
                median = f"{b['items_per_second']:.4g} items/s"
                ratio = f"{ref['items_per_second'] / b['items_per_second']:.2f}x" if ref else "-"
            else:
                median = f"{b['real_time']:.4g} {b['time_unit']}"
                ratio = f"{b['real_time'] / ref['real_time']:.2f}x" if ref else "-"
            share = f"{100 * b['FLOPS'] / peak:.1f} %" if peak and "FLOPS" in b else "-"
            rows.append([case, args, impl, median, ratio, share] + ([own_ratios(b) or "-"] if with_ratios else []))
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
