// attend/nn/layers.hpp — model layers written with the public expressions, so they take the
// same plans as the formulas they stand for (projections are contractions, attention is fused).
//
// Shapes: x (..., T, E) — any leading batch axes; weights (E, D), applied on the right as in the
// seeds' X W_Q. Each function returns a lazy expression; nothing runs until it is assigned.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "../attend.hpp"

namespace attend::op {
struct rms_norm {};
struct rope {};
struct swiglu {};
}  // namespace attend::op

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

namespace detail {
// An argument used twice in a layer's formula must outlive the expression: a node is copied, a
// named tensor is referenced, and a temporary tensor would dangle, so it is refused.
template <class X>
inline constexpr bool reusable = !(std::is_rvalue_reference_v<X&&> && (is_tensor<std::remove_cvref_t<X>>));

// The element type a layer computes x in (float for bf16/f16 x).
template <class X>
using value_t = types::value_of<operand_t<X>>;

// The positions of a rotary pair, swapped.
inline const tensor<std::int32_t, 2> swap_pair{1, 0};
}  // namespace detail

// RMSNorm: x / sqrt(mean(x²) + eps) * w over the last axis. x (..., E), w (E) -> (..., E).
template <class X, class W>
    requires expression<X> && expression<W>
constexpr auto rms_norm(X&& x, W&& w, double eps = 1e-5) {
    static_assert(detail::reusable<X>, "attend::nn::rms_norm: x is read twice; pass a named tensor or an expression");
    using S = shape_t<operand_t<X>>;
    using T = detail::value_t<X>;
    constexpr bool ok = check::norm_weight<op::rms_norm, S, shape_t<operand_t<W>>>::ok;
    static_assert(check::norm_weight<op::rms_norm, S, shape_t<operand_t<W>>>::ok,
                  "attend::nn::rms_norm: the weight must be a vector as long as x's last axis");
    constexpr T inv_e = T(1) / T(S::extents[S::rank - 1]);
    if constexpr (!ok) return invalid_expr{};  // (one error, not its echoes in the formula)
    else return x * rsqrt(sum(x * x) * inv_e + T(eps)) * std::forward<W>(w);
}

namespace detail {
// (..., T, D) -> (..., T, D / HeadDim, HeadDim / 2, 2): the rotary pairs of each head.
template <std::size_t HeadDim, class S>
constexpr auto rotary_pair_extents() {
    constexpr std::size_t R = S::rank;
    std::array<std::size_t, R + 2> e{};
    for (std::size_t k = 0; k + 1 < R; ++k) e[k] = S::extents[k];
    e[R - 1] = S::extents[R - 1] / HeadDim;
    e[R] = HeadDim / 2;
    e[R + 1] = 2;
    return e;
}
template <std::size_t HeadDim, class S>
using rotary_pairs = shapes::shape_of<rotary_pair_extents<HeadDim, S>()>;
}  // namespace detail

// The rotations of every position up to Capacity for heads of HeadDim, computed once as llama2.c
// computes them (float angle pos * theta^(-2k / HeadDim), cosf, sinf). Per position and pair k:
// cos_pair = (cos, cos), sin_pair = (-sin, sin), so that a pair (a, b) turns into
// (a, b) * cos_pair + (b, a) * sin_pair. 4 x Capacity x HeadDim bytes each: keep it on the heap.
template <std::size_t HeadDim, std::size_t Capacity>
struct rotary_table {
    static_assert(HeadDim >= 2 && HeadDim % 2 == 0, "attend::nn::rotary_table: the head width must be even");
    tensor<float, Capacity, HeadDim / 2, 2> cos_pair, sin_pair;

    explicit rotary_table(float theta = 10000.0f) {
        for (std::size_t p = 0; p < Capacity; ++p)
            for (std::size_t k = 0; k < HeadDim / 2; ++k) {
                const float freq = 1.0f / std::pow(theta, float(2 * k) / float(HeadDim));
                const float angle = float(p) * freq, c = std::cos(angle), s = std::sin(angle);
                cos_pair(p, k, 0) = c;
                cos_pair(p, k, 1) = c;
                sin_pair(p, k, 0) = -s;
                sin_pair(p, k, 1) = s;
            }
    }
};

// Rotary position embedding (Llama, llama2.c): in each head of HeadDim, the adjacent pair
// (2k, 2k+1) of token t turns by the angle (pos + t) * theta^(-2k / HeadDim). x (..., T, D) with D
// a multiple of HeadDim; pos is the position of the first of the T tokens, known at run time.
// With a rotary_table the rotations are read (positions past its capacity stop the program);
// without one they are computed per element.
template <std::size_t HeadDim, std::size_t Capacity, class X>
    requires expression<X>
