/* A per-token forward pass in the style of llama2.c's run.c, the baseline of bench/llama2.cpp:
   plain loops, one dot product per weight row (rows split across threads by OpenMP), attention
   head by head and key by key. C in the subset C++ also compiles (runc.h). */
#include "runc.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

struct runc_model {
    int dim, hidden, layers, heads, kv_heads, vocab, seq_len, head, kv_dim;
    const float *embedding, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
    float *x, *xb, *xb2, *hb, *hb2, *q, *att, *logits, *key_cache, *value_cache;
};

static float* runc_zeros(size_t n) { return (float*)calloc(n, sizeof(float)); }

runc_model* runc_make(int dim, int hidden, int layers, int heads, int kv_heads, int vocab, int seq_len, const float* w) {
    runc_model* m = (runc_model*)calloc(1, sizeof(runc_model));
    if (!m) return m;
    const int shared = vocab > 0;
    vocab = shared ? vocab : -vocab;
    const int head = dim / heads, kv_dim = kv_heads * head;
    const size_t L = (size_t)layers, D = (size_t)dim, KV = (size_t)kv_dim, F = (size_t)hidden;
    m->dim = dim, m->hidden = hidden, m->layers = layers, m->heads = heads, m->kv_heads = kv_heads;
    m->vocab = vocab, m->seq_len = seq_len, m->head = head, m->kv_dim = kv_dim;
    m->embedding = w, w += (size_t)vocab * D;
    m->rms_att = w, w += L * D;
    m->wq = w, w += L * D * D;
    m->wk = w, w += L * KV * D;
    m->wv = w, w += L * KV * D;
    m->wo = w, w += L * D * D;
    m->rms_ffn = w, w += L * D;
    m->w1 = w, w += L * F * D;
    m->w2 = w, w += L * D * F;
    m->w3 = w, w += L * F * D;
    m->rms_final = w, w += D;
    w += (size_t)seq_len * (size_t)head; /* the two RoPE tables, unused */
    m->wcls = shared ? m->embedding : w;
    m->x = runc_zeros(D), m->xb = runc_zeros(D), m->xb2 = runc_zeros(D), m->q = runc_zeros(D);
    m->hb = runc_zeros(F), m->hb2 = runc_zeros(F);
    m->att = runc_zeros((size_t)heads * (size_t)seq_len), m->logits = runc_zeros((size_t)vocab);
    m->key_cache = runc_zeros(L * (size_t)seq_len * KV), m->value_cache = runc_zeros(L * (size_t)seq_len * KV);
    if (!m->x || !m->xb || !m->xb2 || !m->q || !m->hb || !m->hb2 || !m->att || !m->logits || !m->key_cache || !m->value_cache) {
        runc_free(m);
        return NULL;
    }
    return m;
}

void runc_free(runc_model* m) {
    if (!m) return;
    free(m->x), free(m->xb), free(m->xb2), free(m->q), free(m->hb), free(m->hb2);
    free(m->att), free(m->logits), free(m->key_cache), free(m->value_cache);
    free(m);
}

static void rmsnorm(float* o, const float* x, const float* weight, int size) {
    float ss = 0.0f;
    for (int j = 0; j < size; j++) ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / (float)size + 1e-5f);
    for (int j = 0; j < size; j++) o[j] = weight[j] * (ss * x[j]);
}

static void softmax(float* x, int size) {
    float max_val = x[0];
    for (int i = 1; i < size; i++) max_val = x[i] > max_val ? x[i] : max_val;
    float sum = 0.0f;
    for (int i = 0; i < size; i++) sum += x[i] = expf(x[i] - max_val);
    for (int i = 0; i < size; i++) x[i] /= sum;
}

/* xout (d) = W (d, n) x (n): one dot product per row. */
static void matmul(float* xout, const float* x, const float* w, int n, int d) {
    int i;
#pragma omp parallel for private(i)
    for (i = 0; i < d; i++) {
        float val = 0.0f;
        for (int j = 0; j < n; j++) val += w[(size_t)i * (size_t)n + (size_t)j] * x[j];
        xout[i] = val;
    }
}

