// One-token steps, single-threaded, each beside the floor: a streaming read of the bytes the step
// must read, in the same run. Every benchmark reports those bytes per second (bytes_per_second),
// so the floor's ratio to attend is attend's distance from it. Every operand, cache and floor
// buffer is on huge-page memory (attend::make_huge), as a model's large state should be: with
// 4 KiB pages the steps from DRAM swung 1.3-3x between runs on an Intel Xeon VM (run with the
// kernel's transparent_hugepage mode `never` to see them on 4 KiB pages).
//
// Matvecs: y = x W for a few rows x, the weight in either layout, against Eigen and OpenBLAS
// (sgemv for one row, sgemm for more).
// Names: mvkn_<impl><M, K, N> is y = x W with W (K, N) (`matmul(x, W)`); mvnk_<impl><M, K, N> is
// y = x Wᵀ with W (N, K) (`matmul(x, transpose(W))`, the layout of PyTorch and llama2.c
// checkpoints); read_floor<K, N> reads K·N floats.
//
// Decode attention: G query heads per KV head (GQA folded into the query axis, Q (HKV, G, D))
// over a KV cache K, V (HKV, NMAX, D) filled to a run-time length, against Eigen (S = Q K^T, row
// softmax, P V per KV head) and a per-key loop in the style of llama.cpp's CPU flash_attn_ext
// (per query: online softmax key by key, vectorised along D). The floor reads the cache up to len;
// decode_fma_floor reads it key by key beside the step's count of FMAs on registers (not
// attention: how far this machine overlaps memory and that arithmetic at best).
// decode_blocked (one query a KV head): blocks of 16 keys, the next block's K rows read beside this
// block's V rows (the loop attend's one-query plan takes from DRAM on Zen 5, without a score tree).
// decode_paired<...> times attend, the floor, the per-key loop and the FMA floor (and with one
// query the blocked loop) in turn in every iteration (in each of their orders in rotation) and
// reports attend / read, attend / per-key, attend / FMA floor, FMA floor / read (and attend /
// blocked) as counters: ratios the host's drift cancels from, each read after the others have
// passed through the caches.
//
// mvkn_paired / mvnk_paired<K, N> time attend over a float and a bf16 weight, the read of each and
// the baselines in turn, as decode_paired does (ratios as counters).
//
// Before any timing, main() checks every implementation against a double-precision loop and
// refuses to time wrong code.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <type_traits>
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
#include "paired.hpp"
#include "peak.hpp"

namespace {

using bench::fill_value;

enum class layout { kn, nk };

// x (M, K), W stored as (K, N) or (N, K) in element type WT (float, or bf16 widened as read), y (M, N).
template <layout L, std::size_t M, std::size_t K, std::size_t N, class WT = float>
struct operands {
    using TX = attend::tensor<float, M, K>;
    using TW = std::conditional_t<L == layout::kn, attend::tensor<WT, K, N>, attend::tensor<WT, N, K>>;
    using TY = attend::tensor<float, M, N>;
    attend::huge_ptr<TX> x = attend::make_huge<TX>();
    attend::huge_ptr<TW> w = attend::make_huge<TW>();
    attend::huge_ptr<TY> y = attend::make_huge<TY>();
    operands() {
        for (std::size_t k = 0; k < M * K; ++k) x->data()[k] = fill_value(k, 1);
        for (std::size_t k = 0; k < K * N; ++k) w->data()[k] = WT(fill_value(k, 2));
    }
    // W[k][n] whatever the layout.
    float weight(std::size_t k, std::size_t n) const {
        return static_cast<float>(L == layout::kn ? w->data()[k * N + n] : w->data()[n * K + k]);
    }
};

// XT = bf16: x rounded to bf16 in the step (`cast<bf16>(x)`, the caller's opt-in to pair
// products against a bf16 weight).
template <layout L, std::size_t M, std::size_t K, std::size_t N, class WT = float, class XT = float>
struct attend_impl {
    using weight_type = WT;
    operands<L, M, K, N, WT> o;
    // x as stored, or rounded to XT in the step (the rounding timed).
    decltype(auto) x() const {
        if constexpr (std::is_same_v<XT, float>) return *o.x;  // the tensor itself (a memory leaf)
        else return attend::cast<XT>(*o.x);
    }
    void run() {
        if constexpr (L == layout::kn) *o.y = attend::matmul(x(), *o.w);
        else *o.y = attend::matmul(x(), attend::transpose(*o.w));
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

template <class Impl, std::size_t K, std::size_t N, std::size_t Bytes = sizeof(float)>
void run_bench(benchmark::State& state) {
    auto impl = std::make_unique<Impl>();
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->o.y->data());
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * K * N * Bytes));
}

