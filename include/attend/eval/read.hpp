// attend/eval/read.hpp — how each node kind yields the values of a bundle of output positions.
//
// A position is either flat (one offset; used when every leaf is dense in the output's layout)
// or an n-d index whose innermost entry is the first lane. `read<B>(node, pos)` returns a value
// bundle B (an xsimd batch in the loop body, a scalar in the tail) or, for bool nodes, its mask.
// All arithmetic runs in one compute type per tree (the widest strong floating type in it, or
// 64-bit integers for some trees of integers, below); cast nodes evaluate their operand in its
// own precision.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "../expr/index.hpp"
#include "../expr/leaf.hpp"
#include "../expr/map.hpp"
#include "../expr/slice.hpp"
#include "../simd.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

struct flat_pos {
    std::size_t off;
    constexpr flat_pos advanced(std::size_t l) const noexcept { return {off + l}; }
};

// An n-d position whose lanes run along axis `Lane` (the last axis, except in the attention
// nest, where lanes run along queries).
template <std::size_t R, std::size_t Lane = R - 1>
struct nd_pos {
    static constexpr std::size_t lane = Lane;
    std::array<std::size_t, R> idx;
    constexpr nd_pos advanced(std::size_t l) const noexcept {
        nd_pos p = *this;
        p.idx[Lane] += l;
        return p;
    }
};

// The position of matrix `batch` (row-major over the leading axes of S), at row and column 0.
template <class S>
constexpr nd_pos<S::rank> batch_position(std::size_t batch) noexcept {
    constexpr std::size_t R = S::rank;
    nd_pos<R> p{};
    for (std::size_t n = 0; n + 2 < R; ++n) {
        const std::size_t k = R - 3 - n;
        p.idx[k] = batch % S::extents[k];
        batch /= S::extents[k];
    }
    return p;
}

template <class P>
inline constexpr bool is_flat = std::is_same_v<P, flat_pos>;

// The compute type of a tree: its widest strong floating type, else `Fallback`.
template <class E, class Fallback>
using compute_t = std::conditional_t<E::precision == 1, float, std::conditional_t<E::precision == 2, double, Fallback>>;

template <class T>
using floating_or_double = std::conditional_t<std::is_floating_point_v<types::reads_as<T>>, types::reads_as<T>, double>;