constexpr auto rope(X&& x, const rotary_table<HeadDim, Capacity>& table, std::size_t pos) {
    static_assert(detail::reusable<X>, "attend::nn::rope: x is read twice; pass a named tensor or an expression");
    using S = shape_t<operand_t<X>>;
    constexpr bool ok = check::rotary_heads<op::rope, HeadDim, S>::ok;
    static_assert(check::rotary_heads<op::rope, HeadDim, S>::ok,
                  "attend::nn::rope: x must be (..., T, D) with D a multiple of the even HeadDim");
    constexpr std::size_t NT = ok ? S::extents[S::rank - 2] : 1, P = HeadDim / 2;
    static_assert(!ok || NT <= Capacity, "attend::nn::rope: more tokens than the rotary table has positions");
    if constexpr (!ok || NT > Capacity) {
        return invalid_expr{};  // (one error, not its echoes in the formula)
    } else {
        if (pos > Capacity - NT) {  // named here, not as the slice below
            char what[160];
            std::snprintf(what, sizeof what, "%zu tokens from position %zu are past the rotary table's %zu positions", NT, pos, Capacity);
            check::stop("nn::rope", what);
        }
        auto xr = reshape_as<detail::rotary_pairs<HeadDim, S>>(std::forward<X>(x));
        auto c = reshape<NT, 1, P, 2>(slice<0, NT>(table.cos_pair, pos));
        auto s = reshape<NT, 1, P, 2>(slice<0, NT>(table.sin_pair, pos));
        return reshape_as<S>(xr * c + take<-1>(xr, detail::swap_pair) * s);
    }
}

template <std::size_t HeadDim, class X>
    requires expression<X>
constexpr auto rope(X&& x, std::size_t pos, double theta = 10000.0) {
    static_assert(detail::reusable<X>, "attend::nn::rope: x is read twice; pass a named tensor or an expression");
    using S = shape_t<operand_t<X>>;
    using T = detail::value_t<X>;
    constexpr bool ok = check::rotary_heads<op::rope, HeadDim, S>::ok;
    static_assert(check::rotary_heads<op::rope, HeadDim, S>::ok,
                  "attend::nn::rope: x must be (..., T, D) with D a multiple of the even HeadDim");
    if constexpr (!ok) {
        return invalid_expr{};  // (one error, not its echoes in the formula)
    } else {
        constexpr std::size_t NT = S::extents[S::rank - 2], P = HeadDim / 2;
        auto xr = reshape_as<detail::rotary_pairs<HeadDim, S>>(std::forward<X>(x));
        const T log_step = T(-2.0 * std::log(theta) / double(HeadDim));
        auto angle = cast<T>(iota<0, NT, 1, P, 1>() + static_cast<std::int64_t>(pos)) * exp(cast<T>(iota<2, NT, 1, P, 1>()) * log_step);
        auto sign = cast<T>(iota<3, NT, 1, P, 2>() * 2 - 1);  // -1 for the first of a pair, +1 for the second
        return reshape_as<S>(xr * cos(angle) + take<-1>(xr, detail::swap_pair) * (sin(angle) * sign));
    }
}

// The SwiGLU gate of Llama's feed-forward: silu(a) * b, silu(a) = a * sigmoid(a).
template <class A, class B>
    requires expression<A> && expression<B>
constexpr auto swiglu(A&& a, B&& b) {
    static_assert(detail::reusable<A>, "attend::nn::swiglu: a is read twice; pass a named tensor or an expression");
    constexpr bool ok = check::broadcast<op::swiglu, shape_t<operand_t<A>>, shape_t<operand_t<B>>>::ok;
    static_assert(check::broadcast<op::swiglu, shape_t<operand_t<A>>, shape_t<operand_t<B>>>::ok,
                  "attend::nn::swiglu: the gate and the value must have the same shape");
    if constexpr (!ok) return invalid_expr{};  // (one error, not its echoes in the formula)
    else return a * sigmoid(a) * std::forward<B>(b);
}

// Rows of an embedding table (V, E) picked by token ids (T) -> (T, E), or by ids of any shape
// (M...) -> (M..., E); an id outside [0, V) stops the program with a message.
template <class Table, class Ids>
    requires expression<Table> && expression<Ids>
constexpr auto embedding(Table&& table, Ids&& ids) {
    return take<0>(std::forward<Table>(table), std::forward<Ids>(ids));
}

}  // namespace attend::nn