// The floor: every float of a K x N weight read once (bench::read_once).
// The floor's buffer: n floats on huge pages, filled.
template <std::size_t n>
attend::huge_ptr<attend::tensor<float, n>> floor_buffer() {
    auto buffer = attend::make_huge<attend::tensor<float, n>>();
    for (std::size_t k = 0; k < n; ++k) buffer->data()[k] = fill_value(k, 2);
    return buffer;
}

template <std::size_t K, std::size_t N>
void read_floor(benchmark::State& state) {
    constexpr std::size_t n = K * N;
    const auto buffer = floor_buffer<n>();
    const float* w = buffer->data();
    for (auto _ : state) benchmark::DoNotOptimize(bench::read_once(w, n));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

// ---- decode attention ----

// The cache's K and V in element type T (float, or bf16 read as float), the queries in QT.
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, class T = float, class QT = float>
struct cache {
    using TQ = attend::tensor<QT, HKV, G, D>;
    using TO = attend::tensor<float, HKV, G, D>;
    using TK = attend::tensor<T, HKV, NMAX, D>;
    attend::huge_ptr<TQ> q = attend::make_huge<TQ>();
    attend::huge_ptr<TO> o = attend::make_huge<TO>();
    attend::huge_ptr<TK> k = attend::make_huge<TK>(), v = attend::make_huge<TK>();
    std::size_t len;
    explicit cache(std::size_t n) : len(n) {
        for (std::size_t i = 0; i < TQ::size; ++i) q->data()[i] = QT(fill_value(i, 3));
        for (std::size_t i = 0; i < TK::size; ++i) k->data()[i] = T(fill_value(i, 4)), v->data()[i] = T(fill_value(i, 5));
    }
    static constexpr float scale = 0.08838834764831845f;  // 1 / sqrt(128)
};

template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, class T = float, class QT = float>
struct decode_attend {
    cache<HKV, G, D, NMAX, T, QT> c;
    explicit decode_attend(std::size_t len) : c(len) {}
    void run() {
        const int len = static_cast<int>(c.len);
        auto s = attend::matmul(*c.q, attend::transpose(*c.k)) * c.scale;
        *c.o = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, HKV, G, NMAX>() >= len, bench::neg_inf)), *c.v);
    }
};

#ifdef ATTEND_HAVE_EIGEN
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX>
struct decode_eigen {
    using MX = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Map = Eigen::Map<MX>;
    using CMap = Eigen::Map<const MX>;
    cache<HKV, G, D, NMAX> c;
    MX s;
    explicit decode_eigen(std::size_t len) : c(len), s(G, len) {}
    void run() {
        const auto n = static_cast<Eigen::Index>(c.len);
        for (std::size_t h = 0; h < HKV; ++h) {
            CMap q(c.q->data() + h * G * D, G, D), k(c.k->data() + h * NMAX * D, n, D), v(c.v->data() + h * NMAX * D, n, D);
            Map o(c.o->data() + h * G * D, G, D);
            s.noalias() = (q * k.transpose()) * c.scale;
            for (std::size_t g = 0; g < G; ++g) bench::softmax_row(s.data() + g * c.len, c.len);
            o.noalias() = s * v;
        }
    }
};
#endif

// Per query head: keys one by one, online softmax, dot product and V accumulation along D.
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX>
struct decode_perkey {
    using B = xsimd::batch<float>;
    static constexpr std::size_t W = B::size;
    static_assert(D % W == 0);
    cache<HKV, G, D, NMAX> c;
    explicit decode_perkey(std::size_t len) : c(len) {}
    void run() {
        for (std::size_t h = 0; h < HKV; ++h)
            for (std::size_t g = 0; g < G; ++g) {
                const float* q = c.q->data() + (h * G + g) * D;
                B acc[D / W] = {};
                float m = bench::neg_inf, l = 0;
                for (std::size_t j = 0; j < c.len; ++j) {
                    const float* k = c.k->data() + (h * NMAX + j) * D;
                    const float* v = c.v->data() + (h * NMAX + j) * D;
                    B d(0.0f);
                    for (std::size_t e = 0; e < D; e += W) d = xsimd::fma(B::load_aligned(q + e), B::load_aligned(k + e), d);
                    const float s = xsimd::hadd(d) * c.scale;
                    float ms = 1, vs = 1;
                    if (s > m) ms = std::exp(m - s), m = s;
                    else vs = std::exp(s - m);
                    l = l * ms + vs;
                    for (std::size_t e = 0; e < D / W; ++e) acc[e] = xsimd::fma(B(vs), B::load_aligned(v + e * W), acc[e] * B(ms));
                }
                float* o = c.o->data() + (h * G + g) * D;
                for (std::size_t e = 0; e < D / W; ++e) (acc[e] / B(l)).store_aligned(o + e * W);
            }
    }
};

