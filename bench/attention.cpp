// Scaled dot-product attention softmax(Q K^T / sqrt(d)) V, NQ = NK = N, head dimension d, single
// thread: attend's fused plan (online softmax, the N x N scores never exist) and its materialising
// path (three statements through a heap score tensor) against Eigen (dynamic maps, and fixed-size
// matrices for N <= 128), OpenBLAS (two sgemms around a SIMD row softmax) and oneDNN (matmul,
// softmax, matmul primitives), plain and causal, in the same run as the FMA peak.
// Ratios: bench/report.py on the JSON output.
//
// Every benchmark reports FLOPS = 4 N^2 d per iteration (Q K^T and P V), the same nominal count for
// the causal cases, so a plan that skips masked tiles shows up as a higher rate.
//
// attn_memory<8192, 64> is registered first: it runs the fused plan once per iteration and reports
// the process's peak resident set (getrusage ru_maxrss) as max_rss_MiB, before any other
// benchmark has allocated a score matrix. Inputs and output are 4 x 2 MiB on the heap; the 8192 x
// 8192 scores would be 256 MiB.
//
// Correctness: main() runs the fused plan (plain and causal) for every size before any timing and
// checks sampled rows against a double-precision reference; every benchmark also checks its own
// implementation the same way once, untimed, before its loop (and reports an error instead of a
// time if it is wrong). Error measure: per sampled row, max |o - ref| / max |ref| (the output
// rows are averages of values in [-1, 1], so single elements can be close to zero); limit 1e-3.
//
// Threads: OpenBLAS gets openblas_set_num_threads(1). oneDNN 2.6 has no dnnl_set_max_threads
// (the runtime here is OpenMP, DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP), so main() calls the
// OpenMP runtime's omp_set_num_threads(1), looked up with dlsym because libgomp is only an
// indirect dependency (through libdnnl) and this file is built without -fopenmp. Eigen is built
// without OpenMP, so it is single-threaded. oneDNN primitives are created once, outside the timing.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>
#include <xsimd/xsimd.hpp>

#ifdef ATTEND_HAVE_EIGEN
#include <Eigen/Core>
#endif
#ifdef ATTEND_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef ATTEND_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "baselines.hpp"
#include "peak.hpp"

namespace {
using bench::fill_value;
using bench::mask_upper;
using bench::neg_inf;
using bench::softmax_row;

template <std::size_t D>
inline float scale_of() {
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
}

// Q, K, V and the output O, (N, D) each, on the heap.
template <std::size_t N, std::size_t D>
struct qkv {
    using T = attend::tensor<float, N, D>;
    static constexpr std::size_t size = N * D;
    std::unique_ptr<T> q = std::make_unique<T>(), k = std::make_unique<T>(), v = std::make_unique<T>(),
                       o = std::make_unique<T>();
    qkv() {
        for (std::size_t i = 0; i < size; ++i) {
            q->data()[i] = fill_value(i, 1);
            k->data()[i] = fill_value(i, 2);
            v->data()[i] = fill_value(i, 3);
        }
    }
};

// ---- implementations: construct once (untimed), run() is the timed work ----

template <std::size_t N, std::size_t D, bool Causal>
struct fused_impl {
    qkv<N, D> x;
    void run() {
        if constexpr (Causal) *x.o = attend::scaled_dot_product_attention(*x.q, *x.k, *x.v, attend::causal_mask<N, N>());
        else *x.o = attend::scaled_dot_product_attention(*x.q, *x.k, *x.v);
    }
};

// bf16 Q, K and V (the float inputs rounded to bf16, and x's copies set to the rounded values so
// the check's reference sees the same inputs) into a float output: both products on AMX tiles
// where the target and the OS have them, else by vdpbf16ps where the target has AVX-512 BF16 and
// pair products pay on the core, else float FMAs on K and V widened as packed (Vector: never on
// tiles), P rounded to bf16 on tiles and pairs (hence the looser check, 1e-2).
template <std::size_t N, std::size_t D, bool Causal, bool Vector = false>
struct bf16_impl {
    using H = attend::tensor<attend::bf16, N, D>;
    static constexpr double limit = 1e-2;
    qkv<N, D> x;
    std::unique_ptr<H> q = std::make_unique<H>(), k = std::make_unique<H>(), v = std::make_unique<H>();
    bf16_impl() {
        for (std::size_t i = 0; i < N * D; ++i) {
            q->data()[i] = attend::bf16(x.q->data()[i]), x.q->data()[i] = static_cast<float>(q->data()[i]);
            k->data()[i] = attend::bf16(x.k->data()[i]), x.k->data()[i] = static_cast<float>(k->data()[i]);
            v->data()[i] = attend::bf16(x.v->data()[i]), x.v->data()[i] = static_cast<float>(v->data()[i]);
        }
    }
    void run() {
        attend::simd::allow_amx(!Vector);
        if constexpr (Causal) *x.o = attend::scaled_dot_product_attention(*q, *k, *v, attend::causal_mask<N, N>());
        else *x.o = attend::scaled_dot_product_attention(*q, *k, *v);
        attend::simd::allow_amx(true);
    }
};

// The materialising path: scores, softmax and P V as three statements through a heap (N, N) tensor.
template <std::size_t N, std::size_t D, bool Causal>
struct unfused_impl {
    qkv<N, D> x;
    std::unique_ptr<attend::tensor<float, N, N>> s = std::make_unique<attend::tensor<float, N, N>>();
    const float scale = scale_of<D>();
    void run() {
        auto &q = *x.q, &k = *x.k, &v = *x.v;
        if constexpr (Causal)
            *s = attend::masked_fill(attend::matmul(q, attend::transpose(k)) * scale, attend::causal_mask<N, N>(), -INFINITY);
        else *s = attend::matmul(q, attend::transpose(k)) * scale;
        *s = attend::softmax(*s);
        *x.o = attend::matmul(*s, v);
    }
};

#ifdef ATTEND_HAVE_EIGEN
using eigen_rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Eigen row-wise stable softmax with array ops (contiguous rows of a row-major matrix).
template <class M>
inline void eigen_softmax_rows(M& s) {
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        auto r = s.row(i).array();
        const float mx = r.maxCoeff();
        r = (r - mx).exp();
        r /= r.sum();
    }
}

