// Elementwise expressions against the double reference: every broadcast kind over ranks 1-4 and
// extents that are not multiples of the vector width, scalars on both sides, views in and out.
#include <attend/attend.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "reference.hpp"

using attend::tensor;
using attend::tensor_ref;

namespace {

template <class A, class B>
struct pair {
    using a = A;
    using b = B;
};

// Each pair broadcasts; together they cover equal shapes, scalar-like (1), row, column, outer,
// leading-axis and both-sided broadcasts, at extents 1, 3, 7, 17, 33, 65 and ranks 1 to 4.
using all_cases = boost::mpl::list<
    pair<tensor<float, 1>, tensor<float, 1>>, pair<tensor<float, 3>, tensor<float, 3>>,
    pair<tensor<float, 65>, tensor<float, 1>>, pair<tensor<float, 17, 33>, tensor<float, 33>>,
    pair<tensor<float, 65, 7>, tensor<float, 65, 1>>, pair<tensor<float, 33, 1>, tensor<float, 1, 17>>,
    pair<tensor<float, 3, 7, 17>, tensor<float, 7, 17>>, pair<tensor<float, 3, 1, 65>, tensor<float, 7, 1>>,
    pair<tensor<float, 2, 3, 5, 7>, tensor<float, 3, 1, 7>>,
    pair<tensor<float, 1, 3, 1, 33>, tensor<float, 2, 1, 17, 1>>,
    pair<tensor<double, 17, 65>, tensor<double, 65>>, pair<tensor<double, 7, 3>, tensor<double, 7, 1>>,
    pair<tensor<double, 3, 33, 17>, tensor<double, 3, 33, 17>>>;
// A build that runs the sweeps' edges (see ref::sweep_edges): tails of every width, each broadcast kind
// once, both element types.
using edge_cases = boost::mpl::list<
    pair<tensor<float, 3>, tensor<float, 3>>, pair<tensor<float, 65>, tensor<float, 1>>,
    pair<tensor<float, 17, 33>, tensor<float, 33>>, pair<tensor<float, 33, 1>, tensor<float, 1, 17>>,
    pair<tensor<float, 3, 1, 65>, tensor<float, 7, 1>>, pair<tensor<float, 1, 3, 1, 33>, tensor<float, 2, 1, 17, 1>>,
    pair<tensor<double, 17, 65>, tensor<double, 65>>>;
using cases = std::conditional_t<ref::sweep_edges, edge_cases, all_cases>;

template <class Case>
struct operands {
    typename Case::a a;
    typename Case::b b;
    operands() {
        ref::fill(a, 1);
        ref::fill(b, 2, 0.25, 3.0);  // positive: safe under division, log and sqrt
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE_TEMPLATE(arithmetic_broadcasts, Case, cases) {
    operands<Case> o;
    const auto& a = o.a;
    const auto& b = o.b;
    auto A = [&](const ref::index& i) { return ref::at(a, i); };
    auto B = [&](const ref::index& i) { return ref::at(b, i); };

    ref::expect_all(attend::eval(a + b), [&](auto& i) { return A(i) + B(i); });
    ref::expect_all(attend::eval(a - b), [&](auto& i) { return A(i) - B(i); });
    ref::expect_all(attend::eval(b - a), [&](auto& i) { return B(i) - A(i); });
    ref::expect_all(attend::eval(a * b + b * 2), [&](auto& i) { return A(i) * B(i) + B(i) * 2; });
    ref::expect_all(attend::eval(a / b), [&](auto& i) { return A(i) / B(i); });
    ref::expect_all(attend::eval(-a + b), [&](auto& i) { return -A(i) + B(i); });
    ref::expect_all(attend::eval(attend::maximum(a, b)), [&](auto& i) { return std::max(A(i), B(i)); });
    ref::expect_all(attend::eval(attend::minimum(b, a)), [&](auto& i) { return std::min(A(i), B(i)); });
    ref::expect_all(attend::eval(exp(a - b) * b + 1), [&](auto& i) { return std::exp(A(i) - B(i)) * B(i) + 1; });
    ref::expect_all(attend::eval(log(b) + sqrt(b) - tanh(a) * abs(a)),
                    [&](auto& i) { return std::log(B(i)) + std::sqrt(B(i)) - std::tanh(A(i)) * std::abs(A(i)); });
    ref::expect_all(attend::eval(sin(a) + cos(b) * attend::sigmoid(a) - attend::rsqrt(b)), [&](auto& i) {
        return std::sin(A(i)) + std::cos(B(i)) / (1 + std::exp(-A(i))) - 1 / std::sqrt(B(i));
    });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(scalars_on_both_sides, Case, cases) {
    operands<Case> o;
    const auto& a = o.a;
    auto A = [&](const ref::index& i) { return ref::at(a, i); };
    using T = typename Case::a::value_type;
    const T third = static_cast<T>(1.0 / 3.0);
    ref::expect_all(attend::eval(2.5 - a), [&](auto& i) { return static_cast<T>(2.5) - A(i); });
    ref::expect_all(attend::eval(a * 2 + 1), [&](auto& i) { return A(i) * 2 + 1; });
    ref::expect_all(attend::eval(3 / (a * a + 1)), [&](auto& i) { return 3 / (A(i) * A(i) + 1); });
    ref::expect_all(attend::eval(a / 3.0), [&](auto& i) { return A(i) / 3.0; });
    ref::expect_all(attend::eval(attend::maximum(a, 0) + attend::minimum(-1.5f, a)),
                    [&](auto& i) { return std::max(A(i), 0.0) + std::min(-1.5, A(i)); });
    ref::expect_all(attend::eval(a * third), [&](auto& i) { return A(i) * static_cast<double>(third); });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(comparisons_logic_and_where, Case, cases) {
    operands<Case> o;
    auto& a = o.a;
    auto& b = o.b;
    auto A = [&](const ref::index& i) { return ref::at(a, i); };
    auto B = [&](const ref::index& i) { return ref::at(b, i); };
    using T = typename Case::a::value_type;
    // Make some entries equal so == and <= see ties.
    a.data()[0] = b.data()[0];

    ref::expect_all(attend::eval(a < b), [&](auto& i) { return double(A(i) < B(i)); });
    ref::expect_all(attend::eval(a <= b), [&](auto& i) { return double(A(i) <= B(i)); });
    ref::expect_all(attend::eval(a > b), [&](auto& i) { return double(A(i) > B(i)); });
    ref::expect_all(attend::eval(a >= b), [&](auto& i) { return double(A(i) >= B(i)); });
    ref::expect_all(attend::eval(a == b), [&](auto& i) { return double(A(i) == B(i)); });
    ref::expect_all(attend::eval(a != b), [&](auto& i) { return double(A(i) != B(i)); });
    ref::expect_all(attend::eval(a > 0 && b < 1.5), [&](auto& i) { return double(A(i) > 0 && B(i) < 1.5); });
    ref::expect_all(attend::eval(0 < a || !(b < 1.5)), [&](auto& i) { return double(0 < A(i) || !(B(i) < 1.5)); });
    ref::expect_all(attend::eval(attend::where(a < b, a, b * 2)),
                    [&](auto& i) { return A(i) < B(i) ? A(i) : B(i) * 2; });
    ref::expect_all(attend::eval(attend::masked_fill(a, b > 1, -1e9)),
                    [&](auto& i) { return B(i) > 1 ? double(static_cast<T>(-1e9)) : A(i); });

    // A stored bool mask, broadcast against the values.
    attend::tensor_t<bool, typename Case::b::shape_type> mask = b > 1.5;
    ref::expect_all(attend::eval(attend::where(mask, 0, a)), [&](auto& i) { return B(i) > 1.5 ? 0.0 : A(i); });
}

BOOST_AUTO_TEST_CASE_TEMPLATE(views_in_and_out_at_any_alignment, Case, cases) {
    operands<Case> o;
    using A = typename Case::a;
    using B = typename Case::b;
    using T = typename A::value_type;
    using Out = decltype(attend::eval(o.a + o.b));
    // Copy the operands to addresses one element past an aligned boundary.
    std::vector<T> abuf(A::size + 1), bbuf(B::size + 1), obuf(Out::size + 1);
    std::copy(o.a.data(), o.a.data() + A::size, abuf.data() + 1);
    std::copy(o.b.data(), o.b.data() + B::size, bbuf.data() + 1);
    attend::tensor_ref_t<const T, typename A::shape_type> av(abuf.data() + 1);
    attend::tensor_ref_t<const T, typename B::shape_type> bv(bbuf.data() + 1);
    attend::tensor_ref_t<T, typename Out::shape_type> out(obuf.data() + 1);

    out = av * bv - av;
    ref::expect_all(out, [&](auto& i) { return ref::at(o.a, i) * ref::at(o.b, i) - ref::at(o.a, i); });
    BOOST_CHECK_EQUAL(obuf[0], T(0));  // nothing written before the view

    Out t = exp(bv) / (av * av + 1);
    ref::expect_all(t, [&](auto& i) { return std::exp(ref::at(o.b, i)) / (ref::at(o.a, i) * ref::at(o.a, i) + 1); });
}

// The softmax exponential of the SIMD layer, lane by lane against double: 2^(t/8) within 4 ulp
// plus the rounding of an argument of size |t| ln(2) / 8 (the portable path takes exp of one)
// down to t = -1000, at most 2^-125 below (0 where the AVX2 path cuts off), 0 at -inf, NaN through.
BOOST_AUTO_TEST_CASE(exp2_eighths_against_double) {
    using B = attend::simd::batch<float>;
    constexpr std::size_t W = attend::simd::lanes<B>;
    std::vector<float> ts;
    for (double t = -1010; t <= 12; t += 0.0137) ts.push_back(static_cast<float>(t));
    for (float t : {-1000.0f, std::nextafter(-1000.0f, -2000.0f), -0.0f, 0.0f, -0.5f, 0.5f, -7.5f, 1e-30f,
                    -std::numeric_limits<float>::infinity(), -3e38f, std::numeric_limits<float>::quiet_NaN()})
        ts.push_back(t);
    while (ts.size() % W != 0) ts.push_back(0.0f);
    std::vector<float> got(ts.size());
    for (std::size_t k = 0; k < ts.size(); k += W)
        attend::simd::store(got.data() + k, attend::simd::exp2_eighths(attend::simd::load<B>(ts.data() + k)));
    for (std::size_t k = 0; k < ts.size(); ++k) {
        const float t = ts[k];
        BOOST_TEST_CONTEXT("t = " << t) {
            if (std::isnan(t)) {
                BOOST_TEST(std::isnan(got[k]));
            } else if (std::isinf(t)) {
                BOOST_TEST(got[k] == 0.0f);
            } else if (t < -1000.0f) {
                BOOST_TEST((got[k] >= 0.0f && got[k] <= std::exp2(-125.0f)));
            } else {
                const double want = std::exp2(static_cast<double>(t) / 8);
                const double ulps = 4 + std::abs(t) / 8;
                BOOST_TEST(std::abs(got[k] - want) <= ulps * std::numeric_limits<float>::epsilon() * want);
            }
        }
    }
    // The scalar bundle (query tails) gives the same function.
    BOOST_TEST(std::abs(attend::simd::exp2_eighths(-12.0f) - 0.35355339f) <= 1e-7f);
}

// simd::transpose (the transposed-weight pack, the attention nest's query tiles) at shapes whose
// 8 x 8 register blocks (AVX) and element tails meet in every arrangement, with row strides wider
// than the rows: each element lands where it belongs, and nothing past the rows is written.
namespace {
template <std::size_t Rows, std::size_t Cols, std::size_t LDS, std::size_t LDD>
void check_transpose() {
    std::vector<float> src(Rows * LDS), dst(Cols * LDD, -1.0f);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
    attend::simd::transpose<Rows, Cols, LDS, LDD>(src.data(), dst.data());
    std::size_t wrong = 0;
    for (std::size_t c = 0; c < Cols; ++c)
        for (std::size_t r = 0; r < LDD; ++r) wrong += dst[c * LDD + r] != (r < Rows ? src[r * LDS + c] : -1.0f);
    BOOST_TEST(wrong == 0u, Rows << " x " << Cols << " (ld " << LDS << ", " << LDD << ")");
}
}  // namespace

BOOST_AUTO_TEST_CASE(block_transposes) {
    check_transpose<16, 16, 16, 16>();
    check_transpose<32, 48, 50, 40>();
    check_transpose<24, 40, 40, 24>();
    check_transpose<40, 24, 27, 41>();
    check_transpose<16, 8, 8, 16>();
    check_transpose<8, 32, 33, 8>();
    check_transpose<37, 53, 53, 37>();
    check_transpose<5, 3, 3, 5>();
}

BOOST_AUTO_TEST_SUITE_END()
