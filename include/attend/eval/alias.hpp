// attend/eval/alias.hpp — may a plan write the destination in place, given the memory its
// leaves read? Decided from the address range of every leaf, whatever it is a view of.
//
// Each leaf is read by the plan in one of three ways relative to the writes of the destination:
// before any is made (under a node materialised into a temporary), in step (at exactly the
// position about to be written: the elementwise loop, a contraction's epilogue), or during
// (while other positions are being written: a contraction's operands, attention, reductions).
// In place is safe when no leaf read in step or during overlaps the destination — except a leaf
// read in step with the destination's own layout, which reads each element just before it is
// replaced. Owning leaves (moved-in tensors) alias nothing.
#pragma once

#include <cstdint>
#include <type_traits>

#include "plan.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

enum class reading { before, in_step, during };

// Calls f(leaf, how) for every leaf that reads user memory. With OwnMatmul the first matmul met
// is the plan's own node (the contraction plan): its operands are read during the writes. Any
// other planned node is evaluated into a temporary before the destination is touched, unless
// Deep (a plan that writes the destination while evaluating its planned operand in place).
template <reading How, bool OwnMatmul, bool Deep, class E, class F>
void for_each_read(const E& e, F& f) {
    if constexpr (is_kind<E, kind::memory>) {
        if constexpr (!E::owning) f(e, How);
    } else if constexpr (category_of<E> == category::leaf) {
        // scalars, indices, tiles: no memory of the user's
    } else if constexpr (is_kind<E, kind::take>) {  // read at gathered positions, not the written one
        constexpr reading how = How == reading::before ? How : reading::during;
        for_each_child(e, [&](const auto& c) { for_each_read<how, OwnMatmul, Deep>(c, f); });
    } else if constexpr (category_of<E> == category::elementwise) {
        for_each_child(e, [&](const auto& c) { for_each_read<How, OwnMatmul, Deep>(c, f); });
    } else if constexpr (OwnMatmul && is_kind<E, kind::matmul>) {
        for_each_child(e, [&](const auto& c) { for_each_read<reading::during, false, false>(c, f); });
    } else if constexpr (category_of<E> == category::planned) {
        constexpr reading inner = Deep ? How : reading::before;
        for_each_child(e, [&](const auto& c) { for_each_read<inner, false, Deep>(c, f); });
    } else {
        static_assert(unhandled_kind<E>, "attend internal: for_each_read: unknown node kind");
    }
}

// Plans that read their own planned nodes while writing: the fused attention nest (its softmax
// and score matmul), and a softmax over a planned operand (whose plan writes `out` first).
template <class E, plan P>
constexpr bool reads_everything_during() {
    if constexpr (P == plan::attention) return true;
    else if constexpr (P == plan::softmax) return !is_elementwise<typename E::softmax_of>;
    else return false;
}

// The reads of tree E evaluated into shape S by its plan.
template <class S, class E, class F>
void for_each_read_of_plan(const E& e, F& f) {
    constexpr plan p = plan_for<E, S>();
    if constexpr (p == plan::elementwise || p == plan::materialising) {
        for_each_read<reading::in_step, false, false>(e, f);
    } else if constexpr (p == plan::contraction || p == plan::matvec) {
        for_each_read<reading::in_step, true, false>(e, f);
    } else if constexpr (reads_everything_during<E, p>()) {
        for_each_read<reading::during, false, true>(e, f);
    } else {  // reduction, softmax: operands read during, their planned parts lowered before
        for_each_child(e, [&](const auto& c) { for_each_read<reading::during, false, false>(c, f); });
    }
}

// A leaf that reads exactly the element about to be written, at every position of S.
template <class S, class T, class Leaf>
bool reads_own_position(const T* out, const Leaf& leaf) noexcept {
    if constexpr (std::is_same_v<typename Leaf::value_type, T> && std::is_same_v<typename Leaf::shape_type, S> &&
                  Leaf::layout::row_major)
        return static_cast<const void*>(leaf.data()) == static_cast<const void*>(out);
    else
        return false;
}

template <class Leaf>
bool overlaps(const Leaf& leaf, std::uintptr_t lo, std::uintptr_t hi) noexcept {
    const auto b = reinterpret_cast<std::uintptr_t>(leaf.data());
    const auto t = reinterpret_cast<std::uintptr_t>(leaf.data() + Leaf::layout::span);
    return b < hi && lo < t;
}

// Whether evaluating `e` straight into `out` (shape S) could read an element it already wrote.
template <class S, class T, class E>
bool must_use_temporary(const T* out, const E& e) noexcept {
    const auto lo = reinterpret_cast<std::uintptr_t>(out), hi = reinterpret_cast<std::uintptr_t>(out + S::size);
    bool unsafe = false;
    auto check = [&](const auto& leaf, reading how) {
        if (how == reading::before || !overlaps(leaf, lo, hi)) return;
        if (how == reading::in_step && reads_own_position<S>(out, leaf)) return;
        unsafe = true;
    };
    for_each_read_of_plan<S>(e, check);
    return unsafe;
}

template <class S, class T, class E>
bool reads_memory_of(const E& e, const T* out) noexcept {
    const auto lo = reinterpret_cast<std::uintptr_t>(out), hi = reinterpret_cast<std::uintptr_t>(out + S::size);
    bool reads = false;
    auto check = [&](const auto& leaf, reading) { reads = reads || overlaps(leaf, lo, hi); };
    for_each_read<reading::during, false, true>(e, check);  // every leaf, under planned nodes too
    return reads;
}

// Whether tree E, evaluated into shape S, reads any of the bytes [lo, hi) while it writes (a
// second output of the plan, such as eval_with_lse's `lse`).
template <class S, class E>
bool reads_while_writing(const E& e, const void* lo, const void* hi) noexcept {
    bool reads = false;
    auto check = [&](const auto& leaf, reading how) {
        if (how != reading::before && overlaps(leaf, reinterpret_cast<std::uintptr_t>(lo), reinterpret_cast<std::uintptr_t>(hi)))
            reads = true;
    };
    for_each_read_of_plan<S>(e, check);
    return reads;
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
