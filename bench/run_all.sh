#!/usr/bin/env bash
# Builds and runs every benchmark (single thread unless stated), then writes the tables and the
# plot: bash bench/run_all.sh [repetitions]. Results in build/bench/results/, plot in docs/.
# Repetitions are interleaved at random across the implementations, so that a slow spell of a
# shared machine falls on all of them rather than on whichever ran then.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
cmake --workflow --preset bench >/dev/null
out=build/bench/results
mkdir -p "$out"
for b in elementwise matmul softmax attention layers parallel; do
    echo "== $b" >&2
    "build/bench/bench/$b" --benchmark_filter=-attn_memory --benchmark_repetitions="$reps" \
        --benchmark_enable_random_interleaving=true \
        --benchmark_report_aggregates_only=true \
        --benchmark_out="$out/$b.json" --benchmark_out_format=json >/dev/null
    if [ "$b" = attention ]; then  # peak RSS is per process: the memory case runs alone
        "build/bench/bench/$b" --benchmark_filter=attn_memory --benchmark_out="$out/attention_memory.json" \
            --benchmark_out_format=json >/dev/null
    fi
    echo "### $b"
    python3 bench/report.py "$out/$b.json" --markdown
    echo
done
# Debian's python3, which has python3-matplotlib (a python3 earlier on PATH may not).
/usr/bin/python3 bench/plot.py docs/performance.png "$out/matmul.json" "$out/attention.json" "$out/layers.json"
