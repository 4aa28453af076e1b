// Assignment as if the right side were evaluated first, whatever it reads of the destination:
// the destination itself, views of it (transpose, permute, shifted tensor_refs), inside every
// plan (elementwise, materialising, contraction with and without an epilogue, over one and several
// k blocks, softmax, reductions, attention). The named cases against a double reference; then
// random trees over random overlapping views against evaluation into a fresh tensor.
#include <attend/attend.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "reference.hpp"

using attend::tensor;
using attend::tensor_ref;

namespace {
// out(i, j) = sum_k a(i, k) b(k, j), in double, from saved copies.
template <class A, class B>
std::vector<double> matmul_ref(const A& a, const B& b, std::size_t M, std::size_t K, std::size_t N) {
    std::vector<double> out(M * N, 0.0);
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j)
            for (std::size_t k = 0; k < K; ++k) out[i * N + j] += double(a(i, k)) * double(b(k, j));
    return out;
}

template <class Out>
void expect_flat(const Out& got, const std::vector<double>& want, double tol = 2e-5) {
    std::size_t bad = 0;
    for (std::size_t n = 0; n < want.size(); ++n)
        if (!ref::close(double(got.data()[n]), want[n], tol) && bad++ < 5)
            BOOST_ERROR("element " << n << ": got " << got.data()[n] << ", want " << want[n]);
    BOOST_CHECK_EQUAL(bad, 0u);
}
}  // namespace

namespace {
template <std::size_t G>
void check_decode_into_operands() {
    constexpr std::size_t HKV = 2, NMAX = 300, D = 128;
    auto q = std::make_unique<tensor<float, HKV, G, D>>(), q0 = std::make_unique<tensor<float, HKV, G, D>>();
    auto k = std::make_unique<tensor<float, HKV, NMAX, D>>(), v = std::make_unique<tensor<float, HKV, NMAX, D>>();
    ref::fill(*q, 48);
    ref::fill(*k, 49);
    ref::fill(*v, 50);
    *q0 = *q;
    const auto cache_len = attend::iota<2, HKV, G, NMAX>() >= 291;
    const tensor<float, HKV, G, D> want = attend::scaled_dot_product_attention(*q0, *k, *v, cache_len);
    *q = attend::scaled_dot_product_attention(*q, *k, *v, cache_len);
    ref::expect_all(*q, [&](auto& i) { return ref::at(want, i); }, 1e-6);
    const auto v0 = std::make_unique<tensor<float, HKV, NMAX, D>>(*v);
    attend::slice<1, G>(*v, 0) = attend::scaled_dot_product_attention(*q0, *k, *v, cache_len);
    ref::expect_all(attend::eval(attend::slice<1, G>(*v, 0)), [&](auto& i) { return ref::at(want, i); }, 1e-6);
    ref::expect_all(attend::eval(attend::slice<1, NMAX - G>(*v, G)), [&](auto& i) { return ref::at(*v0, {i[0], i[1] + G, i[2]}); }, 0);
}
}  // namespace

BOOST_AUTO_TEST_SUITE(aliasing)

BOOST_AUTO_TEST_CASE(views_of_the_destination_in_elementwise_trees) {
    tensor<float, 2, 2> a{1, 2, 3, 4};
    a = a - attend::transpose(a);
    BOOST_TEST(a(0, 0) == 0.0f);
    BOOST_TEST(a(0, 1) == -1.0f);
    BOOST_TEST(a(1, 0) == 1.0f);
    BOOST_TEST(a(1, 1) == 0.0f);

    tensor<float, 64, 64> b, b0;
    ref::fill(b, 11);
    b0 = b;
    b = attend::transpose(b) * 2 + b;
    ref::expect_all(b, [&](auto& i) { return 2 * ref::at(b0, {i[1], i[0]}) + ref::at(b0, i); });

    tensor<float, 8, 8, 8> c, c0;
    ref::fill(c, 12);
    c0 = c;
    c = attend::permute<2, 0, 1>(c) + 1;  // out(x, y, z) = c(y, z, x) + 1
    ref::expect_all(c, [&](auto& i) { return ref::at(c0, {i[1], i[2], i[0]}) + 1; });
}