// Dynamic sizes: maps of the row-major inputs, S = scale * Q K^T (the scalar folds into the gemm's
// alpha), softmax, O = P V; S allocated once, untimed.
template <std::size_t N, std::size_t D, bool Causal>
struct eigen_impl {
    static constexpr Eigen::Index n = static_cast<Eigen::Index>(N), d = static_cast<Eigen::Index>(D);
    qkv<N, D> x;
    Eigen::Map<const eigen_rows, Eigen::Aligned64> q{x.q->data(), n, d}, k{x.k->data(), n, d}, v{x.v->data(), n, d};
    Eigen::Map<eigen_rows, Eigen::Aligned64> o{x.o->data(), n, d};
    eigen_rows s = eigen_rows(n, n);
    const float scale = scale_of<D>();
    void run() {
        s.noalias() = scale * (q * k.transpose());
        if constexpr (Causal) mask_upper(s.data(), N);
        eigen_softmax_rows(s);
        o.noalias() = s * v;
    }
};

// Fixed sizes (N <= 128): maps of fixed-size row-major matrices, the score matrix a fixed-size
// matrix on the heap (N x N x 4 bytes, 64 KiB at N = 128).
template <std::size_t N, std::size_t D>
struct eigenfixed_impl {
    static_assert(N <= 128, "eigenfixed: fixed-size Eigen matrices only for N <= 128");
    static constexpr int n = static_cast<int>(N), d = static_cast<int>(D);
    using MQ = Eigen::Matrix<float, n, d, Eigen::RowMajor>;
    using MS = Eigen::Matrix<float, n, n, Eigen::RowMajor>;
    qkv<N, D> x;
    Eigen::Map<const MQ, Eigen::Aligned64> q{x.q->data()}, k{x.k->data()}, v{x.v->data()};
    Eigen::Map<MQ, Eigen::Aligned64> o{x.o->data()};
    std::unique_ptr<MS> s = std::make_unique<MS>();
    const float scale = scale_of<D>();
    void run() {
        s->noalias() = scale * (q * k.transpose());
        eigen_softmax_rows(*s);
        o.noalias() = *s * v;
    }
};
#endif

#ifdef ATTEND_HAVE_OPENBLAS
// cblas_sgemm for S = scale Q K^T, SIMD row softmax (masked entries set to -inf first for causal),
// cblas_sgemm for O = P V.
template <std::size_t N, std::size_t D, bool Causal>
struct openblas_impl {
    qkv<N, D> x;
    std::unique_ptr<attend::tensor<float, N, N>> s = std::make_unique<attend::tensor<float, N, N>>();
    const float scale = scale_of<D>();
    void run() {
        constexpr blasint n = static_cast<blasint>(N), d = static_cast<blasint>(D);
        float* sp = s->data();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, x.q->data(), d, x.k->data(), d, 0.0f, sp, n);
        if constexpr (Causal) mask_upper(sp, N);
        for (std::size_t i = 0; i < N; ++i) softmax_row(sp + i * N, N);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f, sp, n, x.v->data(), d, 0.0f, x.o->data(), d);
    }
};
#endif

