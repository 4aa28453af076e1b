// Pieces shared by the benchmark binaries: deterministic inputs, the baselines' vectorised row
// softmax and causal mask, and the Google Benchmark main that runs after a correctness check.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <xsimd/xsimd.hpp>

namespace bench {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// Deterministic values in [-1, 1]: element k of the stream named by `seed`.
inline float fill_value(std::size_t k, std::uint32_t seed) {
    const std::uint32_t h = (static_cast<std::uint32_t>(k) + seed * 0x9e3779b9u) * 2654435761u + 12345u;
    return static_cast<float>((h >> 7) % 2001u) / 1000.0f - 1.0f;
}

// Row softmax in place, explicitly vectorised with xsimd (max, exp(x - max) and sum, scale);
// without -ffast-math g++ would keep the max / sum reductions and std::exp scalar. Entries at
// -inf (masked) come out as exactly 0.
inline void softmax_row(float* r, std::size_t n) {
    using B = xsimd::batch<float>;
    constexpr std::size_t W = B::size;
    const std::size_t nv = n / W * W;
    B mv(neg_inf);
    for (std::size_t j = 0; j < nv; j += W) mv = xsimd::max(mv, B::load_unaligned(r + j));
    alignas(64) float lanes[W];
    mv.store_aligned(lanes);
    float mx = neg_inf;
    for (std::size_t l = 0; l < W; ++l) mx = std::max(mx, lanes[l]);
    for (std::size_t j = nv; j < n; ++j) mx = std::max(mx, r[j]);
    const B m(mx);
    B sv(0.0f);
    for (std::size_t j = 0; j < nv; j += W) {
        const B e = xsimd::exp(B::load_unaligned(r + j) - m);
        e.store_unaligned(r + j);
        sv += e;
    }
    float s = xsimd::hadd(sv);
    for (std::size_t j = nv; j < n; ++j) s += r[j] = std::exp(r[j] - mx);
    const float inv = 1.0f / s;
    const B bi(inv);
    for (std::size_t j = 0; j < nv; j += W) (B::load_unaligned(r + j) * bi).store_unaligned(r + j);
    for (std::size_t j = nv; j < n; ++j) r[j] *= inv;
}

// Causal mask on a row-major (n, n) score matrix: key j > query i gets -inf.
inline void mask_upper(float* s, std::size_t n) {
    for (std::size_t i = 0; i + 1 < n; ++i) std::fill(s + i * n + i + 1, s + (i + 1) * n, neg_inf);
}

// The benchmark main after the caller's correctness check: nothing is timed when it failed.
inline int run_benchmarks(int argc, char** argv, bool verified, const char* name) {
    if (!verified) {
        std::fprintf(stderr, "%s: correctness check failed, not running benchmarks\n", name);
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

}  // namespace bench
