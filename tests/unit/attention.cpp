// The fused attention plan against a double reference: odd sizes (not multiples of the tile or
// vector width), NQ != NK, every mask kind, biases, soft-capping, temperature, GQA and MQA,
// fully and partly masked rows, big logits, views in and out, double precision — and, for each,
// the assertion that the fused plan was the one taken.
#include <attend/attend.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "reference.hpp"

using attend::tensor;

namespace {
constexpr double ninf = -std::numeric_limits<double>::infinity();

// out[b][i][dv] = sum_j softmax_j(mod(b, i, j, q_b,i . k_b,j)) v_b,j,dv, in double. A row whose
// scores are all -inf gives zeros.
template <class Q, class K, class V, class Mod>
std::vector<double> reference(std::size_t B, std::size_t NQ, std::size_t NK, std::size_t D, std::size_t DV, Q q, K k,
                              V v, Mod mod) {
    std::vector<double> out(B * NQ * DV, 0.0), s(NK);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < NQ; ++i) {
            double m = ninf;
            for (std::size_t j = 0; j < NK; ++j) {
                double dot = 0;
                for (std::size_t d = 0; d < D; ++d) dot += q(b, i, d) * k(b, j, d);
                s[j] = mod(b, i, j, dot);
                m = std::max(m, s[j]);
            }
            if (m == ninf) continue;
            double z = 0;
            for (std::size_t j = 0; j < NK; ++j) z += std::exp(s[j] - m);
            for (std::size_t j = 0; j < NK; ++j) {
                if (s[j] == ninf) continue;  // a masked key takes no part, whatever its row holds
                const double p = std::exp(s[j] - m) / z;
                for (std::size_t dv = 0; dv < DV; ++dv) out[(b * NQ + i) * DV + dv] += p * v(b, j, dv);
            }
        }
    return out;
}

template <class Out>
void expect_close(const Out& got, const std::vector<double>& want, double tol) {
    std::size_t bad = 0;
    for (std::size_t n = 0; n < want.size(); ++n)
        if (!ref::close(double(got.data()[n]), want[n], tol) && bad++ < 5)
            BOOST_ERROR("element " << n << ": got " << got.data()[n] << ", want " << want[n]);
    BOOST_CHECK_EQUAL(bad, 0u);
}

template <std::size_t NQ_, std::size_t NK_, std::size_t D_, std::size_t DV_>
struct dims {
    static constexpr std::size_t NQ = NQ_, NK = NK_, D = D_, DV = DV_;
};
// Not multiples of the query tile (32), key tile (48) or vector width (16); NQ != NK.
using sizes = boost::mpl::list<dims<1, 1, 1, 1>, dims<17, 33, 8, 7>, dims<65, 100, 64, 64>, dims<40, 130, 32, 17>>;
}  // namespace

BOOST_AUTO_TEST_SUITE(attention)

BOOST_AUTO_TEST_CASE_TEMPLATE(score_trees_take_the_fused_plan, Z, sizes) {
    constexpr std::size_t NQ = Z::NQ, NK = Z::NK, D = Z::D, DV = Z::DV;
    auto q = std::make_unique<tensor<float, NQ, D>>();
    auto k = std::make_unique<tensor<float, NK, D>>();
    auto v = std::make_unique<tensor<float, NK, DV>>();
    auto bias = std::make_unique<tensor<float, NQ, NK>>();
    auto mask = std::make_unique<tensor<bool, NQ, NK>>();
    ref::fill(*q, 1);
    ref::fill(*k, 2);
    ref::fill(*v, 3);
    ref::fill(*bias, 4);
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t j = 0; j < NK; ++j) (*mask)(i, j) = (i * 7 + j * 3) % 5 == 0;
    auto Q = [&](std::size_t, std::size_t i, std::size_t d) { return double((*q)(i, d)); };
    auto K = [&](std::size_t, std::size_t j, std::size_t d) { return double((*k)(j, d)); };
    auto V = [&](std::size_t, std::size_t j, std::size_t d) { return double((*v)(j, d)); };
    const double scale = 1 / std::sqrt(double(D));
    auto out = std::make_unique<tensor<float, NQ, DV>>();
    const auto i = attend::iota<0, NQ, NK>();
    const auto j = attend::iota<1, NQ, NK>();
    const auto s = attend::matmul(*q, attend::transpose(*k));

    auto plain = attend::scaled_dot_product_attention(*q, *k, *v);
    static_assert(attend::plan_of<decltype(plain)> == attend::plan::attention);
    if constexpr (NQ == 17 || NQ == 65)  // one query past the tiles (16 or 32 on AVX-512)
        BOOST_TEST(attend::explain(plain).find("the last query through the decode nest") != std::string::npos, attend::explain(plain));
    *out = plain;
    expect_close(*out, reference(1, NQ, NK, D, DV, Q, K, V, [&](auto, auto, auto, double x) { return x * scale; }), 2e-5);

    auto causal = attend::scaled_dot_product_attention(*q, *k, *v, attend::causal_mask<NQ, NK>());
    static_assert(attend::plan_of<decltype(causal)> == attend::plan::attention);
    *out = causal;
    expect_close(*out, reference(1, NQ, NK, D, DV, Q, K, V, [&](auto, auto a, auto b, double x) { return b > a ? ninf : x * scale; }), 2e-5);

    // A stored mask (true = ignore) and a stored additive bias, written by hand.
    auto stored = attend::matmul(attend::softmax(attend::masked_fill(s * float(scale) + *bias, *mask, -INFINITY)), *v);
    static_assert(attend::plan_of<decltype(stored)> == attend::plan::attention);
    *out = stored;
    expect_close(*out, reference(1, NQ, NK, D, DV, Q, K, V, [&](auto, auto a, auto b, double x) {
        return (*mask)(a, b) ? ninf : double(float(x * scale)) + (*bias)(a, b);
    }), 2e-5);

    // ALiBi-style bias, soft-capping and a sliding window aligned to the last key, as one tree.
    constexpr long off = long(NK) - long(NQ);
    const float slope = 0.25f, cap = 3.0f;
    auto custom = attend::matmul(
        attend::softmax(attend::masked_fill(cap * tanh((s * float(scale) - slope * abs(i + off - j)) / cap),
                                            j > i + off || j < i + off - 9, -INFINITY)),
        *v);
    static_assert(attend::plan_of<decltype(custom)> == attend::plan::attention);
    *out = custom;
    expect_close(*out, reference(1, NQ, NK, D, DV, Q, K, V, [&](auto, auto a, auto b, double x) {
        const long di = long(a) + off - long(b);
        if (di < 0 || di > 9) return ninf;
        return cap * std::tanh((x * scale - slope * std::abs(double(di))) / cap);
    }), 2e-5);

    // Temperature and a key-padding mask that broadcasts over queries.
    tensor<bool, 1, NK> padding;
    for (std::size_t b = 0; b < NK; ++b) padding(0, b) = b % 4 == 3;
    auto temp = attend::matmul(attend::softmax(attend::masked_fill(s / 0.7f, padding, -INFINITY)), *v);
    static_assert(attend::plan_of<decltype(temp)> == attend::plan::attention);
    *out = temp;
    expect_close(*out, reference(1, NQ, NK, D, DV, Q, K, V, [&](auto, auto, auto b, double x) {
        return b % 4 == 3 ? ninf : x / double(0.7f);
    }), 2e-5);
}