// A view assigned another view of the same type (the copy assignments, which copy without the
// planner): overlapping both ways, as if the right side were read first.
BOOST_AUTO_TEST_CASE(views_copied_onto_overlapping_views) {
    tensor<float, 7, 9> a, a0;
    ref::fill(a0, 81);
    auto same = [&](const tensor<float, 7, 9>& want) {
        std::size_t differ = 0;
        for (std::size_t n = 0; n < a.size; ++n) differ += a.data()[n] != want.data()[n];
        BOOST_TEST(differ == 0u);
    };
    for (std::size_t shift : {1u, 9u, 20u}) {  // within a row, a whole row, across rows
        a = a0;
        tensor_ref<float, 5, 8> later(a.data() + shift), earlier(a.data());
        tensor<float, 5, 8> copied = earlier;
        later = earlier;
        for (std::size_t n = 0; n < 40; ++n) BOOST_TEST(later.data()[n] == copied.data()[n]);
        a = a0;
        earlier = later;  // the other way round
        for (std::size_t n = 0; n < 40; ++n) BOOST_TEST(a.data()[n] == a0.data()[n + shift]);
    }
    // slices of one layout (strided rows), shifted down and up by one row and by three columns
    a = a0;
    attend::slice<0, 5>(a, 1) = attend::slice<0, 5>(a, 0);
    tensor<float, 7, 9> down = a0;
    for (std::size_t r = 1; r < 6; ++r)
        for (std::size_t c = 0; c < 9; ++c) down(r, c) = a0(r - 1, c);
    same(down);
    a = a0;
    attend::slice<0, 5>(a, 0) = attend::slice<0, 5>(a, 1);
    tensor<float, 7, 9> up = a0;
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t c = 0; c < 9; ++c) up(r, c) = a0(r + 1, c);
    same(up);
    a = a0;
    attend::slice<1, 6>(a, 3) = attend::slice<1, 6>(a, 0);
    tensor<float, 7, 9> right = a0;
    for (std::size_t r = 0; r < 7; ++r)
        for (std::size_t c = 3; c < 9; ++c) right(r, c) = a0(r, c - 3);
    same(right);
    a = a0;
    attend::slice<1, 6>(a, 0) = attend::slice<1, 6>(a, 3);
    tensor<float, 7, 9> left = a0;
    for (std::size_t r = 0; r < 7; ++r)
        for (std::size_t c = 0; c < 6; ++c) left(r, c) = a0(r, c + 3);
    same(left);
}

BOOST_AUTO_TEST_CASE(matmul_reading_the_destination) {
    tensor<float, 64, 64> x, w, x0;
    ref::fill(x, 21);
    ref::fill(w, 22);
    x0 = x;
    x = attend::matmul(x, w);
    expect_flat(x, matmul_ref(x0, w, 64, 64, 64));

    tensor<float, 64, 64> a, b, a0;
    ref::fill(a, 23);
    ref::fill(b, 24);
    a0 = a;
    a = attend::matmul(b, attend::transpose(a));
    expect_flat(a, matmul_ref(b, [&](std::size_t k, std::size_t j) { return a0(j, k); }, 64, 64, 64));

    a = a0;
    a = attend::matmul(a, a) + attend::transpose(a);
    std::vector<double> want = matmul_ref(a0, a0, 64, 64, 64);
    for (std::size_t i = 0; i < 64; ++i)
        for (std::size_t j = 0; j < 64; ++j) want[i * 64 + j] += a0(j, i);
    expect_flat(a, want);

    // The matvec plan (a few rows): x read while the panels are written, in both weight layouts;
    // a row of the weight replaced by a product that reads the whole weight.
    tensor<float, 2, 64> r, r0;
    ref::fill(r, 25);
    r0 = r;
    static_assert(attend::plan_of<decltype(attend::matmul(r, w))> == attend::plan::matvec);
    r = attend::matmul(r, w);
    auto row = [&](std::size_t i, std::size_t k) { return r0(i, k); };
    expect_flat(r, matmul_ref(row, [&](std::size_t k, std::size_t j) { return w(k, j); }, 2, 64, 64));
    r = r0;
    r = attend::matmul(r, attend::transpose(w)) + r;
    want = matmul_ref(row, [&](std::size_t k, std::size_t j) { return w(j, k); }, 2, 64, 64);
    for (std::size_t n = 0; n < want.size(); ++n) want[n] += r0.data()[n];
    expect_flat(r, want);
    const tensor<float, 64, 64> w0 = w;
    attend::slice<0, 1>(w, 0) = attend::matmul(attend::slice<0, 1>(w, 3), w);
    want = matmul_ref([&](std::size_t, std::size_t k) { return w0(3, k); }, [&](std::size_t k, std::size_t j) { return w0(k, j); }, 1, 64, 64);
    for (std::size_t j = 0; j < 64; ++j) BOOST_CHECK(ref::close(double(w(0, j)), want[j], 2e-5));
    for (std::size_t i = 1; i < 64; ++i)
        for (std::size_t j = 0; j < 64; ++j) BOOST_REQUIRE_EQUAL(w(i, j), w0(i, j));
    // ... and through the transposed layout (one row of x: adjacent weight rows per register tile)
    w = w0;
    attend::slice<0, 1>(w, 0) = attend::matmul(attend::slice<0, 1>(w, 3), attend::transpose(w));
    want = matmul_ref([&](std::size_t, std::size_t k) { return w0(3, k); }, [&](std::size_t k, std::size_t j) { return w0(j, k); }, 1, 64, 64);
    for (std::size_t j = 0; j < 64; ++j) BOOST_CHECK(ref::close(double(w(0, j)), want[j], 2e-5));
    for (std::size_t i = 1; i < 64; ++i)
        for (std::size_t j = 0; j < 64; ++j) BOOST_REQUIRE_EQUAL(w(i, j), w0(i, j));
}

