// Layers against the double reference, and reflected weights: load/save round trips, parameter
// counts, summaries, and every kind of bad input leaving the model untouched.
#include <array>
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
struct wide {  // double weights beyond float's range are finite
    BOOST_HANA_DEFINE_STRUCT(wide, (tensor<double, 3>, d));
};
struct flags {  // a bool member: bytes 0 and 1 only
    BOOST_HANA_DEFINE_STRUCT(flags, (tensor<float, 2>, w), (tensor<bool, 4>, keep));
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
    r = attend::nn::load_file(*m, path.c_str());
    BOOST_TEST((r.status == attend::nn::status::too_long));
    BOOST_TEST(r.message.find("is longer than the model's 544 bytes") != std::string::npos, r.message);
    std::remove(path.c_str());
    BOOST_TEST((attend::nn::load_file(*m, "/nonexistent/attend.bin").status == attend::nn::status::cannot_open));
    BOOST_TEST(same(*m, *before));

    // A double beyond float's range is finite; a double inf is not.
    wide w0{}, w1{};
    w0.d(0) = 1e300, w0.d(1) = -1e300, w0.d(2) = 5e-324;
    std::vector<std::byte> wb(attend::nn::byte_size<wide>());
    attend::nn::save(w0, wb);
    BOOST_TEST(bool(attend::nn::load(w1, wb, attend::nn::validation::finite)));
    BOOST_TEST(w1.d(0) == 1e300);
    w0.d(2) = std::numeric_limits<double>::infinity();
    attend::nn::save(w0, wb);
    BOOST_TEST((attend::nn::load(w1, wb, attend::nn::validation::finite).status == attend::nn::status::non_finite));

    // A bool member's byte other than 0 or 1 is refused, with or without validation (reading it
    // as bool would be undefined).
    flags g0{}, g1{};
    g0.keep(1) = true;
    std::vector<std::byte> gb(attend::nn::byte_size<flags>());
    attend::nn::save(g0, gb);
    BOOST_TEST(bool(attend::nn::load(g1, gb)));
    BOOST_TEST((g1.keep(1) && !g1.keep(0)));
    gb[8 + 2] = std::byte{2};
    g1.keep(1) = false;
    r = attend::nn::load(g1, gb);
    BOOST_TEST((r.status == attend::nn::status::invalid_bool));
    BOOST_TEST(r.message.find("keep[2] is the byte 2, not a bool") != std::string::npos, r.message);
    BOOST_TEST(!g1.keep(1));  // untouched

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

// The Llama layers: RMSNorm, rotary embeddings (also written over their own input), SwiGLU, the
// embedding lookup, and a decoder step over a KV cache, all against double references.
BOOST_AUTO_TEST_CASE(llama_layers_match_the_reference) {
    tensor<float, 2, 3, 16> x;
    tensor<float, 16> g;
    ref::fill(x, 31);
    ref::fill(g, 32, 0.5, 1.5);
    tensor<float, 2, 3, 16> n = attend::nn::rms_norm(x, g);
    ref::expect_all(n, [&](auto& i) {
        double ss = 0;
        for (std::size_t e = 0; e < 16; ++e) ss += ref::at(x, {i[0], i[1], e}) * ref::at(x, {i[0], i[1], e});
        return ref::at(x, i) / std::sqrt(ss / 16 + 1e-5) * ref::at(g, {i[2]});
    }, 1e-5);

    // Heads of 8: pair k of token t turns by (pos + t) * 10000^(-2k/8); pos = 37.
    tensor<float, 3, 16> r;
    ref::fill(r, 33);
    const tensor<float, 3, 16> r0 = r;
    auto rotated = [&](auto& i) {
        const std::size_t t = i[0], c = i[1], k = (c % 8) / 2, first = c - c % 2;
        const double a = double(37 + t) * std::pow(10000.0, -2.0 * double(k) / 8.0);
        const double u = r0(t, first), v = r0(t, first + 1);
        return c % 2 == 0 ? u * std::cos(a) - v * std::sin(a) : u * std::sin(a) + v * std::cos(a);
    };
    tensor<float, 3, 16> fresh = attend::nn::rope<8>(r, 37);
    ref::expect_all(fresh, rotated, 1e-5);
    auto rotations = std::make_unique<attend::nn::rotary_table<8, 40>>();
    tensor<float, 3, 16> tabled = attend::nn::rope(r, *rotations, 37);
    ref::expect_all(tabled, rotated, 1e-5);
    r = attend::nn::rope<8>(r, 37);  // the destination on the right side
    ref::expect_all(r, rotated, 1e-5);
    r = r0;
    r = attend::nn::rope(r, *rotations, 37);
    ref::expect_all(r, rotated, 1e-5);

    tensor<float, 4, 6> a, b;
    ref::fill(a, 34, -6.0, 6.0);
    ref::fill(b, 35);
    tensor<float, 4, 6> s = attend::nn::swiglu(a, b);
    ref::expect_all(s, [&](auto& i) { return ref::at(a, i) / (1 + std::exp(-ref::at(a, i))) * ref::at(b, i); }, 1e-5);

    tensor<float, 5, 3> table;
    ref::fill(table, 36);
    const tensor<std::int32_t, 4> ids{4, 0, 4, 2};
    tensor<float, 4, 3> e = attend::nn::embedding(table, ids);
    ref::expect_all(e, [&](auto& i) { return ref::at(table, {std::size_t(ids(i[0])), i[1]}); }, 0.0);
}

namespace {
// A decoder layer in double precision, one token at a time, in llama2.c's order of operations.
template <class C>
struct reference_decoder {
    static constexpr std::size_t D = C::dim, F = C::hidden, H = C::heads, KV = C::kv_dim, HD = C::head;
    std::vector<double> keys, values;  // (capacity, KV)
    reference_decoder() : keys(C::capacity * KV), values(C::capacity * KV) {}