BOOST_AUTO_TEST_CASE(grouped_and_multi_query_attention) {
    // GQA: Q (Hkv, G, NQ, D) with K, V (Hkv, 1, NK, D): each K/V head serves G query heads.
    constexpr std::size_t Hkv = 2, G = 3, NQ = 19, NK = 50, D = 16;
    tensor<float, Hkv, G, NQ, D> q;
    tensor<float, Hkv, 1, NK, D> k, v;
    ref::fill(q, 11);
    ref::fill(k, 12);
    ref::fill(v, 13);
    auto e = attend::scaled_dot_product_attention(q, k, v, attend::causal_mask<NQ, NK>());
    static_assert(attend::plan_of<decltype(e)> == attend::plan::attention);
    tensor<float, Hkv, G, NQ, D> out = e;
    auto Q = [&](std::size_t b, std::size_t i, std::size_t d) { return double(q(b / G, b % G, i, d)); };
    auto K = [&](std::size_t b, std::size_t j, std::size_t d) { return double(k(b / G, 0, j, d)); };
    auto V = [&](std::size_t b, std::size_t j, std::size_t d) { return double(v(b / G, 0, j, d)); };
    expect_close(out, reference(Hkv * G, NQ, NK, D, D, Q, K, V, [&](auto, auto a, auto b, double x) {
        return b > a ? ninf : x / std::sqrt(double(D));
    }), 2e-5);

    // MQA: one K/V head for all query heads (Hkv = 1), written with 3-d shapes.
    tensor<float, 4, NQ, D> q3;
    tensor<float, 1, NK, D> k1, v1;
    ref::fill(q3, 14);
    ref::fill(k1, 15);
    ref::fill(v1, 16);
    auto m = attend::scaled_dot_product_attention(q3, k1, v1);
    static_assert(attend::plan_of<decltype(m)> == attend::plan::attention);
    tensor<float, 4, NQ, D> out3 = m;
    expect_close(out3, reference(4, NQ, NK, D, D, [&](auto b, auto i, auto d) { return double(q3(b, i, d)); },
                                 [&](auto, auto j, auto d) { return double(k1(0, j, d)); },
                                 [&](auto, auto j, auto d) { return double(v1(0, j, d)); },
                                 [&](auto, auto, auto, double x) { return x / std::sqrt(double(D)); }), 2e-5);
}

BOOST_AUTO_TEST_CASE(masked_rows_give_zeros_and_never_nan) {
    constexpr std::size_t NQ = 40, NK = 130, D = 8;
    tensor<float, NQ, D> q;
    tensor<float, NK, D> k, v;
    ref::fill(q, 21);
    ref::fill(k, 22);
    ref::fill(v, 23);
    tensor<bool, NQ, NK> mask;
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t j = 0; j < NK; ++j)
            mask(i, j) = i % 3 == 0 ? true                // every key ignored: zeros
                         : i % 3 == 1 ? j < 100           // the first two key tiles all masked (PyTorch #127055)
                                      : (i + j) % 2 == 0;  // partly masked
    tensor<float, NQ, D> out = attend::scaled_dot_product_attention(q, k, v, mask);
    for (std::size_t n = 0; n < out.size; ++n) BOOST_TEST(std::isfinite(out.data()[n]));
    for (std::size_t i = 0; i < NQ; i += 3)
        for (std::size_t d = 0; d < D; ++d) BOOST_TEST(out(i, d) == 0.0f);
    auto Q = [&](std::size_t, std::size_t i, std::size_t d) { return double(q(i, d)); };
    auto K = [&](std::size_t, std::size_t j, std::size_t d) { return double(k(j, d)); };
    auto V = [&](std::size_t, std::size_t j, std::size_t d) { return double(v(j, d)); };
    expect_close(out, reference(1, NQ, NK, D, D, Q, K, V, [&](auto, auto a, auto b, double x) {
        return mask(a, b) ? ninf : x / std::sqrt(double(D));
    }), 2e-5);

    // A KV cache of static capacity filled up to a run-time length: keys at j >= len are ignored.
    for (int len : {0, 1, 47, 70, 130}) {
        auto cache = attend::scaled_dot_product_attention(q, k, v, attend::iota<1, NQ, NK>() >= len);
        static_assert(attend::plan_of<decltype(cache)> == attend::plan::attention);
        out = cache;
        expect_close(out, reference(1, NQ, NK, D, D, Q, K, V, [&](auto, auto, auto b, double x) {
            return long(b) >= len ? ninf : x / std::sqrt(double(D));
        }), 2e-5);
    }
}

// Index masks whose values round in float: the interval analysis that skips key tiles and cuts
// P V bounds what the nest computes in float, not exact arithmetic (20 * 0.1f is 2.0f, exactly
// 2.00000003; 3 * 0.1f rounds up to 0.3f). Integer masks stay decided, so their tiles are skipped.
template <std::size_t NQ, std::size_t NK, class Mask, class Masked>
void check_rounding_mask(Mask mask, Masked masked) {
    constexpr std::size_t D = 32;
    auto q = std::make_unique<tensor<float, NQ, D>>();
    auto k = std::make_unique<tensor<float, NK, D>>();
    auto v = std::make_unique<tensor<float, NK, D>>();
    ref::fill(*q, 31);
    ref::fill(*k, 32);
    ref::fill(*v, 33);
    auto e = attend::scaled_dot_product_attention(*q, *k, *v, mask);
    static_assert(attend::plan_of<decltype(e)> == attend::plan::attention);
    tensor<float, NQ, D> out = e;
    expect_close(out, reference(1, NQ, NK, D, D, [&](auto, auto i, auto d) { return double((*q)(i, d)); },
                                [&](auto, auto j, auto d) { return double((*k)(j, d)); },
                                [&](auto, auto j, auto d) { return double((*v)(j, d)); },
                                [&](auto, auto, auto j, double x) { return masked(j) ? ninf : x / std::sqrt(double(D)); }), 2e-5);
}

