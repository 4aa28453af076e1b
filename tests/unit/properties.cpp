// Property tests of the fused attention plan: thousands of random cases over a grid of static
// shapes (odd and even, small and medium), random mask densities (empty and full rows
// included), value magnitudes from 1e-3 to 1e3 with denormals, and NaNs that must poison exactly
// the outputs they reach. Each case is checked against a double reference with an error bound
// derived from float rounding of the scores (docs/numerics.md).
#include <attend/attend.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

using attend::tensor;

namespace {
struct rng {
    std::uint64_t s;
    std::uint32_t next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return std::uint32_t(s >> 33);
    }
    double uniform(double lo, double hi) { return lo + (hi - lo) * (next() / 2147483648.0); }
};

template <std::size_t NQ_, std::size_t NK_, std::size_t D_, std::size_t Cases_>
struct config {
    static constexpr std::size_t NQ = NQ_, NK = NK_, D = D_, cases = Cases_;
};
// Sizes below, at and past the tiles (32 queries, 48 keys, 16 lanes); 2,180 cases in all.
using grid = boost::mpl::list<config<1, 1, 1, 300>, config<2, 3, 4, 300>, config<7, 5, 3, 300>, config<16, 16, 16, 300>,
                              config<33, 17, 8, 300>, config<48, 49, 16, 300>, config<64, 100, 32, 200>, config<100, 64, 64, 180>,
                              config<37, 130, 24, 100>>;

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
}  // namespace

BOOST_AUTO_TEST_SUITE(properties)

BOOST_AUTO_TEST_CASE_TEMPLATE(random_attention_against_double, C, grid) {
    constexpr std::size_t NQ = C::NQ, NK = C::NK, D = C::D;
    auto q = std::make_unique<tensor<float, NQ, D>>();
    auto k = std::make_unique<tensor<float, NK, D>>();
    auto v = std::make_unique<tensor<float, NK, D>>();
    auto mask = std::make_unique<tensor<bool, NQ, NK>>();
    auto out = std::make_unique<tensor<float, NQ, D>>();
    rng r{NQ * 1000003u + NK * 1009u + D};
    std::size_t failures = 0;
    double worst = 0;  // largest error as a fraction of its bound
    for (std::size_t c = 0; c < C::cases; ++c) {
        const double qk_scale = std::vector<double>{1, 0.1, 3, 1e-3}[c % 4];       // logits up to ~9 D
        const double v_scale = std::vector<double>{1, 1e3, 1e-3, 1e-39}[(c / 4) % 4];  // 1e-39: denormal values
        const double density = std::vector<double>{0, 0.1, 0.5, 0.9, 1}[(c / 16) % 5];
        for (std::size_t n = 0; n < q->size; ++n) q->data()[n] = float(r.uniform(-1, 1) * qk_scale);
        for (std::size_t n = 0; n < k->size; ++n) k->data()[n] = float(r.uniform(-1, 1) * qk_scale);
        for (std::size_t n = 0; n < v->size; ++n) v->data()[n] = float(r.uniform(-1, 1) * v_scale);
        for (std::size_t n = 0; n < mask->size; ++n) mask->data()[n] = r.uniform(0, 1) < density;
        const std::size_t full_row = r.next() % NQ, empty_row = r.next() % NQ;
        for (std::size_t j = 0; j < NK; ++j) (*mask)(full_row, j) = true, (*mask)(empty_row, j) = false;
        // Every fourth case: a NaN in one query row, or in one key row.
        const int poison = c % 4 == 3 ? int(r.next() % 2) + 1 : 0;
        const std::size_t pq = r.next() % NQ, pk = r.next() % NK;
        if (poison == 1) (*q)(pq, r.next() % D) = float(nan_v);
        if (poison == 2) (*k)(pk, r.next() % D) = float(nan_v);

        *out = attend::scaled_dot_product_attention(*q, *k, *v, *mask);

        const double scale = 1 / std::sqrt(double(D));
        for (std::size_t i = 0; i < NQ; ++i) {
            std::vector<double> s(NK, -INFINITY);
            double m = -INFINITY, qmax = 0, kmax = 0, vmax = 0;
            for (std::size_t j = 0; j < NK; ++j) {
                if ((*mask)(i, j)) continue;
                double dot = 0;
                for (std::size_t d = 0; d < D; ++d) {
                    dot += double((*q)(i, d)) * (*k)(j, d);
                    qmax = std::max(qmax, std::abs(double((*q)(i, d))));
                    kmax = std::max(kmax, std::abs(double((*k)(j, d))));
                    vmax = std::max(vmax, std::abs(double((*v)(j, d))));
                }
                s[j] = dot * scale;
                m = std::isnan(s[j]) ? s[j] : std::max(m, s[j]);
            }
            // Score error of float evaluation: D products and sums, the scale and the exponent.
            const double delta = 8 * (D + 4) * 6e-8 * qmax * kmax * scale * std::sqrt(double(D)) + 4e-7;
            const double bound = 2 * delta * vmax + 1e-45;
            std::vector<double> p(NK, 0.0);  // the row's probabilities (NaN where a NaN reaches them)
            if (m != -INFINITY) {
                double z = 0;
                for (std::size_t j = 0; j < NK; ++j) z += std::exp(s[j] - m);
                for (std::size_t j = 0; j < NK; ++j) p[j] = std::exp(s[j] - m) / z;
            }
            for (std::size_t d = 0; d < D; ++d) {
                double want = 0;
                if (m != -INFINITY)
                    for (std::size_t j = 0; j < NK; ++j) want += p[j] * (*v)(j, d);
                const double got = (*out)(i, d);
                const bool reached = std::isnan(want);  // the NaN reaches this output in exact arithmetic
                bool ok;
                if (reached) ok = std::isnan(got);
                else if (std::isnan(got) || std::isinf(got)) ok = false;
                else {
                    ok = std::abs(got - want) <= bound;
                    worst = std::max(worst, std::abs(got - want) / bound);
                }
                if (!ok && failures++ < 5)
                    BOOST_ERROR("case " << c << " (poison " << poison << ", density " << density << ", |v| " << v_scale << ") at (" << i
                                        << ", " << d << "): got " << got << ", want " << want << ", bound " << bound);
            }
        }
    }
    BOOST_TEST(failures == 0u);
    BOOST_TEST_MESSAGE("worst error / bound over " << C::cases << " cases of (" << NQ << ", " << NK << ", " << D << "): " << worst);
}

BOOST_AUTO_TEST_SUITE_END()