// One query per KV head (G = 1) in blocks of 16 keys: the next block's K row j (its dot product
// summed across lanes at once) read beside this block's V row j, one vector exponential a
// block; the last len % 16 keys one by one. Not attend: the same order as its one-query plan
// from DRAM on Zen 5 (decode_key_blocks), without the score tree, masks or checks.
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX>
struct decode_blocked {
    using B = xsimd::batch<float>;
    static constexpr std::size_t W = B::size, NV = D / W;
    static_assert(G == 1 && NV % 2 == 0);
    cache<HKV, G, D, NMAX> c;
    explicit decode_blocked(std::size_t len) : c(len) {}
    void run() {
        for (std::size_t h = 0; h < HKV; ++h) head(c.q->data() + h * D, c.k->data() + h * NMAX * D, c.v->data() + h * NMAX * D, c.o->data() + h * D);
    }
    void head(const float* q, const float* k, const float* v, float* out) const {
        B qr[NV], o[NV];
        for (std::size_t e = 0; e < NV; ++e) qr[e] = B::load_aligned(q + e * W) * B(c.scale), o[e] = B(0.0f);
        float m = bench::neg_inf, l = 0;
        auto dot = [&](std::size_t j) {
            B a0(0.0f), a1(0.0f);
            for (std::size_t e = 0; e < NV; e += 2)
                a0 = xsimd::fma(qr[e], B::load_aligned(k + j * D + e * W), a0), a1 = xsimd::fma(qr[e + 1], B::load_aligned(k + j * D + (e + 1) * W), a1);
            return xsimd::hadd(a0 + a1);
        };
        auto add = [&](float p, std::size_t j) {  // key j's V row at probability p
            for (std::size_t e = 0; e < NV; ++e) o[e] = xsimd::fma(B(p), B::load_aligned(v + j * D + e * W), o[e]);
        };
        auto rescale = [&](float mx) {
            if (mx <= m) return;
            const float alpha = std::exp(m - mx);
            for (std::size_t e = 0; e < NV; ++e) o[e] *= B(alpha);
            l *= alpha, m = mx;
        };
        const std::size_t blocks = c.len / W;
        alignas(64) float sn[W], pa[W];
        if (blocks > 0)
            for (std::size_t j = 0; j < W; ++j) sn[j] = dot(j);
        for (std::size_t b = 0; b < blocks; ++b) {
            const B sv = B::load_aligned(sn);
            float mx = sn[0];
            for (std::size_t j = 1; j < W; ++j) mx = std::max(mx, sn[j]);
            rescale(mx);
            const B p = xsimd::exp(sv - B(m));
            l += xsimd::hadd(p);
            p.store_aligned(pa);
            const bool more = b + 1 < blocks;
            for (std::size_t j = 0; j < W; ++j) {
                if (more) sn[j] = dot((b + 1) * W + j);
                add(pa[j], b * W + j);
            }
        }
        for (std::size_t j = blocks * W; j < c.len; ++j) {
            const float s = dot(j);
            rescale(s);
            const float p = std::exp(s - m);
            l += p;
            add(p, j);
        }
        for (std::size_t e = 0; e < NV; ++e) (o[e] / B(l)).store_aligned(out + e * W);
    }
};

template <class Impl, std::size_t HKV, std::size_t D, std::size_t LEN>
void run_decode(benchmark::State& state) {
    auto impl = std::make_unique<Impl>(LEN);
    for (auto _ : state) {
        impl->run();
        benchmark::ClobberMemory();
    }
    benchmark::DoNotOptimize(impl->c.o->data());
    using T = typename std::remove_cvref_t<decltype(*impl->c.k)>::value_type;
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * HKV * LEN * D * sizeof(T)));
}

