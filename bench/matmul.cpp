// C = A·B (float, row-major) with attend against Eigen (fixed-size and dynamic), OpenBLAS
// (cblas_sgemm) and oneDNN (matmul primitive), all single-threaded, in the same run as the FMA
// peak. Every matmul benchmark reports a FLOPS counter (2·M·N·K per iteration), so
// bench/report.py prints its share of peak next to the ratio to attend.
//
// Template arguments are <M, K, N>: A is (M, K), B is (K, N), C is (M, N). The matmulnt_* cases
// hold B as (N, K) and multiply by its transpose (`matmul(a, transpose(w))`: a weight in the
// layout of PyTorch and llama2.c checkpoints, or Q K^T); each library reads it in place its way. The issue lists the
// sizes as triples "(8,8,8), (16,16,16), (64,64,64), (128,64,128), (256,256,256), (512,64,512)";
// the non-cubic ones are read as M = 128, K = 64, N = 128 and M = 512, K = 64, N = 512 (a short
// inner dimension, as in attention's Q·K^T with head dimension 64).
//
// Before any timing, main() checks every implementation's result at every size against a naive
// double-precision triple loop and aborts if the normwise relative error
// max|C - C_ref| / max|C_ref| exceeds 1e-4: benchmarks must not time wrong code.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#ifdef ATTEND_HAVE_EIGEN
#include <Eigen/Core>
#endif
#ifdef ATTEND_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef ATTEND_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#endif

#include "baselines.hpp"
#include "peak.hpp"

#ifdef ATTEND_HAVE_OPENBLAS
// Declared by OpenBLAS's cblas.h; repeated so that a cblas.h without it (another CBLAS) still
// compiles as long as the library is OpenBLAS. A redeclaration with the same signature is harmless.
extern "C" void openblas_set_num_threads(int num_threads);
#endif

#ifdef ATTEND_HAVE_DNNL
// oneDNN 2.x built with the OpenMP runtime (Debian's) has no dnnl_set_max_threads (that call is for
// the threadpool runtime only) and takes its thread count from OpenMP. libgomp reads
// OMP_NUM_THREADS when it is loaded, before main, so setting the variable from main is too late;
// instead omp_set_num_threads(1) is called. The declarations are weak so that the binary does not
// have to link libgomp itself: they resolve to the libgomp that libdnnl already loads.
extern "C" void omp_set_num_threads(int) __attribute__((weak));
extern "C" int omp_get_max_threads() __attribute__((weak));
#endif

