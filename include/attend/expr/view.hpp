// attend/expr/view.hpp — lazy views: permute, transpose, reshape.
//
// A view of a leaf is a leaf with new compile-time extents and strides: nothing is copied and
// evaluation reads the original memory (matmul(Q, transpose(K)) reads K in place). A view of any
// other expression is a `view_node`; the planner materialises its operand once and views that.
#pragma once

#include <array>
#include <tuple>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../check.hpp"
#include "leaf.hpp"

namespace attend {

namespace op {
struct permute {};
struct transpose {};
struct reshape {};
}  // namespace op

// How a view maps extents and strides. `strided_ok` says a strided leaf stays a leaf.
template <std::size_t... I>
struct permutation {
    template <std::size_t R>
    static constexpr std::array<std::size_t, R> map(const std::array<std::size_t, R>& v) {
        return {v[I]...};
    }
    template <class S>
    using shape = shapes::shape_of<map(S::extents)>;
    template <class S, auto Strides>
    static constexpr auto strides = map(Strides);
    template <class Leaf>
    static constexpr bool keeps_leaf = true;
};

template <std::size_t... D>
struct reshaping {
    template <class S>
    using shape = attend::shape<D...>;
    template <class S, auto Strides>
    static constexpr auto strides = shapes::strides(attend::shape<D...>::extents);
    template <class Leaf>
    static constexpr bool keeps_leaf = is_row_major<Leaf>;  // only contiguous memory reshapes in place
};

template <class View, class A>
struct view_node : expr_base {
    using kind = kind::view;
    using view = View;
    using value_type = typename A::value_type;
    using shape_type = typename View::template shape<typename A::shape_type>;
    static constexpr bool weak = A::weak;
    static constexpr int precision = A::precision;
    A arg;
    constexpr auto children() const noexcept { return std::tie(arg); }
    template <class C>
    static constexpr auto rebuild(C&& c) {
        return view_node<View, std::remove_cvref_t<C>>{{}, std::forward<C>(c)};
    }
};

namespace detail {
// The view of a leaf, as a leaf when its memory allows.
template <class View, class L>
constexpr auto view_of(L&& leaf) {
    using Leaf = std::remove_cvref_t<L>;
    using S = typename View::template shape<typename Leaf::shape_type>;
    constexpr bool keeps = [] {
        if constexpr (is_memory_leaf<Leaf>) return View::template keeps_leaf<Leaf>;
        else return false;
    }();
    if constexpr (keeps) {
        constexpr auto st = View::template strides<typename Leaf::shape_type, Leaf::strides>;
        if constexpr (Leaf::owning)
            return owning_leaf<decltype(leaf.tensor), S, st>{{}, std::forward<L>(leaf).tensor};
        else
            return memory_leaf<typename Leaf::value_type, S, st>{{}, leaf.ptr};
    } else {
        return view_node<View, Leaf>{{}, std::forward<L>(leaf)};
    }
}

template <class I, std::size_t R>
struct swap_last;
template <std::size_t... I, std::size_t R>
struct swap_last<std::index_sequence<I...>, R> {
    using type = permutation<I..., R - 1, R - 2>;
};
}  // namespace detail

// permute<I...>(a): output axis k is input axis I_k (NumPy's transpose(axes)).
template <std::size_t... I, class A>
    requires expression<A>
constexpr auto permute(A&& a) {
    using S = shape_t<operand_t<A>>;
    if constexpr (any_invalid<operand_t<A>>) {
        return invalid_expr{};
    } else {
        static_assert(check::permutation<op::permute, S, check::axes<I...>>::ok,
                      "attend: permute: the axes must list every axis of the shape exactly once");
        if constexpr (check::permutation<op::permute, S, check::axes<I...>>::ok)
            return view_result(detail::view_of<permutation<I...>>(operand(std::forward<A>(a))));
        else
            return invalid_expr{};
    }
}

// transpose(a): the last two axes swapped.
template <class A>
    requires expression<A>
constexpr auto transpose(A&& a) {
    using S = shape_t<operand_t<A>>;
    if constexpr (any_invalid<operand_t<A>>) {
        return invalid_expr{};
    } else {
        static_assert(check::rank_at_least<op::transpose, 2, S>::ok, "attend: transpose: needs at least two axes");
        if constexpr (S::rank >= 2)
            return view_result(detail::view_of<typename detail::swap_last<std::make_index_sequence<S::rank - 2>, S::rank>::type>(
                operand(std::forward<A>(a))));
        else
            return invalid_expr{};
    }
}

// reshape<D...>(a): the same elements in row-major order, with extents D...
template <std::size_t... D, class A>
    requires expression<A>
constexpr auto reshape(A&& a) {
    using S = shape_t<operand_t<A>>;
    if constexpr (any_invalid<operand_t<A>>) {
        return invalid_expr{};
    } else {
        static_assert(check::extents_positive<D...>::ok, "attend: reshape: every extent must be at least 1");
        static_assert(check::same_size<op::reshape, S, shape<D...>>::ok,
                      "attend: reshape: the new shape must have the same number of elements");
        if constexpr (check::extents_positive<D...>::ok && check::same_size<op::reshape, S, shape<D...>>::ok)
            return view_result(detail::view_of<reshaping<D...>>(operand(std::forward<A>(a))));
        else
            return invalid_expr{};
    }
}

// The same views with the shape or the axes given as types, for code that computes them:
// reshape_as<shape<...>>(a), permute_by<std::index_sequence<...>>(a).
namespace detail {
template <class S>
struct reshape_to;
template <std::size_t... D>
struct reshape_to<shape<D...>> {
    template <class A>
    static constexpr auto apply(A&& a) {
        return reshape<D...>(std::forward<A>(a));
    }
};
template <class I>
struct permute_to;
template <std::size_t... I>
struct permute_to<std::index_sequence<I...>> {
    template <class A>
    static constexpr auto apply(A&& a) {
        return permute<I...>(std::forward<A>(a));
    }
};
}  // namespace detail

template <class S, class A>
    requires expression<A>
constexpr auto reshape_as(A&& a) {
    return detail::reshape_to<S>::apply(std::forward<A>(a));
}

template <class Axes, class A>
    requires expression<A>
constexpr auto permute_by(A&& a) {
    return detail::permute_to<Axes>::apply(std::forward<A>(a));
}

}  // namespace attend
