// attend/eval/matvec_amx.hpp — the matvec plan's bf16 weight rows (N, K) on AMX tiles, x float.
//
// A bf16 weight against float x otherwise widens every weight element to float before its FMA,
// and in L2 the widening, not the bytes, bounds the step. On tiles the weight's rows are the bf16
// tile as they lie (16 rows x 32 of K), with no widening; x is the pair tile. To keep float
// accuracy, each x value is split into three bf16 parts whose sum is x exactly (hi: x with its
// low 16 bits cleared; mid: the same of the rest; lo: what is left, at most 8 significant bits),
// the parts are three columns of the pair tile, every product of a bf16 weight and a part is
// exact, and y = hi-sum + (mid-sum + lo-sum). So up to 5 rows of x (15 columns) per tile. Parts
// below bf16's normal range count as zero (tdpbf16ps), which moves only x of magnitude below
// about 1e-33 (docs/numerics.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "../half.hpp"
#include "../simd_amx.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// Whether M rows of x against a bf16 weight of row length K can take the tiles: up to 5 rows
// (three columns each), K whole steps of 32.
template <std::size_t M, std::size_t K>
inline constexpr bool amx_matvec_shape = simd::has_amx_bf16 && M >= 1 && M <= 5 && K % 32 == 0;

#if defined(ATTEND_HAS_AMX_BF16)
// x (M rows of K) as pair tiles, one per 32 of K: row p of step s holds, for each column
// 3m + t, part t of x[m][32s + 2p] and x[m][32s + 2p + 1] (simd::split_in_three), as 32-bit units.
template <std::size_t M, std::size_t K>
inline void amx_split_x(const float* x, std::size_t ldx, std::uint32_t* xb) noexcept {
    constexpr std::size_t C = 3 * M;
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; k += 16) {  // 8 pair rows
            if constexpr (M == 1) {
                simd::split_in_three(x + k, xb + k / 2 * C);
            } else {
                std::uint32_t rows[24];
                simd::split_in_three(x + m * ldx + k, rows);
                for (std::size_t p = 0; p < 8; ++p) std::memcpy(xb + (k / 2 + p) * C + 3 * m, rows + 3 * p, 3 * sizeof(std::uint32_t));
            }
        }
}

// G groups of 16 weight rows (w, rows ldw apart) against the pair tiles xb into y[m][16g + r]:
// group g's sums in tile g, its weight rows in tile 3 + g, x's step in tile 6.
template <std::size_t G, std::size_t M, std::size_t K>
inline void amx_row_groups(const std::uint32_t* xb, const bf16* w, std::size_t ldw, float* y, std::size_t ldy) noexcept {
    static_assert(G >= 1 && G <= 3);
    constexpr std::size_t C = 3 * M;
    [&]<std::size_t... g>(std::index_sequence<g...>) {
        (simd::tile_zero<int(g)>(), ...);
        for (std::size_t s = 0; s < K / 32; ++s) {
            simd::tile_load<6>(xb + s * 16 * C, C * 4);
            ((simd::tile_load<int(3 + g)>(w + g * 16 * ldw + s * 32, ldw * sizeof(bf16)), simd::tile_dot_bf16<int(g), int(3 + g), 6>()), ...);
        }
        alignas(64) float sums[16 * C];
        auto finish = [&](std::size_t group) {
            for (std::size_t r = 0; r < 16; ++r)
                for (std::size_t m = 0; m < M; ++m) {
                    const float* const c = sums + r * C + 3 * m;
                    y[m * ldy + group * 16 + r] = c[0] + (c[1] + c[2]);
                }
        };
        ((simd::tile_store<int(g)>(sums, C * 4), finish(g)), ...);
    }(std::make_index_sequence<G>{});
}

// y[m][c] = sum over k of x[m][k] w[c ldw + k] for the panel's first ncols / 16 x 16 columns (the
// rest is left to the vector kernels); returns how many it did.
template <std::size_t M, std::size_t K>
std::size_t amx_dot_panel(const float* x, std::size_t ldx, const bf16* w, std::size_t ldw, std::size_t ncols, float* y, std::size_t ldy) {
    constexpr std::size_t C = 3 * M;
    constexpr std::uint16_t sums_row = C * 4;
    alignas(64) std::uint32_t xb[K / 32 * 16 * C];
    amx_split_x<M, K>(x, ldx, xb);
    const simd::tile_shape sums{16, sums_row}, rows{16, 64};
    const simd::amx_tiles tiles({sums, sums, sums, rows, rows, rows, sums, simd::tile_shape{}});
    std::size_t c = 0;
    for (; c + 48 <= ncols; c += 48) amx_row_groups<3, M, K>(xb, w + c * ldw, ldw, y + c, ldy);
    for (; c + 16 <= ncols; c += 16) amx_row_groups<1, M, K>(xb, w + c * ldw, ldw, y + c, ldy);
    return c;
}
#endif

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
