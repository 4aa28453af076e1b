// attend/eval/bounds.hpp — what an expression can be over a box of positions (interval
// arithmetic), used to skip attention tiles that a mask rules out and the mask work on tiles it
// keeps entirely.
//
// Index leaves (iota) give the box's range, scalars a point, memory its values when the box
// holds few of them (a length per head) and else a full range; bool values
// are intervals within [0, 1]: [0, 0] never, [1, 1] always, [0, 1] maybe. The structure is the
// expression's own (known at compile time); only the box's corners are run-time values, so a
// runtime scalar in a mask (a KV cache filled up to `len`) skips tiles too.
//
// The intervals bound what the nest computes in float, not exact arithmetic: a result that may
// round is widened by float's rounding (a mask of j * 0.1f > 2 keeps key 20, where 20 * 0.1f is
// 2.0f in float and 2.00000003 in double). Ends that float holds — an index, a length, a causal
// offset, j + 0.25f, j * 0.5f — are exact and stay tight, so such masks skip the tiles and the
// rows they rule out however they are written.
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

// [lo, hi] holds every value the expression takes in float (or wider) arithmetic, and `nan`
// says whether it may also be NaN (which every ordered comparison calls false).
struct interval {
    double lo, hi;
    bool nan = false;
};

inline constexpr double inf = std::numeric_limits<double>::infinity();
inline constexpr interval anything{-inf, inf, true};

template <std::size_t R>
struct box {
    std::array<std::size_t, R> lo, hi;  // inclusive index ranges per axis
};

// a widened outwards by `rel` of its ends' magnitudes and by `abs` (a denormal result, flushed or
// not), to +-inf past float's range (float overflows there where double does not).
inline interval widen(interval a, double rel = 0x1p-22, double abs = 0x1p-126) {
    constexpr double big = std::numeric_limits<float>::max();
    const double lo = std::isinf(a.lo) ? a.lo : a.lo - std::abs(a.lo) * rel - abs;  // (an infinite end stays)
    const double hi = std::isinf(a.hi) ? a.hi : a.hi + std::abs(a.hi) * rel + abs;
    return {lo < -big ? -inf : lo, hi > big ? inf : hi, a.nan};
}
// Whether float holds x exactly as a normal number or zero (a denormal may flush), or x is
// infinite.
inline bool float_exact(double x) {
    const double a = std::abs(x);
    if (a > double(std::numeric_limits<float>::max())) return std::isinf(x);
    return double(float(x)) == x && (a >= double(std::numeric_limits<float>::min()) || x == 0);
}
// The result of a correctly rounded step (+, -, *, /) on operands within their intervals, whose
// ends [lo, hi] are the double results at the operands' ends: an end float holds stays (double
// rounded the exact end to a float value, so float rounds it there too, and rounding is
// monotonic: j + 0.25f, j * 0.5f and integers below 2^24 stay tight); any other end widens by
// one rounding (of float: a double nest rounds less).
[[gnu::noinline]] inline interval rounded_ends(interval a) {
    const interval w = widen(a);
    return {float_exact(a.lo) ? a.lo : w.lo, float_exact(a.hi) ? a.hi : w.hi, a.nan};
}
inline interval rounded(interval a) {
    // (the common cases inline: integer ends below 2^24, float's integers without a gap, and
    // infinite ends, as a score tile's)
    auto plain = [](double x) { return std::isinf(x) || (std::abs(x) <= 16777216.0 && x == std::trunc(x)); };
    return plain(a.lo) && plain(a.hi) ? a : rounded_ends(a);
}
// A transcendental function's result: its SIMD approximation errs by a few ulps.
inline interval approximated(interval a) { return widen(a, 0x1p-16, 0x1p-20); }

inline interval hull(interval a, interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.nan || b.nan}; }
inline interval sane(interval a) { return (std::isnan(a.lo) || std::isnan(a.hi)) ? anything : a; }
inline bool holds(interval a, double x) { return a.lo <= x && x <= a.hi; }
// a with `nan` set when an operand may be NaN or `arises` (inf - inf, 0 x inf inside the operands).
inline interval or_nan(interval a, bool arises) { return {a.lo, a.hi, a.nan || arises}; }