// ---- trees of integers -----------------------------------------------------------------------
// A tree whose every node is integer- or bool-valued runs in double lanes, exact for integers up
// to 2^53, unless its result goes to an integer destination, it reads a 64-bit integer, or a node
// may wrap: then it runs lane by lane in 64-bit integers (tree_compute_t), each node's result
// wrapped to its own type as NumPy's is, so that a copy, a take, a where or a maximum of int64
// values keeps every bit.
template <class E>
constexpr bool integer_valued() {
    if constexpr (!std::is_integral_v<typename E::value_type>) return false;  // (bool is integral)
    else if constexpr (category_of<E> == category::leaf) return is_kind<E, kind::memory> || is_kind<E, kind::scalar> || is_kind<E, kind::iota>;
    else if constexpr (category_of<E> == category::elementwise) return all_children<E>([]<class C>() { return integer_valued<C>(); });
    else return false;
}
// What the integer memory and scalar leaves of a tree (a take's operand, not its indices) hold,
// as bits: a 64-bit integer, a 64-bit unsigned one, a signed one.
inline constexpr unsigned reads_wide = 1, reads_wide_unsigned = 2, reads_signed = 4;
template <class E>
constexpr unsigned integer_reads() {
    using V = typename E::value_type;
    if constexpr (is_kind<E, kind::memory> || is_kind<E, kind::scalar>) {
        if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>)
            return (sizeof(V) >= 8 ? reads_wide : 0u) | (sizeof(V) >= 8 && std::is_unsigned_v<V> ? reads_wide_unsigned : 0u) |
                   (std::is_signed_v<V> ? reads_signed : 0u);
        else return 0;
    } else if constexpr (is_kind<E, kind::take>) {
        return integer_reads<std::remove_cvref_t<decltype(std::declval<const E&>().arg)>>();
    } else if constexpr (category_of<E> == category::elementwise) {
        return or_children<E>([]<class C>() { return integer_reads<C>(); });
    } else {
        return 0;
    }
}
// Where an integer tree's values lie, from its leaves' types and index extents: [lo, hi] over
// every node, `ok` while each node provably stays in its own type's range (never wraps) and
// strictly within +-limit. A tree that is ok for limit 2^digits(F) computes exactly in F lanes
// (the ends are computed in double: exact below 2^53, and an end past the limit rounds to one
// at least the limit, hence strictly).
struct integer_range {
    double lo, hi;
    bool ok;
};
template <class E>
constexpr integer_range value_range(double limit) {
    using V = typename E::value_type;
    constexpr integer_range unknown{0, 0, false};
    auto fits = [&](integer_range r) {
        const double vlo = std::is_same_v<V, bool> ? 0 : double(std::numeric_limits<V>::min());
        const double vhi = std::is_same_v<V, bool> ? 1 : double(std::numeric_limits<V>::max());
        r.ok = r.ok && r.lo >= vlo && r.hi <= vhi && r.lo > -limit && r.hi < limit;
        return r;
    };
    if constexpr (!std::is_integral_v<V>) {
        return unknown;
    } else if constexpr (is_kind<E, kind::iota>) {
        return fits({0, double(E::shape_type::extents[E::axis] - 1), true});
    } else if constexpr (is_kind<E, kind::memory> || is_kind<E, kind::scalar>) {
        if constexpr (std::is_same_v<V, bool>) return fits({0, 1, true});
        else return fits({double(std::numeric_limits<V>::min()), double(std::numeric_limits<V>::max()), true});
    } else if constexpr (is_kind<E, kind::cast>) {
        // a cast to an integer type saturates (a floating operand) or wraps (an integer one) into it
        if constexpr (std::is_same_v<V, bool>) return fits({0, 1, true});
        else return fits({double(std::numeric_limits<V>::min()), double(std::numeric_limits<V>::max()), true});
    } else if constexpr (is_kind<E, kind::map>) {
        using Op = typename E::rule_op;
        return []<class... C>(double lim, auto fit, type_list<C...>) {
            const integer_range a[] = {value_range<C>(lim)...};
            for (const integer_range& r : a)
                if (!r.ok) return integer_range{0, 0, false};
            const integer_range x = a[0], y = a[sizeof...(C) - 1];
            if constexpr (std::is_same_v<Op, op::add>) return fit({x.lo + y.lo, x.hi + y.hi, true});
            else if constexpr (std::is_same_v<Op, op::sub>) return fit({x.lo - y.hi, x.hi - y.lo, true});
            else if constexpr (std::is_same_v<Op, op::mul>) {
                const double c[] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
                return fit({*std::min_element(c, c + 4), *std::max_element(c, c + 4), true});
            } else if constexpr (std::is_same_v<Op, op::maximum>) return fit({std::max(x.lo, y.lo), std::max(x.hi, y.hi), true});
            else if constexpr (std::is_same_v<Op, op::minimum>) return fit({std::min(x.lo, y.lo), std::min(x.hi, y.hi), true});
            else if constexpr (std::is_same_v<Op, op::neg>) return fit({-x.hi, -x.lo, true});
            else if constexpr (std::is_same_v<Op, op::abs>)
                return fit({x.lo >= 0 ? x.lo : x.hi <= 0 ? -x.hi : 0, std::max(-x.lo, x.hi), true});
            else if constexpr (std::is_same_v<Op, op::where>) return fit({std::min(a[1].lo, a[2].lo), std::max(a[1].hi, a[2].hi), true});
            else if constexpr (std::is_same_v<typename Op::rule, op::compare_rule> || std::is_same_v<typename Op::rule, op::logic_rule>)
                return fit({0, 1, true});
            else return integer_range{0, 0, false};
        }(limit, fits, child_types<E>{});
    } else {
        return unknown;
    }
}

// (A tree that provably never wraps, each node within its own type and below 2^53, is exact in
// double lanes; one that may wrap runs in 64-bit integers whatever the destination, so that
// `tensor<float> r = i8 + i8` gives NumPy's -56 for 100 + 100, not 200.)
template <class E, class T>
inline constexpr bool exact_integers =
    integer_valued<E>() && ((std::is_integral_v<T> && !std::is_same_v<T, bool>) || (integer_reads<E>() & reads_wide) != 0 ||
                            !value_range<E>(double(std::uint64_t{1} << 53)).ok);
