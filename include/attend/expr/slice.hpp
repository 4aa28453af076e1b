// attend/expr/slice.hpp — views chosen at run time: slice (a window of static extent at a run-time
// start) and take (a gather by run-time integer indices: an embedding lookup).
//
// A slice of memory is memory: the same strides at an address moved by the start, so it is a leaf
// (readable) or a strided_ref (also assignable: `slice<1, 1>(k_cache, pos) = k_new;`). take is an
// elementwise node whose operands are read at the gathered positions. Both check their run-time
// values and stop the program with a message naming the operation and the values (check::stop):
// never a read or write out of bounds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../check.hpp"
#include "../layout.hpp"
#include "../tensor.hpp"
#include "leaf.hpp"

namespace attend {

namespace op {
struct slice {};
struct take {};
}  // namespace op

namespace check {
// Extent (>= 1) positions of axis Axis must fit in the shape.
template <class Op, std::size_t Axis, std::size_t Extent, class S>
struct window {
    static constexpr bool ok = Axis < S::rank && Extent >= 1 && Extent <= S::extents[Axis < S::rank ? Axis : 0];
};
}  // namespace check

namespace detail {
template <std::size_t Axis, std::size_t Extent, class S>
constexpr auto with_extent() {
    auto e = S::extents;
    e[Axis] = Extent;
    return e;
}

// Memory the user keeps alive (not a tensor moved into the expression).
template <class L>
inline constexpr bool is_view_of_memory = [] {
    if constexpr (is_memory_leaf<L>) return !L::owning;
    else return false;
}();

[[noreturn]] inline void out_of_range(const char* operation, std::size_t axis, std::size_t first, std::size_t count,
                                      std::size_t extent) {
    char what[240], signed_note[64] = "";
    if (first > std::size_t(PTRDIFF_MAX))  // a negative index converted to std::size_t
        std::snprintf(signed_note, sizeof signed_note, " (%td as a signed number)", static_cast<std::ptrdiff_t>(first));
    if (first > std::size_t(-1) - count)  // the last position itself would wrap
        std::snprintf(what, sizeof what, "%zu position%s from %zu%s on axis %zu are out of range (its extent is %zu)", count,
                      count == 1 ? "" : "s", first, signed_note, axis, extent);
    else
        std::snprintf(what, sizeof what, "positions %zu%s .. %zu of axis %zu are out of range (its extent is %zu)", first, signed_note,
                      first + count - 1, axis, extent);
    check::stop(operation, what);
}
}  // namespace detail

// slice<Axis, Extent>(t, start): positions start .. start+Extent-1 of t along Axis. t is a tensor,
// a tensor_ref, a slice, or a view of one (transpose, permute); the result is assignable when t
// is a writable tensor, tensor_ref or slice (a view's leaf keeps no writable pointer).
template <std::size_t Axis, std::size_t Extent, class X>
    requires expression<X>
constexpr auto slice(X&& t, std::size_t start) {
    using D = std::remove_cvref_t<X>;
    using L = operand_t<X>;
    using S = typename L::shape_type;
    static_assert(check::window<op::slice, Axis, Extent, S>::ok,
                  "attend: slice: Axis must be an axis of the shape and 1 <= Extent <= its extent");
    static_assert(detail::is_view_of_memory<L>,
                  "attend: slice: needs memory that outlives the view (a tensor, tensor_ref, slice, or a "
                  "transpose/permute of one): evaluate an expression into a tensor first");
    if constexpr (check::window<op::slice, Axis, Extent, S>::ok && detail::is_view_of_memory<L>) {
        if (start > S::extents[Axis] - Extent) detail::out_of_range("slice", Axis, start, Extent, S::extents[Axis]);
        using Out = shapes::shape_of<detail::with_extent<Axis, Extent, S>()>;
        using OutLayout = layout<Out, L::strides>;
        constexpr bool writable = (is_tensor<D> || is_tensor_ref<D> || is_strided_ref<D>) &&
                                  !std::is_const_v<std::remove_reference_t<X>> &&
                                  !std::is_const_v<std::remove_pointer_t<decltype(t.data())>>;
        if constexpr (writable)
            return strided_ref<typename D::value_type, OutLayout>(t.data() + start * L::strides[Axis]);
        else
            return strided_ref<const typename L::value_type, OutLayout>(operand(t).data() + start * L::strides[Axis]);
    } else {
        return invalid_expr{};
    }
}

namespace detail {
// t's extents with axis Axis replaced by all the extents of the indices (NumPy's take).
template <std::size_t Axis, class S, class IS>
constexpr auto taken_extents() {
    std::array<std::size_t, S::rank + IS::rank - 1> e{};
    for (std::size_t k = 0; k < e.size(); ++k)
        e[k] = k < Axis ? S::extents[k] : k < Axis + IS::rank ? IS::extents[k - Axis] : S::extents[k - IS::rank + 1];
    return e;
}
}  // namespace detail

// take<Axis>(t, indices): t (..., N, ...) gathered along Axis by an integer tensor of run-time
// indices of any shape (M...) -> (..., M..., ...), as NumPy's take. Every index is checked
// against N when the expression is evaluated (a bad one stops the program), so evaluation reads
// only valid positions.
template <std::size_t Axis, class A, class I>
struct take_node : expr_base {
    using kind = kind::take;
    using value_type = typename A::value_type;
    using shape_type = shapes::shape_of<detail::taken_extents<Axis, typename A::shape_type, typename I::shape_type>()>;
    static constexpr std::size_t axis = Axis;
    static constexpr bool weak = A::weak;
    static constexpr int precision = A::precision;
    A arg;
    I indices;
    constexpr auto children() const noexcept { return std::tie(arg, indices); }
    template <class CA, class CI>
    static constexpr auto rebuild(CA&& a, CI&& i) {
        return take_node<Axis, std::remove_cvref_t<CA>, std::remove_cvref_t<CI>>{{}, std::forward<CA>(a), std::forward<CI>(i)};
    }
    // Entry k of the indices in row-major order (they may be a strided view).
    auto entry(std::size_t k) const noexcept { return indices.data()[I::layout::offset_of_flat(k)]; }
    // Stops the program unless every index lies in [0, N).
    void check_indices() const {
        constexpr std::size_t n = A::shape_type::extents[Axis], m = I::shape_type::size;
        for (std::size_t k = 0; k < m; ++k) {
            const auto i = entry(k);
            bool bad = static_cast<std::size_t>(i) >= n;
            if constexpr (std::is_signed_v<std::remove_cvref_t<decltype(i)>>) bad = bad || i < 0;
            if (bad) {
                char what[160], value[24];  // the value as its own type holds it (unsigned beyond 2^63 too)
                if constexpr (std::is_signed_v<std::remove_cvref_t<decltype(i)>>)
                    std::snprintf(value, sizeof value, "%lld", static_cast<long long>(i));
                else
                    std::snprintf(value, sizeof value, "%llu", static_cast<unsigned long long>(i));
                std::snprintf(what, sizeof what, "index %s (entry %zu of the indices) is out of range for axis %zu of extent %zu",
                              value, k, Axis, n);
                check::stop("take", what);
            }
        }
    }
};

template <int Axis = 0, class X, class Ix>
    requires expression<X> && expression<Ix>
constexpr auto take(X&& t, Ix&& indices) {
    using L = operand_t<X>;
    using LI = operand_t<Ix>;
    using S = typename L::shape_type;
    constexpr std::size_t ax = Axis < 0 ? std::size_t(int(S::rank) + Axis) : std::size_t(Axis);
    constexpr bool indices_ok = [] {
        if constexpr (is_memory_leaf<LI>)
            return std::is_integral_v<typename LI::value_type> && !std::is_same_v<typename LI::value_type, bool>;
        else return false;
    }();
    constexpr bool ok = ax < S::rank && indices_ok && !std::is_same_v<typename L::value_type, bool>;
    static_assert(check::axis_in_range<op::take, Axis, S>::ok, "attend: take: Axis must be an axis of the shape");
    static_assert(indices_ok, "attend: take: the indices must be a tensor (or a view of one) of integers");
    static_assert(!std::is_same_v<typename L::value_type, bool>, "attend: take: gathers numbers, not bool masks");
    if constexpr (any_invalid<L, LI> || !ok) return invalid_expr{};
    else return take_node<ax, L, LI>{{}, operand(std::forward<X>(t)), operand(std::forward<Ix>(indices))};
}

}  // namespace attend
