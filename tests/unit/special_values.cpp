// Results that IEEE 754 fixes exactly, on every target the tests are built for (native, SSE2,
// x86-64-v3, aarch64 NEON): sqrt is correctly rounded, so it must match std::sqrt bit for bit,
// +inf, -0 and denormals included, in the vector body and in the scalar tail. The
// transcendental functions at the ends of their range (overflow, subnormal results and
// arguments) agree with std:: to a few units in the last place, in every lane.
#include <attend/attend.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <vector>

#include "reference.hpp"

BOOST_AUTO_TEST_SUITE(special_values)

using float_types = boost::mpl::list<float, double>;

BOOST_AUTO_TEST_CASE_TEMPLATE(sqrt_is_correctly_rounded, T, float_types) {
    using lim = std::numeric_limits<T>;
    // 1027 elements: whole vectors of every width, then a tail of 3 (or 1) lanes.
    attend::tensor<T, 1027> x;
    ref::fill(x, 7, 0.0, 1000.0);
    const T special[] = {lim::infinity(), T(0),     -T(0),   lim::denorm_min(), lim::min(),          lim::max(),
                         lim::quiet_NaN(), T(-1),    -lim::infinity(), T(2),    T(0.25),             T(1e-30)};
    constexpr std::size_t n = std::size(special);
    for (std::size_t k = 0; k < n; ++k) {
        x.data()[k] = special[k];                        // in whole vectors
        x.data()[decltype(x)::size - 1 - k] = special[k];  // the last ones also in the tail
    }
    const auto r = attend::eval(sqrt(x));
    for (std::size_t i = 0; i < decltype(x)::size; ++i) {
        const T got = r.data()[i], want = std::sqrt(x.data()[i]);
        BOOST_TEST_CONTEXT("sqrt(" << x.data()[i] << ") at " << i) {
            if (std::isnan(want)) {
                BOOST_TEST(std::isnan(got));
            } else {
                BOOST_TEST(std::memcmp(&got, &want, sizeof(T)) == 0, std::hexfloat << got << " != " << want);
            }
        }
    }
}

// Values of exp, log, sigmoid and tanh near the ends of each type's range, at every lane of a
// vector and in the tail, against std:: (a review found double exp giving inf from 709.5 and 0
// for subnormal results, and double log of subnormals off by up to 38, only in vector lanes).
BOOST_AUTO_TEST_CASE_TEMPLATE(transcendentals_at_range_edges, T, float_types) {
    using lim = std::numeric_limits<T>;
    constexpr bool dbl = std::is_same_v<T, double>;
    const T inf = lim::infinity(), nan = lim::quiet_NaN();
    const std::vector<T> exp_args = dbl ? std::vector<T>{709.7, 709.78, 709.79, 708.5, -708.5, -709, -740, -745.1, -745.2, -746.5, -1e9, 700, -inf, inf, nan, 0}
                                        : std::vector<T>{88.7f, 88.72f, 88.73f, 87.5f, -87.5f, -100, -103.9f, -104, -1e9f, 80, -inf, inf, nan, 0};
    const std::vector<T> log_args{T(2) * lim::min() / T(3), lim::denorm_min(), T(1e-5) * lim::min(), lim::min(), lim::max(), T(0), -T(0), T(-1), inf, nan, T(1), T(3)};
    // (sigmoid(-x) = 1 / (1 + exp(x)): subnormal where exp(x) nears overflow)
    auto check = [](const char* name, const std::vector<T>& args, auto fn, auto want_fn) {
        for (std::size_t lane = 0; lane < 19; ++lane) {
            attend::tensor<T, 19> x;  // whole vectors of every width, then a tail
            for (std::size_t i = 0; i < 19; ++i) x.data()[i] = T(1);
            for (const T a : args) {
                x.data()[lane] = a;
                const auto r = attend::eval(fn(x));
                const T got = r.data()[lane], want = want_fn(a);
                BOOST_TEST_CONTEXT(name << "(" << std::hexfloat << a << ") at lane " << lane) {
                    if (std::isnan(want)) BOOST_TEST(std::isnan(got));
                    else if (std::isinf(want) || want == 0) BOOST_TEST(got == want);
                    else BOOST_TEST(std::abs(got - want) <= T(16) * lim::epsilon() * std::abs(want) + T(4) * lim::denorm_min(),
                                    std::hexfloat << got << " != " << want);
                }
            }
        }
    };
    check("exp", exp_args, [](const auto& x) { return attend::exp(x); }, [](T a) { return std::exp(a); });
    check("log", log_args, [](const auto& x) { return attend::log(x); }, [](T a) { return std::log(a); });
    check("sigmoid", exp_args, [](const auto& x) { return attend::sigmoid(-x); }, [](T a) { return T(1) / (T(1) + std::exp(a)); });
    check("tanh", exp_args, [](const auto& x) { return attend::tanh(x); }, [](T a) { return std::tanh(a); });
}