// The type a tree with result type T computes in (uint64 for a tree of unsigned integers with a
// 64-bit one, else int64: signed values mixed with uint64 ones compare and take maxima as
// NumPy's do below 2^63), and its bundle of lanes on Arch.
template <class E>
using integer_compute_t =
    std::conditional_t<(integer_reads<E>() & (reads_wide_unsigned | reads_signed)) == reads_wide_unsigned, std::uint64_t, std::int64_t>;
template <class E, class T>
using tree_compute_t = std::conditional_t<exact_integers<E, T>, integer_compute_t<E>, compute_t<E, floating_or_double<T>>>;
// A bundle B whose lane l is value(p.advanced(l)) (a scalar bundle: value(p)), for the reads that
// go one lane at a time.
template <class B, class Pos, class Value>
inline B by_lane(const Pos& p, Value&& value) noexcept {
    if constexpr (!simd::is_batch<B>) {
        return B(value(p));
    } else {
        alignas(64) simd::value_t<B> tmp[simd::lanes<B>];
        for (std::size_t l = 0; l < simd::lanes<B>; ++l) tmp[l] = value(p.advanced(l));
        return B::load_aligned(tmp);
    }
}
template <class E, class T, class Arch>
using tree_bundle_t = std::conditional_t<exact_integers<E, T>, tree_compute_t<E, T>, simd::batch<tree_compute_t<E, T>, Arch>>;
// Integer arithmetic wraps (two's complement, as NumPy's): it runs in the unsigned type.
template <class X>
inline constexpr bool wrapping = std::is_integral_v<X> && !std::is_same_v<X, bool>;
template <class X, class Fn>
inline X wrapped(const X& a, const X& b, Fn f) noexcept {
    using U = std::make_unsigned_t<X>;
    return static_cast<X>(f(static_cast<U>(a), static_cast<U>(b)));
}

// Lanes of element type T: a mask for bool, values otherwise.
template <class B, class T>
inline auto load_lanes(const T* p) noexcept {
    if constexpr (std::is_same_v<T, bool>) return simd::load_mask<B>(p);
    else return simd::load<B>(p);
}

template <class B, class T>
inline auto splat_lanes(T v) noexcept {
    if constexpr (std::is_same_v<T, bool>) return simd::mask_t<B>(v);
    else return simd::splat<B>(v);
}

// Lanes `Stride` elements apart (a transposed or permuted view read along its last axis).
template <class B, std::size_t Stride, class T>
inline auto gather_lanes(const T* p) noexcept {
    if constexpr (!simd::is_batch<B>) {
        return load_lanes<B>(p);
    } else {
        alignas(64) T tmp[simd::lanes<B>];
        for (std::size_t l = 0; l < simd::lanes<B>; ++l) tmp[l] = p[l * Stride];
        return load_lanes<B>(static_cast<const T*>(tmp));
    }
}

template <class T, class V>
inline void store_lanes(T* p, const V& v) noexcept {
    if constexpr (std::is_same_v<T, bool>) simd::store_mask(p, v);
    else simd::store(p, v);
}

// ---- leaves --------------------------------------------------------------------------------

template <class B, class Leaf, class Pos>
    requires is_memory_leaf<Leaf>
inline auto read(const Leaf& leaf, const Pos& p) noexcept {
    if constexpr (is_flat<Pos>) {
        return load_lanes<B>(leaf.data() + p.off);
    } else {
        constexpr std::size_t R = std::tuple_size_v<decltype(p.idx)>;
        constexpr std::size_t lane_stride = Leaf::layout::template strides_at<R>[Pos::lane];
        const auto* at = leaf.data() + Leaf::layout::offset(p.idx);
        if constexpr (lane_stride == 0) return splat_lanes<B>(*at);
        else if constexpr (lane_stride == 1) return load_lanes<B>(at);
        else return gather_lanes<B, lane_stride>(at);
    }
}

template <class B, class S, class Pos>
inline auto read(const scalar_leaf<S>& leaf, const Pos&) noexcept {
    return splat_lanes<B>(leaf.value);
}

