// Results that IEEE 754 fixes exactly, on every target the tests are built for (native, SSE2,
// x86-64-v3, aarch64 NEON): sqrt is correctly rounded, so it must match std::sqrt bit for bit,
// +inf, -0 and denormals included, in the vector body and in the scalar tail.
#include <attend/attend.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>

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

BOOST_AUTO_TEST_SUITE_END()