bool failed = false;

template <class Impl, std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void verify_decode(const char* name, double tolerance = 1e-4) {
    auto impl = std::make_unique<Impl>(LEN);
    impl->run();
    const auto& c = impl->c;
    double max_err = 0;
    std::vector<double> s(LEN);
    for (std::size_t h = 0; h < HKV; ++h)
        for (std::size_t g = 0; g < G; ++g) {
            double mx = -1e300, l = 0;
            for (std::size_t j = 0; j < LEN; ++j) {
                double t = 0;
                for (std::size_t d = 0; d < D; ++d)
                    t += static_cast<double>(c.q->data()[(h * G + g) * D + d]) * static_cast<double>(c.k->data()[(h * NMAX + j) * D + d]);
                s[j] = t * c.scale;
                mx = std::max(mx, s[j]);
            }
            for (auto& x : s) l += x = std::exp(x - mx);
            for (std::size_t d = 0; d < D; ++d) {
                double o = 0;
                for (std::size_t j = 0; j < LEN; ++j) o += s[j] * static_cast<double>(c.v->data()[(h * NMAX + j) * D + d]);
                max_err = std::max(max_err, std::abs(o / l - c.o->data()[(h * G + g) * D + d]));
            }
        }
    if (max_err > tolerance) {
        std::fprintf(stderr, "decode bench: %s <%zu, %zu, %zu, %zu, %zu> is wrong: error %g\n", name, HKV, G, D, NMAX, LEN, max_err);
        failed = true;
    }
}

// The floor with the step's arithmetic: the cache read key by key (each K row, then its V row)
// beside as many FMAs as the step does (2 G D a key and KV head), on registers only. Not
// attention: it shows how far memory and the FMAs overlap on this machine when nothing else
// runs (docs/performance.md, 2026-12-07 "overlap").
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX>
float fma_stream(const float* k, const float* v, std::size_t len) {
    using B = xsimd::batch<float>;
    constexpr std::size_t W = B::size, NV = D / W, chains = 8, rounds = G * NV / chains;  // per row
    static_assert(D % W == 0 && G * NV % chains == 0);
    B acc[NV] = {}, w[chains];
    for (std::size_t i = 0; i < chains; ++i) w[i] = B(1.0f + 1e-7f * static_cast<float>(i));
    const B x(0.999999f), y(1e-7f);
    for (std::size_t h = 0; h < HKV; ++h)
        for (std::size_t j = 0; j < len; ++j)
            for (const float* row : {k + (h * NMAX + j) * D, v + (h * NMAX + j) * D}) {
                for (std::size_t e = 0; e < NV; ++e) acc[e] += B::load_aligned(row + e * W);
                for (std::size_t r = 0; r < rounds; ++r)
                    for (std::size_t i = 0; i < chains; ++i) w[i] = attend::simd::fma(w[i], x, y);
            }
    B s = acc[0];
    for (std::size_t e = 1; e < NV; ++e) s += acc[e];
    for (std::size_t i = 0; i < chains; ++i) s += w[i];
    return xsimd::hadd(s);
}
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void decode_fma_floor(benchmark::State& state) {
    const auto c = std::make_unique<cache<HKV, G, D, NMAX>>(LEN);
    for (auto _ : state) benchmark::DoNotOptimize(fma_stream<HKV, G, D, NMAX>(c->k->data(), c->v->data(), LEN));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * HKV * LEN * D * sizeof(float)));
}

