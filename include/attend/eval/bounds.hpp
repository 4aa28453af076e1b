// attend/eval/bounds.hpp — what an expression can be over a box of positions (interval
// arithmetic), used to skip attention tiles that a mask rules out and the mask work on tiles it
// keeps entirely.
//
// Index leaves (iota) give the box's range, scalars a point, memory a full range; bool values
// are intervals within [0, 1]: [0, 0] never, [1, 1] always, [0, 1] maybe. The structure is the
// expression's own (known at compile time); only the box's corners are run-time values, so a
// runtime scalar in a mask (a KV cache filled up to `len`) skips tiles too.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <tuple>
#include <type_traits>

#include "read.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

struct interval {
    double lo, hi;
};

inline constexpr double inf = std::numeric_limits<double>::infinity();
inline constexpr interval anything{-inf, inf};

template <std::size_t R>
struct box {
    std::array<std::size_t, R> lo, hi;  // inclusive index ranges per axis
};

inline interval hull(interval a, interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }
inline interval sane(interval a) { return (std::isnan(a.lo) || std::isnan(a.hi)) ? anything : a; }

inline interval times(interval a, interval b) {
    const double p[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    for (double x : p)
        if (std::isnan(x)) return anything;
    return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

inline interval truth(bool always, bool never) { return always ? interval{1, 1} : never ? interval{0, 0} : interval{0, 1}; }

template <class Op>
interval combine(Op, interval a, interval b) {
    if constexpr (std::is_same_v<Op, op::add>) return sane({a.lo + b.lo, a.hi + b.hi});
    else if constexpr (std::is_same_v<Op, op::sub>) return sane({a.lo - b.hi, a.hi - b.lo});
    else if constexpr (std::is_same_v<Op, op::mul>) return times(a, b);
    else if constexpr (std::is_same_v<Op, op::div>) return b.lo > 0 || b.hi < 0 ? times(a, {1 / b.hi, 1 / b.lo}) : anything;
    else if constexpr (std::is_same_v<Op, op::maximum>) return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    else if constexpr (std::is_same_v<Op, op::minimum>) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    else if constexpr (std::is_same_v<Op, op::less>) return truth(a.hi < b.lo, a.lo >= b.hi);
    else if constexpr (std::is_same_v<Op, op::less_equal>) return truth(a.hi <= b.lo, a.lo > b.hi);
    else if constexpr (std::is_same_v<Op, op::greater>) return truth(a.lo > b.hi, a.hi <= b.lo);
    else if constexpr (std::is_same_v<Op, op::greater_equal>) return truth(a.lo >= b.hi, a.hi < b.lo);
    else if constexpr (std::is_same_v<Op, op::equal>) return truth(a.lo == a.hi && b.lo == b.hi && a.lo == b.lo, a.hi < b.lo || b.hi < a.lo);
    else if constexpr (std::is_same_v<Op, op::not_equal>) return truth(a.hi < b.lo || b.hi < a.lo, a.lo == a.hi && b.lo == b.hi && a.lo == b.lo);
    else if constexpr (std::is_same_v<Op, op::logical_and>) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    else if constexpr (std::is_same_v<Op, op::logical_or>) return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    else return anything;
}

template <class Op>
interval combine(Op, interval a) {
    if constexpr (std::is_same_v<Op, op::neg>) return {-a.hi, -a.lo};
    else if constexpr (std::is_same_v<Op, op::logical_not>) return {1 - a.hi, 1 - a.lo};
    else if constexpr (std::is_same_v<Op, op::abs>)
        return a.lo >= 0 ? a : a.hi <= 0 ? interval{-a.hi, -a.lo} : interval{0, std::max(-a.lo, a.hi)};
    else if constexpr (std::is_same_v<Op, op::exp>) return {std::exp(a.lo), std::exp(a.hi)};
    else if constexpr (std::is_same_v<Op, op::tanh>) return {std::tanh(a.lo), std::tanh(a.hi)};
    else if constexpr (std::is_same_v<Op, op::sqrt>) return a.lo >= 0 ? interval{std::sqrt(a.lo), std::sqrt(a.hi)} : anything;
    else if constexpr (std::is_same_v<Op, op::log>) return a.lo >= 0 ? interval{std::log(a.lo), std::log(a.hi)} : anything;
    else return anything;
}

template <class Op>
interval combine(Op, interval c, interval a, interval b) {  // where
    return c.lo == 1 ? a : c.hi == 0 ? b : hull(a, b);
}

// The range of `e` over the box (positions of rank R).
template <class E, std::size_t R>
interval bounds(const E& e, const box<R>& b) {
    if constexpr (is_kind<E, kind::scalar>) {
        return {double(e.value), double(e.value)};
    } else if constexpr (is_kind<E, kind::map>) {
        return unpack(e.children(), [&](const auto&... a) { return combine(typename E::rule_op{}, bounds(a, b)...); });
    } else if constexpr (is_kind<E, kind::cast>) {
        const interval a = bounds(e.arg, b);
        if constexpr (std::is_same_v<typename E::cast_to, bool>) return truth(a.lo > 0 || a.hi < 0, a.lo == 0 && a.hi == 0);
        else if constexpr (std::is_integral_v<typename E::cast_to>) return {std::trunc(a.lo), std::trunc(a.hi)};
        else if constexpr (is_half<typename E::cast_to>) {  // rounding is monotonic: round the ends
            using U = typename E::cast_to;
            return {static_cast<double>(U(a.lo)), static_cast<double>(U(a.hi))};
        } else return a;
    } else if constexpr (is_kind<E, kind::iota>) {
        using S = typename E::shape_type;
        constexpr std::size_t ax = R - S::rank + E::axis;
        if constexpr (S::extents[E::axis] == 1) return {0, 0};
        else return {double(b.lo[ax]), double(b.hi[ax])};
    } else if constexpr (is_kind<E, kind::memory> || is_kind<E, kind::tile> || is_kind<E, kind::take>) {  // any value of the type
        if constexpr (std::is_same_v<typename E::value_type, bool>) return interval{0, 1};
        else return anything;
    } else {
        static_assert(unhandled_kind<E>, "attend internal: bounds: a planned node inside a score tree");
    }
}

// Index-only expressions: made of iota and scalars (their value is known from the position).
template <class E>
constexpr bool index_only() {
    if constexpr (is_kind<E, kind::scalar> || is_kind<E, kind::iota>) return true;
    else if constexpr (category_of<E> == category::elementwise) return all_children<E>([]<class C>() { return index_only<C>(); });
    else return false;
}

template <class E>
inline constexpr bool is_index_where = [] {
    if constexpr (is_kind<E, kind::map>) {
        if constexpr (std::is_same_v<typename E::rule_op, op::where>)
            return index_only<std::tuple_element_t<0, decltype(E::args)>>();
        else
            return false;
    } else {
        return false;
    }
}();

// Whether every where() with an index-only condition has that condition false over the box.
template <class E, std::size_t R>
bool index_conditions_never(const E& e, const box<R>& b) {
    if constexpr (is_index_where<E>) {
        return bounds(std::get<0>(e.args), b).hi == 0 && index_conditions_never(std::get<2>(e.args), b);
    } else if constexpr (category_of<E> == category::elementwise) {
        return unpack(e.children(), [&](const auto&... a) { return (index_conditions_never(a, b) && ...); });
    } else {
        return true;
    }
}

// The end of the keys (the last axis) that a tree's scores over box b may leave: the least e in
// [b.lo, b.hi + 1] such that every score of keys e .. b.hi is -inf (binary search: that holds of
// every e past the least). P V stops there, so rows past a cache's length take no part in a tile
// the masks cut, whatever they hold (0 x NaN would be NaN).
template <class E, std::size_t R>
std::size_t live_end(const E& e, box<R> b) {
    std::size_t lo = b.lo[R - 1], hi = b.hi[R - 1] + 1;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        b.lo[R - 1] = mid;
        if (bounds(e, b).hi == -inf) hi = mid;
        else lo = mid + 1;
    }
    return hi;
}

// The tree with every index-conditioned where() replaced by its "false" branch: what a tile
// whose index masks keep everything evaluates (no mask work).
template <class E>
auto without_index_masks(const E& e) {
    if constexpr (is_index_where<E>) return without_index_masks(std::get<2>(e.args));
    else if constexpr (category_of<E> == category::elementwise) return rebuild_with(e, [](const auto& c) { return without_index_masks(c); });
    else return e;
}

template <class E>
constexpr bool has_index_where() {
    if constexpr (is_index_where<E>) return true;
    else if constexpr (category_of<E> == category::elementwise) return any_child<E>([]<class C>() { return has_index_where<C>(); });
    else return false;
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