    template <class W>
    static std::vector<double> apply(const W& w, const std::vector<double>& v, std::size_t rows, std::size_t cols) {
        std::vector<double> y(rows);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c) y[r] += double(w.data()[r * cols + c]) * v[c];
        return y;
    }
    template <class G>
    static std::vector<double> norm(const std::vector<double>& v, const G& g) {
        double ss = 0;
        for (double e : v) ss += e * e;
        std::vector<double> y(v.size());
        for (std::size_t k = 0; k < v.size(); ++k) y[k] = v[k] / std::sqrt(ss / double(v.size()) + 1e-5) * double(g.data()[k]);
        return y;
    }
    static void rotate(std::vector<double>& v, std::size_t pos) {
        for (std::size_t i = 0; i < v.size(); i += 2) {
            const double a = double(pos) * std::pow(10000.0, -double(i % HD) / double(HD)), x0 = v[i], x1 = v[i + 1];
            v[i] = x0 * std::cos(a) - x1 * std::sin(a);
            v[i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
        }
    }
    template <class W>
    void step(std::vector<double>& x, const W& w, std::size_t pos) {
        const auto xb = norm(x, w.attention_norm);
        auto q = apply(w.wq, xb, D, D), k = apply(w.wk, xb, KV, D);
        const auto v = apply(w.wv, xb, KV, D);
        rotate(q, pos);
        rotate(k, pos);
        std::copy(k.begin(), k.end(), keys.begin() + std::ptrdiff_t(pos * KV));
        std::copy(v.begin(), v.end(), values.begin() + std::ptrdiff_t(pos * KV));
        std::vector<double> att(D);
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t kh = h / C::group;
            std::vector<double> s(pos + 1);
            double mx = -INFINITY, z = 0;
            for (std::size_t t = 0; t <= pos; ++t) {
                for (std::size_t d = 0; d < HD; ++d) s[t] += q[h * HD + d] * keys[t * KV + kh * HD + d];
                s[t] /= std::sqrt(double(HD));
                mx = std::max(mx, s[t]);
            }
            for (std::size_t t = 0; t <= pos; ++t) z += std::exp(s[t] - mx);
            for (std::size_t t = 0; t <= pos; ++t)
                for (std::size_t d = 0; d < HD; ++d) att[h * HD + d] += std::exp(s[t] - mx) / z * values[t * KV + kh * HD + d];
        }
        const auto o = apply(w.wo, att, D, D);
        for (std::size_t k2 = 0; k2 < D; ++k2) x[k2] += o[k2];
        const auto xf = norm(x, w.ffn_norm);
        auto h1 = apply(w.w1, xf, F, D);
        const auto h3 = apply(w.w3, xf, F, D);
        for (std::size_t k2 = 0; k2 < F; ++k2) h1[k2] = h1[k2] / (1 + std::exp(-h1[k2])) * h3[k2];
        const auto down = apply(w.w2, h1, D, F);
        for (std::size_t k2 = 0; k2 < D; ++k2) x[k2] += down[k2];
    }
};
}  // namespace

