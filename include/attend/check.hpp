// attend/check.hpp — every compile-time diagnostic has its predicate here.
//
// A static_assert message must be a string literal in C++20, so it cannot print extents. Each
// predicate therefore carries the operation tag and the offending shapes or element types in its
// own template arguments: g++ and clang print the failed expression, e.g.
//   static assertion failed: attend: operator+: shapes do not broadcast
//   note: 'attend::check::broadcast<attend::op::add, attend::shape<4, 3>, attend::shape<5> >::ok'
// so the first error names the operation, and its block shows both shapes.
#pragma once

#include <cstddef>
#include <type_traits>

#include "shape.hpp"

namespace attend::check {

// Elementwise operands must broadcast (NumPy rules).
template <class Op, class A, class B>
struct broadcast {
    static constexpr bool ok = broadcastable_v<A, B>;
};

// An assignment's right side must broadcast *to* the destination's shape.
template <class Op, class Dest, class Source>
struct assignable {
    static constexpr bool ok =
        broadcastable_v<Dest, Source> && std::is_same_v<broadcast_t<Dest, Source>, Dest>;
};

// Element-type rules (expr/types.hpp decides `Ok`); both element types are in the checked type.
template <class Op, class A, class B, bool Ok>
struct element_types {
    static constexpr bool ok = Ok;
};

// Every extent of a tensor is at least 1.
template <std::size_t... D>
struct extents_positive {
    static constexpr bool ok = ((D > 0) && ...);
};

// Axis arguments must name an axis of the shape.
template <class Op, std::size_t Axis, class S>
struct axis_in_range {
    static constexpr bool ok = Axis < S::rank;
};

}  // namespace attend::check
