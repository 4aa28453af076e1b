// attend/expr/reduce.hpp — reductions along an axis, and softmax.
//
// Reductions keep the reduced axis with extent 1, so `x - max(x)` broadcasts. Axis arguments are
// signed: -1 is the last axis (the default), as in NumPy. These nodes are not elementwise: the
// planner evaluates each into a temporary (or straight into the destination when it is the root).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../check.hpp"
#include "leaf.hpp"

namespace attend {

namespace op {
struct sum { static constexpr const char* name = "sum"; };
struct max { static constexpr const char* name = "max"; };
struct argmax { static constexpr const char* name = "argmax"; };
struct softmax { static constexpr const char* name = "softmax"; };
}  // namespace op

namespace detail {
template <int Axis, class S>
inline constexpr std::size_t axis_index = Axis < 0 ? std::size_t(int(S::rank) + Axis) : std::size_t(Axis);

template <class S, std::size_t Axis>
constexpr std::array<std::size_t, S::rank> keep_one(std::array<std::size_t, S::rank> e) {
    e[Axis] = 1;
    return e;
}
}  // namespace detail

template <class Op, std::size_t Axis, class A>
struct reduce_node : expr_base {
    using kind = kind::reduce;
    using reduce_op = Op;
    using value_type = std::conditional_t<std::is_same_v<Op, op::argmax>, std::int64_t, types::value_of<A>>;
    using shape_type = shapes::shape_of<detail::keep_one<typename A::shape_type, Axis>(A::shape_type::extents)>;
    static constexpr std::size_t axis = Axis;
    static constexpr bool weak = !std::is_same_v<Op, op::argmax> && A::weak;
    static constexpr int precision = std::is_same_v<Op, op::argmax> ? 0 : A::precision;
    A arg;
    constexpr auto children() const noexcept { return std::tie(arg); }
    template <class C>
    static constexpr auto rebuild(C&& c) {
        return reduce_node<Op, Axis, std::remove_cvref_t<C>>{{}, std::forward<C>(c)};
    }
};

template <std::size_t Axis, class A>
struct softmax_node : expr_base {
    using kind = kind::softmax;
    using softmax_of = A;
    using value_type = types::value_of<A>;
    using shape_type = typename A::shape_type;
    static constexpr std::size_t axis = Axis;
    static constexpr bool weak = A::weak;
    static constexpr int precision = A::precision;
    A arg;
    constexpr auto children() const noexcept { return std::tie(arg); }
    template <class C>
    static constexpr auto rebuild(C&& c) {
        return softmax_node<Axis, std::remove_cvref_t<C>>{{}, std::forward<C>(c)};
    }
};

namespace detail {
template <class Op, int Axis, class A>
constexpr auto make_reduce(A&& a) {
    using L = operand_t<A>;
    using S = typename L::shape_type;
    if constexpr (any_invalid<L>) {
        return invalid_expr{};
    } else {
        constexpr std::size_t ax = axis_index<Axis, S>;
        static_assert(check::axis_in_range<Op, Axis, S>::ok, "attend: reduction: Axis must be an axis of the shape");
        static_assert(!std::is_same_v<typename L::value_type, bool>, "attend: reduction: reduce a bool mask after cast<int> or cast<float>");
        if constexpr (check::axis_in_range<Op, Axis, S>::ok && !std::is_same_v<typename L::value_type, bool>)
            return reduce_node<Op, ax, L>{{}, operand(std::forward<A>(a))};
        else
            return invalid_expr{};
    }
}
}  // namespace detail

// sum<Axis>(a), max<Axis>(a), argmax<Axis>(a): the reduced axis is kept with extent 1.
template <int Axis = -1, class A>
    requires expression<A>
constexpr auto sum(A&& a) {
    return detail::make_reduce<op::sum, Axis>(std::forward<A>(a));
}
template <int Axis = -1, class A>
    requires expression<A>
constexpr auto max(A&& a) {
    return detail::make_reduce<op::max, Axis>(std::forward<A>(a));
}
// The first index of the maximum (a NaN counts as the maximum, as in NumPy).
template <int Axis = -1, class A>
    requires expression<A>
constexpr auto argmax(A&& a) {
    return detail::make_reduce<op::argmax, Axis>(std::forward<A>(a));
}

// softmax<Axis>(a) = exp(a - max(a)) / sum(exp(a - max(a))) along Axis; a slice whose entries
// are all -inf gives zeros.
template <int Axis = -1, class A>
    requires expression<A>
constexpr auto softmax(A&& a) {
    using L = operand_t<A>;
    using S = typename L::shape_type;
    if constexpr (any_invalid<L>) {
        return invalid_expr{};
    } else {
        constexpr std::size_t ax = detail::axis_index<Axis, S>;
        static_assert(check::axis_in_range<op::softmax, Axis, S>::ok, "attend: softmax: Axis must be an axis of the shape");
        static_assert(std::is_floating_point_v<types::value_of<L>>, "attend: softmax: needs a floating-point expression");
        if constexpr (check::axis_in_range<op::softmax, Axis, S>::ok && std::is_floating_point_v<types::value_of<L>>)
            return softmax_node<ax, L>{{}, operand(std::forward<A>(a))};
        else
            return invalid_expr{};
    }
}

}  // namespace attend