// Two decoder layers (grouped queries: 4 heads over 2 KV heads) run for 9 tokens, against the
// double reference; the capacity (12) exceeds the tokens, so cache rows past pos must not count.
BOOST_AUTO_TEST_CASE(decoder_steps_match_the_reference) {
    using C = attend::nn::decoder_config<32, 40, 4, 2, 12>;
    struct layer_weights {
        tensor<float, 32> an, fn;
        tensor<float, 32, 32> wq, wo;
        tensor<float, 16, 32> wk, wv;
        tensor<float, 40, 32> w1, w3;
        tensor<float, 32, 40> w2;
    };
    auto store = std::make_unique<std::array<layer_weights, 2>>();
    std::vector<attend::nn::decoder_weights<C>> views;
    for (std::uint32_t l = 0; l < 2; ++l) {
        auto& s = (*store)[l];
        ref::fill(s.an, 40 + 10 * l, 0.5, 1.5);
        ref::fill(s.fn, 41 + 10 * l, 0.5, 1.5);
        ref::fill(s.wq, 42 + 10 * l, -0.3, 0.3);
        ref::fill(s.wk, 43 + 10 * l, -0.3, 0.3);
        ref::fill(s.wv, 44 + 10 * l, -0.3, 0.3);
        ref::fill(s.wo, 45 + 10 * l, -0.3, 0.3);
        ref::fill(s.w1, 46 + 10 * l, -0.3, 0.3);
        ref::fill(s.w2, 47 + 10 * l, -0.3, 0.3);
        ref::fill(s.w3, 48 + 10 * l, -0.3, 0.3);
        views.push_back({s.an, s.wq, s.wk, s.wv, s.wo, s.fn, s.w1, s.w2, s.w3});
    }
    auto cache = std::make_unique<std::array<attend::nn::kv_cache<C>, 2>>();
    ref::fill((*cache)[0].keys, 49);  // stale rows past pos must not be read
    ref::fill((*cache)[1].values, 50);
    attend::nn::decoder_scratch<C> scratch;
    std::array<reference_decoder<C>, 2> want;
    for (std::size_t pos = 0; pos < 9; ++pos) {
        tensor<float, 1, 32> x;
        ref::fill(x, 60 + std::uint32_t(pos));
        std::vector<double> xr(x.data(), x.data() + 32);
        for (std::size_t l = 0; l < 2; ++l) {
            attend::nn::decoder_step(x, views[l], (*cache)[l], pos, scratch);
            want[l].step(xr, views[l], pos);
        }
        for (std::size_t k = 0; k < 32; ++k) BOOST_TEST(ref::close(x(0, k), xr[k], 2e-5), "pos " << pos << " [" << k << "]: " << x(0, k) << " vs " << xr[k]);
    }
}

BOOST_AUTO_TEST_SUITE_END()
