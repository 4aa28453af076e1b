// attend/check.hpp — every compile-time diagnostic has its predicate here, and run-time
// preconditions stop the program through `check::stop`.
//
// A static_assert message must be a string literal in C++20, so it cannot print extents. Each
// predicate therefore carries the operation tag and the offending shapes or element types in its
// own template arguments: g++ and clang print the failed expression, e.g.
//   static assertion failed: attend: operator+: shapes do not broadcast
//   note: 'attend::check::broadcast<attend::op::add, attend::shape<4, 3>, attend::shape<5> >::ok'
// so the first error names the operation, and its block shows both shapes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// Axis arguments must name an axis of the shape (negative: from the last; the diagnostic shows
// the axis as written).
template <class Op, long long Axis, class S>
struct axis_in_range {
    static constexpr bool ok = Axis < 0 ? -Axis <= static_cast<long long>(S::rank) : Axis < static_cast<long long>(S::rank);
};

// A list of axis numbers, printed in diagnostics (permute's argument).
template <std::size_t... I>
struct axes {};

// permute<I...>: one entry per axis, each axis exactly once.
template <class Op, class S, class Axes>
struct permutation;
template <class Op, class S, std::size_t... I>
struct permutation<Op, S, axes<I...>> {
    static constexpr bool ok = [] {
        if (sizeof...(I) != S::rank) return false;
        bool seen[sizeof...(I) + 1] = {};
        for (std::size_t i : {I...}) {
            if (i >= S::rank || seen[i]) return false;
            seen[i] = true;
        }
        return true;
    }();
};

// reshape<D...>: the same number of elements.
template <class Op, class From, class To>
struct same_size {
    static constexpr bool ok = From::size == To::size;
};

// Operations that need at least a given rank (transpose, matmul).
template <class Op, std::size_t MinRank, class S>
struct rank_at_least {
    static constexpr bool ok = S::rank >= MinRank;
};

// matmul: (..., M, K) x (..., K, N), batch axes broadcast.
template <class Op, class A, class B>
struct contraction {
    static constexpr bool ok = [] {
        if constexpr (A::rank < 2 || B::rank < 2) {
            return false;
        } else {
            if (A::extents[A::rank - 1] != B::extents[B::rank - 2]) return false;
            std::array<std::size_t, A::rank - 2> ab{};
            std::array<std::size_t, B::rank - 2> bb{};
            for (std::size_t k = 0; k + 2 < A::rank; ++k) ab[k] = A::extents[k];
            for (std::size_t k = 0; k + 2 < B::rank; ++k) bb[k] = B::extents[k];
            return shapes::broadcastable(ab, bb);
        }
    }();
};

// Multi-head attention: the embedding (last extent) splits evenly into H heads.
template <class Op, std::size_t H, class S>
struct heads_divide {
    static constexpr bool ok = H > 0 && S::rank >= 1 && S::extents[S::rank - 1] % H == 0;
};

// A normalisation's weight is a vector as long as the normalised (last) axis.
template <class Op, class S, class W>
struct norm_weight {
    static constexpr bool ok = S::rank >= 1 && W::rank == 1 && W::extents[0] == S::extents[S::rank - 1];
};

// Rotary embeddings: (..., T, D) with D a whole number of heads of an even HeadDim.
template <class Op, std::size_t HeadDim, class S>
struct rotary_heads {
    static constexpr bool ok = S::rank >= 2 && HeadDim >= 2 && HeadDim % 2 == 0 && S::extents[S::rank - 1] % HeadDim == 0;
};

}  // namespace attend::check

namespace attend::check {

// Run-time preconditions (a view's start, a gather's index, an assignment that cannot be done
// without memory): the program stops with a message naming the operation and the values — also
// under -fno-exceptions, and never after a silent out-of-bounds access.
[[noreturn]] inline void stop(const char* operation, const char* what) noexcept {
    std::fprintf(stderr, "attend: %s: %s\n", operation, what);
    std::fflush(stderr);
    std::abort();
}

// Stops the program when p is not aligned to T: a view (`what`) of memory at such an address would
// read it through misaligned T* (undefined, and a crash where a vector loop relies on it).
template <class T>
inline void element_aligned(const void* p, const char* what) noexcept {
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0) return;
    char message[160];
    std::snprintf(message, sizeof message, "the address %p is not a multiple of %zu, the alignment of its element type", p,
                  alignof(T));
    stop(what, message);
}

}  // namespace attend::check
