// Contractions, reductions, softmax and views against the double reference: odd sizes, batch
// broadcasting, transposed operands, prologue/epilogue fusion, every axis, all -inf slices,
// huge logits, and the unfused attention formula with the seed's mask convention.
#include <attend/attend.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reference.hpp"

using attend::tensor;

namespace {
constexpr double ninf = -std::numeric_limits<double>::infinity();

template <std::size_t M, std::size_t K, std::size_t N>
struct sizes {
    static constexpr std::size_t m = M, k = K, n = N;
};

using matmul_sizes = boost::mpl::list<sizes<1, 1, 1>, sizes<3, 7, 17>, sizes<17, 33, 3>, sizes<33, 65, 7>,
                                      sizes<65, 17, 33>, sizes<7, 300, 65>, sizes<64, 64, 64>,
                                      sizes<130, 600, 512>>;  // two row panels, several k blocks, B packed

// Reference matmul over explicit index sets (no shape machinery).
template <class GetA, class GetB>
double dot(std::size_t K, GetA ga, GetB gb) {
    double s = 0;
    for (std::size_t k = 0; k < K; ++k) s += ga(k) * gb(k);
    return s;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(contraction)

BOOST_AUTO_TEST_CASE_TEMPLATE(matmul_odd_sizes, Z, matmul_sizes) {
    constexpr std::size_t M = Z::m, K = Z::k, N = Z::n;
    auto a = std::make_unique<tensor<float, M, K>>();
    auto b = std::make_unique<tensor<float, K, N>>();
    auto bt = std::make_unique<tensor<float, N, K>>();
    ref::fill(*a, 11, -1, 1);
    ref::fill(*b, 12, -1, 1);
    ref::fill(*bt, 13, -1, 1);
    const double tol = 1e-5 * std::sqrt(double(K));
    auto ab = [&](const ref::index& i) {
        return dot(K, [&](std::size_t k) { return ref::at(*a, {i[0], k}); }, [&](std::size_t k) { return ref::at(*b, {k, i[1]}); });
    };
    auto out = std::make_unique<tensor<float, M, N>>();
    *out = attend::matmul(*a, *b);
    ref::expect_all(*out, ab, tol);
    // B read through a transposed view (never materialised), as in Q K^T.
    *out = attend::matmul(*a, attend::transpose(*bt));
    ref::expect_all(*out, [&](const ref::index& i) {
        return dot(K, [&](std::size_t k) { return ref::at(*a, {i[0], k}); }, [&](std::size_t k) { return ref::at(*bt, {i[1], k}); });
    }, tol);
    // Prologue on both operands and an epilogue with a broadcast bias.
    tensor<float, N> bias;
    ref::fill(bias, 14);
    *out = exp(attend::matmul(*a * 0.5f, *b - 0.25f) * 0.1f) + bias;
    ref::expect_all(*out, [&](const ref::index& i) {
        const double s = dot(K, [&](std::size_t k) { return double(float(ref::at(*a, {i[0], k}) * 0.5f)); },
                             [&](std::size_t k) { return double(float(ref::at(*b, {k, i[1]}) - 0.25f)); });
        return std::exp(s * 0.1) + ref::at(bias, {i[1]});
    }, tol);
}

// The matvec plan (M up to 16 rows, the weight read in place): every row count from 1 to 17 (17
// takes the contraction), odd K and N with weights large enough for the plan (M x 256 KiB from
// three rows), both weight layouts, fused epilogues, the residual in place; and panels: several,
// a vector tail, K beyond a vector with a tail.
template <std::size_t M, std::size_t K, std::size_t N>
void check_matvec() {
    auto x = std::make_unique<tensor<float, M, K>>();
    auto w = std::make_unique<tensor<float, K, N>>();   // matmul(x, W)
    auto wt = std::make_unique<tensor<float, N, K>>();  // matmul(x, transpose(W)), the checkpoint layout
    auto r = std::make_unique<tensor<float, M, N>>();
    tensor<float, N> bias;
    ref::fill(*x, 31, -1, 1);
    ref::fill(*w, 32, -1, 1);
    ref::fill(*wt, 33, -1, 1);
    ref::fill(*r, 34, -1, 1);
    ref::fill(bias, 35, -1, 1);
    constexpr attend::plan expected = M <= 16 ? attend::plan::matvec : attend::plan::contraction;
    static_assert(attend::plan_of<decltype(attend::matmul(*x, *w))> == expected);
    if constexpr (expected == attend::plan::matvec) {
        // With 32 registers: column sums in registers over all of K up to 32 KiB (in L1), or up to
        // 1 MiB (in L2) with two rows of x; one row of x against up to 1 MiB with rows of at most
        // 24 whole vectors: rows read whole. Else rows per step: 8 beyond 1 MiB (L2) with one row
        // of x, 2 up to 1 MiB with one row of x given 32 registers, 16 for more than four rows of
        // x (in groups of four, panels of whole rows), else 4.
        using G = attend::detail::matvec_tiling<float, attend::simd::default_arch, M, N>;
        constexpr std::size_t bytes = K * N * sizeof(float), W = G::W;
        constexpr bool l1 = bytes <= (std::size_t{32} << 10), l2 = bytes <= (std::size_t{1} << 20), wide = G::regs >= 32;
        constexpr bool in_registers = wide && M <= 2 && (l1 || (M == 2 && l2));
        constexpr bool whole_rows = wide && !in_registers && M == 1 && l2 && N / W >= 1 && N / W <= 24;
        constexpr std::size_t U = M > 4 ? 16 : M == 1 && !l2 ? 8 : M == 1 && l2 && wide ? 2 : 4;
        const std::string want = in_registers ? "sums of " + std::to_string(16 / M) + " vectors of columns in registers"
                                 : whole_rows ? "rows read whole, the sums of all " + std::to_string(N / W) + " vectors"
                                 : M > 4      ? "16 rows of (K, N) at a time added into the panel's sums, rows of x in groups of 4"
                                 : M == 1 && !l2 ? "8 rows of (K, N) at a time added into the panel's sums, 8 vector(s) of columns a chunk"
                                              : std::to_string(U) + " rows of (K, N) at a time";
        const std::string how = attend::explain(attend::matmul(*x, *w));
        BOOST_TEST(how.find(want) != std::string::npos, how);
        if constexpr (M > 4) BOOST_TEST(how.find("(whole rows, their sums on the heap)") != std::string::npos, how);
    }
    static_assert(attend::plan_of<decltype(attend::matmul(*x, attend::transpose(*wt)) + bias)> == expected);
    const double tol = 1e-5 * std::sqrt(double(K));
    // The double references once (large weights): x W, x W^T and x2 W for x2 = x * 2 - 0.5 in float.
    std::vector<double> ref_w(M * N, 0.0), ref_wt(M * N, 0.0), ref_x2(M * N, 0.0);
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            const double a = (*x)(m, k), a2 = float((*x)(m, k) * 2.0f - 0.5f);
            for (std::size_t n = 0; n < N; ++n) {
                ref_w[m * N + n] += a * (*w)(k, n);
                ref_wt[m * N + n] += a * (*wt)(n, k);
                ref_x2[m * N + n] += a2 * (*w)(k, n);
            }
        }
    auto xw = [&](const ref::index& i) { return ref_w[i[0] * N + i[1]]; };
    auto xwt = [&](const ref::index& i) { return ref_wt[i[0] * N + i[1]]; };
    auto out = std::make_unique<tensor<float, M, N>>();
    *out = attend::matmul(*x, *w);
    ref::expect_all(*out, xw, tol);
    *out = attend::matmul(*x, attend::transpose(*wt));
    ref::expect_all(*out, xwt, tol);
    // Epilogues: bias and activation; the residual read from the destination itself (in place).
    *out = attend::sigmoid(attend::matmul(*x, *w) + bias);
    ref::expect_all(*out, [&](const ref::index& i) { return 1 / (1 + std::exp(-(xw(i) + bias(i[1])))); }, tol);
    *out = *r;
    *out = attend::matmul(*x, attend::transpose(*wt)) + *out;
    ref::expect_all(*out, [&](const ref::index& i) { return xwt(i) + (*r)(i[0], i[1]); }, tol);
    *out = *r;
    *out = attend::matmul(*x, *w) + *out;
    ref::expect_all(*out, [&](const ref::index& i) { return xw(i) + (*r)(i[0], i[1]); }, tol);
    // x as an expression: evaluated once, then read in place.
    *out = attend::matmul(*x * 2.0f - 0.5f, *w);
    ref::expect_all(*out, [&](const ref::index& i) { return ref_x2[i[0] * N + i[1]]; }, tol);
}

template <std::size_t... M>
void check_matvec_rows(std::index_sequence<M...>) {
    (check_matvec<M, 2 * M + 999, 70 * M + 41>(), ...);
}

BOOST_AUTO_TEST_CASE(matvec_every_row_count_both_layouts) {
    check_matvec_rows(ref::sweep_1_to_17{});
    check_matvec<1, 21, 4100>();  // two panels of whole rows, the second four columns wide
    check_matvec<3, 65, 4100>();  // panels of 1360 columns
    check_matvec<2, 1031, 19>();  // long dot products with a K tail
    check_matvec<1, 2051, 2049>();  // a weight beyond 16 MiB: W (K, N) 8 rows per step in chunks of 8 vectors, a K tail of 3, a column tail of 1
    check_matvec<1, 771, 2135>();   // beyond L2 (6 MiB): the same, the last chunks of 4 and 1 vector, a column tail of 7
}

// The matvec's run-time choices by core (eval/machine.hpp), each taken on any machine: one row of
// x against W (K, N) in L2 with rows wider than 24 vectors (sums in registers on Intel cores,
// chunks of rows elsewhere) and beyond 16 MiB (rows requested ahead except on Zen 5 and Intel
// cores).
BOOST_AUTO_TEST_CASE(matvec_choices_of_every_core) {
    using attend::detail::core_kind;
    for (const core_kind kind : {core_kind::intel, core_kind::amd_zen5, core_kind::other}) {
        attend::detail::pretend_core(kind);
        check_matvec<1, 21, 4100>();
        check_matvec<1, 2051, 2049>();
    }
    attend::detail::pretend_core(core_kind::automatic);
}

BOOST_AUTO_TEST_CASE(matvec_batched_weights_and_rows) {
    // Per-head weights (H, K, N) with one row per head, and rows (2, 3, K) against shared weights.
    tensor<float, 3, 1, 40> x;
    tensor<float, 3, 40, 24> w;
    tensor<float, 3, 24, 40> wt;
    tensor<float, 2, 3, 40> xs;
    tensor<float, 40, 24> shared;
    ref::fill(x, 41);
    ref::fill(w, 42);
    ref::fill(wt, 43);
    ref::fill(xs, 44);
    ref::fill(shared, 45);
    static_assert(attend::plan_of<decltype(attend::matmul(x, w))> == attend::plan::matvec);
    ref::expect_all(attend::eval(attend::matmul(x, w)), [&](const ref::index& i) {
        return dot(40, [&](std::size_t k) { return ref::at(x, {i[0], 0, k}); }, [&](std::size_t k) { return ref::at(w, {i[0], k, i[2]}); });
    }, 1e-5);
    ref::expect_all(attend::eval(attend::matmul(x, attend::transpose(wt))), [&](const ref::index& i) {
        return dot(40, [&](std::size_t k) { return ref::at(x, {i[0], 0, k}); }, [&](std::size_t k) { return ref::at(wt, {i[0], i[2], k}); });
    }, 1e-5);
    ref::expect_all(attend::eval(attend::matmul(xs, shared)), [&](const ref::index& i) {
        return dot(40, [&](std::size_t k) { return ref::at(xs, {i[0], i[1], k}); }, [&](std::size_t k) { return ref::at(shared, {k, i[2]}); });
    }, 1e-5);
}

BOOST_AUTO_TEST_CASE(matmul_batch_broadcasting_and_double) {
    // GQA-style: Q (2, 3, 5, 4) x K^T with K (2, 1, 7, 4): the head axis of K broadcasts.
    tensor<double, 2, 3, 5, 4> q;
    tensor<double, 2, 1, 7, 4> k;
    ref::fill(q, 21);
    ref::fill(k, 22);
    auto s = attend::eval(attend::matmul(q, attend::transpose(k)));
    static_assert(std::is_same_v<decltype(s), tensor<double, 2, 3, 5, 7>>);
    ref::expect_all(s, [&](const ref::index& i) {
        return dot(4, [&](std::size_t d) { return ref::at(q, {i[0], i[1], i[2], d}); },
                   [&](std::size_t d) { return ref::at(k, {i[0], 0, i[3], d}); });
    }, 1e-12);
    // (1, D, N) on the right of (H, N, D): the batch axis of the right operand broadcasts.
    tensor<float, 3, 6, 5> x;
    tensor<float, 1, 5, 6> y;
    ref::fill(x, 23);
    ref::fill(y, 24);
    ref::expect_all(attend::eval(attend::matmul(x, y)), [&](const ref::index& i) {
        return dot(5, [&](std::size_t d) { return ref::at(x, {i[0], i[1], d}); }, [&](std::size_t d) { return ref::at(y, {0, d, i[2]}); });
    }, 1e-5);
    // Float Q K^T with whole panels of K^T (packed by block transposes) and a tail panel, K's head
    // axis broadcast: every panel is taken from its own batch position.
    auto qf = std::make_unique<tensor<float, 2, 3, 40, 64>>();
    auto kf = std::make_unique<tensor<float, 2, 1, 70, 64>>();
    ref::fill(*qf, 25, -1, 1);
    ref::fill(*kf, 26, -1, 1);
    ref::expect_all(attend::eval(attend::matmul(*qf, attend::transpose(*kf))), [&](const ref::index& i) {
        return dot(64, [&](std::size_t d) { return ref::at(*qf, {i[0], i[1], i[2], d}); },
                   [&](std::size_t d) { return ref::at(*kf, {i[0], 0, i[3], d}); });
    }, 1e-4);
}

BOOST_AUTO_TEST_CASE(reductions_on_every_axis) {
    tensor<float, 3, 17, 33> x;
    ref::fill(x, 31);
    x(1, 4, 9) = 7.5f;  // a unique maximum somewhere
    x(2, 16, 0) = 7.5f;
    x(2, 16, 32) = 7.5f;  // a tie: argmax keeps the first
    auto reduce_ref = [&](std::size_t axis, const ref::index& i, auto op, double init) {
        double acc = init;
        const std::size_t n = std::vector<std::size_t>{3, 17, 33}[axis];
        for (std::size_t k = 0; k < n; ++k) {
            ref::index j = i;
            j[axis] = k;
            acc = op(acc, ref::at(x, j), k);
        }
        return acc;
    };
    auto sum_op = [](double a, double v, std::size_t) { return a + v; };
    auto max_op = [](double a, double v, std::size_t) { return std::max(a, v); };
    ref::expect_all(attend::eval(attend::sum<0>(x)), [&](auto& i) { return reduce_ref(0, i, sum_op, 0); }, 1e-5);
    ref::expect_all(attend::eval(attend::sum<1>(x)), [&](auto& i) { return reduce_ref(1, i, sum_op, 0); }, 1e-5);
    ref::expect_all(attend::eval(attend::sum(x)), [&](auto& i) { return reduce_ref(2, i, sum_op, 0); }, 1e-5);
    ref::expect_all(attend::eval(attend::max<0>(x)), [&](auto& i) { return reduce_ref(0, i, max_op, ninf); });
    ref::expect_all(attend::eval(attend::max<-2>(x)), [&](auto& i) { return reduce_ref(1, i, max_op, ninf); });
    ref::expect_all(attend::eval(attend::max(x)), [&](auto& i) { return reduce_ref(2, i, max_op, ninf); });
    for (std::size_t axis = 0; axis < 3; ++axis) {
        auto first_max = [&](const ref::index& i) {
            double best = ninf, at = 0;
            const std::size_t n = std::vector<std::size_t>{3, 17, 33}[axis];
            for (std::size_t k = 0; k < n; ++k) {
                ref::index j = i;
                j[axis] = k;
                if (ref::at(x, j) > best) best = ref::at(x, j), at = double(k);
            }
            return at;
        };
        if (axis == 0) ref::expect_all(attend::eval(attend::argmax<0>(x)), first_max, 0);
        if (axis == 1) ref::expect_all(attend::eval(attend::argmax<1>(x)), first_max, 0);
        if (axis == 2) ref::expect_all(attend::eval(attend::argmax(x)), first_max, 0);
    }
    // Reductions inside elementwise trees: x - max(x) broadcasts.
    ref::expect_all(attend::eval(x - attend::max(x)), [&](auto& i) { return ref::at(x, i) - reduce_ref(2, i, max_op, ninf); });
}

BOOST_AUTO_TEST_CASE(softmax_every_axis_and_hand_written_equivalence) {
    tensor<float, 3, 7, 65> x;
    ref::fill(x, 41, -3, 3);
    // Logits as attend sees them: scale * x rounded to float (the product is float arithmetic).
    auto logit = [&](double scale, const ref::index& j) { return double(float(scale) * float(ref::at(x, j))); };
    auto soft_ref = [&](std::size_t axis, const ref::index& i, double scale) {
        const std::size_t n = std::vector<std::size_t>{3, 7, 65}[axis];
        double m = ninf, s = 0;
        for (std::size_t k = 0; k < n; ++k) {
            ref::index j = i;
            j[axis] = k;
            m = std::max(m, logit(scale, j));
        }
        for (std::size_t k = 0; k < n; ++k) {
            ref::index j = i;
            j[axis] = k;
            s += std::exp(logit(scale, j) - m);
        }
        return std::exp(logit(scale, i) - m) / s;
    };
    ref::expect_all(attend::eval(attend::softmax<0>(x)), [&](auto& i) { return soft_ref(0, i, 1); });
    ref::expect_all(attend::eval(attend::softmax<1>(x)), [&](auto& i) { return soft_ref(1, i, 1); });
    ref::expect_all(attend::eval(attend::softmax(x)), [&](auto& i) { return soft_ref(2, i, 1); });
    // Huge logits (x100, up to 300) stay finite; one float ulp of a logit near 300 (3e-5) is the
    // relative error any float evaluation order may show, so that is the tolerance.
    ref::expect_all(attend::eval(attend::softmax(x * 100)), [&](auto& i) { return soft_ref(2, i, 100); }, 1e-4);
    // By hand from exp, max and sum: the same numbers.
    auto e = exp(x - attend::max(x));
    tensor<float, 3, 7, 65> by_hand = e / attend::sum(e);
    ref::expect_all(by_hand, [&](auto& i) { return soft_ref(2, i, 1); });
}

BOOST_AUTO_TEST_CASE(softmax_of_all_masked_slices_is_zero) {
    tensor<float, 4, 19> s;
    ref::fill(s, 51);
    tensor<bool, 4, 19> mask;
    for (std::size_t j = 0; j < 19; ++j) mask(1, j) = true;  // row 1: every key ignored
    for (std::size_t j = 0; j < 17; ++j) mask(2, j) = true;  // row 2: only the last two kept
    const auto p = attend::eval(attend::softmax(attend::masked_fill(s, mask, -INFINITY)));
    const auto q = attend::eval(attend::softmax<0>(attend::masked_fill(s, mask, -INFINITY)));
    for (std::size_t j = 0; j < 19; ++j) BOOST_TEST(p(1, j) == 0.0f);
    double row2 = 0;
    for (std::size_t j = 0; j < 19; ++j) row2 += p(2, j);
    BOOST_TEST(row2 == 1.0, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(p(2, 0) == 0.0f);
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 19; ++j) BOOST_TEST(std::isfinite(q(i, j)));
}

// Huge finite values: the shift's rounding in softmax's exponent units would leave float's range
// (softmax([1e10, 7.5e9]) once gave [0, 0]); rows, columns, vector body and tail, float and double.
BOOST_AUTO_TEST_CASE(softmax_of_huge_finite_values) {
    for (double big : {1e6, 1e10, 1e20, 1e30, -1e10}) {
        tensor<float, 3, 19> x;
        tensor<double, 3, 19> xd;
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = 0; j < 19; ++j) xd(i, j) = j == 5 + i ? big : big - std::abs(big) * 0.01 * double(j + 1), x(i, j) = float(xd(i, j));
        const auto p = attend::eval(attend::softmax(x));
        const auto q = attend::eval(attend::softmax<0>(attend::transpose(x)));
        const auto pd = attend::eval(attend::softmax(xd));
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = 0; j < 19; ++j) {
                const double want = j == 5 + i ? 1.0 : 0.0;  // every other value is far below the maximum
                BOOST_TEST(p(i, j) == want, big << " row " << i << " column " << j << ": " << p(i, j));
                BOOST_TEST(q(j, i) == want, big << " column " << i << " row " << j << ": " << q(j, i));
                BOOST_TEST(pd(i, j) == want, big << " double row " << i << " column " << j << ": " << pd(i, j));
            }
    }
}

