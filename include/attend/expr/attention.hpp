// attend/expr/attention.hpp — scaled dot-product attention as a composition of public
// expressions, so it takes whatever plan the hand-written formula takes.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "../check.hpp"
#include "map.hpp"
#include "matmul.hpp"
#include "reduce.hpp"
#include "view.hpp"

namespace attend {

namespace op {
struct attention {};
}  // namespace op

namespace check {
// Q (..., NQ, DK), K (..., NK, DK), V (..., NK, DV), the batch axes (...) broadcasting together.
template <class Op, class Q, class K, class V>
struct attention_shapes {
    static constexpr bool ok = [] {
        if constexpr (Q::rank < 2 || K::rank < 2 || V::rank < 2) {
            return false;
        } else {
            if (Q::extents[Q::rank - 1] != K::extents[K::rank - 1] || K::extents[K::rank - 2] != V::extents[V::rank - 2]) return false;
            auto batch = []<class S>(S) {
                std::array<std::size_t, S::rank - 2> b{};
                for (std::size_t k = 0; k + 2 < S::rank; ++k) b[k] = S::extents[k];
                return b;
            };
            const auto qb = batch(Q{}), kb = batch(K{}), vb = batch(V{});
            return shapes::broadcastable(qb, kb) && shapes::broadcastable(shapes::broadcast(qb, kb), vb);
        }
    }();
};
}  // namespace check

namespace detail {
// The shape check, asserted once; the caller builds nothing when it fails.
template <class Q, class K, class V>
constexpr bool check_attention() {
    constexpr bool ok = check::attention_shapes<op::attention, shape_t<operand_t<Q>>, shape_t<operand_t<K>>, shape_t<operand_t<V>>>::ok;
    static_assert(check::attention_shapes<op::attention, shape_t<operand_t<Q>>, shape_t<operand_t<K>>, shape_t<operand_t<V>>>::ok,
                  "attend: scaled_dot_product_attention: needs Q (..., NQ, DK), K (..., NK, DK), V (..., NK, DV) with batch axes (...) that broadcast");
    return ok;
}

// The mask against the scores (..., NQ, NK) (Q and K valid): asserted here, so that the first
// error names the attention.
template <class Q, class K, class M>
constexpr bool check_attention_mask() {
    using Scores = typename decltype(matmul(std::declval<operand_t<Q>>(), transpose(std::declval<operand_t<K>>())))::shape_type;
    using SM = shape_t<operand_t<M>>;
    constexpr bool ok = check::broadcast<op::attention, SM, Scores>::ok;
    static_assert(check::broadcast<op::attention, SM, Scores>::ok,
                  "attend: scaled_dot_product_attention: the mask's shape does not broadcast with the scores' (..., NQ, NK)");
    return ok;
}

template <class Q>
inline double inverse_sqrt_dk() {
    using S = shape_t<operand_t<Q>>;
    return 1.0 / std::sqrt(static_cast<double>(S::extents[S::rank - 1]));
}
}  // namespace detail

// softmax(Q K^T / sqrt(DK)) V.
template <class Q, class K, class V>
    requires expression<Q> && expression<K> && expression<V>
auto scaled_dot_product_attention(Q&& q, K&& k, V&& v) {
    if constexpr (any_invalid<operand_t<Q>, operand_t<K>, operand_t<V>>) {
        return invalid_expr{};
    } else if constexpr (!detail::check_attention<Q, K, V>()) {
        return invalid_expr{};
    } else {
        const double scale = detail::inverse_sqrt_dk<Q>();
        return matmul(softmax(matmul(std::forward<Q>(q), transpose(std::forward<K>(k))) * scale), std::forward<V>(v));
    }
}

// The same with masked_fill(scores, mask, -inf): a true mask entry means the key is ignored.
template <class Q, class K, class V, class M>
    requires expression<Q> && expression<K> && expression<V> && expression<M>
auto scaled_dot_product_attention(Q&& q, K&& k, V&& v, M&& mask) {
    if constexpr (any_invalid<operand_t<Q>, operand_t<K>, operand_t<V>, operand_t<M>>) {
        return invalid_expr{};
    } else if constexpr (!detail::check_attention<Q, K, V>()) {
        return invalid_expr{};
    } else if constexpr (!detail::check_attention_mask<Q, K, M>()) {
        return invalid_expr{};
    } else {
        const double scale = detail::inverse_sqrt_dk<Q>();
        return matmul(softmax(masked_fill(matmul(std::forward<Q>(q), transpose(std::forward<K>(k))) * scale,
                                          std::forward<M>(mask), -std::numeric_limits<double>::infinity())),
                      std::forward<V>(v));
    }
}

}  // namespace attend