namespace {

using bench::fill_value;

template <std::size_t M, std::size_t K, std::size_t N, bool BT = false, class WT = float>
struct operands {
    using TA = attend::tensor<float, M, K>;
    using TB = std::conditional_t<BT, attend::tensor<WT, N, K>, attend::tensor<WT, K, N>>;
    using TC = attend::tensor<float, M, N>;
    std::unique_ptr<TA> a = std::make_unique<TA>();
    std::unique_ptr<TB> b = std::make_unique<TB>();
    std::unique_ptr<TC> c = std::make_unique<TC>();
    operands() {
        for (std::size_t k = 0; k < M * K; ++k) a->data()[k] = fill_value(k, 1);
        for (std::size_t k = 0; k < K * N; ++k) b->data()[k] = WT(fill_value(k, 2));
    }
    float b_at(std::size_t k, std::size_t j) const { return static_cast<float>(b->data()[BT ? j * K + k : k * N + j]); }
};

// ---- implementations: construct once (untimed), run() is the timed work ----

template <std::size_t M, std::size_t K, std::size_t N>
struct attend_impl {
    operands<M, K, N> o;
    void run() { *o.c = attend::matmul(*o.a, *o.b); }
};
template <std::size_t M, std::size_t K, std::size_t N, class WT = float>
struct attend_nt_impl {
    operands<M, K, N, true, WT> o;
    void run() { *o.c = attend::matmul(*o.a, attend::transpose(*o.b)); }
};

#ifdef ATTEND_HAVE_EIGEN
// Fixed-size matrices, mapped on the same buffers; only instantiated where M*N <= 64*64.
template <std::size_t M, std::size_t K, std::size_t N>
struct eigenfixed_impl {
    static constexpr int m = static_cast<int>(M), k = static_cast<int>(K), n = static_cast<int>(N);
    // Eigen::RowMajor on a single column is rejected by Eigen; none of the sizes here has one.
    using MA = Eigen::Matrix<float, m, k, Eigen::RowMajor>;
    using MB = Eigen::Matrix<float, k, n, Eigen::RowMajor>;
    using MC = Eigen::Matrix<float, m, n, Eigen::RowMajor>;
    operands<M, K, N> o;
    Eigen::Map<const MA> a{o.a->data()};
    Eigen::Map<const MB> b{o.b->data()};
    Eigen::Map<MC> c{o.c->data()};
    void run() { c.noalias() = a * b; }
};

template <std::size_t M, std::size_t K, std::size_t N>
struct eigen_impl {
    using MX = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    operands<M, K, N> o;
    Eigen::Map<const MX> a{o.a->data(), static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(K)};
    Eigen::Map<const MX> b{o.b->data(), static_cast<Eigen::Index>(K), static_cast<Eigen::Index>(N)};
    Eigen::Map<MX> c{o.c->data(), static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(N)};
    void run() { c.noalias() = a * b; }
};
template <std::size_t M, std::size_t K, std::size_t N>
struct eigen_nt_impl {
    using MX = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    operands<M, K, N, true> o;
    Eigen::Map<const MX> a{o.a->data(), static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(K)};
    Eigen::Map<const MX> b{o.b->data(), static_cast<Eigen::Index>(N), static_cast<Eigen::Index>(K)};
    Eigen::Map<MX> c{o.c->data(), static_cast<Eigen::Index>(M), static_cast<Eigen::Index>(N)};
    void run() { c.noalias() = a * b.transpose(); }
};
#endif

#ifdef ATTEND_HAVE_OPENBLAS
template <std::size_t M, std::size_t K, std::size_t N>
struct openblas_impl {
    operands<M, K, N> o;
    void run() {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                    static_cast<int>(K), 1.0f, o.a->data(), static_cast<int>(K), o.b->data(), static_cast<int>(N),
                    0.0f, o.c->data(), static_cast<int>(N));
    }
};
template <std::size_t M, std::size_t K, std::size_t N>
struct openblas_nt_impl {
    operands<M, K, N, true> o;
    void run() {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                    1.0f, o.a->data(), static_cast<int>(K), o.b->data(), static_cast<int>(K), 0.0f, o.c->data(),
                    static_cast<int>(N));
    }
};
#endif

#ifdef ATTEND_HAVE_DNNL
// One engine and stream, the primitive created once; memory objects wrap the operands' buffers
// (plain row-major, format tag ab). Timed: execute + stream.wait().
template <std::size_t M, std::size_t K, std::size_t N>
struct onednn_impl {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    operands<M, K, N> o;
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::memory::desc ad{{static_cast<dnnl::memory::dim>(M), static_cast<dnnl::memory::dim>(K)}, dt::f32, tag::ab};
    dnnl::memory::desc bd{{static_cast<dnnl::memory::dim>(K), static_cast<dnnl::memory::dim>(N)}, dt::f32, tag::ab};
    dnnl::memory::desc cd{{static_cast<dnnl::memory::dim>(M), static_cast<dnnl::memory::dim>(N)}, dt::f32, tag::ab};
    dnnl::matmul prim{dnnl::matmul::primitive_desc{dnnl::matmul::desc{ad, bd, cd}, eng}};
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory{ad, eng, o.a->data()}},
                                               {DNNL_ARG_WEIGHTS, dnnl::memory{bd, eng, o.b->data()}},
                                               {DNNL_ARG_DST, dnnl::memory{cd, eng, o.c->data()}}};
    void run() {
        prim.execute(strm, args);
        strm.wait();
    }
};
#endif

