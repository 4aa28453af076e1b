// attend/expr/matmul.hpp — the contraction node: NumPy matmul, (..., M, K) x (..., K, N).
//
// Leading (batch) axes broadcast, so grouped-query attention is Q (Hkv, G, N, D) with
// K, V (Hkv, 1, N, D). The planner runs it with the register-blocked kernel (eval/contract.hpp),
// folding elementwise work on its operands and on its result into that kernel.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../check.hpp"
#include "leaf.hpp"
#include "types.hpp"

namespace attend {

namespace op {
struct matmul {
    using rule = arith_rule;
};
}  // namespace op

namespace detail {
template <class A, class B>
constexpr auto matmul_extents() {
    constexpr std::size_t ra = A::rank, rb = B::rank, r = ra > rb ? ra : rb;
    std::array<std::size_t, r> out{};
    for (std::size_t k = 0; k + 2 < r; ++k) {  // batch axes, right-aligned, broadcast
        const std::size_t ka = k + ra, kb = k + rb;  // index + rank, to stay unsigned
        const std::size_t x = ka >= r ? A::extents[ka - r] : 1, y = kb >= r ? B::extents[kb - r] : 1;
        out[k] = x == 1 ? y : x;
    }
    out[r - 2] = A::extents[ra - 2];
    out[r - 1] = B::extents[rb - 1];
    return out;
}
}  // namespace detail

template <class A, class B>
struct matmul_node : expr_base {
    using kind = kind::matmul;
    using rule = result<op::matmul, A, B>;
    using value_type = typename rule::type;
    using shape_type = shapes::shape_of<detail::matmul_extents<typename A::shape_type, typename B::shape_type>()>;
    static constexpr bool weak = rule::weak;
    static constexpr int precision = std::max(A::precision, B::precision);
    static constexpr std::size_t M = A::shape_type::extents[A::shape_type::rank - 2];
    static constexpr std::size_t K = A::shape_type::extents[A::shape_type::rank - 1];
    static constexpr std::size_t N = B::shape_type::extents[B::shape_type::rank - 1];
    A a;
    B b;
    constexpr auto children() const noexcept { return std::tie(a, b); }
    template <class CA, class CB>
    static constexpr auto rebuild(CA&& ca, CB&& cb) {
        return matmul_node<std::remove_cvref_t<CA>, std::remove_cvref_t<CB>>{{}, std::forward<CA>(ca), std::forward<CB>(cb)};
    }
};

// matmul(a, b): (..., M, K) x (..., K, N) -> (..., M, N).
template <class A, class B>
    requires expression<A> && expression<B>
constexpr auto matmul(A&& a, B&& b) {
    using LA = operand_t<A>;
    using LB = operand_t<B>;
    using SA = typename LA::shape_type;
    using SB = typename LB::shape_type;
    if constexpr (any_invalid<LA, LB>) {
        return invalid_expr{};
    } else {
        constexpr bool ok = check::contraction<op::matmul, SA, SB>::ok && result<op::matmul, LA, LB>::ok;
        static_assert(check::rank_at_least<op::matmul, 2, SA>::ok && check::rank_at_least<op::matmul, 2, SB>::ok,
                      "attend: matmul: both operands need at least two axes (..., M, K) and (..., K, N)");
        static_assert(check::contraction<op::matmul, SA, SB>::ok,
                      "attend: matmul: inner extents differ or batch axes do not broadcast");
        static_assert(check::element_types<op::matmul, typename LA::value_type, typename LB::value_type,
                                           result<op::matmul, LA, LB>::ok>::ok,
                      "attend: matmul: element types do not combine (float with double needs attend::cast)");
        if constexpr (ok) return matmul_node<LA, LB>{{}, operand(std::forward<A>(a)), operand(std::forward<B>(b))};
        else return invalid_expr{};
    }
}

}  // namespace attend