BOOST_AUTO_TEST_CASE(views) {
    tensor<float, 2, 3, 5> x;
    ref::fill(x, 61);
    ref::expect_all(attend::eval(attend::permute<2, 0, 1>(x)), [&](auto& i) { return ref::at(x, {i[1], i[2], i[0]}); }, 0);
    ref::expect_all(attend::eval(attend::transpose(x)), [&](auto& i) { return ref::at(x, {i[0], i[2], i[1]}); }, 0);
    ref::expect_all(attend::eval(attend::reshape<6, 5>(x)), [&](auto& i) { return x.data()[i[0] * 5 + i[1]]; }, 0);
    // Reshape of a non-contiguous view and of a computed expression (both materialise).
    ref::expect_all(attend::eval(attend::reshape<30>(attend::transpose(x))), [&](auto& i) {
        const std::size_t b = i[0] / 15, r = i[0] % 15;
        return ref::at(x, {b, r % 3, r / 3});
    }, 0);
    ref::expect_all(attend::eval(attend::permute<1, 0>(attend::reshape<6, 5>(x * 2))), [&](auto& i) { return 2 * x.data()[i[1] * 5 + i[0]]; }, 0);
    // Multi-head split and merge: (T, E) -> (h, T, E/h) -> (T, E).
    tensor<float, 4, 6> t;
    ref::fill(t, 62);
    auto heads = attend::permute<1, 0, 2>(attend::reshape<4, 2, 3>(t));
    ref::expect_all(attend::eval(heads), [&](auto& i) { return ref::at(t, {i[1], i[0] * 3 + i[2]}); }, 0);
    ref::expect_all(attend::eval(attend::reshape<4, 6>(attend::permute<1, 0, 2>(heads))), [&](auto& i) { return ref::at(t, i); }, 0);
}