// M rows of x against W (K, N) (Transposed: W (N, K), matmul(x, transpose(W))); the destination is
// x itself, then M rows of the weight that the product reads (rows 3 .. M + 2 into rows
// 0 .. M - 1). `seed` fills the weight, seed + 1 x.
template <std::size_t M, std::size_t N, bool Transposed = false>
void check_matvec_reading_the_destination(unsigned seed) {
    auto w = std::make_unique<tensor<float, N, N>>();
    auto w0 = std::make_unique<tensor<float, N, N>>();
    ref::fill(*w, seed, -1, 1);
    *w0 = *w;
    tensor<float, M, N> r, r0;
    ref::fill(r, seed + 1, -1, 1);
    r0 = r;
    auto times_w = [&](auto&& x) {
        if constexpr (Transposed) return attend::matmul(x, attend::transpose(*w));
        else return attend::matmul(x, *w);
    };
    auto w_at = [&](std::size_t k, std::size_t j) { return Transposed ? (*w0)(j, k) : (*w0)(k, j); };
    static_assert(attend::plan_of<decltype(times_w(r))> == attend::plan::matvec);
    r = times_w(r);
    const double tol = 1e-5 * std::sqrt(double(N));
    expect_flat(r, matmul_ref([&](std::size_t i, std::size_t k) { return r0(i, k); }, w_at, M, N, N), tol);
    attend::slice<0, M>(*w, 0) = times_w(attend::slice<0, M>(*w, 3));
    const auto want = matmul_ref([&](std::size_t i, std::size_t k) { return (*w0)(3 + i, k); }, w_at, M, N, N);
    for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j) BOOST_CHECK(ref::close(double((*w)(i, j)), want[i * N + j], tol));
    for (std::size_t i = M; i < N; ++i)
        for (std::size_t j = 0; j < N; ++j) BOOST_REQUIRE_EQUAL((*w)(i, j), (*w0)(i, j));
}

// One row of x against W (K, N) in L2, in both of its kernels: chunks of rows (448 x 448) and
// whole rows (360 x 360: 22 vectors and 8 columns past them).
BOOST_AUTO_TEST_CASE(matvec_in_l2_reading_the_destination) {
    check_matvec_reading_the_destination<1, 448>(41);
    check_matvec_reading_the_destination<1, 360>(41);
}

// Six rows of x against W (K, N) beyond L2: rows of x in groups (a group of 4 and one of 2), panels
// of whole rows.
BOOST_AUTO_TEST_CASE(matvec_grouped_rows_reading_the_destination) {
    check_matvec_reading_the_destination<6, 656>(43);
}

// Nine rows of x against W (N, K) (matmul(x, transpose(W))): register tiles of dot products over
// blocks of rows of x (8 and 1 with 32 registers), each reading the weight rows that the
// destination's rows replace.
BOOST_AUTO_TEST_CASE(matvec_dot_tiles_reading_the_destination) {
    check_matvec_reading_the_destination<9, 1000, true>(47);
}