BOOST_AUTO_TEST_CASE(index_masks_that_round_in_float) {
    auto above = [](std::size_t j) { return float(j) * 0.1f > 2.0f; };   // key 20 live
    auto from = [](std::size_t j) { return float(j) * 0.1f >= 0.3f; };   // key 3 masked
    check_rounding_mask<1, 64>(attend::iota<1, 1, 64>() * 0.1f > 2.0f, above);     // decode
    check_rounding_mask<40, 64>(attend::iota<1, 40, 64>() * 0.1f > 2.0f, above);   // prefill
    check_rounding_mask<1, 4>(attend::iota<1, 1, 4>() * 0.1f >= 0.3f, from);
    check_rounding_mask<40, 4>(attend::iota<1, 40, 4>() * 0.1f >= 0.3f, from);
    // A mask that is NaN somewhere (0 / 0 at key 5), which every ordered comparison calls false:
    // abs() and maximum() of a value that may be NaN are not "at least 0" (a review's case).
    auto nan_at_5 = [](std::size_t j) { return j != 5; };
    auto ratio = [](auto j) { return (j * 1.0f - 5.0f) / (j * 1.0f - 5.0f); };
    check_rounding_mask<1, 600>(attend::abs(ratio(attend::iota<1, 1, 600>())) > -1.0f, nan_at_5);
    check_rounding_mask<40, 600>(attend::abs(ratio(attend::iota<1, 40, 600>())) > -1.0f, nan_at_5);
    check_rounding_mask<1, 600>(attend::maximum(ratio(attend::iota<1, 1, 600>()), 0.0f) > -1.0f, nan_at_5);
    // Integer masks stay exact: a causal tile and a cache length are decided, not "maybe".
    namespace d = attend::detail;
    const auto i = attend::iota<0, 512, 512>();
    const auto j = attend::iota<1, 512, 512>();
    const d::box<2> upper{{0, 256}, {255, 511}}, lower{{256, 0}, {511, 255}};
    BOOST_TEST(d::bounds(j > i, upper).lo == 1.0);  // every key after its query: skipped
    BOOST_TEST(d::bounds(j > i, lower).hi == 0.0);  // none: no mask work
    BOOST_TEST(d::bounds(j >= 256, upper).lo == 1.0);
    BOOST_TEST(d::bounds(j + 3 > i * 2 - 1, lower).hi == 0.0);
    BOOST_TEST(d::bounds(j * 0.1f > 2.0f, d::box<2>{{0, 0}, {0, 20}}).hi == 1.0);  // 20 * 0.1f: maybe
}

// A cache length however the mask writes it: the rows past len hold NaN and inf, and take no part
// (the intervals keep ends that float holds exact, so every spelling cuts P V at len; a review
// found j + 0.25f >= len + 0.25f letting row len in, 0 x NaN).
template <std::size_t NQ>
void check_length_spellings() {
    constexpr std::size_t NK = 300, D = 16;
    auto q = std::make_unique<tensor<float, NQ, D>>();
    auto k = std::make_unique<tensor<float, NK, D>>();
    auto v = std::make_unique<tensor<float, NK, D>>();
    ref::fill(*q, 44);
    ref::fill(*k, 45);
    ref::fill(*v, 46);
    const auto j = attend::iota<1, NQ, NK>();
    auto s = attend::matmul(*q, attend::transpose(*k)) * 0.25f;
    for (int len : {17, 100, 250, 256, 257}) {
        for (std::size_t r = std::size_t(len); r < NK; ++r)
            for (std::size_t d = 0; d < D; ++d) (*v)(r, d) = d % 2 ? NAN : INFINITY;
        const auto want = reference(1, NQ, NK, D, D, [&](auto, auto a, auto d) { return double((*q)(a, d)); },
                                    [&](auto, auto b, auto d) { return double((*k)(b, d)); },
                                    [&](auto, auto b, auto d) { return double((*v)(b, d)); },
                                    [&](auto, auto, auto b, double x) { return long(b) >= len ? ninf : x * 0.25; });
        const float fl = float(len);
        tensor<float, NQ, D> out = attend::matmul(attend::softmax(attend::masked_fill(s, j + 0.25f >= fl + 0.25f, -INFINITY)), *v);
        expect_close(out, want, 2e-5);
        out = attend::matmul(attend::softmax(attend::masked_fill(s, j * 0.5f >= fl * 0.5f, -INFINITY)), *v);
        expect_close(out, want, 2e-5);
        out = attend::matmul(attend::softmax(attend::masked_fill(s, (j - fl) / 2.0f >= 0.0f, -INFINITY)), *v);
        expect_close(out, want, 2e-5);
    }
}

BOOST_AUTO_TEST_CASE(length_masks_however_written) {
    check_length_spellings<1>();   // the stream
    check_length_spellings<4>();   // the decode stages
    check_length_spellings<40>();  // the prefill nest
}

// A padding mask of a large finite value (-1e9, -FLT_MAX, as model code often writes it) works as
// -inf does: the running maximum of such scores counts as -inf (their exp(s - max) is 0 next to
// any other score), so keys masked so at the start of a row (left padding, whole key tiles) do
// not stop the nest; a row of nothing else gives zeros, as a fully masked row.
template <std::size_t NQ>
void check_finite_padding(float fill) {
    constexpr std::size_t NK = 600, D = 16, pad = 300;
    auto q = std::make_unique<tensor<float, NQ, D>>();
    auto k = std::make_unique<tensor<float, NK, D>>();
    auto v = std::make_unique<tensor<float, NK, D>>();
    ref::fill(*q, 41);
    ref::fill(*k, 42);
    ref::fill(*v, 43);
    const auto i = attend::iota<0, NQ, NK>();
    const auto j = attend::iota<1, NQ, NK>();
    auto s = attend::matmul(*q, attend::transpose(*k)) * 0.25f;
    tensor<float, NQ, D> out = attend::matmul(attend::softmax(attend::masked_fill(s, (j < pad) || (i == 0), fill)), *v);
    expect_close(out, reference(1, NQ, NK, D, D, [&](auto, auto a, auto d) { return double((*q)(a, d)); },
                                [&](auto, auto b, auto d) { return double((*k)(b, d)); },
                                [&](auto, auto b, auto d) { return double((*v)(b, d)); },
                                [&](auto, auto a, auto b, double x) { return b < pad || a == 0 ? ninf : x * 0.25; }), 2e-5);
    for (std::size_t d = 0; d < D; ++d) BOOST_TEST(out(0, d) == 0.0f);  // query 0: every key masked
}

