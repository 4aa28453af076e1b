// The machine's limits, measured in the same binary as the benchmarks they normalise: the FMA
// peak (independent chains of register-only FMAs, enough to cover latency x throughput, no
// memory) and the read of n floats once (read_once, the floor of memory-bound steps).
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

// The sum of n floats at w, read once as four streams (a quarter each; one
// sequential stream was measured 30 % slower on Zen 1, eight no faster than four), each summed
// into two vector accumulators.
inline float read_once(const float* w, std::size_t n) {
    using B = xsimd::batch<float>;
    constexpr std::size_t W = B::size;
    const std::size_t part = n / (4 * 2 * W) * (2 * W);
    B acc[8] = {};
    for (std::size_t i = 0; i < part; i += 2 * W)
#pragma GCC unroll 8
        for (std::size_t u = 0; u < 8; ++u) acc[u] += B::load_unaligned(w + u / 2 * part + i + u % 2 * W);
    float s = 0;
    for (std::size_t i = 4 * part; i < n; ++i) s += w[i];
    for (auto& a : acc) s += xsimd::hadd(a);
    return s;
}

}  // namespace bench