// The residual connection of every transformer block, over several k blocks (K = 520 and 1100
// exceed the k block of every target): the partial sums must never land in `x`.
BOOST_AUTO_TEST_CASE(residual_matmul_plus_destination) {
    auto run = []<std::size_t K>() {
        auto h = std::make_unique<tensor<float, 24, K>>();
        auto w = std::make_unique<tensor<float, K, 40>>();
        tensor<float, 24, 40> x, x0;
        ref::fill(*h, 31, -0.5, 0.5);
        ref::fill(*w, 32, -0.5, 0.5);
        ref::fill(x, 33);
        x0 = x;
        static_assert(attend::plan_of<decltype(attend::matmul(*h, *w) + x)> == attend::plan::contraction);
        x = attend::matmul(*h, *w) + x;
        std::vector<double> want = matmul_ref(*h, *w, 24, K, 40);
        for (std::size_t n = 0; n < want.size(); ++n) want[n] += x0.data()[n];
        expect_flat(x, want);
        // The same with an integer destination: partial sums never pass through it.
        tensor<std::int32_t, 24, 40> xi;
        xi = attend::cast<std::int32_t>(attend::matmul(*h, *w) * 100.0f);
        std::vector<double> wi = matmul_ref(*h, *w, 24, K, 40);
        std::size_t bad = 0;
        for (std::size_t n = 0; n < wi.size(); ++n) bad += std::abs(double(xi.data()[n]) - std::trunc(wi[n] * 100)) > 1;
        BOOST_CHECK_EQUAL(bad, 0u);
    };
    run.template operator()<64>();
    run.template operator()<520>();
    run.template operator()<1100>();
}

