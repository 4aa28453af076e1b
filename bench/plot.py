#!/usr/bin/env python3
"""Plot Google Benchmark JSON results (those with a FLOPS counter) against the FMA peak measured
in the same run: one panel per benchmark case, GFLOP/s per size and implementation.

    bench/plot.py out.png results1.json [results2.json ...]
"""
import json
import re
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    rows, peak = defaultdict(dict), None
    for path in paths:
        for b in json.load(open(path))["benchmarks"]:
            if b.get("aggregate_name", "median") != "median":
                continue
            name = b.get("run_name", b["name"]).split("/")[0]
            if "fma_peak" in name:
                peak = b["FLOPS"] / 1e9
                continue
            m = re.match(r"([a-z0-9]+)_([a-z0-9_]+?)(<.*>)$", name)
            if m and "FLOPS" in b:
                rows[m.group(1)][(m.group(3), m.group(2))] = b["FLOPS"] / 1e9
    return rows, peak


# One colour per implementation in every panel; attend's own plans first.
COLOURS = {"fused": "tab:blue", "attend": "tab:blue", "unfused": "tab:cyan", "eigen": "tab:orange",
           "eigenfixed": "tab:brown", "openblas": "tab:green", "onednn": "tab:red"}


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    rows, peak = load(paths)
    cases = sorted(rows)
    fig, axes = plt.subplots(len(cases), 1, figsize=(11, 3.6 * len(cases)), squeeze=False)
    for ax, case in zip(axes[:, 0], cases):
        data = rows[case]
        sizes = sorted({s for s, _ in data}, key=lambda s: [int(x) for x in re.findall(r"\d+", s)])
        impls = sorted({i for _, i in data}, key=lambda i: (i not in ("fused", "attend"), i != "unfused", i))
        width = 0.8 / len(impls)
        for k, impl in enumerate(impls):
            xs = [n + k * width for n in range(len(sizes))]
            ax.bar(xs, [data.get((s, impl), 0) for s in sizes], width, label=impl, color=COLOURS.get(impl, "tab:gray"))
        if peak:
            ax.axhline(peak, color="black", linestyle="--", linewidth=1, label=f"FMA peak {peak:.0f}")
        ax.set_xticks([n + 0.4 - width / 2 for n in range(len(sizes))])
        ax.set_xticklabels(sizes, fontsize=8)
        ax.set_ylabel("GFLOP/s")
        ax.set_title(case)
        ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
