// Multi-head self-attention layer, batch 1, float, single thread: x (1, T, E), W_Q, W_K, W_V, W_O
// (E, E) applied on the right (Q = X W_Q, ...), H heads = contiguous column groups of E / H,
// per-head scaled dot-product attention with scale 1 / sqrt(E / H), out = concat(heads) W_O;
// plain and causal (key j > query i ignored).
//
// attend::nn::multi_head_attention against Eigen (row-major dynamic maps on the same buffers, the
// heads as column blocks) and OpenBLAS (cblas_sgemm with lda = E on the column blocks around an
// xsimd row softmax), in the same run as the FMA peak. Ratios: bench/report.py on the JSON output.
//
// Every benchmark reports FLOPS = 4 projections x 2 T E^2 + attention 4 T^2 E per iteration (the
// same nominal count for the causal cases, so a plan that skips masked work shows a higher rate).
//
// Correctness: main() runs every implementation (plain and causal) once before any timing and
// compares sampled rows against a double-precision reference computed from the same float inputs;
// error measure per row max |o - ref| / max |ref|, limit 1e-3; any failure aborts the run.
//
// Threads: OpenBLAS gets openblas_set_num_threads(1); Eigen is built without OpenMP.
#include <attend/nn.hpp>
#include <benchmark/benchmark.h>

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

#include "baselines.hpp"
#include "peak.hpp"

namespace {
using bench::fill_value;
using bench::mask_upper;
using bench::neg_inf;
using bench::softmax_row;

template <std::size_t E, std::size_t H>
inline float scale_of() {
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(E / H)));
}

// x (1, T, E) in [-1, 1], the four (E, E) weights in [-0.05, 0.05], and the output, on the heap.
template <std::size_t T, std::size_t E>
struct layer_data {
    using X = attend::tensor<float, 1, T, E>;
    using W = attend::tensor<float, E, E>;
    std::unique_ptr<X> x = std::make_unique<X>(), out = std::make_unique<X>();
    std::unique_ptr<W> wq = std::make_unique<W>(), wk = std::make_unique<W>(), wv = std::make_unique<W>(),
                       wo = std::make_unique<W>();
    layer_data() {
        for (std::size_t i = 0; i < T * E; ++i) {
            x->data()[i] = fill_value(i, 1);
            out->data()[i] = 0.0f;
        }
        for (std::size_t i = 0; i < E * E; ++i) {
            wq->data()[i] = 0.05f * fill_value(i, 2);
            wk->data()[i] = 0.05f * fill_value(i, 3);
            wv->data()[i] = 0.05f * fill_value(i, 4);
            wo->data()[i] = 0.05f * fill_value(i, 5);
        }
    }
};

// ---- implementations: construct once (untimed), run() is the timed work ----

template <std::size_t T, std::size_t E, std::size_t H, bool Causal>
struct attend_impl {
    layer_data<T, E> d;
    void run() {
        if constexpr (Causal)
            *d.out = attend::nn::multi_head_attention<H, attend::nn::masking::causal>(*d.x, *d.wq, *d.wk, *d.wv, *d.wo);
        else
            *d.out = attend::nn::multi_head_attention<H>(*d.x, *d.wq, *d.wk, *d.wv, *d.wo);
    }
};

#ifdef ATTEND_HAVE_EIGEN
using eigen_rows = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Projections with .noalias() into Q, K, V; per head S = scale * Qh Kh^T (Qh, Kh column blocks),
// -inf above the diagonal for causal, row-wise stable softmax, Oh = P Vh into the head's column
// block of the concat matrix; out = concat W_O. Q, K, V, concat and S allocated once, untimed.
template <std::size_t T, std::size_t E, std::size_t H, bool Causal>
struct eigen_impl {
    static constexpr Eigen::Index t = static_cast<Eigen::Index>(T), e = static_cast<Eigen::Index>(E),
                                  dh = static_cast<Eigen::Index>(E / H);
    layer_data<T, E> d;
    Eigen::Map<const eigen_rows, Eigen::Aligned64> x{d.x->data(), t, e}, wq{d.wq->data(), e, e},
        wk{d.wk->data(), e, e}, wv{d.wv->data(), e, e}, wo{d.wo->data(), e, e};
    Eigen::Map<eigen_rows, Eigen::Aligned64> out{d.out->data(), t, e};
    eigen_rows q = eigen_rows(t, e), k = eigen_rows(t, e), v = eigen_rows(t, e), concat = eigen_rows(t, e),
               s = eigen_rows(t, t);
    const float scale = scale_of<E, H>();
    void run() {
        q.noalias() = x * wq;
        k.noalias() = x * wk;
        v.noalias() = x * wv;
        for (Eigen::Index h = 0; h < static_cast<Eigen::Index>(H); ++h) {
            s.noalias() = scale * (q.middleCols(h * dh, dh) * k.middleCols(h * dh, dh).transpose());
            if constexpr (Causal) mask_upper(s.data(), T);
            for (Eigen::Index i = 0; i < t; ++i) {
                auto r = s.row(i).array();
                const float mx = r.maxCoeff();
                r = (r - mx).exp();
                r /= r.sum();
            }
            concat.middleCols(h * dh, dh).noalias() = s * v.middleCols(h * dh, dh);
        }
        out.noalias() = concat * wo;
    }
};
#endif