BOOST_AUTO_TEST_CASE(finite_padding_masks_work_as_minus_infinity) {
    for (float fill : {-1e9f, -std::numeric_limits<float>::max()}) {
        check_finite_padding<1>(fill);   // the stream
        check_finite_padding<4>(fill);   // the decode stages
        check_finite_padding<20>(fill);  // the prefill nest
    }
}

// The decode nest (a few queries against a long cache): every query count from 1 to 17 (16 and
// 17 take the prefill nest), GQA groups folded into the query axis, a cache of static capacity
// filled to len = 0, 1, a key tile's edge (256) +- 1, two and four eighths of a tile (each eighth
// then runs as a tile of its own) and the capacity, and a chunk of new tokens aligned bottom-right
// (key j is visible to new token i when j <= pos + i). The rows past len hold inf and NaN (an
// uninitialised cache): they take no part.
template <std::size_t G, std::size_t D = 20, std::size_t DV = 24>  // by default not multiples of a vector
void check_decode() {
    constexpr std::size_t HKV = 2, NMAX = 520;
    auto q = std::make_unique<tensor<float, HKV, G, D>>();
    auto k = std::make_unique<tensor<float, HKV, NMAX, D>>();
    auto v = std::make_unique<tensor<float, HKV, NMAX, DV>>();
    auto out = std::make_unique<tensor<float, HKV, G, DV>>();
    ref::fill(*q, 61);
    ref::fill(*k, 62);
    ref::fill(*v, 63);
    auto Q = [&](std::size_t b, std::size_t i, std::size_t d) { return double((*q)(b, i, d)); };
    auto K = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*k)(b, j, d)); };
    auto V = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*v)(b, j, d)); };
    const double scale = 1 / std::sqrt(double(D));
    const auto k0 = std::make_unique<tensor<float, HKV, NMAX, D>>(*k);
    const auto v0 = std::make_unique<tensor<float, HKV, NMAX, DV>>(*v);
    for (int len : {0, 1, 15, 16, 17, 40, 100, 255, 256, 257, 519, 520}) {
        *k = *k0, *v = *v0;
        for (std::size_t b = 0; b < HKV; ++b)
            for (std::size_t j = std::size_t(len); j < NMAX; ++j) {
                for (std::size_t d = 0; d < D; ++d) (*k)(b, j, d) = -INFINITY;
                for (std::size_t d = 0; d < DV; ++d) (*v)(b, j, d) = d % 2 ? NAN : INFINITY;
            }
        auto s = attend::matmul(*q, attend::transpose(*k)) * float(scale);
        auto e = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, HKV, G, NMAX>() >= len, -INFINITY)), *v);
        static_assert(attend::plan_of<decltype(e)> == attend::plan::attention);
        *out = e;
        expect_close(*out, reference(HKV, G, NMAX, D, DV, Q, K, V, [&](auto, auto, auto j, double x) {
            return long(j) >= len ? ninf : x * scale;
        }), 2e-5);
        // Bottom-right causal: the G new tokens sit at positions len - G .. len - 1.
        const int pos = len - int(G);
        *out = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, HKV, G, NMAX>() > attend::iota<1, HKV, G, NMAX>() + pos, -INFINITY)), *v);
        expect_close(*out, reference(HKV, G, NMAX, D, DV, Q, K, V, [&](auto, auto i, auto j, double x) {
            return long(j) > long(i) + pos ? ninf : x * scale;
        }), 2e-5);
    }
}

template <std::size_t... G>
void check_decode_groups(std::index_sequence<G...>) {
    (check_decode<G>(), ...);
}

BOOST_AUTO_TEST_CASE(decode_every_query_count_cache_lengths_and_causal_chunks) {
    check_decode_groups(ref::sweep_1_to_17{});
}

// Head dimensions of whole vectors: one or two queries take the streaming stage (decode_stream),
// more the whole-row stages in groups of queries (decode_scores, decode_pv_rows), a group and a
// remainder; also where the value width differs from the key width. With 32 registers, three or
// more queries of 96 or 128 values take the scores in groups of up to four (queries from L1; 6:
// four and two), and 4 x 64, 8 x 96 and 8 x 128 values take P V in column parts (1, 3 and 4
// passes). With 16 registers (AVX2), two to four queries of 128 values (and four of 64) take the
// scores two keys at a time and P V in column parts over chunks of keys (2 x 128: 4 parts; 3 and
// 4 x 128: 8; 4 x 64: 4), 5 and 6 queries a group of four and one of one or two.
BOOST_AUTO_TEST_CASE(decode_whole_vector_heads) {
    check_decode<1, 32, 32>();
    check_decode<2, 64, 64>();
    check_decode<2, 128, 128>();
    check_decode<1, 128, 128>();
    check_decode<2, 16, 48>();
    check_decode<3, 128, 128>();
    check_decode<4, 128, 128>();
    check_decode<5, 64, 64>();
    check_decode<7, 32, 96>();
    check_decode<4, 64, 64>();
    check_decode<6, 128, 128>();
    check_decode<8, 96, 96>();
    check_decode<8, 128, 128>();
}

// A sliding window over the cache (keys len - window .. len - 1), after `sinks` first keys kept
// as well: the live eighths of a tile need not be its first ones (window 90 at len 300: the last
// two eighths of the first tile, the first two of the second), nor one run (4 sinks and a window
// of 56 at len 256: eighths 0, 6 and 7; 40 sinks: 0, 1, 6, 7), for the stream (one query; a run
// of live eighths is one call, seven of them too: len 200) and the whole-row stages (four).
template <std::size_t G>
void check_decode_window() {
    constexpr std::size_t HKV = 2, NMAX = 520, D = 32;
    auto q = std::make_unique<tensor<float, HKV, G, D>>();
    auto k = std::make_unique<tensor<float, HKV, NMAX, D>>(), v = std::make_unique<tensor<float, HKV, NMAX, D>>();
    auto out = std::make_unique<tensor<float, HKV, G, D>>();
    ref::fill(*q, 67);
    ref::fill(*k, 68);
    ref::fill(*v, 69);
    auto Q = [&](std::size_t b, std::size_t i, std::size_t d) { return double((*q)(b, i, d)); };
    auto K = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*k)(b, j, d)); };
    auto V = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*v)(b, j, d)); };
    for (const auto& c : {std::array{300, 90, 0}, {520, 33, 0}, {64, 64, 0}, {260, 1, 0}, {256, 56, 4}, {256, 56, 40}, {300, 20, 4}, {200, 200, 0}}) {
        const int len = c[0], window = c[1], sinks = c[2];
        const auto j = attend::iota<2, HKV, G, NMAX>();
        auto s = attend::matmul(*q, attend::transpose(*k)) * 0.25f;
        *out = attend::matmul(attend::softmax(attend::masked_fill(s, (j >= len) || ((j >= sinks) && (j < len - window)), -INFINITY)), *v);
        expect_close(*out, reference(HKV, G, NMAX, D, D, Q, K, V, [&](auto, auto, auto jj, double x) {
            return long(jj) >= len || (long(jj) >= sinks && long(jj) < len - window) ? ninf : x * 0.25;
        }), 2e-5);
    }
}