#ifdef ATTEND_HAVE_DNNL
struct dnnl_context {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
};
dnnl_context& dnnl_ctx() {
    static dnnl_context c;
    return c;
}

// matmul primitive S = Q K^T (K^T as a (d, N) memory desc with format tag ba, i.e. K's own
// row-major memory; the 1/sqrt(d) as the primitive's output scale), softmax_forward along axis 1
// in place, matmul O = P V. For causal, the masked entries are set to -inf by hand between the
// first matmul and the softmax. Primitives and memory objects are created once, untimed.
template <std::size_t N, std::size_t D, bool Causal>
struct onednn_impl {
    using md = dnnl::memory::desc;
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    static constexpr dnnl::memory::dim n = static_cast<dnnl::memory::dim>(N), d = static_cast<dnnl::memory::dim>(D);
    qkv<N, D> x;
    std::unique_ptr<attend::tensor<float, N, N>> s = std::make_unique<attend::tensor<float, N, N>>();
    md q_md{{n, d}, dt::f32, tag::ab}, kt_md{{d, n}, dt::f32, tag::ba}, s_md{{n, n}, dt::f32, tag::ab},
        v_md{{n, d}, dt::f32, tag::ab}, o_md{{n, d}, dt::f32, tag::ab};
    dnnl::memory qm{q_md, dnnl_ctx().eng, x.q->data()}, ktm{kt_md, dnnl_ctx().eng, x.k->data()},
        sm{s_md, dnnl_ctx().eng, s->data()}, vm{v_md, dnnl_ctx().eng, x.v->data()}, om{o_md, dnnl_ctx().eng, x.o->data()};
    dnnl::matmul qk, pv;
    dnnl::softmax_forward softmax;

    onednn_impl() {
        const dnnl::engine& eng = dnnl_ctx().eng;
        dnnl::primitive_attr scaled;
        scaled.set_output_scales(0, {scale_of<D>()});
        qk = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, kt_md, s_md), scaled, eng));
        pv = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(s_md, v_md, o_md), eng));
        softmax = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
            dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, s_md, 1), eng));
    }
    void run() {
        dnnl::stream& strm = dnnl_ctx().strm;
        qk.execute(strm, {{DNNL_ARG_SRC, qm}, {DNNL_ARG_WEIGHTS, ktm}, {DNNL_ARG_DST, sm}});
        if constexpr (Causal) {
            strm.wait();
            mask_upper(s->data(), N);
        }
        softmax.execute(strm, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_DST, sm}});
        pv.execute(strm, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, vm}, {DNNL_ARG_DST, om}});
        strm.wait();
    }
};
#endif

// ---- correctness (untimed) ----

// Largest per-row error max |o - ref| / max |ref| over a few sampled rows, against a double
// reference computed from the same float inputs.
template <std::size_t N, std::size_t D>
double max_rel_error(const qkv<N, D>& x, bool causal, std::size_t* worst_row = nullptr) {
    const float *q = x.q->data(), *k = x.k->data(), *v = x.v->data(), *o = x.o->data();
    const std::size_t rows[] = {0, 1, N / 3, N / 2, (2 * N) / 3 + 1, N - 1};
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    std::vector<double> p(N), ref(D);
    double worst = 0;
    for (std::size_t i : rows) {
        if (i >= N) continue;
        const std::size_t nk = causal ? i + 1 : N;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < nk; ++j) {
            double dot = 0;
            for (std::size_t c = 0; c < D; ++c) dot += static_cast<double>(q[i * D + c]) * static_cast<double>(k[j * D + c]);
            p[j] = dot * scale;
            mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (std::size_t j = 0; j < nk; ++j) sum += p[j] = std::exp(p[j] - mx);
        std::fill(ref.begin(), ref.end(), 0.0);
        for (std::size_t j = 0; j < nk; ++j)
            for (std::size_t c = 0; c < D; ++c) ref[c] += p[j] / sum * static_cast<double>(v[j * D + c]);
        double err = 0, mag = 0;
        for (std::size_t c = 0; c < D; ++c) {
            const double got = o[i * D + c];
            err = std::isfinite(got) ? std::max(err, std::abs(got - ref[c])) : std::numeric_limits<double>::infinity();
            mag = std::max(mag, std::abs(ref[c]));
        }
        const double rel = err / std::max(mag, 1e-30);
        if (!(rel <= worst)) {
            worst = rel;
            if (worst_row) *worst_row = i;
        }
    }
    return worst;
}