static void rotate(runc_model* m, float* k, int pos) {
    for (int i = 0; i < m->dim; i += 2) {
        const float freq = 1.0f / powf(10000.0f, (float)(i % m->head) / (float)m->head);
        const float val = (float)pos * freq, fcr = cosf(val), fci = sinf(val);
        for (int v = 0; v < (i < m->kv_dim ? 2 : 1); v++) {
            float* vec = v == 0 ? m->q : k;
            const float v0 = vec[i], v1 = vec[i + 1];
            vec[i] = v0 * fcr - v1 * fci;
            vec[i + 1] = v0 * fci + v1 * fcr;
        }
    }
}

static void attention(runc_model* m, size_t layer_off, int pos) {
    const int group = m->heads / m->kv_heads;
    for (int h = 0; h < m->heads; h++) {
        const float* q = m->q + h * m->head;
        float* att = m->att + (size_t)h * (size_t)m->seq_len;
        const size_t kv_off = (size_t)(h / group * m->head);
        for (int t = 0; t <= pos; t++) {
            const float* k = m->key_cache + layer_off + (size_t)t * (size_t)m->kv_dim + kv_off;
            float score = 0.0f;
            for (int i = 0; i < m->head; i++) score += q[i] * k[i];
            att[t] = score / sqrtf((float)m->head);
        }
        softmax(att, pos + 1);
        float* xb = m->xb + h * m->head;
        for (int i = 0; i < m->head; i++) xb[i] = 0.0f;
        for (int t = 0; t <= pos; t++) {
            const float* v = m->value_cache + layer_off + (size_t)t * (size_t)m->kv_dim + kv_off;
            for (int i = 0; i < m->head; i++) xb[i] += att[t] * v[i];
        }
    }
}

const float* runc_forward(runc_model* m, int token, int pos) {
    const int D = m->dim, KV = m->kv_dim, F = m->hidden;
    const size_t d = (size_t)D, kv = (size_t)KV, f = (size_t)F;
    for (size_t i = 0; i < d; i++) m->x[i] = m->embedding[(size_t)token * d + i];
    for (size_t l = 0; l < (size_t)m->layers; l++) {
        rmsnorm(m->xb, m->x, m->rms_att + l * d, D);
        const size_t layer_off = l * (size_t)m->seq_len * kv;
        float* k = m->key_cache + layer_off + (size_t)pos * kv;
        float* v = m->value_cache + layer_off + (size_t)pos * kv;
        matmul(m->q, m->xb, m->wq + l * d * d, D, D);
        matmul(k, m->xb, m->wk + l * d * kv, D, KV);
        matmul(v, m->xb, m->wv + l * d * kv, D, KV);
        rotate(m, k, pos);
        attention(m, layer_off, pos);
        matmul(m->xb2, m->xb, m->wo + l * d * d, D, D);
        for (size_t i = 0; i < d; i++) m->x[i] += m->xb2[i];
        rmsnorm(m->xb, m->x, m->rms_ffn + l * d, D);
        matmul(m->hb, m->xb, m->w1 + l * d * f, D, F);
        matmul(m->hb2, m->xb, m->w3 + l * d * f, D, F);
        for (size_t i = 0; i < f; i++) {
            float val = m->hb[i];
            val *= 1.0f / (1.0f + expf(-val));
            m->hb[i] = val * m->hb2[i];
        }
        matmul(m->xb, m->hb, m->w2 + l * d * f, F, D);
        for (size_t i = 0; i < d; i++) m->x[i] += m->xb[i];
    }
    rmsnorm(m->x, m->x, m->rms_final, D);
    matmul(m->logits, m->x, m->wcls, D, m->vocab);
    return m->logits;
}

const char* runc_compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}