BOOST_AUTO_TEST_CASE(decode_sliding_window) {
    check_decode_window<1>();
    check_decode_window<4>();
}

// A cache of 64 MiB, at least the L3's size on the machines measured: the whole-row stages (G = 4)
// then request the next tile's rows as they compute, and one query per KV head (G = 1) takes the
// pipelined stream (the next block's K rows read beside this block's V rows). The rows past len
// hold -inf and NaN (an uninitialised cache); the G = 1 step writes its output over Q itself.
template <std::size_t G>
void check_decode_beyond_l3() {
    constexpr std::size_t HKV = 8, NMAX = 8192, D = 128;
    using TQ = tensor<float, HKV, G, D>;
    using TK = tensor<float, HKV, NMAX, D>;
    auto q = std::make_unique<TQ>(), out = std::make_unique<TQ>();
    auto k = std::make_unique<TK>(), v = std::make_unique<TK>();
    ref::fill(*q, 64);
    ref::fill(*k, 65);
    ref::fill(*v, 66);
    BOOST_TEST_MESSAGE("cache " << 2 * sizeof(TK) << " bytes, L3 " << attend::detail::l3_bytes() << " bytes");
    const auto q0 = std::make_unique<TQ>(*q);
    auto Q = [&](std::size_t b, std::size_t i, std::size_t d) { return double((*q0)(b, i, d)); };
    auto K = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*k)(b, j, d)); };
    auto V = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*v)(b, j, d)); };
    const double scale = 1 / std::sqrt(double(D));
#ifdef ATTEND_TEST_SWEEP_EDGES  // (under the sanitizers this case took 19 of the unit's 87 s)
    const int lens[] = {8191, 1};
#else
    const int lens[] = {8191, 4097, 17, 1};
#endif
    for (int len : lens) {  // 8191: the last live tile partly masked, the next tile past the capacity
        for (std::size_t b = 0; b < HKV; ++b)
            for (std::size_t j = std::size_t(len); j < NMAX; ++j)
                for (std::size_t d = 0; d < D; ++d) (*k)(b, j, d) = -INFINITY, (*v)(b, j, d) = d % 2 ? NAN : INFINITY;
        *q = *q0;
        auto s = attend::matmul(*q, attend::transpose(*k)) * float(scale);
        auto e = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, HKV, G, NMAX>() >= len, -INFINITY)), *v);
        TQ& dst = G == 1 || G == 2 || G == 8 ? *q : *out;  // (the queries' own tensor: the destination on the right)
        dst = e;
        expect_close(dst, reference(HKV, G, NMAX, D, D, Q, K, V, [&](auto, auto, auto j, double x) {
            return long(j) >= len ? ninf : x * scale;
        }), 2e-5);
        const std::string how = attend::explain(e);
        const bool streamed = how.find("decode nest, streamed") != std::string::npos;  // (not with SSE2's narrow vectors)
        BOOST_TEST((how.find("key by key") != std::string::npos) == (G == 1 && streamed), how);
        if (G == 1 && len > 4096) {  // a window: the first keys masked too (one query goes key by key past them)
            const auto j = attend::iota<2, HKV, G, NMAX>();
            *q = *q0;
            *q = attend::matmul(attend::softmax(attend::masked_fill(s, j >= len || j < len - 5000, -INFINITY)), *v);
            expect_close(*q, reference(HKV, G, NMAX, D, D, Q, K, V, [&](auto, auto, auto jj, double x) {
                return long(jj) >= len || long(jj) < len - 5000 ? ninf : x * scale;
            }), 2e-5);
            // A head's result does not depend on the other heads' lengths: head 0 at 3000 keys
            // (in the L3's share: the stream) beside heads at `len` (key by key), bit for bit as
            // with every head at 3000 (found by review: one decision for all heads changed it)
            const auto h = attend::iota<0, HKV, G, NMAX>();
            *q = *q0;
            *out = attend::matmul(attend::softmax(attend::masked_fill(s, j >= attend::where(h == 0, 3000, len), -INFINITY)), *v);
            *q = attend::matmul(attend::softmax(attend::masked_fill(s, j >= 3000, -INFINITY)), *v);
            std::size_t differ = 0;
            for (std::size_t d = 0; d < D; ++d) differ += (*out)(0, 0, d) != (*q)(0, 0, d);
            BOOST_TEST(differ == 0u, "len " << len << ": head 0 differs in " << differ << " of " << D << " values");
        }
    }
}

BOOST_AUTO_TEST_CASE(decode_cache_beyond_l3) {
    check_decode_beyond_l3<4>();
    check_decode_beyond_l3<1>();
    check_decode_beyond_l3<2>();  // the stream, requesting rows ahead on Zen 5
    check_decode_beyond_l3<8>();  // scores in two groups of four (32 registers: P V in four column parts)
    check_decode_beyond_l3<3>();  // (16 registers: three queries' key pairs from either half of a tile)
    // one query over a cache of more than 1 MiB whose key rows are not whole vectors (d 40, value
    // width 64): the stream, not key by key (which did not compile: found by review)
    constexpr std::size_t HKV = 4, NMAX = 2048, D = 40, DV = 64;
    tensor<float, HKV, 1, D> q;
    tensor<float, HKV, 1, DV> o;
    auto k = std::make_unique<tensor<float, HKV, NMAX, D>>();
    auto v = std::make_unique<tensor<float, HKV, NMAX, DV>>();
    ref::fill(q, 67);
    ref::fill(*k, 68);
    ref::fill(*v, 69);
    const double scale = 1 / std::sqrt(double(D));
    for (int len : {1000, 2048}) {
        o = attend::matmul(attend::softmax(attend::masked_fill(attend::matmul(q, attend::transpose(*k)) * float(scale),
                                                               attend::iota<2, HKV, 1, NMAX>() >= len, -INFINITY)),
                           *v);
        expect_close(o, reference(HKV, 1, NMAX, D, DV, [&](auto b, auto i, auto d) { return double(q(b, i, d)); },
                                  [&](auto b, auto j, auto d) { return double((*k)(b, j, d)); },
                                  [&](auto b, auto j, auto c) { return double((*v)(b, j, c)); },
                                  [&](auto, auto, auto j, double x) { return long(j) >= len ? ninf : x * scale; }),
                     2e-5);
    }
}

