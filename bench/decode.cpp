// One-token steps: y = x W for a few rows x, with the weight in either layout, against Eigen,
// OpenBLAS (sgemv for one row, sgemm for more) and the floor — a streaming read of the same
// weight bytes in the same run. All single-threaded. Every benchmark reports the weight bytes
// per second (bytes_per_second), so the floor's ratio to attend is attend's distance from it.
//
// Names: mvkn_<impl><M, K, N> is y = x W with W (K, N) (`matmul(x, W)`); mvnk_<impl><M, K, N> is
// y = x Wᵀ with W (N, K) (`matmul(x, transpose(W))`, the layout of PyTorch and llama2.c
// checkpoints); read_floor<K, N> reads K·N floats. Before any timing, main() checks every
// implementation against a double-precision loop and refuses to time wrong code.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>
#include <xsimd/xsimd.hpp>

#ifdef ATTEND_HAVE_EIGEN
#include <Eigen/Core>
#endif
#ifdef ATTEND_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int num_threads);
#endif

#include "baselines.hpp"

namespace {

using bench::fill_value;

enum class layout { kn, nk };

// x (M, K), W stored as (K, N) or (N, K), y (M, N).
template <layout L, std::size_t M, std::size_t K, std::size_t N>
struct operands {
    using TX = attend::tensor<float, M, K>;
    using TW = std::conditional_t<L == layout::kn, attend::tensor<float, K, N>, attend::tensor<float, N, K>>;
    using TY = attend::tensor<float, M, N>;
    std::unique_ptr<TX> x = std::make_unique<TX>();
    std::unique_ptr<TW> w = std::make_unique<TW>();
    std::unique_ptr<TY> y = std::make_unique<TY>();
    operands() {
        for (std::size_t k = 0; k < M * K; ++k) x->data()[k] = fill_value(k, 1);
        for (std::size_t k = 0; k < K * N; ++k) w->data()[k] = fill_value(k, 2);
    }
    // W[k][n] whatever the layout.
    float weight(std::size_t k, std::size_t n) const { return L == layout::kn ? w->data()[k * N + n] : w->data()[n * K + k]; }
};

template <layout L, std::size_t M, std::size_t K, std::size_t N>
struct attend_impl {
    operands<L, M, K, N> o;
    void run() {
        if constexpr (L == layout::kn) *o.y = attend::matmul(*o.x, *o.w);
        else *o.y = attend::matmul(*o.x, attend::transpose(*o.w));
    }
};

#ifdef ATTEND_HAVE_EIGEN
template <layout L, std::size_t M, std::size_t K, std::size_t N>
struct eigen_impl {
    using MX = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    static constexpr auto ei = [](std::size_t v) { return static_cast<Eigen::Index>(v); };
    operands<L, M, K, N> o;
    Eigen::Map<const MX> x{o.x->data(), ei(M), ei(K)};
    Eigen::Map<const MX> w{o.w->data(), L == layout::kn ? ei(K) : ei(N), L == layout::kn ? ei(N) : ei(K)};
    Eigen::Map<MX> y{o.y->data(), ei(M), ei(N)};
    void run() {
        if constexpr (L == layout::kn) y.noalias() = x * w;
        else y.noalias() = x * w.transpose();
    }
};
#endif

#ifdef ATTEND_HAVE_OPENBLAS
template <layout L, std::size_t M, std::size_t K, std::size_t N>
struct openblas_impl {
    operands<L, M, K, N> o;
    void run() {
        const int m = static_cast<int>(M), k = static_cast<int>(K), n = static_cast<int>(N);
        const float* x = o.x->data();
        const float* w = o.w->data();
        float* y = o.y->data();
        if constexpr (M == 1 && L == layout::kn) cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, w, n, x, 1, 0.0f, y, 1);
        else if constexpr (M == 1) cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
        else if constexpr (L == layout::kn) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, x, k, w, n, 0.0f, y, n);
        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
    }
};
#endif

template <class Impl, std::size_t K, std::size_t N>
void run_bench(benchmark::State& state) {
    auto impl = std::make_unique<Impl>();
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->o.y->data());
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * K * N * sizeof(float)));
}

