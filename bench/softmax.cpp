// Softmax over the rows (last axis) of a (64, 1024) float tensor: attend against Eigen arrays (per
// row, and whole-array with broadcasting) and a hand-written loop, in the same run as the FMA
// peak. Ratios: bench/report.py on the JSON output.
//
// Before any timing, main() checks every implementation against a double-precision reference and
// aborts if the largest relative error exceeds 1e-4: benchmarks must not time wrong code.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#ifdef ATTEND_HAVE_EIGEN
#include <Eigen/Core>
#endif

#include "baselines.hpp"
#include "peak.hpp"

namespace {

// Deterministic values in [-1, 1].
inline float fill_value(std::size_t k) {
    const std::uint32_t h = static_cast<std::uint32_t>(k) * 2654435761u + 12345u;
    return static_cast<float>(h % 2001u) / 1000.0f - 1.0f;
}

template <std::size_t M, std::size_t N>
struct operands {
    using T = attend::tensor<float, M, N>;
    static constexpr std::size_t size = M * N;
    std::unique_ptr<T> x = std::make_unique<T>(), out = std::make_unique<T>();
    operands() {
        for (std::size_t k = 0; k < size; ++k) x->data()[k] = fill_value(k);
    }
};

// ---- implementations: construct once (untimed), run() is the timed work ----

template <std::size_t M, std::size_t N>
struct attend_impl {
    operands<M, N> o;
    void run() { *o.out = attend::softmax(*o.x); }
};

#ifdef ATTEND_HAVE_EIGEN
using eigen_rows = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Eigen arrays, one row at a time: max of the row, exp(x - max), divide by the row's sum. Each
// step is a contiguous vectorised Eigen expression.
template <std::size_t M, std::size_t N>
struct eigen_impl {
    static constexpr Eigen::Index m = static_cast<Eigen::Index>(M), n = static_cast<Eigen::Index>(N);
    operands<M, N> o;
    Eigen::Map<const eigen_rows> x{o.x->data(), m, n};
    Eigen::Map<eigen_rows> out{o.out->data(), m, n};
    void run() {
        for (Eigen::Index i = 0; i < m; ++i) {
            const float mx = x.row(i).maxCoeff();
            out.row(i) = (x.row(i) - mx).exp();
            out.row(i) /= out.row(i).sum();
        }
    }
};

// The same on the whole array with Eigen's partial reductions and broadcasting
// (x.rowwise().maxCoeff(), x.colwise() - max, out.colwise() /= sum). Eigen cannot vectorise a
// column vector broadcast across a row-major array, so exp(x - max) runs scalar here; kept to
// show the cost of the obvious formulation next to the per-row one above.
template <std::size_t M, std::size_t N>
struct eigenrowwise_impl {
    static constexpr Eigen::Index m = static_cast<Eigen::Index>(M), n = static_cast<Eigen::Index>(N);
    operands<M, N> o;
    Eigen::Map<const eigen_rows> x{o.x->data(), m, n};
    Eigen::Map<eigen_rows> out{o.out->data(), m, n};
    Eigen::ArrayXf mx = Eigen::ArrayXf(m), sum = Eigen::ArrayXf(m);  // allocated once, untimed
    void run() {
        mx = x.rowwise().maxCoeff();
        out = (x.colwise() - mx).exp();
        sum = out.rowwise().sum();
        out.colwise() /= sum;
    }
};
#endif

// Plain C++ per row: a max loop, an exp + sum loop with std::exp, a scale loop. Without
// -ffast-math the compiler may vectorise the scale loop only (the float max and sum reductions
// would need reassociation, std::exp a vector math library).
template <std::size_t M, std::size_t N>
struct loop_impl {
    operands<M, N> o;
    void run() {
        const float* __restrict x = o.x->data();
        float* __restrict out = o.out->data();
        for (std::size_t i = 0; i < M; ++i) {
            const float* __restrict xr = x + i * N;
            float* __restrict yr = out + i * N;
            float mx = xr[0];
            for (std::size_t j = 1; j < N; ++j) mx = xr[j] > mx ? xr[j] : mx;
            float s = 0;
            for (std::size_t j = 0; j < N; ++j) {
                const float e = std::exp(xr[j] - mx);
                yr[j] = e;
                s += e;
            }
            const float inv = 1.0f / s;
            for (std::size_t j = 0; j < N; ++j) yr[j] *= inv;
        }
    }
};

template <class Impl, std::size_t M, std::size_t N>
void run_bench(benchmark::State& state) {
    auto impl = std::make_unique<Impl>();
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->o.out->data());
    // One read of the input and one write of the output per iteration.
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * M * N * sizeof(float) * 2));
}