// Cache rows at and past the length are never read (API.md): they lie on pages the test makes
// inaccessible, so a read of one stops the test (SIGSEGV). The cache is stored (NMAX, HKV, D), as
// llama2.c stores it, and read through a permuted view, so that every head's rows past len lie at
// the end. Lengths about the 16-key blocks and the 32-key eighths of a tile; the decode stream
// (one query), the whole-row stages (four; packed rows at d 20; bf16 keys split even and odd), a
// bottom-right causal chunk, and the prefill nest (32 queries; bf16 pair products). Each result
// equals the same expression on ordinary memory, bit for bit, and the double reference.
template <class T>
struct guarded_rows {  // rows [0, len) of `row` elements each, then inaccessible pages to `rows`
    void* base = nullptr;
    std::size_t bytes = 0;
    T* data = nullptr;
    guarded_rows(std::size_t len, std::size_t rows, std::size_t row) {
        const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE)), used = len * row * sizeof(T);
        const std::size_t front = (used + page - 1) / page * page, back = (rows * row * sizeof(T) + page - 1) / page * page;
        bytes = front + back;
        base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        BOOST_REQUIRE(base != MAP_FAILED);
        BOOST_REQUIRE(mprotect(static_cast<char*>(base) + front, back, PROT_NONE) == 0);
        data = reinterpret_cast<T*>(static_cast<char*>(base) + front - used);
    }
    ~guarded_rows() { munmap(base, bytes); }
};

template <class T, std::size_t G, std::size_t D, class Query = float>
void check_unread_rows() {
    constexpr std::size_t HKV = 2, NMAX = 520;
    using Cache = attend::tensor_ref<const T, NMAX, HKV, D>;
    tensor<float, HKV, G, D> q;
    ref::fill(q, 91);
    if constexpr (std::is_same_v<Query, attend::bf16>) q = attend::cast<float>(attend::cast<attend::bf16>(q));
    auto plain_k = std::make_unique<tensor<T, NMAX, HKV, D>>(), plain_v = std::make_unique<tensor<T, NMAX, HKV, D>>();
    ref::fill(*plain_k, 92);
    ref::fill(*plain_v, 93);
    const double scale = 1 / std::sqrt(double(D));
    auto query = [&] {
        if constexpr (std::is_same_v<Query, attend::bf16>) return attend::cast<attend::bf16>(q);
        else return q;
    };
    // (one plan per mask for guarded and ordinary memory alike: both are views of the same type)
    auto attend_over = [&](const Cache& k, const Cache& v, int len, bool chunk) {
        const auto K = attend::permute<1, 0, 2>(k), V = attend::permute<1, 0, 2>(v);
        const auto j = attend::iota<2, HKV, G, NMAX>();
        tensor<float, HKV, G, D> o;
        if (chunk) o = attend::scaled_dot_product_attention(query(), K, V, j > attend::iota<1, HKV, G, NMAX>() + (len - int(G)));
        else o = attend::scaled_dot_product_attention(query(), K, V, j >= len);
        return o;
    };
    constexpr bool chunks = std::is_same_v<T, float> && G == 4;
    for (int len : {1, 15, 16, 17, 33, 100, 255, 256, 257, 300}) {
        guarded_rows<T> gk(std::size_t(len), NMAX, HKV * D), gv(std::size_t(len), NMAX, HKV * D);
        std::copy(plain_k->data(), plain_k->data() + len * HKV * D, gk.data);
        std::copy(plain_v->data(), plain_v->data() + len * HKV * D, gv.data);
        auto kq = [&](std::size_t b, std::size_t i, std::size_t d) { return double(q(b, i, d)); };
        auto kk = [&](std::size_t b, std::size_t j, std::size_t d) { return j < std::size_t(len) ? double(float((*plain_k)(j, b, d))) : 0.0; };
        auto kv = [&](std::size_t b, std::size_t j, std::size_t d) { return j < std::size_t(len) ? double(float((*plain_v)(j, b, d))) : 0.0; };
        const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-2;  // (bf16 pair products round P: docs/numerics.md)
        for (bool chunk : {false, true}) {
            if (chunk && !chunks) continue;
            BOOST_TEST_CHECKPOINT("G " << G << ", D " << D << ", len " << len << ", " << sizeof(T) << "-byte cache, chunk " << chunk);
            const tensor<float, HKV, G, D> got = attend_over(Cache(gk.data), Cache(gv.data), len, chunk);
            const tensor<float, HKV, G, D> want = attend_over(Cache(plain_k->data()), Cache(plain_v->data()), len, chunk);
            std::size_t differ = 0;
            for (std::size_t n = 0; n < got.size; ++n) differ += got.data()[n] != want.data()[n];
            BOOST_TEST(differ == 0u, "len " << len << ": " << differ << " elements differ from the same on ordinary memory");
            expect_close(got, reference(HKV, G, NMAX, D, D, kq, kk, kv, [&](auto, auto i, auto j, double x) {
                const bool visible = chunk ? long(j) <= long(i) + len - long(G) : long(j) < len;
                return visible ? x * scale : ninf;
            }), tol);
        }
    }
}

// Lengths held in a tensor, one a head (sequences of different lengths): a head's rows past its
// own length take no part (NaN there), and rows past the longest are never read (inaccessible
// pages): the stream (one query), the tile stages (four) and the prefill nest (33: its tiles and
// the leftover query) alike, as with a length in a scalar.
template <std::size_t G>
void check_lengths_in_a_tensor() {
    constexpr std::size_t HKV = 2, NMAX = 520, D = 64;
    using Cache = attend::tensor_ref<const float, NMAX, HKV, D>;
    tensor<float, HKV, G, D> q;
    ref::fill(q, 94);
    auto plain_k = std::make_unique<tensor<float, NMAX, HKV, D>>(), plain_v = std::make_unique<tensor<float, NMAX, HKV, D>>();
    ref::fill(*plain_k, 95);
    ref::fill(*plain_v, 96);
    const double scale = 1 / std::sqrt(double(D));
    for (const auto& [l0, l1] : {std::pair{17, 300}, std::pair{257, 1}, std::pair{0, 520}, std::pair{256, 255}}) {
        BOOST_TEST_CHECKPOINT("G " << G << ", lengths " << l0 << " and " << l1);
        const tensor<int, HKV, 1, 1> lens{l0, l1};
        const std::size_t most = std::size_t(std::max(l0, l1));
        guarded_rows<float> gk(most, NMAX, HKV * D), gv(most, NMAX, HKV * D);
        for (std::size_t j = 0; j < most; ++j)
            for (std::size_t h = 0; h < HKV; ++h)
                for (std::size_t d = 0; d < D; ++d) {
                    const bool live = long(j) < lens(h, 0, 0);
                    gk.data[(j * HKV + h) * D + d] = live ? (*plain_k)(j, h, d) : NAN;
                    gv.data[(j * HKV + h) * D + d] = live ? (*plain_v)(j, h, d) : NAN;
                }
        const auto K = attend::permute<1, 0, 2>(Cache(gk.data)), V = attend::permute<1, 0, 2>(Cache(gv.data));
        const tensor<float, HKV, G, D> o = attend::scaled_dot_product_attention(q, K, V, attend::iota<2, HKV, G, NMAX>() >= lens);
        expect_close(o, reference(HKV, G, NMAX, D, D, [&](auto b, auto i, auto d) { return double(q(b, i, d)); },
                                  [&](auto b, auto j, auto d) { return double((*plain_k)(j, b, d)); },
                                  [&](auto b, auto j, auto d) { return double((*plain_v)(j, b, d)); },
                                  [&](auto b, auto, auto j, double x) { return long(j) >= lens(b, 0, 0) ? ninf : x * scale; }),
                     2e-5);
    }
}