// The floor: every float of a K x N weight read once, as four streams (a quarter each; one
// sequential stream was measured 30 % slower on Zen 1, eight no faster than four), each summed
// into two vector accumulators.
template <std::size_t K, std::size_t N>
void read_floor(benchmark::State& state) {
    using B = xsimd::batch<float>;
    constexpr std::size_t W = B::size, n = K * N, part = n / (4 * 2 * W) * (2 * W);
    std::vector<float, xsimd::aligned_allocator<float>> w(n);
    for (std::size_t k = 0; k < n; ++k) w[k] = fill_value(k, 2);
    for (auto _ : state) {
        B acc[8] = {};
        for (std::size_t i = 0; i < part; i += 2 * W)
#pragma GCC unroll 8
            for (std::size_t u = 0; u < 8; ++u) acc[u] += B::load_aligned(w.data() + u / 2 * part + i + u % 2 * W);
        float s = 0;
        for (std::size_t i = 4 * part; i < n; ++i) s += w[i];
        for (auto& a : acc) s += xsimd::hadd(a);
        benchmark::DoNotOptimize(s);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

bool failed = false;

template <class Impl, layout L, std::size_t M, std::size_t K, std::size_t N>
void verify(const char* name) {
    auto impl = std::make_unique<Impl>();
    impl->run();
    double max_err = 0, max_ref = 0;
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t n = 0; n < N; ++n) {
            double s = 0;
            for (std::size_t k = 0; k < K; ++k) s += double(impl->o.x->data()[m * K + k]) * impl->o.weight(k, n);
            max_err = std::max(max_err, std::abs(s - impl->o.y->data()[m * N + n]));
            max_ref = std::max(max_ref, std::abs(s));
        }
    if (max_err > 1e-4 * max_ref) {
        std::fprintf(stderr, "decode bench: %s <%zu, %zu, %zu> is wrong: error %g of %g\n", name, M, K, N, max_err, max_ref);
        failed = true;
    }
}

template <layout L, std::size_t M, std::size_t K, std::size_t N>
void matvec_case(const char* tag) {
    const std::string args = "<" + std::to_string(M) + ", " + std::to_string(K) + ", " + std::to_string(N) + ">";
    auto add = [&]<class Impl>(const char* impl) {
        verify<Impl, L, M, K, N>(impl);
        benchmark::RegisterBenchmark((std::string(tag) + "_" + impl + args).c_str(), run_bench<Impl, K, N>)->Unit(benchmark::kMicrosecond);
    };
    add.template operator()<attend_impl<L, M, K, N>>("attend");
#ifdef ATTEND_HAVE_EIGEN
    add.template operator()<eigen_impl<L, M, K, N>>("eigen");
#endif
#ifdef ATTEND_HAVE_OPENBLAS
    add.template operator()<openblas_impl<L, M, K, N>>("openblas");
#endif
}

template <std::size_t K, std::size_t N>
void floor_case() {
    benchmark::RegisterBenchmark(("read_floor<" + std::to_string(K) + ", " + std::to_string(N) + ">").c_str(), read_floor<K, N>)
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
#ifdef ATTEND_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
    matvec_case<layout::kn, 1, 4096, 4096>("mvkn");
    matvec_case<layout::nk, 1, 4096, 4096>("mvnk");
    floor_case<4096, 4096>();
    matvec_case<layout::nk, 1, 288, 32000>("mvnk");
    floor_case<288, 32000>();
    matvec_case<layout::kn, 1, 288, 768>("mvkn");
    matvec_case<layout::nk, 1, 288, 768>("mvnk");
    floor_case<288, 768>();
    matvec_case<layout::kn, 1, 768, 288>("mvkn");
    matvec_case<layout::nk, 1, 768, 288>("mvnk");
    floor_case<768, 288>();
    matvec_case<layout::kn, 1, 768, 2048>("mvkn");
    matvec_case<layout::nk, 1, 768, 2048>("mvnk");
    floor_case<768, 2048>();
    matvec_case<layout::kn, 4, 4096, 4096>("mvkn");
    matvec_case<layout::nk, 4, 4096, 4096>("mvnk");
    matvec_case<layout::kn, 16, 4096, 4096>("mvkn");
    matvec_case<layout::nk, 16, 4096, 4096>("mvnk");
    return bench::run_benchmarks(argc, argv, !failed, "decode");
}