// ---- benchmark bodies ----

template <std::size_t N, std::size_t D>
void set_flops(benchmark::State& state) {
    state.counters["FLOPS"] =
        benchmark::Counter(4.0 * static_cast<double>(N) * static_cast<double>(N) * static_cast<double>(D),
                           benchmark::Counter::kIsIterationInvariantRate);
}

template <class Impl, std::size_t N, std::size_t D, bool Causal>
void run_bench(benchmark::State& state) {
    auto impl = std::make_unique<Impl>();
    impl->run();  // untimed: warm-up and this implementation's own check
    std::size_t row = 0;
    const double err = max_rel_error<N, D>(impl->x, Causal, &row);
    double limit = 1e-3;
    if constexpr (requires { Impl::limit; }) limit = Impl::limit;
    if (!(err <= limit)) {
        const std::string msg = "wrong result: max relative error " + std::to_string(err) + " at row " + std::to_string(row);
        state.SkipWithError(msg.c_str());
        return;
    }
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->x.o->data());
    set_flops<N, D>(state);
}

// Peak memory of the fused plan at N = 8192 (the scores would be 256 MiB).
template <std::size_t N, std::size_t D>
void attn_memory(benchmark::State& state) {
    auto impl = std::make_unique<fused_impl<N, D, false>>();
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->x.o->data());
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    state.counters["max_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB
    set_flops<N, D>(state);
}