// The hull of f at the four corners of a x b (a NaN corner, such as inf / inf: anything).
template <class Fn>
[[gnu::always_inline]] inline interval corners(interval a, interval b, Fn f) {
    const double p[] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
    for (double x : p)
        if (std::isnan(x)) return anything;
    return {*std::min_element(p, p + 4), *std::max_element(p, p + 4), a.nan || b.nan};
}
// a * b, NaN where 0 x inf lies inside the operands.
[[gnu::always_inline]] inline interval times(interval a, interval b) {
    const bool zero_inf = (holds(a, 0) && (std::isinf(b.lo) || std::isinf(b.hi))) || (holds(b, 0) && (std::isinf(a.lo) || std::isinf(a.hi)));
    return or_nan(corners(a, b, [](double x, double y) { return x * y; }), zero_inf);
}
// a / b for b of one sign: the quotients of the ends, each rounded once.
inline interval quotient(interval a, interval b) { return corners(a, b, [](double x, double y) { return x / y; }); }

inline interval truth(bool always, bool never) { return always ? interval{1, 1} : never ? interval{0, 0} : interval{0, 1}; }

template <class Op>
[[gnu::always_inline]] inline interval combine(Op, interval a, interval b) {
    const bool nan = a.nan || b.nan;  // an ordered comparison with NaN is false, != true
    if constexpr (std::is_same_v<Op, op::add>)
        return sane(or_nan(rounded({a.lo + b.lo, a.hi + b.hi}), nan || (a.hi == inf && b.lo == -inf) || (a.lo == -inf && b.hi == inf)));
    else if constexpr (std::is_same_v<Op, op::sub>)
        return sane(or_nan(rounded({a.lo - b.hi, a.hi - b.lo}), nan || (a.hi == inf && b.hi == inf) || (a.lo == -inf && b.lo == -inf)));
    else if constexpr (std::is_same_v<Op, op::mul>) return rounded(times(a, b));
    else if constexpr (std::is_same_v<Op, op::div>)
        return b.lo > 0 || b.hi < 0 ? or_nan(rounded(quotient(a, b)), std::isinf(b.lo) || std::isinf(b.hi)) : anything;
    else if constexpr (std::is_same_v<Op, op::maximum>) return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), nan};
    else if constexpr (std::is_same_v<Op, op::minimum>) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi), nan};
    else if constexpr (std::is_same_v<Op, op::less>) return truth(!nan && a.hi < b.lo, a.lo >= b.hi);
    else if constexpr (std::is_same_v<Op, op::less_equal>) return truth(!nan && a.hi <= b.lo, a.lo > b.hi);
    else if constexpr (std::is_same_v<Op, op::greater>) return truth(!nan && a.lo > b.hi, a.hi <= b.lo);
    else if constexpr (std::is_same_v<Op, op::greater_equal>) return truth(!nan && a.lo >= b.hi, a.hi < b.lo);
    else if constexpr (std::is_same_v<Op, op::equal>)
        return truth(!nan && a.lo == a.hi && b.lo == b.hi && a.lo == b.lo, a.hi < b.lo || b.hi < a.lo);
    else if constexpr (std::is_same_v<Op, op::not_equal>)
        return truth(a.hi < b.lo || b.hi < a.lo, !nan && a.lo == a.hi && b.lo == b.hi && a.lo == b.lo);
    else if constexpr (std::is_same_v<Op, op::logical_and>) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    else if constexpr (std::is_same_v<Op, op::logical_or>) return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    else return anything;
}

template <class Op>
[[gnu::always_inline]] inline interval combine(Op, interval a) {
    if constexpr (std::is_same_v<Op, op::neg>) return {-a.hi, -a.lo, a.nan};
    else if constexpr (std::is_same_v<Op, op::logical_not>) return {1 - a.hi, 1 - a.lo};
    else if constexpr (std::is_same_v<Op, op::abs>)
        return a.lo >= 0 ? a : a.hi <= 0 ? interval{-a.hi, -a.lo, a.nan} : interval{0, std::max(-a.lo, a.hi), a.nan};
    else if constexpr (std::is_same_v<Op, op::exp>) return approximated({std::exp(a.lo), std::exp(a.hi), a.nan});
    else if constexpr (std::is_same_v<Op, op::tanh>) return approximated({std::tanh(a.lo), std::tanh(a.hi), a.nan});
    else if constexpr (std::is_same_v<Op, op::sqrt>) return a.lo >= 0 ? approximated({std::sqrt(a.lo), std::sqrt(a.hi), a.nan}) : anything;
    else if constexpr (std::is_same_v<Op, op::log>) return a.lo >= 0 ? approximated({std::log(a.lo), std::log(a.hi), a.nan}) : anything;
    else return anything;
}

