// attend/nn/layers.hpp — model layers written with the public expressions, so they take the
// same plans as the formulas they stand for (projections are contractions, attention is fused).
//
// Shapes: x (..., T, E) — any leading batch axes; weights (E, D), applied on the right as in the
// seeds' X W_Q. Each function returns a lazy expression; nothing runs until it is assigned.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "../attend.hpp"

namespace attend::nn {

enum class masking { none, causal };

// x (..., In) W (In, Out) [+ b (Out)]: (..., Out).
template <class X, class W>
    requires expression<X> && expression<W>
constexpr auto linear(X&& x, W&& w) {
    return matmul(std::forward<X>(x), std::forward<W>(w));
}
template <class X, class W, class B>
    requires expression<X> && expression<W> && expression<B>
constexpr auto linear(X&& x, W&& w, B&& b) {
    return matmul(std::forward<X>(x), std::forward<W>(w)) + std::forward<B>(b);
}

namespace detail {
template <class X>
using rows_t = shape_t<operand_t<X>>;

template <masking M, std::size_t T, class Q, class K, class V>
auto attention(Q&& q, K&& k, V&& v) {
    if constexpr (M == masking::causal)
        return scaled_dot_product_attention(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v), causal_mask<T, T>());
    else
        return scaled_dot_product_attention(std::forward<Q>(q), std::forward<K>(k), std::forward<V>(v));
}

// (..., T, E) -> (..., T, H, E/H) -> (..., H, T, E/H), and back.
template <std::size_t H, class S>
struct heads {
    static constexpr std::size_t R = S::rank, T = S::extents[R - 2], E = S::extents[R - 1];
    static constexpr auto split_extents = [] {
        std::array<std::size_t, R + 1> e{};
        for (std::size_t k = 0; k + 1 < R; ++k) e[k] = S::extents[k];
        e[R - 1] = H;
        e[R] = E / H;
        return e;
    }();
    using split_shape = shapes::shape_of<split_extents>;
    template <std::size_t... I>
    static auto swap_seq(std::index_sequence<I...>) -> std::index_sequence<I..., R - 1, R - 2, R>;
    using swap = decltype(swap_seq(std::make_index_sequence<R - 2>{}));  // swaps the T and H axes
};
}  // namespace detail

// Single-head self-attention: softmax(x W_Q (x W_K)^T / sqrt(D)) x W_V, optionally causal.
// x (..., T, E); W_Q, W_K (E, D); W_V (E, DV) -> (..., T, DV).
template <masking M = masking::none, class X, class WQ, class WK, class WV>
    requires expression<X>
auto self_attention(const X& x, const WQ& w_q, const WK& w_k, const WV& w_v) {
    using S = detail::rows_t<const X&>;
    return detail::attention<M, S::extents[S::rank - 2]>(matmul(x, w_q), matmul(x, w_k), matmul(x, w_v));
}

// Multi-head attention with H heads: the projections are split into H heads of E/H columns
// (lazy reshape + permute), attended independently, concatenated back (the same views) and
// projected by W_O. x (..., T, E); W_Q, W_K, W_V, W_O (E, E) -> (..., T, E).
template <std::size_t H, masking M = masking::none, class X, class WQ, class WK, class WV, class WO>
    requires expression<X>
auto multi_head_attention(const X& x, const WQ& w_q, const WK& w_k, const WV& w_v, const WO& w_o) {
    using S = detail::rows_t<const X&>;
    static_assert(S::rank >= 2, "attend::nn::multi_head_attention: x must be (..., T, E)");
    static_assert(check::heads_divide<op::attention, H, S>::ok,
                  "attend::nn::multi_head_attention: the embedding width E must be divisible by the number of heads");
    using Hd = detail::heads<H, S>;
    auto split = [](auto&& p) {
        return permute_by<typename Hd::swap>(reshape_as<typename Hd::split_shape>(std::forward<decltype(p)>(p)));
    };
    auto o = detail::attention<M, Hd::T>(split(matmul(x, w_q)), split(matmul(x, w_k)), split(matmul(x, w_v)));
    return matmul(reshape_as<S>(permute_by<typename Hd::swap>(std::move(o))), w_o);
}

}  // namespace attend::nn