template <class Impl, std::size_t M, std::size_t K, std::size_t N>
void run_bench(benchmark::State& state) {
    auto impl = std::make_unique<Impl>();
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->o.c->data());
    state.counters["FLOPS"] = benchmark::Counter(2.0 * M * N * K, benchmark::Counter::kIsIterationInvariantRate);
}

template <std::size_t M, std::size_t K, std::size_t N>
void matmul_attend(benchmark::State& state) {
    run_bench<attend_impl<M, K, N>, M, K, N>(state);
}
#ifdef ATTEND_HAVE_EIGEN
template <std::size_t M, std::size_t K, std::size_t N>
void matmul_eigenfixed(benchmark::State& state) {
    static_assert(M * N <= 64 * 64, "fixed-size Eigen only for small outputs");
    run_bench<eigenfixed_impl<M, K, N>, M, K, N>(state);
}
template <std::size_t M, std::size_t K, std::size_t N>
void matmul_eigen(benchmark::State& state) {
    run_bench<eigen_impl<M, K, N>, M, K, N>(state);
}
#endif
#ifdef ATTEND_HAVE_OPENBLAS
template <std::size_t M, std::size_t K, std::size_t N>
void matmul_openblas(benchmark::State& state) {
    run_bench<openblas_impl<M, K, N>, M, K, N>(state);
}
#endif
#ifdef ATTEND_HAVE_DNNL
template <std::size_t M, std::size_t K, std::size_t N>
void matmul_onednn(benchmark::State& state) {
    run_bench<onednn_impl<M, K, N>, M, K, N>(state);
}
#endif

// ---- correctness guard (untimed) ----

bool failed = false;

template <class Impl, std::size_t M, std::size_t K, std::size_t N>
void verify(const char* impl_name) {
    auto impl = std::make_unique<Impl>();
    impl->run();
    const float* a = impl->o.a->data();
    const float* c = impl->o.c->data();
    std::vector<double> ref(M * N, 0.0);
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t k = 0; k < K; ++k)
            for (std::size_t j = 0; j < N; ++j)
                ref[i * N + j] += static_cast<double>(a[i * K + k]) * static_cast<double>(impl->o.b_at(k, j));
    double max_err = 0, max_ref = 0;
    std::size_t worst = 0;
    bool finite = true;
    for (std::size_t x = 0; x < M * N; ++x) {
        if (!std::isfinite(c[x])) finite = false;
        const double e = std::abs(static_cast<double>(c[x]) - ref[x]);
        if (e > max_err) max_err = e, worst = x;
        max_ref = std::max(max_ref, std::abs(ref[x]));
    }
    const double rel = max_err / std::max(max_ref, 1e-30);
    if (!finite || !(rel <= 1e-4)) {
        std::fprintf(stderr,
                     "matmul_%s<%zu, %zu, %zu>: WRONG RESULT: max relative error %.3g (> 1e-4)%s; worst at "
                     "(%zu, %zu): got %.9g, expected %.9g\n",
                     impl_name, M, K, N, rel, finite ? "" : ", non-finite values", worst / N, worst % N,
                     static_cast<double>(c[worst]), ref[worst]);
        failed = true;
    }
}

template <std::size_t M, std::size_t K, std::size_t N>
void verify_size() {
    verify<attend_impl<M, K, N>, M, K, N>("attend");
#ifdef ATTEND_HAVE_EIGEN
    if constexpr (M * N <= 64 * 64) verify<eigenfixed_impl<M, K, N>, M, K, N>("eigenfixed");
    verify<eigen_impl<M, K, N>, M, K, N>("eigen");
#endif
#ifdef ATTEND_HAVE_OPENBLAS
    verify<openblas_impl<M, K, N>, M, K, N>("openblas");
#endif
#ifdef ATTEND_HAVE_DNNL
    verify<onednn_impl<M, K, N>, M, K, N>("onednn");
#endif
}

