// attend/eval/assign.hpp — evaluation entry points: assignment into storage and `eval`.
//
// Semantics: as if the right side were computed completely before the destination is written.
// The plan (plan.hpp) writes straight into the destination when the memory its leaves read
// allows it (alias.hpp); otherwise it runs into a temporary that is then copied.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "../check.hpp"
#include "../config.hpp"
#include "../tensor.hpp"
#include "alias.hpp"
#include "plan.hpp"

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

// Evaluates into a temporary, then copies: on the stack up to config::stack_budget, else on the
// heap. Without a heap (ATTEND_NO_HEAP) a larger one cannot exist: the overlap is a run-time
// fact (views are pointers), so it stops the program with a message rather than fail to build
// every big assignment that might overlap.
template <class Arch, class S, class T, class E>
void run_plan_via_temporary(T* out, const E& node) {
    if constexpr (sizeof(T) * S::size <= config::stack_budget) {
        alignas(64) T tmp[S::size];
        run_plan<Arch, S>(tmp, node);
        std::copy(tmp, tmp + S::size, out);
    } else if constexpr (config::heap_allowed) {
        const auto tmp = std::make_unique_for_overwrite<T[]>(S::size);
        run_plan<Arch, S>(tmp.get(), node);
        std::copy(tmp.get(), tmp.get() + S::size, out);
    } else {
        check::stop("assignment", "the right side reads the destination through an overlapping view, and the temporary "
                                  "this needs exceeds ATTEND_STACK_BUDGET while ATTEND_NO_HEAP forbids the heap");
    }
}

template <class Arch, class Op, class S, class T, class E>
void assign(T* out, E&& expr) {
    using L = operand_t<E>;
    if constexpr (!any_invalid<L>) {  // else the failed operation has reported its error
        static_assert(check::assignable<Op, S, typename L::shape_type>::ok,
                      "attend: assignment: the right side's shape does not broadcast to the destination's shape");
        static_assert(check::element_types<Op, T, typename L::value_type, types::assignable<T, L>>::ok,
                      "attend: assignment: element types differ (float <-> double and floating -> integer need "
                      "attend::cast; bool goes only into bool)");
        if constexpr (check::assignable<Op, S, typename L::shape_type>::ok && types::assignable<T, L>) {
            const L node = operand(std::forward<E>(expr));
            if (must_use_temporary<S>(out, node)) run_plan_via_temporary<Arch, S>(out, node);
            else run_plan<Arch, S>(out, node);
        }
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
    detail::assign<Arch, op::eval, typename L::shape_type>(result.data(), std::forward<E>(e));
    return result;
}

}  // namespace attend