BOOST_AUTO_TEST_CASE(unfused_attention_matches_seed_semantics) {
    // Seed 000: softmax(Q K^T / sqrt(d_k)) V with a mask where true means "ignore".
    constexpr std::size_t NQ = 5, NK = 7, D = 4, DV = 3;
    tensor<float, NQ, D> q;
    tensor<float, NK, D> k;
    tensor<float, NK, DV> v;
    tensor<bool, NQ, NK> mask;
    ref::fill(q, 71);
    ref::fill(k, 72);
    ref::fill(v, 73);
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t j = 0; j < NK; ++j) mask(i, j) = (i * 3 + j) % 4 == 0;
    auto reference = [&](const ref::index& o, bool masked, bool causal) {
        std::vector<double> s(NK);
        double m = ninf;
        for (std::size_t j = 0; j < NK; ++j) {
            s[j] = dot(D, [&](std::size_t d) { return ref::at(q, {o[0], d}); }, [&](std::size_t d) { return ref::at(k, {j, d}); }) / std::sqrt(double(D));
            if ((masked && mask(o[0], j)) || (causal && j > o[0])) s[j] = ninf;
            m = std::max(m, s[j]);
        }
        double z = 0, acc = 0;
        for (std::size_t j = 0; j < NK; ++j) z += std::exp(s[j] - m);
        for (std::size_t j = 0; j < NK; ++j) acc += std::exp(s[j] - m) / z * ref::at(v, {j, o[1]});
        return acc;
    };
    ref::expect_all(attend::eval(attend::scaled_dot_product_attention(q, k, v)), [&](auto& o) { return reference(o, false, false); }, 1e-5);
    ref::expect_all(attend::eval(attend::scaled_dot_product_attention(q, k, v, mask)), [&](auto& o) { return reference(o, true, false); }, 1e-5);
    ref::expect_all(attend::eval(attend::scaled_dot_product_attention(q, k, v, attend::causal_mask<NQ, NK>())),
                    [&](auto& o) { return reference(o, false, true); }, 1e-5);
    // The formula written by hand gives the same numbers.
    tensor<float, NQ, DV> by_hand =
        attend::matmul(attend::softmax(attend::masked_fill(attend::matmul(q, attend::transpose(k)) / std::sqrt(float(D)), mask, -INFINITY)), v);
    ref::expect_all(by_hand, [&](auto& o) { return reference(o, true, false); }, 1e-5);
}

