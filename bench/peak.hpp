// The machine's FMA peak, measured in the same binary as the benchmarks it normalises:
// independent chains of register-only FMAs (enough to cover latency x throughput), no memory.
#pragma once

#include <benchmark/benchmark.h>
#include <attend/simd.hpp>

namespace bench {

inline void fma_peak(benchmark::State& state) {
    using B = xsimd::batch<float>;
    constexpr int chains = 12;  // >= FMA latency (4) x ports (2) on current x86 cores, with room
    B acc[chains];
    for (int c = 0; c < chains; ++c) acc[c] = B(1.0f + 1e-7f * static_cast<float>(c));
    const B x(0.999999f), y(1e-7f);
    constexpr long iters = 1024;
    for (auto _ : state) {
        for (long i = 0; i < iters; ++i)
            for (int c = 0; c < chains; ++c) acc[c] = attend::simd::fma(acc[c], x, y);  // the instruction under every compiler
        for (int c = 0; c < chains; ++c) benchmark::DoNotOptimize(acc[c]);
    }
    const double flops = 2.0 * B::size * chains * iters;
    state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace bench