template <std::size_t N, std::size_t D>
void attn_fused(benchmark::State& state) {
    run_bench<fused_impl<N, D, false>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void attn_bf16(benchmark::State& state) {
    run_bench<bf16_impl<N, D, false>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void causal_bf16(benchmark::State& state) {
    run_bench<bf16_impl<N, D, true>, N, D, true>(state);
}
template <std::size_t N, std::size_t D>
void attn_bf16_vector(benchmark::State& state) {
    run_bench<bf16_impl<N, D, false, true>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void attn_unfused(benchmark::State& state) {
    run_bench<unfused_impl<N, D, false>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void causal_fused(benchmark::State& state) {
    run_bench<fused_impl<N, D, true>, N, D, true>(state);
}
template <std::size_t N, std::size_t D>
void causal_unfused(benchmark::State& state) {
    run_bench<unfused_impl<N, D, true>, N, D, true>(state);
}
#ifdef ATTEND_HAVE_EIGEN
template <std::size_t N, std::size_t D>
void attn_eigen(benchmark::State& state) {
    run_bench<eigen_impl<N, D, false>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void attn_eigenfixed(benchmark::State& state) {
    run_bench<eigenfixed_impl<N, D>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void causal_eigen(benchmark::State& state) {
    run_bench<eigen_impl<N, D, true>, N, D, true>(state);
}
#endif
#ifdef ATTEND_HAVE_OPENBLAS
template <std::size_t N, std::size_t D>
void attn_openblas(benchmark::State& state) {
    run_bench<openblas_impl<N, D, false>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void causal_openblas(benchmark::State& state) {
    run_bench<openblas_impl<N, D, true>, N, D, true>(state);
}
#endif
#ifdef ATTEND_HAVE_DNNL
template <std::size_t N, std::size_t D>
void attn_onednn(benchmark::State& state) {
    run_bench<onednn_impl<N, D, false>, N, D, false>(state);
}
template <std::size_t N, std::size_t D>
void causal_onednn(benchmark::State& state) {
    run_bench<onednn_impl<N, D, true>, N, D, true>(state);
}
#endif

// ---- startup guard: the fused plan, every size, before any timing ----

bool failed = false;

template <std::size_t N, std::size_t D, bool Causal>
void verify_fused() {
    auto impl = std::make_unique<fused_impl<N, D, Causal>>();
    impl->run();
    std::size_t row = 0;
    const double err = max_rel_error<N, D>(impl->x, Causal, &row);
    if (!(err <= 1e-3)) {
        std::fprintf(stderr, "%s_fused<%zu, %zu>: WRONG RESULT: max relative error %.3g (> 1e-3) at row %zu\n",
                     Causal ? "causal" : "attn", N, D, err, row);
        failed = true;
    }
}

void set_single_thread() {
#ifdef ATTEND_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
#ifdef ATTEND_HAVE_DNNL
    // oneDNN 2.6 (OpenMP runtime) takes its thread count from the OpenMP runtime.
    if (void* f = dlsym(RTLD_DEFAULT, "omp_set_num_threads")) {
        reinterpret_cast<void (*)(int)>(f)(1);
    } else {
        std::fprintf(stderr, "attention: omp_set_num_threads not found; set OMP_NUM_THREADS=1 for oneDNN\n");
    }
#endif
}

}  // namespace

// First, before any other benchmark allocates a score matrix.
BENCHMARK(attn_memory<8192, 64>);
BENCHMARK(bench::fma_peak);

#define ATTEND_ATTN_SIZE(N, D) \
    BENCHMARK(attn_fused<N, D>); \
    BENCHMARK(attn_unfused<N, D>)
ATTEND_ATTN_SIZE(16, 16);
ATTEND_ATTN_SIZE(64, 64);
ATTEND_ATTN_SIZE(128, 64);
ATTEND_ATTN_SIZE(256, 64);
ATTEND_ATTN_SIZE(512, 64);
ATTEND_ATTN_SIZE(1024, 64);
ATTEND_ATTN_SIZE(2048, 64);
ATTEND_ATTN_SIZE(4096, 128);
BENCHMARK(attn_bf16<1024, 64>);
BENCHMARK(attn_bf16<4096, 128>);
BENCHMARK(causal_bf16<1024, 64>);
BENCHMARK(attn_bf16_vector<1024, 64>);
BENCHMARK(attn_bf16_vector<4096, 128>);
BENCHMARK(causal_fused<256, 64>);
BENCHMARK(causal_unfused<256, 64>);
BENCHMARK(causal_fused<1024, 64>);
BENCHMARK(causal_unfused<1024, 64>);
BENCHMARK(causal_fused<2048, 64>);
BENCHMARK(causal_unfused<2048, 64>);

#ifdef ATTEND_HAVE_EIGEN
BENCHMARK(attn_eigen<16, 16>);
BENCHMARK(attn_eigen<64, 64>);
BENCHMARK(attn_eigen<128, 64>);
BENCHMARK(attn_eigen<256, 64>);
BENCHMARK(attn_eigen<512, 64>);
BENCHMARK(attn_eigen<1024, 64>);
BENCHMARK(attn_eigen<2048, 64>);
BENCHMARK(attn_eigen<4096, 128>);
BENCHMARK(attn_eigenfixed<16, 16>);
BENCHMARK(attn_eigenfixed<64, 64>);
BENCHMARK(attn_eigenfixed<128, 64>);
BENCHMARK(causal_eigen<256, 64>);
BENCHMARK(causal_eigen<1024, 64>);
BENCHMARK(causal_eigen<2048, 64>);
#endif

#ifdef ATTEND_HAVE_OPENBLAS
BENCHMARK(attn_openblas<16, 16>);
BENCHMARK(attn_openblas<64, 64>);
BENCHMARK(attn_openblas<128, 64>);
BENCHMARK(attn_openblas<256, 64>);
BENCHMARK(attn_openblas<512, 64>);
BENCHMARK(attn_openblas<1024, 64>);
BENCHMARK(attn_openblas<2048, 64>);
BENCHMARK(attn_openblas<4096, 128>);
BENCHMARK(causal_openblas<256, 64>);
BENCHMARK(causal_openblas<1024, 64>);
BENCHMARK(causal_openblas<2048, 64>);
#endif

#ifdef ATTEND_HAVE_DNNL
BENCHMARK(attn_onednn<16, 16>);
BENCHMARK(attn_onednn<64, 64>);
BENCHMARK(attn_onednn<128, 64>);
BENCHMARK(attn_onednn<256, 64>);
BENCHMARK(attn_onednn<512, 64>);
BENCHMARK(attn_onednn<1024, 64>);
BENCHMARK(attn_onednn<2048, 64>);
BENCHMARK(attn_onednn<4096, 128>);
BENCHMARK(causal_onednn<256, 64>);
BENCHMARK(causal_onednn<1024, 64>);
BENCHMARK(causal_onednn<2048, 64>);
#endif

int main(int argc, char** argv) {
    set_single_thread();

    verify_fused<16, 16, false>();
    verify_fused<64, 64, false>();
    verify_fused<128, 64, false>();
    verify_fused<256, 64, false>();
    verify_fused<512, 64, false>();
    verify_fused<1024, 64, false>();
    verify_fused<2048, 64, false>();
    verify_fused<4096, 128, false>();
    verify_fused<8192, 64, false>();
    verify_fused<256, 64, true>();
    verify_fused<1024, 64, true>();
    verify_fused<2048, 64, true>();
    if (failed) {
        std::fprintf(stderr, "attention: correctness check failed, not running benchmarks\n");
        return 1;
    }

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();

    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::fprintf(stderr, "attention: process peak RSS after all benchmarks: %.1f MiB\n", static_cast<double>(ru.ru_maxrss) / 1024.0);
    return 0;
}
