// attend/expr/node.hpp — what a node kind is: the one protocol every tree walker relies on.
//
// Every node type names its kind (`using kind = kind::map;`) beside its definition, and every
// inner node lists its operands (`children()`) and says how to make the same node over other
// operands (`rebuild(c...)`). Walkers dispatch on the kind's *category* — leaf, elementwise or
// planned (a node with a loop nest of its own) — and on the kind itself where they must; a kind
// a walker does not handle is a compile error (`unhandled_kind`), never a silent default.
// Adding a node kind: a tag here, the node with its kind/children/rebuild, and its loop nest.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core.hpp"

namespace attend {

enum class category {
    leaf,         // reads memory, a scalar, an index, or a finished tile: no operands
    elementwise,  // computes each position from its operands at that position
    planned,      // needs a loop nest of its own (evaluated into a temporary inside other trees)
};

namespace kind {
struct memory { static constexpr category of = category::leaf; };       // memory_leaf, owning_leaf
struct scalar { static constexpr category of = category::leaf; };       // scalar_leaf
struct iota { static constexpr category of = category::leaf; };         // iota_leaf
struct tile { static constexpr category of = category::leaf; };         // tile_leaf (eval-internal)
struct map { static constexpr category of = category::elementwise; };   // map<Op, A...>
struct cast { static constexpr category of = category::elementwise; };  // cast_node<U, A>
struct take { static constexpr category of = category::elementwise; };  // take_node: operands read at gathered positions
struct view { static constexpr category of = category::planned; };      // view_node of a computed operand
struct reduce { static constexpr category of = category::planned; };    // reduce_node (sum, max, argmax)
struct softmax { static constexpr category of = category::planned; };   // softmax_node
struct matmul { static constexpr category of = category::planned; };    // matmul_node
struct invalid { static constexpr category of = category::leaf; };      // an operation that failed its check
}  // namespace kind

template <class E>
using kind_of = typename std::remove_cvref_t<E>::kind;

template <class E, class K>
inline constexpr bool is_kind = std::is_same_v<kind_of<E>, K>;

template <class E>
inline constexpr category category_of = kind_of<E>::of;

// For the last branch of a walker's dispatch: a kind it was not written for.
template <class E>
inline constexpr bool unhandled_kind = false;

// Leaves derive from this: no operands.
struct leaf_node : expr_base {
    static constexpr std::tuple<> children() noexcept { return {}; }
};

namespace detail {
template <class X>
inline constexpr bool assignable_view = false;
}  // namespace detail

// What transpose, permute and reshape hand back: the view's node (a leaf with new strides, or a
// view_node) in a wrapper that operand() unwraps, so trees hold the node itself. The views read
// only: assigning to one would rebind it, not write its elements, so assignment is an error that
// says so (the template for any right side; the deleted copy assignment, whose line says it too,
// for a const view). Expressions built from views stay values that can be reassigned.
template <class Node>
struct view_result : Node {
    using node_type = Node;
    view_result() = default;
    view_result(const view_result&) = default;
    constexpr explicit view_result(Node n) : Node(std::move(n)) {}
    view_result& operator=(const view_result&) = delete;  // attend: transpose, permute and reshape views are read-only
    template <class X>
    void operator=(X&&) {
        static_assert(detail::assignable_view<X>,
                      "attend: transpose, permute and reshape views are read-only: assign to a tensor, a tensor_ref or a slice");
    }
};
template <class X>
inline constexpr bool is_view_result = false;
template <class Node>
inline constexpr bool is_view_result<view_result<Node>> = true;

// What an operation that failed its shape or type check returns: an expression that every later
// operation and assignment accepts silently, so that the check's static_assert is the only error.
struct invalid_expr : leaf_node {
    using kind = kind::invalid;
    using value_type = float;
    using shape_type = shape<>;
    static constexpr bool weak = true;
    static constexpr int precision = 0;
};

template <class... X>
inline constexpr bool any_invalid = (std::is_same_v<std::remove_cvref_t<X>, invalid_expr> || ...);

template <class... T>
struct type_list {};

namespace detail {
template <class Tuple>
struct decayed_list;
template <class... C>
struct decayed_list<std::tuple<C...>> {
    using type = type_list<std::remove_cvref_t<C>...>;
};
}  // namespace detail

// The operand types of a node, as a type_list (empty for leaves).
template <class E>
using child_types = typename detail::decayed_list<decltype(std::declval<const E&>().children())>::type;

// f(get<0>(t), get<1>(t), ...): std::apply without its invoke and noexcept machinery, which the
// tree walkers would instantiate at every node of every expression (compile time users feel).
template <class Tuple, class F>
constexpr decltype(auto) unpack(Tuple&& t, F&& f) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
        return f(std::get<I>(static_cast<Tuple&&>(t))...);
    }(std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Tuple>>>{});
}

// The same node kind over f(child) for each child.
template <class E, class F>
constexpr auto rebuild_with(const E& e, F&& f) {
    return unpack(e.children(), [&](const auto&... c) { return E::rebuild(f(c)...); });
}

// f(child) for each child, in order.
template <class E, class F>
constexpr void for_each_child(const E& e, F&& f) {
    unpack(e.children(), [&](const auto&... c) { (f(c), ...); });
}

// Type-level folds over the children: Pred<C>::value (or a constexpr function object) combined.
template <class E, class F>
constexpr bool any_child(F f) {
    return []<class... C>(F g, type_list<C...>) { return (g.template operator()<C>() || ...); }(f, child_types<E>{});
}
template <class E, class F>
constexpr bool all_children(F f) {
    return []<class... C>(F g, type_list<C...>) { return (g.template operator()<C>() && ...); }(f, child_types<E>{});
}
template <class E, class F>
constexpr unsigned or_children(F f) {
    return []<class... C>(F g, type_list<C...>) { return (0u | ... | g.template operator()<C>()); }(f, child_types<E>{});
}
template <class E, class F>
constexpr std::size_t sum_children(F f) {
    return []<class... C>(F g, type_list<C...>) { return (std::size_t{0} + ... + g.template operator()<C>()); }(f, child_types<E>{});
}

}  // namespace attend