template <class Op>
[[gnu::always_inline]] inline interval combine(Op, interval c, interval a, interval b) {  // where
    return c.lo == 1 ? a : c.hi == 0 ? b : hull(a, b);
}

// A scalar as the nest reads it: itself if float holds it, else anywhere between its float
// neighbours (a double scalar in a float nest rounds).
inline interval point(double v) {
    if (std::isnan(v)) return anything;
    return double(float(v)) == v ? interval{v, v} : widen({v, v});
}

// Memory's values over the box when it holds few of them (a length, a window or a position per
// head or batch index), else any value of its type. Taken where the nest runs, from the values it
// reads then; ends float does not hold widen by its rounding, as a scalar's do (point).
inline constexpr std::size_t bounds_reads = 16;  // (a stored mask: only live_end's last steps read it)
template <class E, std::size_t R>
interval memory_bounds(const E& e, const box<R>& b) {
    using V = std::remove_cv_t<typename E::value_type>;
    constexpr auto strides = E::layout::template strides_at<R>;
    const interval any = std::is_same_v<V, bool> ? interval{0, 1} : anything;
    std::size_t count = 1;  // the box's elements of this memory (broadcast axes hold one)
    for (std::size_t k = 0; k < R; ++k)
        if (strides[k] != 0 && (count *= b.hi[k] - b.lo[k] + 1) > bounds_reads) return any;
    interval r{inf, -inf};
    std::array<std::size_t, R> idx = b.lo;
    for (std::size_t n = 0; n < count; ++n) {
        const double x = static_cast<double>(e.data()[E::layout::offset(idx)]);
        if (x != x) r.nan = true;
        else r.lo = std::min(r.lo, x), r.hi = std::max(r.hi, x);
        for (std::size_t k = R; k-- > 0;) {  // the next position, last axis fastest
            if (strides[k] == 0) continue;
            if (idx[k] < b.hi[k]) {
                ++idx[k];
                break;
            }
            idx[k] = b.lo[k];
        }
    }
    if (r.lo > r.hi) return any;  // (NaN only)
    if constexpr (std::is_integral_v<V> && sizeof(V) >= 8)
        if (r.lo < -0x1p53 || r.hi > 0x1p53) return any;  // (past 2^53 they round in double)
    return rounded(r);  // as float reads them: 16777219 is 16777220 there (found by review)
}

// The range of `e` over the box (positions of rank R).
template <class E, std::size_t R>
interval bounds(const E& e, const box<R>& b) {
    if constexpr (is_kind<E, kind::scalar>) {
        return point(double(e.value));
    } else if constexpr (is_kind<E, kind::map>) {
        return unpack(e.children(), [&](const auto&... a) { return combine(typename E::rule_op{}, bounds(a, b)...); });
    } else if constexpr (is_kind<E, kind::cast>) {
        const interval a = bounds(e.arg, b);
        if constexpr (std::is_same_v<typename E::cast_to, bool>) return truth(a.lo > 0 || a.hi < 0, !a.nan && a.lo == 0 && a.hi == 0);  // NaN: true
        else if constexpr (std::is_integral_v<typename E::cast_to>) return a.nan ? anything : interval{std::trunc(a.lo), std::trunc(a.hi)};
        else if constexpr (is_half<typename E::cast_to>) {  // rounding is monotonic: round the ends
            using U = typename E::cast_to;
            return {static_cast<double>(U(a.lo)), static_cast<double>(U(a.hi)), a.nan};
        } else return a;
    } else if constexpr (is_kind<E, kind::iota>) {
        using S = typename E::shape_type;
        constexpr std::size_t ax = R - S::rank + E::axis;
        if constexpr (S::extents[E::axis] == 1) return {0, 0};
        else return rounded({double(b.lo[ax]), double(b.hi[ax])});
    } else if constexpr (is_kind<E, kind::memory>) {
        return memory_bounds(e, b);
    } else if constexpr (is_kind<E, kind::tile> || is_kind<E, kind::take>) {  // any value of the type
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
constexpr bool has_where() {
    if constexpr (is_kind<E, kind::map>)
        if constexpr (std::is_same_v<typename E::rule_op, op::where>) return true;
    if constexpr (category_of<E> == category::elementwise) return any_child<E>([]<class C>() { return has_where<C>(); });
    else return false;
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
