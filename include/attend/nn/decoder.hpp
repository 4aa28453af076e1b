// attend/nn/decoder.hpp — a Llama-style decoder layer run one token at a time: its shapes
// (decoder_config), one layer's weights as views in the checkpoint layout, the KV cache of static
// capacity filled to a run-time length, and the step that runs one layer for one new token.
//
// The step is pre-norm: x += attention(rms_norm(x)); x += ffn(rms_norm(x)), with rotary positions,
// grouped-query attention over the cache (the decode nest) and a SwiGLU feed-forward. Every
// projection is a one-token matvec on weights stored (out, in), as PyTorch and llama2.c store them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "layers.hpp"

namespace attend::check {
// A decoder's heads split its width evenly, the query heads group evenly over the KV heads, and
// a head has an even width (rotary pairs).
template <std::size_t Dim, std::size_t Heads, std::size_t KVHeads>
struct decoder_heads {
    static constexpr bool ok = Heads > 0 && KVHeads > 0 && Dim % Heads == 0 && Heads % KVHeads == 0 && (Dim / Heads) % 2 == 0;
};
}  // namespace attend::check

namespace attend::nn {

// Width, feed-forward width, query heads, key/value heads (fewer: grouped-query attention) and the
// cache capacity (the longest sequence).
template <std::size_t Dim, std::size_t Hidden, std::size_t Heads, std::size_t KVHeads, std::size_t Capacity>
struct decoder_config {
    static_assert(check::decoder_heads<Dim, Heads, KVHeads>::ok,
                  "attend::nn::decoder_config: Heads must divide Dim into even head widths, and KVHeads divide Heads");
    static constexpr std::size_t dim = Dim, hidden = Hidden, heads = Heads, kv_heads = KVHeads, capacity = Capacity;
    static constexpr std::size_t head = Dim / Heads, kv_dim = KVHeads * head, group = Heads / KVHeads;
};

// One layer's weights, viewed where they are stored. Projections are (out, in).
template <class C, class T = const float>
struct decoder_weights {
    tensor_ref<T, C::dim> attention_norm;
    tensor_ref<T, C::dim, C::dim> wq;
    tensor_ref<T, C::kv_dim, C::dim> wk, wv;
    tensor_ref<T, C::dim, C::dim> wo;
    tensor_ref<T, C::dim> ffn_norm;
    tensor_ref<T, C::hidden, C::dim> w1;  // gate
    tensor_ref<T, C::dim, C::hidden> w2;  // down
    tensor_ref<T, C::hidden, C::dim> w3;  // up
};

// One layer's keys and values, (KVHeads, Capacity, Head) each; a step at position pos writes row
// pos and reads rows 0 .. pos. Large: keep it on huge-page memory (attend::make_huge), the heap or
// in static storage.
template <class C, class T = float>
struct kv_cache {
    tensor<T, C::kv_heads, C::capacity, C::head> keys, values;
};

// The work space of a step, reused from token to token (a step allocates nothing), and the
// rotations of every position. Large for long capacities: keep it on the heap.
template <class C>
struct decoder_scratch {
    rotary_table<C::head, C::capacity> rotary;
    tensor<float, 1, C::dim> normed, q, attended;
    tensor<float, 1, C::kv_dim> k, v;
    tensor<float, 1, C::hidden> gate, up;
};

// Runs one layer on the token at position pos (x: its (1, Dim) residual stream, updated in place).
// Weights and cache may hold bf16 or f16: the step computes in float and rounds the new key and
// value rows to the cache's type as it writes them.
template <class C, class T, class KT, class Target = target>
void decoder_step(tensor<float, 1, C::dim>& x, const decoder_weights<C, T>& w, kv_cache<C, KT>& cache, std::size_t pos,
                  decoder_scratch<C>& s) {
    constexpr std::size_t H = C::kv_heads, G = C::group, D = C::head;
    if (pos >= C::capacity) {
        char what[120];
        std::snprintf(what, sizeof what, "position %zu is past the cache's capacity of %zu positions", pos, C::capacity);
        check::stop("nn::decoder_step", what);
    }
    s.normed = rms_norm(x, w.attention_norm);
    s.q = matmul(s.normed, transpose(w.wq));
    s.q = rope(s.q, s.rotary, pos);
    s.k = matmul(s.normed, transpose(w.wk));
    s.v = matmul(s.normed, transpose(w.wv));
    slice<1, 1>(cache.keys, pos) = cast<KT>(reshape<H, 1, D>(rope(s.k, s.rotary, pos)));
    slice<1, 1>(cache.values, pos) = cast<KT>(reshape<H, 1, D>(s.v));
    const auto later = iota<2, H, G, C::capacity>() > static_cast<std::int64_t>(pos);  // keys after this token
    tensor_ref<float, H, G, D>(s.attended.data()) =
        scaled_dot_product_attention(reshape<H, G, D>(s.q), cache.keys, cache.values, later);
    x = matmul(s.attended, transpose(w.wo)) + x;
    s.normed = rms_norm(x, w.ffn_norm);
    s.gate = matmul(s.normed, transpose(w.w1));
    s.up = matmul(s.normed, transpose(w.w3));
    s.gate = swiglu(s.gate, s.up);
    x = matmul(s.gate, transpose(w.w2)) + x;
}

}  // namespace attend::nn