BOOST_AUTO_TEST_CASE(attention_softmax_and_reductions_into_an_operand) {
    tensor<float, 64, 32> q, k, v, v0;
    ref::fill(q, 41);
    ref::fill(k, 42);
    ref::fill(v, 43);
    v0 = v;
    const tensor<float, 64, 32> want = attend::scaled_dot_product_attention(q, k, v0);
    v = attend::scaled_dot_product_attention(q, k, v);
    ref::expect_all(v, [&](auto& i) { return ref::at(want, i); }, 1e-6);
    // Elementwise work around the attention (a residual) keeps the fused nest (a review found the
    // contraction plan taken, with the 64 x 64 scores materialised): the attention into a
    // temporary, then the tree, v read before it is written.
    using around = decltype(attend::scaled_dot_product_attention(q, k, v) * 2.0f + v);
    static_assert(attend::plan_of<around> == attend::plan::materialising);
    v = v0;
    v = attend::scaled_dot_product_attention(q, k, v) * 2.0f + v;
    ref::expect_all(v, [&](auto& i) { return 2 * ref::at(want, i) + ref::at(v0, i); }, 1e-6);
    // Into a destination nothing reads, the attention (or softmax) lands in it and the tree runs
    // there in place (no temporary); one the tree reads through a shifted view takes a temporary.
    tensor<float, 64, 32> y;
    y = attend::scaled_dot_product_attention(q, k, v0) * 2.0f + v0;
    ref::expect_all(y, [&](auto& i) { return 2 * ref::at(want, i) + ref::at(v0, i); }, 1e-6);
    const tensor<float, 64, 32> want_sm = attend::softmax(v0);
    y = attend::softmax(v0) * 3.0f - v0;
    ref::expect_all(y, [&](auto& i) { return 3 * ref::at(want_sm, i) - ref::at(v0, i); }, 1e-6);
    y = v0;
    y = attend::softmax(y) * 3.0f + y;
    ref::expect_all(y, [&](auto& i) { return 3 * ref::at(want_sm, i) + ref::at(v0, i); }, 1e-6);
    tensor<float, 65, 32> buf;
    for (std::size_t r = 0; r < 64; ++r)
        for (std::size_t c = 0; c < 32; ++c) buf(r, c) = v0(r, c);
    tensor_ref<float, 64, 32> lo(buf.data()), hi(buf.data() + 32);
    hi = attend::softmax(lo) * 3.0f;
    ref::expect_all(hi, [&](auto& i) { return 3 * ref::at(want_sm, i); }, 1e-6);
    for (std::size_t r = 0; r < 64; ++r)
        for (std::size_t c = 0; c < 32; ++c) buf(r + 1, c) = v0(r, c);
    lo = attend::scaled_dot_product_attention(q, k, hi) * 2.0f + hi;
    ref::expect_all(lo, [&](auto& i) { return 2 * ref::at(want, i) + ref::at(v0, i); }, 1e-6);
    q = v0;
    q = attend::scaled_dot_product_attention(q, k, v0, attend::causal_mask<64, 64>());
    const tensor<float, 64, 32> want_q = attend::scaled_dot_product_attention(v0, k, v0, attend::causal_mask<64, 64>());
    ref::expect_all(q, [&](auto& i) { return ref::at(want_q, i); }, 1e-6);
    // 33 queries: one tile of 32, the last query through the decode nest.
    tensor<float, 33, 32> q33, q33_0;
    ref::fill(q33, 44);
    q33_0 = q33;
    const auto causal33 = attend::causal_mask<33, 64>();
    const tensor<float, 33, 32> want_33 = attend::scaled_dot_product_attention(q33_0, k, v0, causal33);
    q33 = attend::scaled_dot_product_attention(q33, k, v0, causal33);
    ref::expect_all(q33, [&](auto& i) { return ref::at(want_33, i); }, 1e-6);

    // The decode nest (4 queries per head): the queries replaced by their output, and the first
    // four cache rows replaced by an attention that reads the whole cache.
    tensor<float, 2, 4, 16> dq, dq0;
    auto dk = std::make_unique<tensor<float, 2, 300, 16>>(), dv = std::make_unique<tensor<float, 2, 300, 16>>();
    ref::fill(dq, 45);
    ref::fill(*dk, 46);
    ref::fill(*dv, 47);
    dq0 = dq;
    const auto cache_len = attend::iota<2, 2, 4, 300>() >= 277;
    const tensor<float, 2, 4, 16> want_d = attend::scaled_dot_product_attention(dq0, *dk, *dv, cache_len);
    dq = attend::scaled_dot_product_attention(dq, *dk, *dv, cache_len);
    ref::expect_all(dq, [&](auto& i) { return ref::at(want_d, i); }, 1e-6);
    const tensor<float, 2, 300, 16> dk0 = *dk;
    const tensor<float, 2, 4, 16> want_k = attend::scaled_dot_product_attention(dq0, dk0, *dv, cache_len);
    attend::slice<1, 4>(*dk, 0) = attend::scaled_dot_product_attention(dq0, *dk, *dv, cache_len);
    ref::expect_all(attend::eval(attend::slice<1, 4>(*dk, 0)), [&](auto& i) { return ref::at(want_k, i); }, 1e-6);
    ref::expect_all(attend::eval(attend::slice<1, 296>(*dk, 4)), [&](auto& i) { return ref::at(dk0, {i[0], i[1] + 4, i[2]}); }, 0);

    // Heads of 128: one query (the streaming stage) and four (the whole-row stages), each output
    // written over its query and over the first row of the value cache it reads.
    check_decode_into_operands<1>();
    check_decode_into_operands<4>();

    tensor<float, 8, 20> s, s0;
    ref::fill(s, 44);
    s0 = s;
    auto softmax_of_s0 = [&](auto& i) {  // along the last axis
        double m = -1e300, z = 0;
        for (std::size_t j = 0; j < 20; ++j) m = std::max(m, ref::at(s0, {i[0], j}));
        for (std::size_t j = 0; j < 20; ++j) z += std::exp(ref::at(s0, {i[0], j}) - m);
        return std::exp(ref::at(s0, i) - m) / z;
    };
    s = attend::softmax(s);
    ref::expect_all(s, softmax_of_s0);
    s = s0;
    s = attend::transpose(attend::softmax<0>(attend::transpose(s)));  // a view of a computed operand
    ref::expect_all(s, softmax_of_s0);
    s = s0;
    s = s - attend::max(s) + attend::sum<0>(s);
    ref::expect_all(s, [&](auto& i) {
        double m = -1e300, c = 0;
        for (std::size_t j = 0; j < 20; ++j) m = std::max(m, ref::at(s0, {i[0], j}));
        for (std::size_t r = 0; r < 8; ++r) c += ref::at(s0, {r, i[1]});
        return ref::at(s0, i) - m + c;
    }, 1e-5);
    tensor_ref<float, 1, 20> first_row(s.data());
    s = s0;
    first_row = attend::sum<0>(s);  // a reduction into a view of its own operand
    ref::expect_all(first_row, [&](auto& i) {
        double c = 0;
        for (std::size_t r = 0; r < 8; ++r) c += ref::at(s0, {r, i[1]});
        return c;
    }, 1e-5);
}

// Random trees over random views of one buffer that the destination is a view of too: each
// assignment must equal the same tree evaluated into a fresh tensor, bit for bit, and write
// nothing outside the destination.
namespace {
constexpr std::size_t n = 12, kdeep = 1100, buffer = 40000;

struct rng {
    std::uint64_t s;
    std::size_t below(std::size_t m) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return std::size_t(s >> 33) % m;
    }
};