// B (N, K) read transposed, every implementation checked, then registered as
// matmulnt_<impl><M, K, N> (attend_bf16: the weight in bf16, widened while packing).
template <std::size_t M, std::size_t K, std::size_t N>
void nt_case() {
    const std::string args = "<" + std::to_string(M) + ", " + std::to_string(K) + ", " + std::to_string(N) + ">";
    auto add = [&]<class Impl>(const char* impl) {
        verify<Impl, M, K, N>((std::string("nt_") + impl).c_str());
        benchmark::RegisterBenchmark((std::string("matmulnt_") + impl + args).c_str(), run_bench<Impl, M, K, N>);
    };
    add.template operator()<attend_nt_impl<M, K, N>>("attend");
    add.template operator()<attend_nt_impl<M, K, N, attend::bf16>>("attend_bf16");
#ifdef ATTEND_HAVE_EIGEN
    add.template operator()<eigen_nt_impl<M, K, N>>("eigen");
#endif
#ifdef ATTEND_HAVE_OPENBLAS
    add.template operator()<openblas_nt_impl<M, K, N>>("openblas");
#endif
}

}  // namespace

BENCHMARK(bench::fma_peak);

BENCHMARK(matmul_attend<8, 8, 8>);
BENCHMARK(matmul_attend<16, 16, 16>);
BENCHMARK(matmul_attend<64, 64, 64>);
BENCHMARK(matmul_attend<128, 64, 128>);
BENCHMARK(matmul_attend<256, 256, 256>);
BENCHMARK(matmul_attend<512, 64, 512>);
#ifdef ATTEND_HAVE_EIGEN
BENCHMARK(matmul_eigenfixed<8, 8, 8>);
BENCHMARK(matmul_eigenfixed<16, 16, 16>);
BENCHMARK(matmul_eigenfixed<64, 64, 64>);
BENCHMARK(matmul_eigen<8, 8, 8>);
BENCHMARK(matmul_eigen<16, 16, 16>);
BENCHMARK(matmul_eigen<64, 64, 64>);
BENCHMARK(matmul_eigen<128, 64, 128>);
BENCHMARK(matmul_eigen<256, 256, 256>);
BENCHMARK(matmul_eigen<512, 64, 512>);
#endif
#ifdef ATTEND_HAVE_OPENBLAS
BENCHMARK(matmul_openblas<8, 8, 8>);
BENCHMARK(matmul_openblas<16, 16, 16>);
BENCHMARK(matmul_openblas<64, 64, 64>);
BENCHMARK(matmul_openblas<128, 64, 128>);
BENCHMARK(matmul_openblas<256, 256, 256>);
BENCHMARK(matmul_openblas<512, 64, 512>);
#endif
#ifdef ATTEND_HAVE_DNNL
BENCHMARK(matmul_onednn<8, 8, 8>);
BENCHMARK(matmul_onednn<16, 16, 16>);
BENCHMARK(matmul_onednn<64, 64, 64>);
BENCHMARK(matmul_onednn<128, 64, 128>);
BENCHMARK(matmul_onednn<256, 256, 256>);
BENCHMARK(matmul_onednn<512, 64, 512>);
#endif

int main(int argc, char** argv) {
    // Single-threaded baselines.
#ifdef ATTEND_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
#ifdef ATTEND_HAVE_DNNL
    if (omp_set_num_threads != nullptr) {
        omp_set_num_threads(1);
    } else {
        std::fprintf(stderr, "matmul: note: OpenMP runtime not found, oneDNN's thread count is not forced to 1\n");
    }
    if (omp_get_max_threads != nullptr) benchmark::AddCustomContext("onednn_omp_threads", std::to_string(omp_get_max_threads()));
#endif

    verify_size<8, 8, 8>();
    verify_size<16, 16, 16>();
    verify_size<64, 64, 64>();
    verify_size<128, 64, 128>();
    verify_size<256, 256, 256>();
    verify_size<512, 64, 512>();
    // B (N, K) read transposed: a few tokens through a thin projection, prefill-sized projections
    // of a small model (stories15M's w1: 288 -> 768), a square one.
    nt_case<8, 4096, 64>();
    nt_case<64, 512, 512>();
    nt_case<256, 288, 768>();
    nt_case<256, 256, 256>();
    return bench::run_benchmarks(argc, argv, !failed, "matmul");
}
