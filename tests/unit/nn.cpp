// Layers against the double reference, and reflected weights: load/save round trips, parameter
// counts, summaries, and every kind of bad input leaving the model untouched.
#include <attend/nn.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <vector>

#include "reference.hpp"

using attend::tensor;

namespace {
constexpr std::size_t E = 8, D = 4;

struct projection {
    BOOST_HANA_DEFINE_STRUCT(projection, (tensor<float, E, D>, w_q), (tensor<float, E, D>, w_k), (tensor<float, E, D>, w_v));
};
struct model {
    BOOST_HANA_DEFINE_STRUCT(model, (projection, head), (tensor<float, D, E>, w_o), (tensor<float, E>, bias));
};
static_assert(attend::nn::parameter_count<model>() == 3 * E * D + D * E + E);
static_assert(attend::nn::byte_size<model>() == 4 * (3 * E * D + D * E + E));

void fill(model& m, std::uint32_t seed) {
    ref::fill(m.head.w_q, seed);
    ref::fill(m.head.w_k, seed + 1);
    ref::fill(m.head.w_v, seed + 2);
    ref::fill(m.w_o, seed + 3);
    ref::fill(m.bias, seed + 4);
}

bool same(const model& a, const model& b) {
    std::vector<std::byte> x(attend::nn::byte_size<model>()), y(x.size());
    attend::nn::save(a, x);
    attend::nn::save(b, y);
    return x == y;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(nn)

BOOST_AUTO_TEST_CASE(weights_round_trip_and_summary) {
    auto a = std::make_unique<model>(), b = std::make_unique<model>();
    fill(*a, 1);
    std::vector<std::byte> bytes(attend::nn::byte_size<model>());
    BOOST_TEST(bool(attend::nn::save(*a, bytes)));
    // Little-endian, declaration order: the first bytes are head.w_q[0].
    float first;
    std::memcpy(&first, bytes.data(), 4);
    BOOST_TEST(first == a->head.w_q.data()[0]);
    BOOST_TEST(bool(attend::nn::load(*b, bytes, attend::nn::validation::finite)));
    BOOST_TEST(same(*a, *b));

    const std::string path = "attend_nn_test_weights.bin";
    BOOST_TEST(bool(attend::nn::save_file(*a, path.c_str())));
    auto c = std::make_unique<model>();
    BOOST_TEST(bool(attend::nn::load_file(*c, path.c_str())));
    BOOST_TEST(same(*a, *c));
    std::remove(path.c_str());

    const std::string s = attend::nn::summary(*a);
    BOOST_TEST(s.find("head.w_q (8, 4) 32\n") != std::string::npos, s);
    BOOST_TEST(s.find("w_o (4, 8) 32\n") != std::string::npos, s);
    BOOST_TEST(s.find("total 136 parameters, 544 bytes") != std::string::npos, s);
}

BOOST_AUTO_TEST_CASE(bad_input_leaves_the_model_untouched) {
    auto m = std::make_unique<model>(), before = std::make_unique<model>();
    fill(*m, 7);
    *before = *m;
    std::vector<std::byte> good(attend::nn::byte_size<model>());
    auto other = std::make_unique<model>();
    fill(*other, 9);
    attend::nn::save(*other, good);

    std::vector<std::byte> shorter(good.begin(), good.end() - 1), longer(good);
    longer.push_back(std::byte{0});
    auto r = attend::nn::load(*m, shorter);
    BOOST_TEST((r.status == attend::nn::status::too_short));
    BOOST_TEST(r.message.find("543 bytes given, the model has 544") != std::string::npos, r.message);
    BOOST_TEST((attend::nn::load(*m, longer).status == attend::nn::status::too_long));
    BOOST_TEST(same(*m, *before));

    // A NaN in the last tensor: refused when validation is asked for, nothing written before it.
    std::vector<std::byte> poisoned(good);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(poisoned.data() + poisoned.size() - 4, &nan, 4);
    r = attend::nn::load(*m, poisoned, attend::nn::validation::finite);
    BOOST_TEST((r.status == attend::nn::status::non_finite));
    BOOST_TEST(r.message.find("bias[7] is not finite") != std::string::npos, r.message);
    BOOST_TEST(same(*m, *before));

    // Files: truncated, too long, missing.
    const std::string path = "attend_nn_test_truncated.bin";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(good.data(), 1, good.size() / 2, f);
    std::fclose(f);
    r = attend::nn::load_file(*m, path.c_str());
    BOOST_TEST((r.status == attend::nn::status::too_short));
    BOOST_TEST(r.message.find("truncated") != std::string::npos, r.message);
    f = std::fopen(path.c_str(), "wb");
    std::fwrite(longer.data(), 1, longer.size(), f);
    std::fclose(f);
    BOOST_TEST((attend::nn::load_file(*m, path.c_str()).status == attend::nn::status::too_long));
    std::remove(path.c_str());
    BOOST_TEST((attend::nn::load_file(*m, "/nonexistent/attend.bin").status == attend::nn::status::cannot_open));
    BOOST_TEST(same(*m, *before));

    // Too small a buffer to save into.
    std::vector<std::byte> small(10);
    BOOST_TEST((attend::nn::save(*m, small).status == attend::nn::status::too_short));
}

BOOST_AUTO_TEST_CASE(layers_match_the_reference) {
    constexpr std::size_t B = 2, T = 7, H = 2;
    tensor<float, B, T, E> x;
    ref::fill(x, 21);
    auto m = std::make_unique<model>();
    fill(*m, 22);
    tensor<float, E, E> wq, wk, wv, wo;
    ref::fill(wq, 23);
    ref::fill(wk, 24);
    ref::fill(wv, 25);
    ref::fill(wo, 26);

    // Projections of batched inputs: (B, T, E) x (E, D) -> (B, T, D).
    tensor<float, B, T, D> q = attend::nn::linear(x, m->head.w_q);
    ref::expect_all(q, [&](auto& i) {
        double s = 0;
        for (std::size_t e = 0; e < E; ++e) s += ref::at(x, {i[0], i[1], e}) * ref::at(m->head.w_q, {e, i[2]});
        return s;
    }, 1e-5);

    // Single-head causal self-attention, then W_O and a bias: the seed-003 layer.
    auto layer = attend::nn::linear(attend::nn::self_attention<attend::nn::masking::causal>(x, m->head.w_q, m->head.w_k, m->head.w_v),
                                    m->w_o, m->bias);
    tensor<float, B, T, E> y = layer;
    // Multi-head attention with W_O.
    auto mha = attend::nn::multi_head_attention<H, attend::nn::masking::causal>(x, wq, wk, wv, wo);
    BOOST_TEST(attend::explain(mha).find("fused_attention") != std::string::npos, attend::explain(mha));
    tensor<float, B, T, E> z = mha;

    auto project = [&](std::size_t b, const auto& w, std::size_t cols) {
        std::vector<double> r(T * cols);
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < cols; ++c)
                for (std::size_t e = 0; e < E; ++e) r[t * cols + c] += double(x(b, t, e)) * w.data()[e * cols + c];
        return r;
    };
    auto attention = [&](const std::vector<double>& Q, const std::vector<double>& K, const std::vector<double>& V, std::size_t cols,
                         std::size_t c0, std::size_t dk) {
        std::vector<double> out(T * dk);
        for (std::size_t i = 0; i < T; ++i) {
            std::vector<double> s(T);
            double mx = -INFINITY, zsum = 0;
            for (std::size_t j = 0; j <= i; ++j) {
                for (std::size_t d = 0; d < dk; ++d) s[j] += Q[i * cols + c0 + d] * K[j * cols + c0 + d];
                s[j] /= std::sqrt(double(dk));
                mx = std::max(mx, s[j]);
            }
            for (std::size_t j = 0; j <= i; ++j) zsum += std::exp(s[j] - mx);
            for (std::size_t j = 0; j <= i; ++j)
                for (std::size_t d = 0; d < dk; ++d) out[i * dk + d] += std::exp(s[j] - mx) / zsum * V[j * cols + c0 + d];
        }
        return out;
    };
    for (std::size_t b = 0; b < B; ++b) {
        const auto a = attention(project(b, m->head.w_q, D), project(b, m->head.w_k, D), project(b, m->head.w_v, D), D, 0, D);
        const auto Q = project(b, wq, E), K = project(b, wk, E), V = project(b, wv, E);
        std::vector<double> concat(T * E);
        for (std::size_t h = 0; h < H; ++h) {
            const auto o = attention(Q, K, V, E, h * (E / H), E / H);
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t d = 0; d < E / H; ++d) concat[t * E + h * (E / H) + d] = o[t * (E / H) + d];
        }
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t e = 0; e < E; ++e) {
                double want_y = m->bias(e), want_z = 0;
                for (std::size_t d = 0; d < D; ++d) want_y += a[t * D + d] * m->w_o(d, e);
                for (std::size_t c = 0; c < E; ++c) want_z += concat[t * E + c] * wo(c, e);
                BOOST_TEST(ref::close(y(b, t, e), want_y, 1e-5), y(b, t, e) << " vs " << want_y);
                BOOST_TEST(ref::close(z(b, t, e), want_z, 1e-5), z(b, t, e) << " vs " << want_z);
            }
    }
}