template <class B, std::size_t Axis, class S, std::size_t R, std::size_t L>
inline B read(const iota_leaf<Axis, S>&, const nd_pos<R, L>& p) noexcept {
    constexpr std::size_t ax = R - S::rank + Axis;  // the output axis this iota counts along
    if constexpr (S::extents[Axis] == 1) return simd::splat<B>(0);
    else if constexpr (ax == L) return simd::lane_index<B>(p.idx[ax]);
    else return simd::splat<B>(p.idx[ax]);
}

// A finished tile in a stack buffer, read in place of the node that produced it by the tree
// around it (a contraction's epilogue, attention's score tree): element (i, j) of the last two
// axes at data[(i - i0) * ld + (j - j0)], or with Transposed (keys-major, queries in lanes)
// at data[(j - j0) * ld + (i - i0)].
// ---- kernel operands read in place -----------------------------------------------------------

// Element (row, col) of the matrix of a memory leaf at batch position p, and its row stride.
template <class Leaf, std::size_t R>
inline auto matrix_at(const Leaf& leaf, nd_pos<R> p, std::size_t row, std::size_t col) noexcept {
    p.idx[R - 2] = row;
    p.idx[R - 1] = col;
    constexpr std::size_t ld = Leaf::layout::template strides_at<R>[R - 2];
    return std::pair{leaf.data() + Leaf::layout::offset(p.idx), ld};
}

// A memory leaf of the compute type whose axis `FromEnd` (counted from the last) is contiguous
// can be read by a kernel in place (contraction, matvec, attention and decode operands).
template <class Leaf, class F, std::size_t FromEnd>
inline constexpr bool in_place = [] {
    if constexpr (is_memory_leaf<Leaf>) {
        constexpr std::size_t r = Leaf::shape_type::rank;
        return std::is_same_v<typename Leaf::value_type, F> && Leaf::strides[r - 1 - FromEnd] == 1;
    } else {
        return false;
    }
}();

// The same for kernels that load through simd::load, which also widens 16-bit storage to float
// as it streams (the matvec plan's weight).
template <class Leaf, class F, std::size_t FromEnd>
inline constexpr bool streamed = [] {
    if constexpr (is_memory_leaf<Leaf>) {
        using T = typename Leaf::value_type;
        constexpr std::size_t r = Leaf::shape_type::rank;
        return (std::is_same_v<T, F> || (is_half<T> && std::is_same_v<F, float>)) && Leaf::strides[r - 1 - FromEnd] == 1;
    } else {
        return false;
    }
}();

template <class F>
struct tile_cursor {
    const F* data;
    std::size_t ld, i0, j0;
};

template <class F, class S, bool Transposed>
struct tile_leaf : leaf_node {
    using kind = kind::tile;
    using value_type = F;
    using shape_type = S;
    static constexpr bool weak = false;
    static constexpr int precision = types::precision_of<F, false>;
    const tile_cursor<F>* at;
};

template <class B, class F, class S, bool Transposed, std::size_t R, std::size_t L>
inline B read(const tile_leaf<F, S, Transposed>& t, const nd_pos<R, L>& p) noexcept {
    const tile_cursor<F>& c = *t.at;
    const std::size_t i = p.idx[R - 2] - c.i0, j = p.idx[R - 1] - c.j0;
    return simd::load<B>(c.data + (Transposed ? j * c.ld + i : i * c.ld + j));
}

// ---- elementwise operations ----------------------------------------------------------------

