// attend/eval/assign.hpp — evaluation entry points: assignment into storage and `eval`.
//
// Semantics: as if the right side were computed completely before the destination is written.
// The elementwise loop reads each position before writing it, so a leaf that *is* the
// destination (same memory, same layout) is safe in place; any other overlap (a view of part
// of the destination, a broadcast read of it) is evaluated into a temporary first: on the stack
// up to config::stack_budget, else on the heap, which ATTEND_NO_HEAP turns into a compile error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "../check.hpp"
#include "../config.hpp"
#include "../tensor.hpp"
#include "attention.hpp"
#include "contract.hpp"
#include "elementwise.hpp"
#include "lower.hpp"
#include "reduce.hpp"

namespace attend {

namespace op {
struct eval {};
}  // namespace op

namespace types {
// What assignment converts implicitly: same type; a weak (scalar-typed) or integer tree into any
// numeric destination; bool only into bool. float <-> double and floating -> integer need cast.
template <class Dest, class L>
inline constexpr bool assignable = [] {
    using T = typename L::value_type;
    if constexpr (std::is_same_v<Dest, bool> || std::is_same_v<T, bool>) return std::is_same_v<Dest, T>;
    else return std::is_same_v<Dest, T> || L::weak || std::is_integral_v<T>;
}();
}  // namespace types

inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// Whether any leaf could overlap the destination: views may alias anything; distinct tensors
// never overlap, so a tensor destination can only be aliased through a view.
template <bool DestOwned>
struct may_alias {
    template <class E>
    static constexpr bool check() {
        if constexpr (is_elementwise_leaf<E>) return is_memory_leaf<E> && !(DestOwned && leaf_owned<E>);
        else if constexpr (requires { typename E::rule_op; }) return []<class... A>(std::tuple<A...>*) {
            return (check<A>() || ...);
        }(static_cast<decltype(E::args)*>(nullptr));
        else if constexpr (requires { typename E::cast_to; } || requires { E::axis; } || requires { typename E::view; })
            return check<decltype(E::arg)>();
        else if constexpr (requires { E::K; }) return check<decltype(E::a)>() || check<decltype(E::b)>();
        else return false;
    }
};

// Whether the plan writes `out` while a leaf overlapping it is still to be read. The elementwise
// loop reads each position before writing it, so a leaf that *is* the destination is safe there;
// a node evaluated straight into `out` (Direct) is safe with no overlap at all. Leaves under
// materialised nodes are read completely before the destination is touched.
template <bool Direct, class S, class T, class E>
inline bool overlaps_unsafely(const T* out, const E& e) noexcept {
    const auto lo = reinterpret_cast<std::uintptr_t>(out), hi = reinterpret_cast<std::uintptr_t>(out + S::size);
    bool unsafe = false;
    for_each_memory_leaf<Direct>(e, [&](const auto& leaf) {
        using Leaf = std::remove_cvref_t<decltype(leaf)>;
        const auto b = reinterpret_cast<std::uintptr_t>(leaf.data());
        const auto t = reinterpret_cast<std::uintptr_t>(leaf.data() + span_of<Leaf>());
        const bool same = !Direct && std::is_same_v<typename Leaf::value_type, T> && b == lo &&
                          Leaf::shape_type::size == S::size && is_row_major<Leaf>;
        unsafe = unsafe || (b < hi && lo < t && !same);
    });
    return unsafe;
}

// The plan for a tree: a root contraction, reduction or softmax of the destination's shape runs
// its own loop nest straight into `out`; anything else is lowered to an elementwise tree.
template <class E, class S>
inline constexpr bool direct_plan =
    attention_plan<E, S> || contraction_plan<E, S> ||
    (!is_elementwise<E> && std::is_same_v<typename E::shape_type, S> && requires { E::arg; } && requires { E::axis; });

template <class Arch, class S, class T, class E>
void run_plan(T* out, const E& e) {
    if constexpr (attention_plan<E, S>) evaluate_attention<Arch, S>(out, e);
    else if constexpr (contraction_plan<E, S>) evaluate_contraction<Arch, S>(out, e);
    else if constexpr (direct_plan<E, S>) evaluate_node<Arch>(out, e);
    else lower<Arch>(e, [&](const auto& flat) { run_elementwise<Arch, S>(out, flat); });
}

template <class S>
inline constexpr bool dependent_false = false;

template <class Arch, bool DestOwned, class Op, class S, class T, class E>
void assign(T* out, E&& expr) {
    using L = operand_t<E>;
    static_assert(check::assignable<Op, S, typename L::shape_type>::ok,
                  "attend: assignment: the right side's shape does not broadcast to the destination's shape");
    static_assert(check::element_types<Op, T, typename L::value_type, types::assignable<T, L>>::ok,
                  "attend: assignment: element types differ (float <-> double and floating -> integer need "
                  "attend::cast; bool goes only into bool)");
    if constexpr (check::assignable<Op, S, typename L::shape_type>::ok && types::assignable<T, L>) {
        const L node = operand(std::forward<E>(expr));
        constexpr bool direct = direct_plan<L, S>;
        if constexpr (may_alias<DestOwned>::template check<L>()) {
            if (overlaps_unsafely<direct, S>(out, node)) {
                constexpr std::size_t bytes = sizeof(T) * S::size;
                if constexpr (bytes <= config::stack_budget) {
                    alignas(64) T tmp[S::size];
                    run_plan<Arch, S>(tmp, node);
                    std::copy(tmp, tmp + S::size, out);
                } else if constexpr (config::heap_allowed) {
                    const auto tmp = std::make_unique_for_overwrite<T[]>(S::size);
                    run_plan<Arch, S>(tmp.get(), node);
                    std::copy(tmp.get(), tmp.get() + S::size, out);
                } else {
                    static_assert(dependent_false<S>,
                                  "attend: assignment: the right side may overlap the destination view, and the "
                                  "temporary this needs exceeds ATTEND_STACK_BUDGET while ATTEND_NO_HEAP forbids the "
                                  "heap; assign into a tensor, or raise ATTEND_STACK_BUDGET");
                }
                return;
            }
        }
        run_plan<Arch, S>(out, node);
    }
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE

// eval_with_lse(out, lse, e): evaluates a fused attention expression e of shape (..., NQ, DV) into
// `out` and the log-sum-exp of each query's scores into `lse` of shape (..., NQ) — what is
// needed to combine attention computed over separate key ranges. Neither may overlap e's inputs.
template <class Out, class Lse, class E, class Arch = simd::default_arch>
    requires expression<E>
void eval_with_lse(Out&& out, Lse&& lse, E&& e) {
    using L = operand_t<E>;
    using S = typename L::shape_type;
    using O = std::remove_cvref_t<Out>;
    using G = std::remove_cvref_t<Lse>;
    static_assert(detail::attention_plan<L, S>,
                  "attend: eval_with_lse: the expression must take the fused attention plan (see attend::explain)");
    static_assert(std::is_same_v<typename O::shape_type, S>, "attend: eval_with_lse: `out` must have the expression's shape");
    static_assert(std::is_same_v<typename G::shape_type, shapes::shape_of<shapes::drop_last(S::extents)>>,
                  "attend: eval_with_lse: `lse` must have the output's shape without its last axis");
    static_assert(std::is_same_v<typename O::value_type, typename G::value_type>,
                  "attend: eval_with_lse: `out` and `lse` must have the same element type");
    const L node = operand(std::forward<E>(e));
    detail::evaluate_attention<Arch, S>(out.data(), node, lse.data());
}

// eval(e): a new tensor of the expression's shape and element type.
template <class E, class Arch = simd::default_arch>
    requires expression<E>
auto eval(E&& e) {
    using L = operand_t<E>;
    tensor_t<typename L::value_type, typename L::shape_type> result;
    detail::assign<Arch, true, op::eval, typename L::shape_type>(result.data(), std::forward<E>(e));
    return result;
}

}  // namespace attend