// A floating value cast to an integer type truncates toward zero and saturates at the type's
// range as the tree's lanes hold it (the largest float not above INT32_MAX is 2^31 - 128), NaN
// giving 0 and never -0, whatever the path: into a float destination (the tree's lanes), of a
// leaf or of a float tree into an integer destination, in whole vectors and the scalar tail (a
// C++ conversion of such values is undefined; UBSan checks the sanitizers' build).
namespace {
template <class T, class F>
double saturated(double x) {  // the reference, in double (long double for the end)
    if (std::isnan(x)) return 0;
    F hi = F(std::numeric_limits<T>::max());
    if (static_cast<long double>(hi) > static_cast<long double>(std::numeric_limits<T>::max())) hi = std::nextafter(hi, F(0));
    return std::min(std::max(std::trunc(x), double(std::numeric_limits<T>::min())), double(hi));
}
template <class T, class F>
void check_saturating_casts() {
    const F special[] = {F(300), F(1.5), F(-200), F(40000), F(NAN), F(INFINITY), F(-INFINITY), F(3e9), F(-3e9), F(127.9),
                         F(-128.9), F(-0.5), F(255.5), F(-1), F(2147483520), F(-2147483648.0), F(1e19), F(-1e19)};
    constexpr std::size_t n = std::size(special), N = 2 * n + 5;  // the specials in whole vectors and in the tail
    attend::tensor<F, N> x;
    for (std::size_t k = 0; k < N; ++k) x.data()[k] = F(k % 7) - F(3);
    for (std::size_t k = 0; k < n; ++k) x.data()[k] = special[k], x.data()[N - 1 - k] = special[k];
    const attend::tensor<F, N> in_lanes = attend::cast<T>(x);        // the tree's lanes
    const attend::tensor<T, N> stored = attend::cast<T>(x);          // an integer destination
    const attend::tensor<T, N> scaled = attend::cast<T>(x * F(1));  // a float tree, cast into integers
    for (std::size_t k = 0; k < N; ++k) {
        const double v = double(x.data()[k]), want = saturated<T, F>(v);
        BOOST_TEST_CONTEXT("cast of " << v << " at " << k) {
            BOOST_TEST(double(in_lanes.data()[k]) == want);
            BOOST_TEST((!std::signbit(in_lanes.data()[k]) || want < 0));  // no -0 from -0.5
            BOOST_TEST(double(stored.data()[k]) == want);
            BOOST_TEST(double(scaled.data()[k]) == want);
        }
    }
}
}  // namespace

BOOST_AUTO_TEST_CASE(float_to_integer_casts_saturate) {
    check_saturating_casts<std::int8_t, float>();
    check_saturating_casts<std::uint8_t, float>();
    check_saturating_casts<std::int16_t, double>();
    check_saturating_casts<std::int32_t, float>();
    check_saturating_casts<std::int32_t, double>();
    check_saturating_casts<std::uint32_t, double>();
    check_saturating_casts<std::int64_t, double>();
}

// An integer value held in floating lanes and stored to another integer type wraps as NumPy's
// astype between integers (a cast to one integer type, then the destination's): int16 300 into
// int8 is 44, int8 -1 into uint8 255, uint64 2^64 - 2048 into int64 -2048; so does a float tree's
// integer sum (nineteen int8 100s: 1900 wraps to 108, along either axis); a double truncates in
// double before float lanes hold it (2.9999999999999996 is 2).
BOOST_AUTO_TEST_CASE(integer_values_in_float_lanes_wrap_into_other_integer_types) {
    attend::tensor<float, 19> f;
    for (std::size_t k = 0; k < 19; ++k) f.data()[k] = k % 2 ? 300.0f : -1.0f;
    const attend::tensor<std::int8_t, 19> a = attend::cast<std::int16_t>(f);
    const attend::tensor<std::uint8_t, 19> b = attend::cast<std::int8_t>(f);
    const attend::tensor<std::uint32_t, 19> c = attend::cast<std::int32_t>(f);
    for (std::size_t k = 0; k < 19; ++k) {
        BOOST_TEST(int(a.data()[k]) == (k % 2 ? 44 : -1));
        BOOST_TEST(int(b.data()[k]) == (k % 2 ? 127 : 255));
        BOOST_TEST(c.data()[k] == (k % 2 ? 300u : 4294967295u));
    }
    attend::tensor<double, 19> d;
    for (std::size_t k = 0; k < 19; ++k) d.data()[k] = k % 2 ? 18446744073709549568.0 : 2.9999999999999996;
    const attend::tensor<std::int64_t, 19> e = attend::cast<std::uint64_t>(d);
    const attend::tensor<float, 19> g = attend::cast<std::int32_t>(d);
    for (std::size_t k = 0; k < 19; ++k) {
        BOOST_TEST(e.data()[k] == (k % 2 ? std::int64_t{-2048} : std::int64_t{2}));
        if (k % 2 == 0) BOOST_TEST(g.data()[k] == 2.0f);
    }
    attend::tensor<float, 19, 19> h;
    for (std::size_t k = 0; k < h.size; ++k) h.data()[k] = 100.0f;
    const attend::tensor<std::int8_t, 19, 1> rows = attend::sum<1>(attend::cast<std::int8_t>(h));
    const attend::tensor<std::int8_t, 1, 19> cols = attend::sum<0>(attend::cast<std::int8_t>(h));
    for (std::size_t k = 0; k < 19; ++k) {
        BOOST_TEST(int(rows.data()[k]) == 108);
        BOOST_TEST(int(cols.data()[k]) == 108);
    }
}

BOOST_AUTO_TEST_SUITE_END()