// A length in a tensor that float does not hold: `lens - 16777216` (int32, which may wrap) is
// computed in integers, 3, so keys 0 .. 3 take part, whole, in the tile analysis and in the tree
// alike (when the tree read 16777219 as the float 16777220, the analysis had cut P V after key 3
// while key 4 stayed in the softmax's sum: found by review).
void check_length_rounding() {
    constexpr std::size_t H = 2, NK = 64, D = 16;
    tensor<float, H, 1, D> q;
    tensor<float, H, NK, D> k, v;
    ref::fill(q, 97);
    ref::fill(k, 98);
    ref::fill(v, 99);
    const tensor<int, H, 1, 1> lens{16777219, 16777219};
    const tensor<float, H, 1, D> o = attend::scaled_dot_product_attention(q, k, v, attend::iota<2, H, 1, NK>() > lens - 16777216);
    expect_close(o, reference(H, 1, NK, D, D, [&](auto b, auto i, auto d) { return double(q(b, i, d)); },
                              [&](auto b, auto j, auto d) { return double(k(b, j, d)); },
                              [&](auto b, auto j, auto d) { return double(v(b, j, d)); },
                              [&](auto, auto, auto j, double x) { return j <= 3 ? x / 4 : ninf; }),
                 2e-5);
}

BOOST_AUTO_TEST_CASE(cache_rows_past_the_length_are_never_read) {
    check_length_rounding();
    check_lengths_in_a_tensor<1>();
    check_lengths_in_a_tensor<4>();
    check_lengths_in_a_tensor<33>();
    check_unread_rows<float, 1, 64>();
    check_unread_rows<float, 4, 64>();
#ifndef ATTEND_TEST_SWEEP_EDGES  // (the second targets' and the sanitizers' builds: the two above, for CI's compile time)
    check_unread_rows<float, 3, 20>();
    check_unread_rows<float, 32, 64>();
    check_unread_rows<attend::bf16, 4, 64>();
    check_unread_rows<attend::bf16, 32, 64, attend::bf16>();
#endif
}

// GQA in the layout of a model: Q (HKV, G, 1, D) against K, V (HKV, 1, NMAX, D), with a bias.
BOOST_AUTO_TEST_CASE(decode_grouped_query_broadcast_and_bias) {
    constexpr std::size_t HKV = 3, G = 4, NMAX = 300, D = 16;
    tensor<float, HKV, G, 1, D> q;
    auto k = std::make_unique<tensor<float, HKV, 1, NMAX, D>>(), v = std::make_unique<tensor<float, HKV, 1, NMAX, D>>();
    tensor<float, NMAX> bias;
    ref::fill(q, 71);
    ref::fill(*k, 72);
    ref::fill(*v, 73);
    ref::fill(bias, 74);
    const int len = 277;
    auto s = attend::matmul(q, attend::transpose(*k)) * 0.25f + bias;
    auto e = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<3, HKV, G, 1, NMAX>() >= len, -INFINITY)), *v);
    static_assert(attend::plan_of<decltype(e)> == attend::plan::attention);
    tensor<float, HKV, G, 1, D> out = e;
    auto Q = [&](std::size_t b, std::size_t, std::size_t d) { return double(q(b / G, b % G, 0, d)); };
    auto K = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*k)(b / G, 0, j, d)); };
    auto V = [&](std::size_t b, std::size_t j, std::size_t d) { return double((*v)(b / G, 0, j, d)); };
    expect_close(out, reference(HKV * G, 1, NMAX, D, D, Q, K, V, [&](auto, auto, auto j, double x) {
        return long(j) >= len ? ninf : x * 0.25 + bias(j);
    }), 2e-5);
}

BOOST_AUTO_TEST_CASE(big_logits_views_and_double) {
    constexpr std::size_t NQ = 33, NK = 70, D = 16;
    // Logits x100: q and k scaled by 10 each, so scores reach several hundred.
    std::vector<float> qbuf(NQ * D + 1), kbuf(NK * D + 1), vbuf(NK * D + 1), obuf(NQ * D + 1);
    tensor<float, NQ, D> q0;
    tensor<float, NK, D> k0, v0;
    ref::fill(q0, 31);
    ref::fill(k0, 32);
    ref::fill(v0, 33);
    for (std::size_t n = 0; n < q0.size; ++n) qbuf[n + 1] = 10 * q0.data()[n];
    for (std::size_t n = 0; n < k0.size; ++n) kbuf[n + 1] = 10 * k0.data()[n], vbuf[n + 1] = v0.data()[n];
    attend::tensor_ref<const float, NQ, D> q(qbuf.data() + 1);  // misaligned views
    attend::tensor_ref<const float, NK, D> k(kbuf.data() + 1), v(vbuf.data() + 1);
    attend::tensor_ref<float, NQ, D> out(obuf.data() + 1);
    out = attend::scaled_dot_product_attention(q, k, v, attend::causal_mask<NQ, NK>());
    auto Q = [&](std::size_t, std::size_t i, std::size_t d) { return double(q(i, d)); };
    auto K = [&](std::size_t, std::size_t j, std::size_t d) { return double(k(j, d)); };
    auto V = [&](std::size_t, std::size_t j, std::size_t d) { return double(v(j, d)); };
    // Scores near 400 carry an absolute float rounding of ~3e-5 each: the tolerance follows.
    expect_close(out, reference(1, NQ, NK, D, D, Q, K, V, [&](auto, auto a, auto b, double x) {
        return b > a ? ninf : x / 4.0;
    }), 2e-4);
    BOOST_TEST(obuf[0] == 0.0f);

    tensor<double, NQ, D> qd;
    tensor<double, NK, D> kd, vd;
    ref::fill(qd, 34);
    ref::fill(kd, 35);
    ref::fill(vd, 36);
    tensor<double, NQ, D> od = attend::scaled_dot_product_attention(qd, kd, vd, attend::causal_mask<NQ, NK>());
    expect_close(od, reference(1, NQ, NK, D, D, [&](auto, auto i, auto d) { return qd(i, d); },
                               [&](auto, auto j, auto d) { return kd(j, d); }, [&](auto, auto j, auto d) { return vd(j, d); },
                               [&](auto, auto a, auto b, double x) { return b > a ? ninf : x / 4.0; }), 1e-12);
    // Five double queries take the decode nest (clang++ once rejected it: a float-only call there).
    const tensor<double, 5, D> qd5 = attend::slice<0, 5>(qd, 0);
    const tensor<double, 5, D> od5 = attend::scaled_dot_product_attention(qd5, kd, vd);
    expect_close(od5, reference(1, 5, NK, D, D, [&](auto, auto i, auto d) { return qd5(i, d); },
                                [&](auto, auto j, auto d) { return kd(j, d); }, [&](auto, auto j, auto d) { return vd(j, d); },
                                [&](auto, auto, auto, double x) { return x / 4.0; }), 1e-12);
}