BOOST_AUTO_TEST_CASE(the_plan_is_inspectable) {
    tensor<float, 64, 32> x;
    tensor<float, 48, 32> k;
    tensor<float, 48> bias;
    // Prologue and epilogue fold into the contraction; K^T is read where it lies.
    using fused = decltype(exp(attend::matmul(x * 0.5f, attend::transpose(k)) - 1.0f) + bias);
    static_assert(attend::plan_of<fused> == attend::plan::contraction);
    static_assert(attend::plan_of<decltype(attend::matmul(x, attend::transpose(k)))> == attend::plan::contraction);
    static_assert(attend::plan_of<decltype(x * 2 + 1)> == attend::plan::elementwise);
    static_assert(attend::plan_of<decltype(attend::softmax(attend::matmul(x, attend::transpose(k))))> == attend::plan::softmax);
    static_assert(attend::plan_of<decltype(attend::sum<0>(x))> == attend::plan::reduction);
    static_assert(attend::plan_of<decltype(x - attend::max(x))> == attend::plan::materialising);
    const std::string text = attend::explain(exp(attend::matmul(x * 0.5f, attend::transpose(k)) - 1.0f) + bias);
    BOOST_TEST(text.find("plan: contraction, 64 x 32 x 48") != std::string::npos, text);
    BOOST_TEST(text.find("A (packed along k, its expression evaluated while packing): mul(tensor<float>(64, 32), scalar<float>)") != std::string::npos, text);
    BOOST_TEST(text.find("B (packed in panels, its expression evaluated while packing): tensor<float>(32, 48) strides (1, 32)") != std::string::npos, text);
    BOOST_TEST(text.find("epilogue per finished tile: add(exp(sub(matmul(") != std::string::npos, text);
    const std::string plain = attend::explain(attend::matmul(x, attend::transpose(k)));
    BOOST_TEST(plain.find("A (read in place): tensor<float>(64, 32)") != std::string::npos, plain);
    BOOST_TEST(plain.find("epilogue") == std::string::npos, plain);
}

BOOST_AUTO_TEST_SUITE_END()
