// Elementwise plans against a hand-written loop the compiler vectorises, a hand-written xsimd
// loop and Eigen arrays, in the same run, on a (64, 1024) and a (16, 16) float tensor.
// Ratios: bench/report.py on the JSON output.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>
#include <cmath>
#include <memory>
#include <xsimd/xsimd.hpp>
#ifdef ATTEND_HAVE_EIGEN
#include <Eigen/Core>
#endif

#include "peak.hpp"

namespace {

template <std::size_t M, std::size_t N>
struct operands {
    using T = attend::tensor<float, M, N>;
    static constexpr std::size_t size = M * N;
    std::unique_ptr<T> a = std::make_unique<T>(), b = std::make_unique<T>(), c = std::make_unique<T>(),
                       out = std::make_unique<T>();
    operands() {
        for (std::size_t k = 0; k < size; ++k) {
            a->data()[k] = 0.001f * static_cast<float>(k % 1000);
            b->data()[k] = 0.5f - 0.0007f * static_cast<float>(k % 777);
            c->data()[k] = 1.0f + 0.0003f * static_cast<float>(k % 333);
        }
    }
    void done(benchmark::State& state) {
        benchmark::DoNotOptimize(out->data());
        benchmark::ClobberMemory();
        state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size * sizeof(float) * 4));
    }
};

// ---- a * b + c * 2 ----

template <std::size_t M, std::size_t N>
void axpy_attend(benchmark::State& state) {
    operands<M, N> o;
    auto &a = *o.a, &b = *o.b, &c = *o.c, &out = *o.out;
    for (auto _ : state) {
        out = a * b + c * 2;
        benchmark::ClobberMemory();
    }
    o.done(state);
}

template <std::size_t M, std::size_t N>
void axpy_loop(benchmark::State& state) {
    operands<M, N> o;
    const float* __restrict a = o.a->data();
    const float* __restrict b = o.b->data();
    const float* __restrict c = o.c->data();
    float* __restrict out = o.out->data();
    for (auto _ : state) {
        for (std::size_t k = 0; k < o.size; ++k) out[k] = a[k] * b[k] + c[k] * 2;
        benchmark::ClobberMemory();
    }
    o.done(state);
}

// ---- exp(a - b) * c + 1 ----

template <std::size_t M, std::size_t N>
void expr_attend(benchmark::State& state) {
    operands<M, N> o;
    auto &a = *o.a, &b = *o.b, &c = *o.c, &out = *o.out;
    for (auto _ : state) {
        out = exp(a - b) * c + 1;
        benchmark::ClobberMemory();
    }
    o.done(state);
}

template <std::size_t M, std::size_t N>
void expr_xsimd(benchmark::State& state) {
    operands<M, N> o;
    using B = xsimd::batch<float>;
    const float *a = o.a->data(), *b = o.b->data(), *c = o.c->data();
    float* out = o.out->data();
    constexpr std::size_t n = operands<M, N>::size, nv = n / B::size * B::size;
    for (auto _ : state) {
        for (std::size_t k = 0; k < nv; k += B::size) {
            const B r = xsimd::exp(B::load_unaligned(a + k) - B::load_unaligned(b + k)) * B::load_unaligned(c + k) + B(1.0f);
            r.store_unaligned(out + k);
        }
        for (std::size_t k = nv; k < n; ++k) out[k] = std::exp(a[k] - b[k]) * c[k] + 1;
        benchmark::ClobberMemory();
    }
    o.done(state);
}

#ifdef ATTEND_HAVE_EIGEN
template <std::size_t M, std::size_t N>
void expr_eigen(benchmark::State& state) {
    operands<M, N> o;
    constexpr int n = static_cast<int>(M * N);
    // Fixed-size maps where Eigen would keep the array on the stack, dynamic above.
    using A = std::conditional_t<(n <= 1024), Eigen::Array<float, n, 1>, Eigen::ArrayXf>;
    Eigen::Map<const A> a(o.a->data(), n), b(o.b->data(), n), c(o.c->data(), n);
    Eigen::Map<A> out(o.out->data(), n);
    for (auto _ : state) {
        out = (a - b).exp() * c + 1.0f;
        benchmark::ClobberMemory();
    }
    o.done(state);
}
#endif

}  // namespace

BENCHMARK(bench::fma_peak);
BENCHMARK(axpy_attend<64, 1024>);
BENCHMARK(axpy_loop<64, 1024>);
BENCHMARK(axpy_attend<16, 16>);
BENCHMARK(axpy_loop<16, 16>);
BENCHMARK(expr_attend<64, 1024>);
BENCHMARK(expr_xsimd<64, 1024>);
BENCHMARK(expr_attend<16, 16>);
BENCHMARK(expr_xsimd<16, 16>);
#ifdef ATTEND_HAVE_EIGEN
BENCHMARK(expr_eigen<64, 1024>);
BENCHMARK(expr_eigen<16, 16>);
#endif
BENCHMARK_MAIN();