#ifdef ATTEND_HAVE_OPENBLAS
// cblas_sgemm for the projections; per head cblas_sgemm on the column blocks (lda = E) for
// S = scale Q_h K_h^T, -inf masking for causal, xsimd row softmax, cblas_sgemm for P V_h into the
// head's columns of the concat buffer (ldc = E); cblas_sgemm for out = concat W_O.
template <std::size_t T, std::size_t E, std::size_t H, bool Causal>
struct openblas_impl {
    static constexpr blasint t = static_cast<blasint>(T), e = static_cast<blasint>(E), dh = static_cast<blasint>(E / H);
    layer_data<T, E> d;
    std::vector<float> q = std::vector<float>(T * E), k = std::vector<float>(T * E), v = std::vector<float>(T * E),
                       concat = std::vector<float>(T * E), s = std::vector<float>(T * T);
    const float scale = scale_of<E, H>();
    void run() {
        const float* x = d.x->data();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, e, e, 1.0f, x, e, d.wq->data(), e, 0.0f, q.data(), e);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, e, e, 1.0f, x, e, d.wk->data(), e, 0.0f, k.data(), e);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, e, e, 1.0f, x, e, d.wv->data(), e, 0.0f, v.data(), e);
        float* sp = s.data();
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t c0 = h * (E / H);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, dh, scale, q.data() + c0, e, k.data() + c0, e, 0.0f,
                        sp, t);
            if constexpr (Causal) mask_upper(sp, T);
            for (std::size_t i = 0; i < T; ++i) softmax_row(sp + i * T, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, dh, t, 1.0f, sp, t, v.data() + c0, e, 0.0f,
                        concat.data() + c0, e);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, e, e, 1.0f, concat.data(), e, d.wo->data(), e, 0.0f,
                    d.out->data(), e);
    }
};
#endif

// ---- correctness (untimed) ----

constexpr std::size_t check_rows[] = {0, 1, 100, 255};

// Double reference for the sampled rows of out, plain or causal: K and V for all rows, Q only for
// the sampled rows, per head softmax(q_h K_h^T scale) V_h into the concat row, times W_O.
template <std::size_t T, std::size_t E, std::size_t H>
std::vector<std::vector<double>> reference(const layer_data<T, E>& d, bool causal) {
    constexpr std::size_t D = E / H;
    const float *x = d.x->data(), *wq = d.wq->data(), *wk = d.wk->data(), *wv = d.wv->data(), *wo = d.wo->data();
    auto project = [&](const float* w, std::size_t row, double* dst) {
        std::fill(dst, dst + E, 0.0);
        for (std::size_t c = 0; c < E; ++c) {
            const double xc = x[row * E + c];
            for (std::size_t j = 0; j < E; ++j) dst[j] += xc * static_cast<double>(w[c * E + j]);
        }
    };
    std::vector<double> k(T * E), v(T * E);
    for (std::size_t r = 0; r < T; ++r) {
        project(wk, r, k.data() + r * E);
        project(wv, r, v.data() + r * E);
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    std::vector<std::vector<double>> refs;
    std::vector<double> q(E), concat(E), p(T);
    for (std::size_t i : check_rows) {
        if (i >= T) continue;
        project(wq, i, q.data());
        const std::size_t nk = causal ? i + 1 : T;
        for (std::size_t h = 0; h < H; ++h) {
            double mx = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < nk; ++j) {
                double dot = 0;
                for (std::size_t c = h * D; c < (h + 1) * D; ++c) dot += q[c] * k[j * E + c];
                p[j] = dot * scale;
                mx = std::max(mx, p[j]);
            }
            double sum = 0;
            for (std::size_t j = 0; j < nk; ++j) sum += p[j] = std::exp(p[j] - mx);
            for (std::size_t c = h * D; c < (h + 1) * D; ++c) {
                double acc = 0;
                for (std::size_t j = 0; j < nk; ++j) acc += p[j] * v[j * E + c];
                concat[c] = acc / sum;
            }
        }
        std::vector<double> o(E, 0.0);
        for (std::size_t c = 0; c < E; ++c)
            for (std::size_t j = 0; j < E; ++j) o[j] += concat[c] * static_cast<double>(wo[c * E + j]);
        refs.push_back(std::move(o));
    }
    return refs;
}

