// attend/eval/assign.hpp — evaluation entry points: assignment into storage and `eval`.
//
// Semantics: as if the right side were computed completely before the destination is written.
// The elementwise loop reads each position before writing it, so a leaf that *is* the
// destination (same memory, same layout) is safe in place; any other overlap (a view of part
// of the destination, a broadcast read of it) is evaluated into a temporary first: on the stack
// up to config::stack_budget, else on the heap, which ATTEND_NO_HEAP turns into a compile error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "../check.hpp"
#include "../config.hpp"
#include "../tensor.hpp"
#include "elementwise.hpp"

namespace attend {

namespace op {
struct eval {};
}  // namespace op

namespace types {
// What assignment converts implicitly: same type; a weak (scalar-typed) or integer tree into any
// numeric destination; bool only into bool. float <-> double and floating -> integer need cast.
template <class Dest, class L>
inline constexpr bool assignable = [] {
    using T = typename L::value_type;
    if constexpr (std::is_same_v<Dest, bool> || std::is_same_v<T, bool>) return std::is_same_v<Dest, T>;
    else return std::is_same_v<Dest, T> || L::weak || std::is_integral_v<T>;
}();
}  // namespace types

inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// Whether any leaf could overlap the destination: views may alias anything; distinct tensors
// never overlap, so a tensor destination can only be aliased through a view.
template <bool DestOwned, class E>
struct may_alias {
    static constexpr bool value = false;
};
template <bool DestOwned, class T, class S, bool Owned>
struct may_alias<DestOwned, memory_leaf<T, S, Owned>> {
    static constexpr bool value = !(DestOwned && Owned);
};
template <bool DestOwned, class Op, class... A>
struct may_alias<DestOwned, map<Op, A...>> {
    static constexpr bool value = (may_alias<DestOwned, A>::value || ...);
};
template <bool DestOwned, class U, class A>
struct may_alias<DestOwned, cast_node<U, A>> : may_alias<DestOwned, A> {};

template <class S, class T, class E>
inline bool overlaps_unsafely(const T* out, const E& e) noexcept {
    const auto lo = reinterpret_cast<std::uintptr_t>(out), hi = reinterpret_cast<std::uintptr_t>(out + S::size);
    bool unsafe = false;
    for_each_memory_leaf(e, [&](const auto& leaf) {
        using Leaf = std::remove_cvref_t<decltype(leaf)>;
        const auto b = reinterpret_cast<std::uintptr_t>(leaf.data());
        const auto t = reinterpret_cast<std::uintptr_t>(leaf.data() + Leaf::shape_type::size);
        const bool same = std::is_same_v<typename Leaf::value_type, T> && b == lo && Leaf::shape_type::size == S::size;
        unsafe = unsafe || (b < hi && lo < t && !same);
    });
    return unsafe;
}

template <class S>
inline constexpr bool dependent_false = false;

template <class Arch, bool DestOwned, class Op, class S, class T, class E>
void assign(T* out, E&& expr) {
    using L = operand_t<E>;
    static_assert(check::assignable<Op, S, typename L::shape_type>::ok,
                  "attend: assignment: the right side's shape does not broadcast to the destination's shape");
    static_assert(check::element_types<Op, T, typename L::value_type, types::assignable<T, L>>::ok,
                  "attend: assignment: element types differ (float <-> double and floating -> integer need "
                  "attend::cast; bool goes only into bool)");
    if constexpr (check::assignable<Op, S, typename L::shape_type>::ok && types::assignable<T, L>) {
        const L node = operand(std::forward<E>(expr));
        if constexpr (may_alias<DestOwned, L>::value) {
            if (overlaps_unsafely<S>(out, node)) {
                constexpr std::size_t bytes = sizeof(T) * S::size;
                if constexpr (bytes <= config::stack_budget) {
                    alignas(64) T tmp[S::size];
                    run_elementwise<Arch, S>(tmp, node);
                    std::copy(tmp, tmp + S::size, out);
                } else if constexpr (config::heap_allowed) {
                    const auto tmp = std::make_unique_for_overwrite<T[]>(S::size);
                    run_elementwise<Arch, S>(tmp.get(), node);
                    std::copy(tmp.get(), tmp.get() + S::size, out);
                } else {
                    static_assert(dependent_false<S>,
                                  "attend: assignment: the right side may overlap the destination view, and the "
                                  "temporary this needs exceeds ATTEND_STACK_BUDGET while ATTEND_NO_HEAP forbids the "
                                  "heap; assign into a tensor, or raise ATTEND_STACK_BUDGET");
                }
                return;
            }
        }
        run_elementwise<Arch, S>(out, node);
    }
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE

// eval(e): a new tensor of the expression's shape and element type.
template <class E, class Arch = simd::default_arch>
    requires expression<E>
auto eval(E&& e) {
    using L = operand_t<E>;
    tensor_t<typename L::value_type, typename L::shape_type> result;
    detail::assign<Arch, true, op::eval, typename L::shape_type>(result.data(), std::forward<E>(e));
    return result;
}

}  // namespace attend
