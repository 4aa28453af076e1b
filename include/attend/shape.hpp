// attend/shape.hpp — shapes as types and their algebra, all at compile time.
//
// `shape<D...>` is a row-major extent list. The algebra (broadcast, strides, offsets) is written
// as constexpr functions over std::array and turned back into types with `shape_of<array>`: it
// reads like the math and instantiates one type per result, not one per step. `dims` exposes the
// extents as a Boost.Hana tuple of integral constants for users who compute with shapes.
#pragma once

#include <array>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/tuple.hpp>
#include <cstddef>
#include <utility>

namespace attend {

template <std::size_t... D>
struct shape {
    static constexpr std::size_t rank = sizeof...(D);
    static constexpr std::size_t size = (std::size_t{1} * ... * D);
    static constexpr std::array<std::size_t, rank> extents{D...};
    static constexpr auto dims = boost::hana::make_tuple(boost::hana::size_c<D>...);
};

template <class T>
inline constexpr bool is_shape = false;
template <std::size_t... D>
inline constexpr bool is_shape<shape<D...>> = true;

namespace shapes {

template <std::size_t R>
using extents_t = std::array<std::size_t, R>;

// shape_of<arr>: the shape type whose extents are the constexpr array `arr`.
template <auto Arr, class = std::make_index_sequence<Arr.size()>>
struct shape_of_impl;
template <auto Arr, std::size_t... I>
struct shape_of_impl<Arr, std::index_sequence<I...>> {
    using type = shape<Arr[I]...>;
};
template <auto Arr>
using shape_of = typename shape_of_impl<Arr>::type;

// Row-major strides of an extent list.
template <std::size_t R>
constexpr extents_t<R> strides(const extents_t<R>& e) {
    extents_t<R> s{};
    std::size_t acc = 1;
    for (std::size_t k = R; k-- > 0;) {
        s[k] = acc;
        acc *= e[k];
    }
    return s;
}

// NumPy broadcasting: right-aligned, each pair of extents equal or one of them 1.
template <std::size_t RA, std::size_t RB>
constexpr bool broadcastable(const extents_t<RA>& a, const extents_t<RB>& b) {
    for (std::size_t k = 1; k <= RA && k <= RB; ++k) {
        const auto x = a[RA - k], y = b[RB - k];
        if (x != y && x != 1 && y != 1) return false;
    }
    return true;
}

template <std::size_t RA, std::size_t RB>
constexpr auto broadcast(const extents_t<RA>& a, const extents_t<RB>& b) {
    constexpr std::size_t R = RA > RB ? RA : RB;
    extents_t<R> r{};
    for (std::size_t k = 1; k <= R; ++k) {
        const std::size_t x = k <= RA ? a[RA - k] : 1, y = k <= RB ? b[RB - k] : 1;
        r[R - k] = x == 1 ? y : x;
    }
    return r;
}

// Strides with which an operand of extents `e` and element strides `s` is read at an index of
// rank R it broadcasts to: right-aligned, 0 along axes the operand repeats (extent 1 or absent).
template <std::size_t R, std::size_t r>
constexpr extents_t<R> broadcast_strides(const extents_t<r>& e, const extents_t<r>& s) {
    static_assert(r <= R);
    extents_t<R> out{};
    for (std::size_t k = 0; k < r; ++k) out[R - r + k] = e[k] == 1 ? 0 : s[k];
    return out;
}
template <std::size_t R, std::size_t r>
constexpr extents_t<R> broadcast_strides(const extents_t<r>& e) {
    return broadcast_strides<R>(e, strides(e));
}

// The extents without the last axis (row statistics of a matrix-shaped result).
template <std::size_t R>
constexpr extents_t<R - 1> drop_last(const extents_t<R>& e) {
    extents_t<R - 1> out{};
    for (std::size_t k = 0; k + 1 < R; ++k) out[k] = e[k];
    return out;
}

}  // namespace shapes

// The shape two operands broadcast to. For a pair that does not broadcast it is still a shape
// (the left operand's extent wins), so the caller's static_assert is the only error users see.
template <class A, class B>
using broadcast_t = shapes::shape_of<shapes::broadcast(A::extents, B::extents)>;

template <class A, class B>
inline constexpr bool broadcastable_v = shapes::broadcastable(A::extents, B::extents);

}  // namespace attend