template <class X, class Y> inline auto apply(op::add, const X& a, const Y& b) noexcept {
    if constexpr (wrapping<X> && std::is_same_v<X, Y>) return wrapped(a, b, [](auto x, auto y) { return x + y; });
    else return a + b;
}
template <class X, class Y> inline auto apply(op::sub, const X& a, const Y& b) noexcept {
    if constexpr (wrapping<X> && std::is_same_v<X, Y>) return wrapped(a, b, [](auto x, auto y) { return x - y; });
    else return a - b;
}
template <class X, class Y> inline auto apply(op::mul, const X& a, const Y& b) noexcept {
    if constexpr (wrapping<X> && std::is_same_v<X, Y>) return wrapped(a, b, [](auto x, auto y) { return x * y; });
    else return a * b;
}
template <class X, class Y> inline auto apply(op::div, const X& a, const Y& b) noexcept { return a / b; }
template <class X> inline auto apply(op::maximum, const X& a, const X& b) noexcept { return simd::maximum(a, b); }
template <class X> inline auto apply(op::minimum, const X& a, const X& b) noexcept { return simd::minimum(a, b); }
template <class X> inline auto apply(op::neg, const X& a) noexcept {
    if constexpr (wrapping<X>) return wrapped(X(0), a, [](auto x, auto y) { return x - y; });
    else return -a;
}
template <class X> inline auto apply(op::abs, const X& a) noexcept {
    if constexpr (wrapping<X> && std::is_signed_v<X>) return a < X(0) ? apply(op::neg{}, a) : a;  // (the least value stays, as NumPy's)
    else if constexpr (wrapping<X>) return a;
    else return simd::abs(a);
}
template <class X> inline auto apply(op::exp, const X& a) noexcept { return simd::exp(a); }
template <class X> inline auto apply(op::log, const X& a) noexcept { return simd::log(a); }
template <class X> inline auto apply(op::sqrt, const X& a) noexcept { return simd::sqrt(a); }
template <class X> inline auto apply(op::tanh, const X& a) noexcept { return simd::tanh(a); }
template <class X> inline auto apply(op::sin, const X& a) noexcept { return simd::sin(a); }
template <class X> inline auto apply(op::cos, const X& a) noexcept { return simd::cos(a); }
template <class X> inline auto apply(op::sigmoid, const X& a) noexcept { return simd::sigmoid(a); }
template <class X> inline auto apply(op::rsqrt, const X& a) noexcept { return X(1) / simd::sqrt(a); }
template <class X, class Y> inline auto apply(op::less, const X& a, const Y& b) noexcept { return a < b; }
template <class X, class Y> inline auto apply(op::less_equal, const X& a, const Y& b) noexcept { return a <= b; }
template <class X, class Y> inline auto apply(op::greater, const X& a, const Y& b) noexcept { return a > b; }
template <class X, class Y> inline auto apply(op::greater_equal, const X& a, const Y& b) noexcept { return a >= b; }
template <class X, class Y> inline auto apply(op::equal, const X& a, const Y& b) noexcept { return a == b; }
template <class X, class Y> inline auto apply(op::not_equal, const X& a, const Y& b) noexcept { return simd::not_equal(a, b); }
template <class X, class Y> inline auto apply(op::logical_and, const X& a, const Y& b) noexcept { return a && b; }
template <class X, class Y> inline auto apply(op::logical_or, const X& a, const Y& b) noexcept { return a || b; }
template <class X> inline auto apply(op::logical_not, const X& a) noexcept { return !a; }

template <class C, class X>
inline X apply(op::where, const C& c, const X& a, const X& b) noexcept {
    if constexpr (std::is_same_v<C, X>) return (c && a) || (!c && b);  // bool branches
    else if constexpr (simd::is_batch<X>) return xsimd::select(c, a, b);
    else return c ? a : b;
}

// Whether integer map node E, of 8 to 32 bits, may leave its own type (NumPy's int8 100 + 100
// wraps to -56): in a tree of floating lanes such a node computes each lane in 64-bit integers,
// wrapped per node, where the lanes would carry the unwrapped value on. 64-bit nodes stay in the
// lanes (index arithmetic: int64 iota plus an offset of any type; float lanes are exact below
// 2^24 whatever NumPy would wrap at 2^63).
template <class E>
inline constexpr bool may_wrap = wrapping<typename E::value_type> && sizeof(typename E::value_type) < 8 &&
                                 !value_range<E>(18446744073709551616.0).ok;

template <class B, class Op, class... A, class Pos>
inline auto read(const map<Op, A...>& node, const Pos& p) noexcept {
    using V = typename map<Op, A...>::value_type;
    if constexpr (std::is_floating_point_v<simd::value_t<B>> && may_wrap<map<Op, A...>>) {
        using I = integer_compute_t<map<Op, A...>>;
        return by_lane<B>(p, [&](const auto& q) { return static_cast<simd::value_t<B>>(static_cast<V>(read<I>(node, q))); });
    } else {
        const auto r = unpack(node.args, [&](const A&... a) { return apply(Op{}, read<B>(a, p)...); });
        // (a tree of integers: each result wrapped to its node's own type, as NumPy's int8 + int8 is)
        if constexpr (wrapping<B> && wrapping<V> && std::is_same_v<std::remove_cv_t<decltype(r)>, B>) return static_cast<B>(static_cast<V>(r));
        else return r;
    }
}