template <std::size_t M, std::size_t N>
void softmax_attend(benchmark::State& state) {
    run_bench<attend_impl<M, N>, M, N>(state);
}
#ifdef ATTEND_HAVE_EIGEN
template <std::size_t M, std::size_t N>
void softmax_eigen(benchmark::State& state) {
    run_bench<eigen_impl<M, N>, M, N>(state);
}
template <std::size_t M, std::size_t N>
void softmax_eigenrowwise(benchmark::State& state) {
    run_bench<eigenrowwise_impl<M, N>, M, N>(state);
}
#endif
template <std::size_t M, std::size_t N>
void softmax_loop(benchmark::State& state) {
    run_bench<loop_impl<M, N>, M, N>(state);
}

// ---- correctness guard (untimed) ----

bool failed = false;

template <class Impl, std::size_t M, std::size_t N>
void verify(const char* impl_name) {
    auto impl = std::make_unique<Impl>();
    impl->run();
    const float* x = impl->o.x->data();
    const float* y = impl->o.out->data();
    double max_rel = 0;
    std::size_t worst = 0;
    double worst_ref = 0;
    bool finite = true;
    std::vector<double> ref(N);
    for (std::size_t i = 0; i < M; ++i) {
        double mx = x[i * N];
        for (std::size_t j = 1; j < N; ++j) mx = std::max(mx, static_cast<double>(x[i * N + j]));
        double s = 0;
        for (std::size_t j = 0; j < N; ++j) s += ref[j] = std::exp(static_cast<double>(x[i * N + j]) - mx);
        for (std::size_t j = 0; j < N; ++j) {
            const double r = ref[j] / s, v = y[i * N + j];
            if (!std::isfinite(v)) finite = false;
            const double rel = std::abs(v - r) / r;  // r > 0: inputs are in [-1, 1]
            if (rel > max_rel) max_rel = rel, worst = i * N + j, worst_ref = r;
        }
    }
    if (!finite || !(max_rel <= 1e-4)) {
        std::fprintf(stderr,
                     "softmax_%s<%zu, %zu>: WRONG RESULT: max relative error %.3g (> 1e-4)%s; worst at (%zu, %zu): "
                     "got %.9g, expected %.9g\n",
                     impl_name, M, N, max_rel, finite ? "" : ", non-finite values", worst / N, worst % N,
                     static_cast<double>(y[worst]), worst_ref);
        failed = true;
    }
}

}  // namespace

BENCHMARK(bench::fma_peak);
BENCHMARK(softmax_attend<64, 1024>);
#ifdef ATTEND_HAVE_EIGEN
BENCHMARK(softmax_eigen<64, 1024>);
BENCHMARK(softmax_eigenrowwise<64, 1024>);
#endif
BENCHMARK(softmax_loop<64, 1024>);

int main(int argc, char** argv) {
    verify<attend_impl<64, 1024>, 64, 1024>("attend");
#ifdef ATTEND_HAVE_EIGEN
    verify<eigen_impl<64, 1024>, 64, 1024>("eigen");
    verify<eigenrowwise_impl<64, 1024>, 64, 1024>("eigenrowwise");
#endif
    verify<loop_impl<64, 1024>, 64, 1024>("loop");
    return bench::run_benchmarks(argc, argv, !failed, "softmax");
}
