// attend/layout.hpp — where the elements of a shape live: extents, compile-time strides, and the
// offset of an index. The one place that turns positions into offsets, used by tensors, memory
// leaves, the loop nests' outputs and the kernels' operands alike.
#pragma once

#include <array>
#include <cstddef>

#include "shape.hpp"

namespace attend {

template <class S, auto Strides = shapes::strides(S::extents)>
struct layout {
    using shape_type = S;
    static constexpr std::size_t rank = S::rank;
    static constexpr auto strides = Strides;
    static constexpr bool row_major = Strides == shapes::strides(S::extents);

    // Strides seen from positions of rank R >= rank: right-aligned, an extent-1 axis reads
    // stride 0 (NumPy broadcasting).
    template <std::size_t R>
    static constexpr std::array<std::size_t, R> strides_at = shapes::broadcast_strides<R>(S::extents, Strides);

    // Offset of a position of rank R (broadcast as above).
    template <std::size_t R>
    static constexpr std::size_t offset(const std::array<std::size_t, R>& idx) noexcept {
        std::size_t off = 0;
        for (std::size_t k = 0; k < R; ++k) off += idx[k] * strides_at<R>[k];
        return off;
    }

    // Offset of the n-th element in row-major order (a strided view walked element by element).
    static constexpr std::size_t offset_of_flat(std::size_t n) noexcept {
        std::size_t off = 0;
        for (std::size_t k = rank; k-- > 0; n /= S::extents[k]) off += n % S::extents[k] * Strides[k];
        return off;
    }

    // Whether offsets grow strictly in row-major index order (each axis steps past everything
    // the inner axes reach): row-major memory and slices of it.
    static constexpr bool increasing = [] {
        std::size_t inner = 0;  // the largest offset the axes inside k reach
        for (std::size_t k = rank; k-- > 0;) {
            if (S::extents[k] > 1 && Strides[k] <= inner) return false;
            inner += (S::extents[k] - 1) * Strides[k];
        }
        return true;
    }();

    // Elements from the first one read to one past the last (aliasing analysis).
    static constexpr std::size_t span = [] {
        std::size_t last = 0;
        for (std::size_t k = 0; k < rank; ++k) last += (S::extents[k] - 1) * Strides[k];
        return last + 1;
    }();
};

template <class S>
using row_major = layout<S>;

}  // namespace attend