// ---- take: the operand read at the gathered position ------------------------------------------

template <class B, std::size_t Axis, class A, class I, std::size_t R, std::size_t L>
inline auto read(const take_node<Axis, A, I>& node, const nd_pos<R, L>& p) noexcept {
    using S = typename take_node<Axis, A, I>::shape_type;
    using IS = typename I::shape_type;
    constexpr std::size_t IR = IS::rank, ax = R - S::rank + Axis;  // p's axes ax .. ax + IR - 1 index the indices
    constexpr std::size_t R2 = R - IR + 1;                         // the operand's position: one axis for them
    constexpr bool gathered_lanes = L >= ax && L < ax + IR;
    constexpr std::size_t L2 = L < ax ? L : gathered_lanes ? ax : L - IR + 1;
    auto at = [&](const nd_pos<R, L>& q) {  // the operand's position for output position q
        std::size_t off = 0;                 // (an index axis of extent 1 may be broadcast: entry 0)
        for (std::size_t k = 0; k < IR; ++k) off += (IS::extents[k] == 1 ? 0 : q.idx[ax + k]) * I::layout::strides[k];
        nd_pos<R2, L2> a;
        for (std::size_t k = 0; k < ax; ++k) a.idx[k] = q.idx[k];
        a.idx[ax] = static_cast<std::size_t>(node.indices.data()[off]);
        for (std::size_t k = ax + 1; k < R2; ++k) a.idx[k] = q.idx[k + IR - 1];
        return a;
    };
    if constexpr (!gathered_lanes || !simd::is_batch<B>) {
        return read<B>(node.arg, at(p));
    } else {  // lanes along an index axis: one index per lane
        return by_lane<B>(p, [&](const auto& q) { return read<simd::value_t<B>>(node.arg, at(q)); });
    }
}

// ---- cast ----------------------------------------------------------------------------------

// The value U(v) takes, expressed in the compute bundle B (a mask when U is bool).
template <class U, class B, class V>
inline auto convert(const V& v) noexcept {
    if constexpr (wrapping<B> && std::is_same_v<V, B>) {  // a tree of integers: U's value, wrapped as NumPy's astype
        if constexpr (std::is_same_v<U, bool>) return v != B(0);
        else return static_cast<B>(static_cast<U>(v));
    } else if constexpr (std::is_same_v<V, simd::mask_t<B>> && !std::is_same_v<V, B>) {  // from bool
        if constexpr (std::is_same_v<U, bool>) return v;
        else return simd::select<B>(v, simd::splat<B>(1), simd::splat<B>(0));
    } else if constexpr (std::is_same_v<U, bool>) {
        return simd::not_equal(v, simd::splat<B>(0));
    } else if constexpr (std::is_integral_v<U>) {  // toward zero, saturating (simd::trunc_saturated)
        return simd::trunc_saturated<U>(v);
    } else if constexpr (is_half<U> && std::is_same_v<simd::value_t<B>, float>) {  // round to bf16 / f16
        return simd::round_to<U>(v);
    } else if constexpr (sizeof(U) < sizeof(simd::value_t<B>)) {  // narrowing: round through U
        const auto through = [](simd::value_t<B> x) { return static_cast<simd::value_t<B>>(static_cast<U>(x)); };
        if constexpr (simd::is_batch<B>) return simd::lane_by_lane(v, through);
        else return through(v);
    } else {
        return v;
    }
}

// An operand value of type FA brought to the cast's compute type F: a double on its way to a
// 16-bit U goes to float rounded to odd (half_bits::to_odd_float), so that rounding it to U is
// rounding the double once.
template <class U, class F, class FA>
inline F cast_source(FA x) noexcept {
    if constexpr (is_half<U> && std::is_same_v<F, float> && std::is_same_v<FA, double>) return half_bits::to_odd_float(x);
    else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && std::is_floating_point_v<FA>)
        return static_cast<F>(simd::trunc_saturated<U>(x));  // truncated in the operand's precision
    else return static_cast<F>(convert<F, FA>(x));
}