// An offset for a view of `size` elements: exactly the destination's, near it (overlapping on
// either side), or anywhere.
std::size_t offset_near(rng& r, std::size_t dest, std::size_t size) {
    const std::size_t max = buffer - size;
    switch (r.below(4)) {
        case 0: return std::min(dest, max);
        case 1: return std::min(dest + r.below(n * n), max);
        case 2: return dest > n * n ? dest - r.below(n * n) : r.below(n * n);
        default: return r.below(max + 1);
    }
}

template <class Tree>
void check_tree(const char* name, Tree tree, std::uint64_t seed) {
    auto buf = std::make_unique<float[]>(buffer);
    auto orig = std::make_unique<float[]>(buffer);
    rng r{seed};
    for (std::size_t i = 0; i < buffer; ++i) orig[i] = float(int(r.below(2001)) - 1000) / 1000.0f;
    std::size_t failures = 0;
    for (int c = 0; c < 300; ++c) {
        std::memcpy(buf.get(), orig.get(), buffer * sizeof(float));
        const std::size_t od = r.below(buffer - kdeep * n * 2);
        tensor_ref<float, n, n> dest(buf.get() + od);
        tensor_ref<float, n, n> a(buf.get() + offset_near(r, od, n * n)), b(buf.get() + offset_near(r, od, n * n));
        tensor_ref<float, 1, n> row(buf.get() + offset_near(r, od, n));
        tensor_ref<float, n, kdeep> h(buf.get() + offset_near(r, od, n * kdeep));
        tensor_ref<float, kdeep, n> w(buf.get() + offset_near(r, od, n * kdeep));
        const tensor<float, n, n> fresh = tree(a, b, row, h, w);
        dest = tree(a, b, row, h, w);
        bool same = std::memcmp(dest.data(), fresh.data(), sizeof(fresh)) == 0;
        for (std::size_t i = 0; i < buffer && same; ++i)
            if ((i < od || i >= od + n * n) && std::memcmp(&buf[i], &orig[i], sizeof(float)) != 0) same = false;
        if (!same && failures++ < 3) BOOST_ERROR(name << ": case " << c << " differs from evaluation into a fresh tensor");
    }
    BOOST_CHECK_EQUAL(failures, 0u);
}
}  // namespace

BOOST_AUTO_TEST_CASE(random_trees_over_views_of_the_destination) {
    using attend::transpose;
    check_tree("elementwise", [](auto& a, auto& b, auto& row, auto&, auto&) { return a * 2 + b - row; }, 1);
    check_tree("transposed", [](auto& a, auto& b, auto&, auto&, auto&) { return a - transpose(b); }, 2);
    check_tree("where", [](auto& a, auto& b, auto&, auto&, auto&) { return attend::where(a > 0, b, transpose(a)); }, 3);
    check_tree("materialising", [](auto& a, auto& b, auto&, auto&, auto&) { return a - attend::max(b) + attend::sum<0>(a); }, 4);
    check_tree("softmax", [](auto& a, auto&, auto&, auto&, auto&) { return attend::softmax(a); }, 5);
    check_tree("softmax over a contraction", [](auto& a, auto& b, auto&, auto&, auto&) { return attend::softmax(attend::matmul(a, b)); }, 6);
    check_tree("contraction", [](auto& a, auto& b, auto&, auto&, auto&) { return attend::matmul(a, transpose(b)); }, 7);
    check_tree("epilogue", [](auto& a, auto& b, auto& row, auto&, auto&) { return attend::matmul(a, b) * 0.5f + row + a; }, 8);
    check_tree("prologue", [](auto& a, auto& b, auto&, auto&, auto&) { return attend::matmul(a * 2, b - 1) + b; }, 9);
    check_tree("deep residual", [](auto& a, auto&, auto&, auto& h, auto& w) { return attend::matmul(h, w) + a; }, 10);
    check_tree("attention", [](auto& a, auto& b, auto&, auto&, auto&) { return attend::scaled_dot_product_attention(a, b, a); }, 11);
    check_tree("masked attention", [](auto& a, auto& b, auto& row, auto&, auto&) {
        return attend::scaled_dot_product_attention(b, a, transpose(b), row > 0.5f);
    }, 12);
    check_tree("reduction broadcast", [](auto& a, auto&, auto&, auto&, auto&) { return attend::max<0>(a); }, 13);
}

BOOST_AUTO_TEST_SUITE_END()