// Largest per-row error max |o - ref| / max |ref| over the sampled rows.
template <std::size_t T, std::size_t E>
double max_rel_error(const layer_data<T, E>& d, const std::vector<std::vector<double>>& refs, std::size_t* worst_row) {
    const float* o = d.out->data();
    double worst = 0;
    std::size_t n = 0;
    for (std::size_t i : check_rows) {
        if (i >= T) continue;
        const std::vector<double>& ref = refs[n++];
        double err = 0, mag = 0;
        for (std::size_t c = 0; c < E; ++c) {
            const double got = o[i * E + c];
            err = std::isfinite(got) ? std::max(err, std::abs(got - ref[c])) : std::numeric_limits<double>::infinity();
            mag = std::max(mag, std::abs(ref[c]));
        }
        const double rel = err / std::max(mag, 1e-30);
        if (!(rel <= worst)) {
            worst = rel;
            *worst_row = i;
        }
    }
    return worst;
}

// ---- benchmark bodies ----

template <std::size_t T, std::size_t E>
void set_flops(benchmark::State& state) {
    const double t = static_cast<double>(T), e = static_cast<double>(E);
    const double flops = 4.0 * 2.0 * t * e * e + 4.0 * t * t * e;
    state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

template <class Impl, std::size_t T, std::size_t E>
void run_bench(benchmark::State& state) {
    auto impl = std::make_unique<Impl>();
    impl->run();  // untimed warm-up (checked in main before any timing)
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->d.out->data());
    set_flops<T, E>(state);
}

template <std::size_t T, std::size_t E, std::size_t H>
void mha_attend(benchmark::State& state) {
    run_bench<attend_impl<T, E, H, false>, T, E>(state);
}
template <std::size_t T, std::size_t E, std::size_t H>
void mhacausal_attend(benchmark::State& state) {
    run_bench<attend_impl<T, E, H, true>, T, E>(state);
}
#ifdef ATTEND_HAVE_EIGEN
template <std::size_t T, std::size_t E, std::size_t H>
void mha_eigen(benchmark::State& state) {
    run_bench<eigen_impl<T, E, H, false>, T, E>(state);
}
template <std::size_t T, std::size_t E, std::size_t H>
void mhacausal_eigen(benchmark::State& state) {
    run_bench<eigen_impl<T, E, H, true>, T, E>(state);
}
#endif
#ifdef ATTEND_HAVE_OPENBLAS
template <std::size_t T, std::size_t E, std::size_t H>
void mha_openblas(benchmark::State& state) {
    run_bench<openblas_impl<T, E, H, false>, T, E>(state);
}
template <std::size_t T, std::size_t E, std::size_t H>
void mhacausal_openblas(benchmark::State& state) {
    run_bench<openblas_impl<T, E, H, true>, T, E>(state);
}
#endif

// ---- startup guard: every implementation, plain and causal, before any timing ----

template <class Impl, std::size_t T, std::size_t E>
bool verify(const char* name, const std::vector<std::vector<double>>& refs) {
    auto impl = std::make_unique<Impl>();
    impl->run();
    std::size_t row = 0;
    const double err = max_rel_error<T, E>(impl->d, refs, &row);
    if (!(err <= 1e-3)) {
        std::fprintf(stderr, "%s: WRONG RESULT: max relative error %.3g (> 1e-3) at row %zu\n", name, err, row);
        return false;
    }
    std::fprintf(stderr, "%s: ok (max relative error %.3g)\n", name, err);
    return true;
}

template <std::size_t T, std::size_t E, std::size_t H>
bool verify_all() {
    const layer_data<T, E> d;  // same deterministic inputs as every implementation
    const auto plain = reference<T, E, H>(d, false), causal = reference<T, E, H>(d, true);
    bool ok = true;
    ok &= verify<attend_impl<T, E, H, false>, T, E>("mha_attend", plain);
    ok &= verify<attend_impl<T, E, H, true>, T, E>("mhacausal_attend", causal);
#ifdef ATTEND_HAVE_EIGEN
    ok &= verify<eigen_impl<T, E, H, false>, T, E>("mha_eigen", plain);
    ok &= verify<eigen_impl<T, E, H, true>, T, E>("mhacausal_eigen", causal);
#endif
#ifdef ATTEND_HAVE_OPENBLAS
    ok &= verify<openblas_impl<T, E, H, false>, T, E>("mha_openblas", plain);
    ok &= verify<openblas_impl<T, E, H, true>, T, E>("mhacausal_openblas", causal);
#endif
    return ok;
}

}  // namespace

BENCHMARK(bench::fma_peak);

BENCHMARK(mha_attend<256, 512, 8>);
BENCHMARK(mhacausal_attend<256, 512, 8>);
#ifdef ATTEND_HAVE_EIGEN
BENCHMARK(mha_eigen<256, 512, 8>);
BENCHMARK(mhacausal_eigen<256, 512, 8>);
#endif
#ifdef ATTEND_HAVE_OPENBLAS
BENCHMARK(mha_openblas<256, 512, 8>);
BENCHMARK(mhacausal_openblas<256, 512, 8>);
#endif

int main(int argc, char** argv) {
#ifdef ATTEND_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    if (!verify_all<256, 512, 8>()) {
        std::fprintf(stderr, "layers: wrong results, not timing\n");
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