// Whether a leaf's values are exact in lanes of F (an iota's are its indices).
template <class A, class F>
constexpr bool exact_in() {
    using V = typename A::value_type;
    if constexpr (is_kind<A, kind::iota>) return A::shape_type::size <= (std::uint64_t{1} << std::numeric_limits<F>::digits);
    else return std::numeric_limits<V>::digits <= std::numeric_limits<F>::digits;
}
// Whether the cast to U of integer-valued operand A, in a tree computing in F, takes A's values
// exactly (A in its own integer arithmetic, each value converted to U once, as NumPy's astype):
// all but a leaf that F lanes hold exactly (or whose one rounding into F is U's own), and a tree
// whose every node F lanes hold exactly without wrapping, cast to a type that holds its range.
template <class U, class A, class F>
constexpr bool exact_cast_operand() {
    using V = typename A::value_type;
    if constexpr (!std::is_floating_point_v<F> || !std::is_integral_v<V> || std::is_same_v<V, bool> || !integer_valued<A>()) {
        return false;
    } else if constexpr (is_kind<A, kind::memory> || is_kind<A, kind::scalar> || is_kind<A, kind::iota>) {
        if constexpr (std::is_same_v<U, F>) return false;  // the leaf's one rounding is the cast's
        else if constexpr (!exact_in<A, F>()) return true;
        else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool>)  // no wrapping needed?
            return std::cmp_greater(std::numeric_limits<U>::min(), std::numeric_limits<V>::min()) ||
                   std::cmp_less(std::numeric_limits<U>::max(), std::numeric_limits<V>::max());
        else return false;
    } else {
        constexpr integer_range r = value_range<A>(double(std::uint64_t{1} << std::numeric_limits<F>::digits));
        constexpr bool in_u = !std::is_integral_v<U> ||
                              (!std::is_same_v<U, bool> && r.lo >= double(std::numeric_limits<U>::min()) && r.hi <= double(std::numeric_limits<U>::max()));
        return !(r.ok && in_u);
    }
}

template <class B, class U, class A, class Pos>
inline auto read(const cast_node<U, A>& node, const Pos& p) noexcept {
    using F = simd::value_t<B>;
    using FA = compute_t<A, F>;
    if constexpr (exact_cast_operand<U, A, F>()) {
        using I = tree_compute_t<A, typename A::value_type>;  // 64-bit integers, wrapped per node
        return convert<U, B>(by_lane<B>(p, [&](const auto& q) { return static_cast<F>(static_cast<U>(read<I>(node.arg, q))); }));
    } else if constexpr (std::is_same_v<FA, F> || !simd::is_batch<B>) {
        if constexpr (std::is_same_v<FA, F> && std::is_integral_v<typename A::value_type> && !std::is_same_v<typename A::value_type, bool>) {
            return convert<U, B>(read<B>(node.arg, p) + B(F(0)));  // an integer 0 is +0 (F lanes give -0 for 0 * -1)
        } else if constexpr (std::is_same_v<FA, F>) {
            return convert<U, B>(read<B>(node.arg, p));
        } else {  // scalar tail in another precision
            return convert<U, B>(cast_source<U, F>(read<FA>(node.arg, p)));
        }
    } else {
        // The operand runs in its own precision, lane by lane (rare: casts across float/double).
        return convert<U, B>(by_lane<B>(p, [&](const auto& q) { return cast_source<U, F>(read<FA>(node.arg, q)); }));
    }
}

// ---- tree properties -----------------------------------------------------------------------

// Every leaf is read at the output's own flat offset: no broadcasting, no index leaves.
template <class E, class S>
constexpr bool dense_in() {
    if constexpr (is_kind<E, kind::memory>) return E::shape_type::size == S::size && is_row_major<E>;
    else if constexpr (is_kind<E, kind::scalar>) return true;
    else if constexpr (is_kind<E, kind::iota> || is_kind<E, kind::tile> || is_kind<E, kind::take>) return false;
    else if constexpr (category_of<E> == category::elementwise)
        return all_children<E>([]<class C>() { return dense_in<C, S>(); });
    else static_assert(unhandled_kind<E>, "attend internal: dense_in: not an elementwise tree");
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