BOOST_AUTO_TEST_CASE(unfusable_trees_fall_back_correctly) {
    constexpr std::size_t N = 20, D = 8;
    tensor<float, N, D> q, k, v;
    ref::fill(q, 41);
    ref::fill(k, 42);
    ref::fill(v, 43);
    // Softmax over the queries instead of the keys: not attention's shape; the materialising
    // path computes it.
    auto e = attend::matmul(attend::softmax<0>(attend::matmul(q, attend::transpose(k))), v);
    static_assert(attend::plan_of<decltype(e)> != attend::plan::attention);
    tensor<float, N, D> out = e;
    std::vector<double> want(N * D, 0.0);
    for (std::size_t j = 0; j < N; ++j) {  // column j of the scores, softmax over i
        std::vector<double> col(N);
        double m = ninf, z = 0;
        for (std::size_t i = 0; i < N; ++i) {
            for (std::size_t d = 0; d < D; ++d) col[i] += double(q(i, d)) * k(j, d);
            m = std::max(m, col[i]);
        }
        for (double x : col) z += std::exp(x - m);
        for (std::size_t i = 0; i < N; ++i)
            for (std::size_t d = 0; d < D; ++d) want[i * D + d] += std::exp(col[i] - m) / z * v(j, d);
    }
    expect_close(out, want, 2e-5);
    BOOST_TEST(attend::explain(e).find("not fused as attention") != std::string::npos, attend::explain(e));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(attention_lse)

// 37 queries: a last query tile overlapping the one before it; 34: the last two queries through
// the decode nest.
template <std::size_t NQ>
void check_split_keys() {
    constexpr std::size_t NK = 100, H = 50, D = 16;
    tensor<float, 2, NQ, D> q;
    tensor<float, 2, NK, D> k, v;
    ref::fill(q, 51);
    ref::fill(k, 52);
    ref::fill(v, 53);
    // Attention over each half of the keys, with the log-sum-exp of each query's scores.
    tensor<float, 2, NQ, D> o1, o2, full;
    tensor<float, 2, NQ> l1, l2;
    for (std::size_t part = 0; part < 2; ++part) {
        tensor<float, 2, H, D> kh, vh;
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t j = 0; j < H; ++j)
                for (std::size_t d = 0; d < D; ++d) kh(b, j, d) = k(b, part * H + j, d), vh(b, j, d) = v(b, part * H + j, d);
        attend::eval_with_lse(part ? o2 : o1, part ? l2 : l1, attend::scaled_dot_product_attention(q, kh, vh));
    }
    full = attend::scaled_dot_product_attention(q, k, v);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t i = 0; i < NQ; ++i) {
            double want = 0, m = -INFINITY;  // log-sum-exp of the first half, in double
            std::vector<double> s(H);
            for (std::size_t j = 0; j < H; ++j) {
                for (std::size_t d = 0; d < D; ++d) s[j] += double(q(b, i, d)) * k(b, j, d) / 4.0;
                m = std::max(m, s[j]);
            }
            for (double x : s) want += std::exp(x - m);
            BOOST_TEST(double(l1(b, i)) == m + std::log(want), boost::test_tools::tolerance(1e-5));
            // Combining the halves by their log-sum-exp gives attention over all keys.
            const double l = std::max(l1(b, i), l2(b, i)) + std::log1p(std::exp(-std::abs(double(l1(b, i)) - l2(b, i))));
            for (std::size_t d = 0; d < D; ++d) {
                const double combined = std::exp(l1(b, i) - l) * o1(b, i, d) + std::exp(l2(b, i) - l) * o2(b, i, d);
                BOOST_TEST(ref::close(combined, double(full(b, i, d)), 1e-5), combined << " vs " << full(b, i, d));
            }
        }
    // Into an output and lse of another type than the computation's (float into double): the same
    // values, the last query tile's rows included.
    tensor<double, 2, NQ, D> o_wide;
    tensor<double, 2, NQ> l_wide;
    attend::eval_with_lse(o_wide, l_wide, attend::scaled_dot_product_attention(q, k, v));
    tensor<float, 2, NQ> l_full;
    attend::eval_with_lse(full, l_full, attend::scaled_dot_product_attention(q, k, v));
    for (std::size_t n = 0; n < full.size; ++n) BOOST_TEST(o_wide.data()[n] == double(full.data()[n]));
    for (std::size_t n = 0; n < l_full.size; ++n) BOOST_TEST(l_wide.data()[n] == double(l_full.data()[n]));
    // Into slices of bigger buffers (strided views): the same values there, nothing else written.
    tensor<float, 2, NQ + 3, D> big;
    tensor<float, 2, NQ + 2> lbig;
    big = 7.0f, lbig = 7.0f;
    attend::eval_with_lse(attend::slice<1, NQ>(big, 2), attend::slice<1, NQ>(lbig, 1), attend::scaled_dot_product_attention(q, k, v));
    ref::expect_all(big, [&](auto& i) { return i[1] < 2 || i[1] >= NQ + 2 ? 7.0 : ref::at(full, {i[0], i[1] - 2, i[2]}); }, 0);
    ref::expect_all(lbig, [&](auto& i) { return i[1] < 1 || i[1] >= NQ + 1 ? 7.0 : ref::at(l_full, {i[0], i[1] - 1}); }, 0);
}

BOOST_AUTO_TEST_CASE(log_sum_exp_combines_attention_over_split_keys) {
    check_split_keys<37>();
    check_split_keys<34>();
}

BOOST_AUTO_TEST_SUITE_END()