BOOST_AUTO_TEST_CASE(weights_in_constant_memory) {
    // Weights in flash: const arrays seen through views, used by the same layers.
    static constexpr float wq[E * D] = {0.1f, 0.2f, -0.1f, 0.0f, 0.3f, -0.2f, 0.1f, 0.1f, 0.0f, 0.1f, 0.2f, -0.3f, 0.2f, 0.0f, 0.1f, 0.1f,
                                        -0.1f, 0.1f, 0.0f, 0.2f, 0.1f, 0.1f, 0.1f, -0.1f, 0.2f, -0.1f, 0.3f, 0.0f, 0.0f, 0.2f, 0.1f, 0.1f};
    struct flash_model {
        BOOST_HANA_DEFINE_STRUCT(flash_model, (attend::tensor_ref<const float, E, D>, w_q));
    };
    const flash_model fm{attend::tensor_ref<const float, E, D>(wq)};
    static_assert(attend::nn::parameter_count<flash_model>() == E * D);
    BOOST_TEST(attend::nn::summary(fm).find("w_q (8, 4) 32") != std::string::npos);
    tensor<float, 3, E> x;
    ref::fill(x, 31);
    tensor<float, 3, D> q = attend::nn::linear(x, fm.w_q);
    ref::expect_all(q, [&](auto& i) {
        double s = 0;
        for (std::size_t e = 0; e < E; ++e) s += ref::at(x, {i[0], e}) * double(wq[e * D + i[1]]);
        return s;
    }, 1e-5);
}

BOOST_AUTO_TEST_SUITE_END()