// attend, the floor's read, the per-key loop and the floor with the step's FMAs (fma_stream, over
// attend's own cache) timed in turn within every iteration, so that the host's drift (the same
// binary moved by a third within minutes on a shared VM) cancels out of the ratios the issue's
// goals are stated in: attend / read, attend / per-key loop and attend / fma_stream, each a
// ratio of sums over the iterations (counters). The iteration time is attend's.
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void decode_paired(benchmark::State& state) {
    auto impl = std::make_unique<decode_attend<HKV, G, D, NMAX>>(LEN);
    auto perkey = std::make_unique<decode_perkey<HKV, G, D, NMAX>>(LEN);
    std::unique_ptr<decode_blocked<HKV, 1, D, NMAX>> blocked;  // (one query: the blocked loop too)
    constexpr std::size_t n = 2 * HKV * LEN * D;
    const auto buffer = floor_buffer<n>();
    const float* w = buffer->data();
    // The steps, each in each of their orders in turn, so that each follows each of the others
    // as often (what one leaves in a large L3 can favour the next)
    std::vector<std::function<void()>> steps = {
        [&] { benchmark::DoNotOptimize(bench::read_once(w, n)); },
        [&] { impl->run(); },
        [&] { perkey->run(); },
        [&] { benchmark::DoNotOptimize(fma_stream<HKV, G, D, NMAX>(impl->c.k->data(), impl->c.v->data(), LEN)); },
    };
    if constexpr (G == 1) {
        blocked = std::make_unique<decode_blocked<HKV, 1, D, NMAX>>(LEN);
        steps.push_back([&] { blocked->run(); });
    }
    std::vector<std::size_t> order(steps.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto sum = bench::time_in_turn(state, steps, 1, order, [](auto& o) { std::next_permutation(o.begin(), o.end()); });
    state.counters["attend_per_read"] = sum[1] / sum[0];
    state.counters["attend_per_perkey"] = sum[1] / sum[2];
    state.counters["attend_per_fma_floor"] = sum[1] / sum[3];
    state.counters["fma_floor_per_read"] = sum[3] / sum[0];
    if constexpr (G == 1) state.counters["attend_per_blocked"] = sum[1] / sum[4];
}

template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void decode_case() {
    const std::string args = "<" + std::to_string(HKV) + ", " + std::to_string(G) + ", " + std::to_string(D) + ", " +
                             std::to_string(NMAX) + ", " + std::to_string(LEN) + ">";
    auto add = [&]<class Impl>(const char* impl) {
        verify_decode<Impl, HKV, G, D, NMAX, LEN>(impl);
        benchmark::RegisterBenchmark((std::string("decode_") + impl + args).c_str(), run_decode<Impl, HKV, D, LEN>)
            ->Unit(benchmark::kMicrosecond);
    };
    add.template operator()<decode_attend<HKV, G, D, NMAX>>("attend");
#ifdef ATTEND_HAVE_EIGEN
    add.template operator()<decode_eigen<HKV, G, D, NMAX>>("eigen");
#endif
    add.template operator()<decode_perkey<HKV, G, D, NMAX>>("perkey");
    if constexpr (G == 1) add.template operator()<decode_blocked<HKV, G, D, NMAX>>("blocked");
    benchmark::RegisterBenchmark(("decode_floor" + args).c_str(), read_floor<2 * HKV * LEN, D>)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("decode_fma_floor" + args).c_str(), decode_fma_floor<HKV, G, D, NMAX, LEN>)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("decode_paired" + args).c_str(), decode_paired<HKV, G, D, NMAX, LEN>)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}


