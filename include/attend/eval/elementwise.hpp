// attend/eval/elementwise.hpp — the loop nest for elementwise trees: one pass over the output.
//
// Dense trees (every leaf laid out like the output) run one flat loop; trees with broadcast or
// index leaves run an outer loop over rows and an inner SIMD loop along the last axis, each leaf
// reading through its compile-time broadcast strides. Vector bodies use the target's xsimd batch;
// the tail length is a compile-time constant and runs on scalar bundles. Nothing is allocated.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "parallel.hpp"
#include "read.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

template <class Arch, class S, class T, class E>
inline void run_elementwise(T* out, const E& e) noexcept {
    using F = tree_compute_t<E, T>;
    using B = tree_bundle_t<E, T, Arch>;
    constexpr std::size_t W = simd::lanes<B>;

    if constexpr (dense_in<E, S>()) {
        // Chunks of 16 Ki elements (a multiple of every vector width) are the parallel work items.
        constexpr std::size_t N = S::size, NV = N / W * W, CH = 16384, chunks = (NV + CH - 1) / CH;
        parallel_for(chunks, N >= (std::size_t{1} << 18), [&](std::size_t c) {
            const std::size_t end = std::min(NV, (c + 1) * CH);
            for (std::size_t i = c * CH; i < end; i += W) store_lanes(out + i, read<B>(e, flat_pos{i}));
        });
        for (std::size_t i = NV; i < N; ++i) store_lanes(out + i, read<F>(e, flat_pos{i}));
    } else {
        constexpr std::size_t R = S::rank;
        constexpr std::size_t inner = S::extents[R - 1], rows = S::size / inner, NV = inner / W * W;
        // Blocks of rows (about 16 Ki elements each) are the parallel work items.
        constexpr std::size_t per = inner >= 16384 ? 1 : 16384 / inner, blocks = (rows + per - 1) / per;
        parallel_for(blocks, S::size >= (std::size_t{1} << 18), [&](std::size_t blk) {
            nd_pos<R> p{};
            for (std::size_t k = R - 1, rest = blk * per; k-- > 0; rest /= S::extents[k]) p.idx[k] = rest % S::extents[k];
            for (std::size_t r = blk * per; r < std::min(rows, (blk + 1) * per); ++r) {
                T* row = out + r * inner;
                for (std::size_t j = 0; j < NV; j += W) {
                    p.idx[R - 1] = j;
                    store_lanes(row + j, read<B>(e, p));
                }
                for (std::size_t j = NV; j < inner; ++j) {
                    p.idx[R - 1] = j;
                    store_lanes(row + j, read<F>(e, p));
                }
                // Advance the outer index like an odometer.
                for (std::size_t k = R - 1; k-- > 0;) {
                    if (++p.idx[k] < S::extents[k]) break;
                    p.idx[k] = 0;
                }
            }
        });
    }
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
