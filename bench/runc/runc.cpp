// A per-token forward pass in the style of llama2.c's run.c, the baseline of bench/llama2.cpp:
// plain loops, one dot product per weight row (rows split across threads by OpenMP), attention
// head by head and key by key. Built -Ofast -march=native, as run.c's `runfast` target is.
#include "runc.hpp"

#include <cmath>
#include <vector>

namespace runc {

struct model {
    int dim, hidden, layers, heads, kv_heads, vocab, seq_len, head, kv_dim;
    const float *embedding, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
    std::vector<float> x, xb, xb2, hb, hb2, q, att, logits, key_cache, value_cache;
};

std::shared_ptr<model> make(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int seq_len, const float* w) {
    auto m = std::make_shared<model>();
    const bool shared = vocab > 0;
    vocab = shared ? vocab : -vocab;
    const int head = dim / heads, kv_dim = kv_heads * head;
    *m = model{dim, hidden, layers, heads, kv_heads, vocab, seq_len, head, kv_dim, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    const std::size_t L = std::size_t(layers), D = std::size_t(dim), KV = std::size_t(kv_dim), F = std::size_t(hidden);
    auto take = [&](std::size_t n) { const float* p = w; w += n; return p; };
    m->embedding = take(std::size_t(vocab) * D);
    m->rms_att = take(L * D);
    m->wq = take(L * D * D);
    m->wk = take(L * KV * D);
    m->wv = take(L * KV * D);
    m->wo = take(L * D * D);
    m->rms_ffn = take(L * D);
    m->w1 = take(L * F * D);
    m->w2 = take(L * D * F);
    m->w3 = take(L * F * D);
    m->rms_final = take(D);
    take(std::size_t(seq_len) * std::size_t(head));  // the two RoPE tables, unused
    m->wcls = shared ? m->embedding : w;
    m->x.resize(D), m->xb.resize(D), m->xb2.resize(D), m->q.resize(D), m->hb.resize(F), m->hb2.resize(F);
    m->att.resize(std::size_t(heads) * std::size_t(seq_len)), m->logits.resize(std::size_t(vocab));
    m->key_cache.resize(L * std::size_t(seq_len) * KV), m->value_cache.resize(L * std::size_t(seq_len) * KV);
    return m;
}

namespace {

void rmsnorm(float* o, const float* x, const float* weight, int size) {
    float ss = 0.0f;
    for (int j = 0; j < size; j++) ss += x[j] * x[j];
    ss = 1.0f / std::sqrt(ss / float(size) + 1e-5f);
    for (int j = 0; j < size; j++) o[j] = weight[j] * (ss * x[j]);
}

void softmax(float* x, int size) {
    float max_val = x[0];
    for (int i = 1; i < size; i++) max_val = x[i] > max_val ? x[i] : max_val;
    float sum = 0.0f;
    for (int i = 0; i < size; i++) sum += x[i] = std::exp(x[i] - max_val);
    for (int i = 0; i < size; i++) x[i] /= sum;
}

// xout (d) = W (d, n) x (n): one dot product per row.
void matmul(float* xout, const float* x, const float* w, int n, int d) {
#pragma omp parallel for
    for (int i = 0; i < d; i++) {
        float val = 0.0f;
        for (int j = 0; j < n; j++) val += w[std::size_t(i) * std::size_t(n) + std::size_t(j)] * x[j];
        xout[i] = val;
    }
}

void rotate(model& m, float* k, int pos) {
    for (int i = 0; i < m.dim; i += 2) {
        const float freq = 1.0f / std::pow(10000.0f, float(i % m.head) / float(m.head));
        const float val = float(pos) * freq, fcr = std::cos(val), fci = std::sin(val);
        for (int v = 0; v < (i < m.kv_dim ? 2 : 1); v++) {
            float* vec = v == 0 ? m.q.data() : k;
            const float v0 = vec[i], v1 = vec[i + 1];
            vec[i] = v0 * fcr - v1 * fci;
            vec[i + 1] = v0 * fci + v1 * fcr;
        }
    }
}

void attention(model& m, std::size_t layer_off, int pos) {
    const int group = m.heads / m.kv_heads;
    for (int h = 0; h < m.heads; h++) {
        const float* q = m.q.data() + h * m.head;
        float* att = m.att.data() + std::size_t(h) * std::size_t(m.seq_len);
        const std::size_t kv_off = std::size_t(h / group * m.head);
        for (int t = 0; t <= pos; t++) {
            const float* k = m.key_cache.data() + layer_off + std::size_t(t) * std::size_t(m.kv_dim) + kv_off;
            float score = 0.0f;
            for (int i = 0; i < m.head; i++) score += q[i] * k[i];
            att[t] = score / std::sqrt(float(m.head));
        }
        softmax(att, pos + 1);
        float* xb = m.xb.data() + h * m.head;
        for (int i = 0; i < m.head; i++) xb[i] = 0.0f;
        for (int t = 0; t <= pos; t++) {
            const float* v = m.value_cache.data() + layer_off + std::size_t(t) * std::size_t(m.kv_dim) + kv_off;
            for (int i = 0; i < m.head; i++) xb[i] += att[t] * v[i];
        }
    }
}

}  // namespace

const float* forward(model& m, int token, int pos) {
    const int D = m.dim, KV = m.kv_dim, F = m.hidden;
    const std::size_t d = std::size_t(D), kv = std::size_t(KV), f = std::size_t(F);
    for (int i = 0; i < D; i++) m.x[std::size_t(i)] = m.embedding[std::size_t(token) * d + std::size_t(i)];
    for (std::size_t l = 0; l < std::size_t(m.layers); l++) {
        rmsnorm(m.xb.data(), m.x.data(), m.rms_att + l * d, D);
        const std::size_t layer_off = l * std::size_t(m.seq_len) * kv;
        float* k = m.key_cache.data() + layer_off + std::size_t(pos) * kv;
        float* v = m.value_cache.data() + layer_off + std::size_t(pos) * kv;
        matmul(m.q.data(), m.xb.data(), m.wq + l * d * d, D, D);
        matmul(k, m.xb.data(), m.wk + l * d * kv, D, KV);
        matmul(v, m.xb.data(), m.wv + l * d * kv, D, KV);
        rotate(m, k, pos);
        attention(m, layer_off, pos);
        matmul(m.xb2.data(), m.xb.data(), m.wo + l * d * d, D, D);
        for (std::size_t i = 0; i < d; i++) m.x[i] += m.xb2[i];
        rmsnorm(m.xb.data(), m.x.data(), m.rms_ffn + l * d, D);
        matmul(m.hb.data(), m.xb.data(), m.w1 + l * d * f, D, F);
        matmul(m.hb2.data(), m.xb.data(), m.w3 + l * d * f, D, F);
        for (std::size_t i = 0; i < f; i++) {
            float val = m.hb[i];
            val *= 1.0f / (1.0f + std::exp(-val));
            m.hb[i] = val * m.hb2[i];
        }
        matmul(m.xb.data(), m.hb.data(), m.w2 + l * d * f, F, D);
        for (std::size_t i = 0; i < d; i++) m.x[i] += m.xb[i];
    }
    rmsnorm(m.x.data(), m.x.data(), m.rms_final, D);
    matmul(m.logits.data(), m.x.data(), m.wcls, D, m.vocab);
    return m.logits.data();
}

}  // namespace runc