template <class Impl, layout L, std::size_t M, std::size_t K, std::size_t N>
void verify(const char* name, double tolerance = 1e-4) {
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
    if (max_err > tolerance * max_ref) {
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

// A weight held in bf16 (one-token steps reading half the bytes): attend beside the read of
// those bytes (read_floor_bf16<K, N>: K * N / 2 floats' worth).
template <layout L, std::size_t M, std::size_t K, std::size_t N>
void matvec_bf16_case(const char* tag) {
    const std::string args = "<" + std::to_string(M) + ", " + std::to_string(K) + ", " + std::to_string(N) + ">";
    using Impl = attend_impl<L, M, K, N, attend::bf16>;
    verify<Impl, L, M, K, N>("attend_bf16");
    benchmark::RegisterBenchmark((std::string(tag) + "_attend_bf16" + args).c_str(), run_bench<Impl, K, N, 2>)->Unit(benchmark::kMicrosecond);
    // x rounded to bf16 too: pair products by vdpbf16ps for W (N, K) where the target has them
    // (the check allows for x's rounding, 2^-9 of each product)
    using Pairs = attend_impl<L, M, K, N, attend::bf16, attend::bf16>;
    verify<Pairs, L, M, K, N>("attend_bf16_x", 1e-2);
    benchmark::RegisterBenchmark((std::string(tag) + "_attend_bf16_x" + args).c_str(), run_bench<Pairs, K, N, 2>)->Unit(benchmark::kMicrosecond);
}
template <std::size_t K, std::size_t N>
void floor_bf16_case() {
    benchmark::RegisterBenchmark(("read_floor_bf16<" + std::to_string(K) + ", " + std::to_string(N) + ">").c_str(), read_floor<K, N / 2>)
        ->Unit(benchmark::kMicrosecond);
}

// Steps 0-3 (the read of the float bytes, the float step, the read of the bf16 bytes, the bf16
// step) and any after them, timed in turn in an order shuffled afresh every iteration, so that each
// follows each of the others as often; the bf16 step's time is the iteration's. Sets the counters
// of the two steps against each other and their reads, and gives the summed times.
std::vector<double> float_and_bf16_in_turn(benchmark::State& state, const std::vector<std::function<void()>>& steps) {
    std::vector<std::size_t> order(steps.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937 shuffle_seed(7);
    auto shuffle = [&](auto& o) { std::shuffle(o.begin(), o.end(), shuffle_seed); };
    shuffle(order);
    const auto sum = bench::time_in_turn(state, steps, 3, order, shuffle);
    state.counters["float_per_read"] = sum[1] / sum[0];
    state.counters["bf16_per_read"] = sum[3] / sum[2];
    state.counters["bf16_per_float"] = sum[3] / sum[1];
    state.counters["read_bf16_per_float"] = sum[2] / sum[0];
    return sum;
}

// The float and the bf16 cache of the same values, each beside the read of its bytes, timed in
// turn within every iteration (an order shuffled afresh each time): the goal for a bf16
// cache is stated as bf16 / float, which drifts apart when the two are timed minutes apart.
// Counters: bf16 / float, each / its read, and the reads' ratio.
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void decode_bf16_paired(benchmark::State& state) {
    auto f32 = std::make_unique<decode_attend<HKV, G, D, NMAX>>(LEN);
    auto b16 = std::make_unique<decode_attend<HKV, G, D, NMAX, attend::bf16>>(LEN);
    constexpr std::size_t n = 2 * HKV * LEN * D;
    const auto buffer = floor_buffer<n>();
    const float* w = buffer->data();
    std::vector<std::function<void()>> steps = {
        [&] { benchmark::DoNotOptimize(bench::read_once(w, n)); },
        [&] { f32->run(); },
        [&] { benchmark::DoNotOptimize(bench::read_once(w, n / 2)); },
        [&] { b16->run(); },
    };
    float_and_bf16_in_turn(state, steps);
}

// A bf16 KV cache: attend beside the read of its bytes (half the floats).
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void decode_bf16_case() {
    const std::string args = "<" + std::to_string(HKV) + ", " + std::to_string(G) + ", " + std::to_string(D) + ", " +
                             std::to_string(NMAX) + ", " + std::to_string(LEN) + ">";
    using Impl = decode_attend<HKV, G, D, NMAX, attend::bf16>;
    verify_decode<Impl, HKV, G, D, NMAX, LEN>("attend_bf16");
    benchmark::RegisterBenchmark(("decode_attend_bf16" + args).c_str(), run_decode<Impl, HKV, D, LEN>)->Unit(benchmark::kMicrosecond);
    // The queries in bf16 too: with several queries a KV head, pair dot products where the target
    // has AVX-512 BF16 (P rounded to bf16: a looser check, docs/numerics.md)
    if constexpr (G > 2) {
        using Pairs = decode_attend<HKV, G, D, NMAX, attend::bf16, attend::bf16>;
        verify_decode<Pairs, HKV, G, D, NMAX, LEN>("attend_bf16_q", 1e-2);
        benchmark::RegisterBenchmark(("decode_attend_bf16_q" + args).c_str(), run_decode<Pairs, HKV, D, LEN>)->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(("decode_floor_bf16" + args).c_str(), read_floor<HKV * LEN, D>)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("decode_bf16_paired" + args).c_str(), decode_bf16_paired<HKV, G, D, NMAX, LEN>)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

// One row of x against a float and a bf16 weight of the same values, the read of each weight's
// bytes, and Eigen and OpenBLAS on the float weight, timed in turn within every iteration (in an
// order shuffled afresh each time, so that each follows each of the others as often): for
// weights near the L3's size, where a step run again and again keeps part of its weight in L3
// (how much depends on its order of access), these are the ratios of steps that find the
// others' data there instead. Counters: attend / read for each weight, the bf16 step's time over
// the float one's (and the reads' the same way), attend float / Eigen and / OpenBLAS.
template <layout L, std::size_t K, std::size_t N>
void matvec_paired(benchmark::State& state) {
    auto f32 = std::make_unique<attend_impl<L, 1, K, N>>();
    auto b16 = std::make_unique<attend_impl<L, 1, K, N, attend::bf16>>();
    const float* wf = f32->o.w->data();
    const float* wb = reinterpret_cast<const float*>(b16->o.w->data());  // (its bytes, read as floats)
    std::vector<std::function<void()>> steps = {
        [&] { benchmark::DoNotOptimize(bench::read_once(wf, K * N)); },
        [&] { f32->run(); },
        [&] { benchmark::DoNotOptimize(bench::read_once(wb, K * N / 2)); },
        [&] { b16->run(); },
    };
#ifdef ATTEND_HAVE_EIGEN
    auto eigen = std::make_unique<eigen_impl<L, 1, K, N>>();
    steps.push_back([&] { eigen->run(); });
#endif
#ifdef ATTEND_HAVE_OPENBLAS
    auto openblas = std::make_unique<openblas_impl<L, 1, K, N>>();
    steps.push_back([&] { openblas->run(); });
#endif
    const auto sum = float_and_bf16_in_turn(state, steps);
    std::size_t next = 4;
#ifdef ATTEND_HAVE_EIGEN
    state.counters["float_per_eigen"] = sum[1] / sum[next++];
#endif
#ifdef ATTEND_HAVE_OPENBLAS
    state.counters["float_per_openblas"] = sum[1] / sum[next++];
#endif
}
template <layout L, std::size_t K, std::size_t N>
void matvec_paired_case(const char* tag) {
    benchmark::RegisterBenchmark((std::string(tag) + "_paired<" + std::to_string(K) + ", " + std::to_string(N) + ">").c_str(), matvec_paired<L, K, N>)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
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
    // The FMA peak of this run: decode with several queries per KV head is bound by FMAs as well
    // as by its read (docs/performance.md).
    benchmark::RegisterBenchmark("fma_peak", bench::fma_peak);
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
    decode_case<8, 4, 128, 8192, 8000>();
    decode_case<8, 4, 128, 1024, 1000>();
    decode_case<32, 1, 128, 4096, 4000>();
    decode_bf16_case<8, 4, 128, 8192, 8000>();
    decode_bf16_case<32, 1, 128, 4096, 4000>();
    matvec_bf16_case<layout::kn, 1, 4096, 4096>("mvkn");
    matvec_bf16_case<layout::nk, 1, 4096, 4096>("mvnk");
    floor_bf16_case<4096, 4096>();
    matvec_paired_case<layout::kn, 4096, 4096>("mvkn");
    matvec_paired_case<layout::nk, 4096, 4096>("mvnk");
    matvec_paired_case<layout::nk, 288, 32000>("mvnk");
    matvec_paired_case<layout::kn, 768, 2048>("mvkn");
    matvec_paired_case<layout::nk, 768, 2048>("mvnk");
    matvec_paired_case<layout::kn, 288, 768>("mvkn");
    matvec_paired_case<layout::nk, 288, 768>("mvnk");
    matvec_paired_case<layout::kn, 768, 288>("mvkn");
    matvec_paired_case<layout::nk, 768, 288>("mvnk");
    matvec_bf16_case<layout::nk, 1, 288, 32000>("mvnk");
    floor_bf16_case<288, 32000>();
    matvec_bf16_case<layout::kn, 1, 288, 768>("mvkn");
    matvec_bf16_case<layout::nk, 1, 288, 768>("mvnk");
    floor_bf16_case<288, 768>();
    matvec_bf16_case<layout::kn, 1, 768, 288>("mvkn");
    matvec_bf16_case<layout::nk, 1, 768, 288>("mvnk");
    floor_bf16_case<768, 288>();
    matvec_bf16_case<layout::kn, 1, 768, 2048>("mvkn");
    matvec_bf16_case<layout::nk, 1, 768, 2048>("mvnk");
    floor_bf16_case<768, 2048>();
    matvec_case<layout::nk, 2, 288, 768>("mvnk");
    matvec_case<layout::nk, 2, 768, 2048>("mvnk");
    matvec_case<layout::nk, 4, 768, 2048>("mvnk");
    matvec_case<layout::kn, 4, 4096, 4096>("mvkn");
    matvec_case<layout::nk, 4, 4096, 4096>("mvnk");
    matvec_case<layout::kn, 16, 4096, 4096>("mvkn");
    matvec_case<layout::nk, 16, 4096, 4096>("mvnk");
    return bench::run_benchmarks(argc, argv, !failed, "decode");
}
