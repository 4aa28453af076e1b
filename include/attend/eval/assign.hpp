// attend/eval/assign.hpp — evaluation entry points: assignment into storage and `eval`.
//
// Semantics: as if the right side were computed completely before the destination is written.
// The plan (plan.hpp) writes straight into the destination when the memory its leaves read
// allows it (alias.hpp); otherwise it runs into a temporary that is then copied.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
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
// numeric destination; bool only into bool; bf16/f16 memory into float (exact). float <-> double,
// floating -> integer and float -> bf16/f16 (rounding) need cast.
template <class Dest, class L>
inline constexpr bool assignable = [] {
    using T = typename L::value_type;
    if constexpr (std::is_same_v<Dest, bool> || std::is_same_v<T, bool>) return std::is_same_v<Dest, T>;
    else return std::is_same_v<Dest, T> || std::is_same_v<Dest, reads_as<T>> || L::weak || std::is_integral_v<T>;
}();
}  // namespace types

inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// Calls f(tmp) with a temporary of N elements of T: on the stack up to config::stack_budget, else
// on the heap. Without a heap (ATTEND_NO_HEAP) a larger one cannot exist: whether one is needed
// is a run-time fact (views are pointers), so that stops the program with a message rather than
// failing to build every large assignment that might need it.
template <class T, std::size_t N, class F>
void with_temporary(F&& f) {
    if constexpr (sizeof(T) * N <= config::stack_budget) {
        alignas(64) T tmp[N];
        f(+tmp);
    } else if constexpr (config::heap_allowed) {
        const auto tmp = std::make_unique_for_overwrite<T[]>(N);
        f(tmp.get());
    } else {
        check::stop("assignment", "the right side reads the destination through an overlapping view (or the destination "
                                  "is strided), and the temporary this needs exceeds ATTEND_STACK_BUDGET while "
                                  "ATTEND_NO_HEAP forbids the heap");
    }
}

// Whether tree E holds a take node (the only kind with run-time preconditions).
template <class E>
constexpr bool has_take() {
    if constexpr (is_kind<E, kind::take>) return true;
    else if constexpr (category_of<E> == category::leaf) return false;
    else return any_child<E>([]<class C>() { return has_take<C>(); });
}

// Run-time preconditions of a tree (take's indices), checked once before anything is read.
template <class E>
void check_run_time(const E& e) {
    if constexpr (has_take<E>()) {
        if constexpr (is_kind<E, kind::take>) e.check_indices();
        for_each_child(e, [](const auto& c) { check_run_time(c); });
    }
}

template <class Arch, class Op, class S, class T, class E>
void assign(T* out, E&& expr) {
    using L = operand_t<E>;
    if constexpr (!any_invalid<L>) {  // else the failed operation has reported its error
        static_assert(check::assignable<Op, S, typename L::shape_type>::ok,
                      "attend: assignment: the right side's shape does not broadcast to the destination's shape");
        static_assert(check::element_types<Op, T, typename L::value_type, types::assignable<T, L>>::ok,
                      "attend: assignment: element types differ (float <-> double, floating -> integer and float -> "
                      "bf16/f16 need attend::cast; bool goes only into bool)");
        if constexpr (check::assignable<Op, S, typename L::shape_type>::ok && types::assignable<T, L>) {
            // A tree is used where it stands (it outlives this call); only leaves are made.
            const auto& node = [&]() -> decltype(auto) {
                if constexpr (std::is_same_v<std::remove_cvref_t<E>, L>) return static_cast<const L&>(expr);
                else return operand(std::forward<E>(expr));
            }();
            check_run_time(node);
            if constexpr (std::is_same_v<Op, op::eval> || std::is_same_v<Op, op::construct>) {
                // A tensor being made: no leaf can read a new object (storage reused while a view
                // of it is still read, as by placement new, is outside the language), so no check
                // and no temporary path.
                run_plan<Arch, S>(out, node);
            } else if (must_use_temporary<S>(out, node)) {
                with_temporary<T, S::size>([&](T* tmp) {
                    run_plan<Arch, S>(tmp, node);
                    std::copy(tmp, tmp + S::size, out);
                });
            } else {
                run_plan<Arch, S>(out, node);
            }
        }
    }
}

// Calls f(p) with where a nest writes the elements of L's shape in row-major order: `out` itself
// when layout L is row-major, else a contiguous temporary then written out through L's strides.
template <class L, class T, class F>
void through_layout(T* out, F&& f) {
    using S = typename L::shape_type;
    if constexpr (L::row_major) {
        f(out);
    } else {
        static_assert(config::heap_allowed || sizeof(T) * S::size <= config::stack_budget,
                      "attend: a strided destination (a transposed or sliced view) is written through a contiguous "
                      "temporary, which exceeds ATTEND_STACK_BUDGET while ATTEND_NO_HEAP forbids the heap");
        with_temporary<T, S::size>([&](T* tmp) {
            f(tmp);
            for (std::size_t n = 0; n < S::size; ++n) out[L::offset_of_flat(n)] = tmp[n];
        });
    }
}

// Into memory of layout L (a strided view's assignment).
template <class Arch, class Op, class L, class T, class E>
void assign_strided(T* out, E&& e) {
    through_layout<L>(out, [&](T* to) { assign<Arch, Op, typename L::shape_type>(to, std::forward<E>(e)); });
}

// The layout of a destination: a strided view's own, else row-major.
template <class O>
struct destination_layout {
    using type = row_major<typename O::shape_type>;
};
template <class O>
    requires requires { typename O::layout; }
struct destination_layout<O> {
    using type = typename O::layout;
};

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE

// eval_with_lse(out, lse, e): evaluates a fused attention expression e of shape (..., NQ, DV) into
// `out` and the log-sum-exp of each query's scores into `lse` of shape (..., NQ) — what is
// needed to combine attention computed over separate key ranges. Neither may overlap e's inputs.
template <class Out, class Lse, class E, class Arch = simd::default_arch, class Target = target>
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
    using LO = typename detail::destination_layout<O>::type;
    using LG = typename detail::destination_layout<G>::type;
    const L node = operand(std::forward<E>(e));
    detail::check_run_time(node);
    const void *o0 = out.data(), *o1 = out.data() + LO::span, *l0 = lse.data(), *l1 = lse.data() + LG::span;
    if (detail::reads_while_writing<S>(node, o0, o1)) check::stop("eval_with_lse", "`out` overlaps memory the attention expression reads");
    if (detail::reads_while_writing<S>(node, l0, l1)) check::stop("eval_with_lse", "`lse` overlaps memory the attention expression reads");
    if (std::less<>{}(o0, l1) && std::less<>{}(l0, o1)) check::stop("eval_with_lse", "`out` and `lse` overlap");
    // (views of other layouts, such as slices, through contiguous temporaries)
    detail::through_layout<LO>(out.data(), [&](auto* to) {
        detail::through_layout<LG>(lse.data(), [&](auto* lse_to) { detail::evaluate_attention<Arch, S>(to, node, lse_to); });
    });
}

// eval(e): a new tensor of the expression's shape and element type.
template <class E, class Arch = simd::default_arch, class Target = target>
    requires expression<E>
auto eval(E&& e) {
    using L = operand_t<E>;
    tensor_t<typename L::value_type, typename L::shape_type> result;
    detail::assign<Arch, op::eval, typename L::shape_type>(result.data(), std::forward<E>(e));
    return result;
}

}  // namespace attend
