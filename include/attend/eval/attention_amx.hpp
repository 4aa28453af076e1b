// attend/eval/attention_amx.hpp — the attention nest's two products on AMX tiles (bf16 Q, K, V).
//
// The nest (attention.hpp) keeps its orientation: a query tile of 32 queries, S^T with keys as
// rows and the queries along the SIMD lanes, so the score tree and the online softmax are the
// vector stages they are for every other operand type. Only the products change:
// - S^T = K Q^T: K's rows are the bf16 tile A read in place (16 keys x 32 of the head dimension);
//   Q^T's pair rows (pack_q_pairs) are the pair tile B. Exact products, float sums.
// - O += P V: P (32 queries x 32 keys, rounded to bf16; the tile stages transpose P^T's pairs)
//   is the tile A, V's keys interleaved in pairs (value_pairs) the pair tile B; O is 32 queries
//   x DV floats, row-major, so the output needs no transpose.
// Tiles 0-3 hold four 16 x 16 float sums (two of rows, two of columns); 4-5 the A tiles, 6-7 the
// B tiles.
#pragma once

#include <cstddef>

#include "../half.hpp"
#include "../simd_amx.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

#if defined(ATTEND_HAS_AMX_BF16)
// S^T for 32 keys against the 32 queries of qt (D / 2 pair rows of 64 bf16): keys 0-15 from k0,
// 16-31 from k1 (rows ld0, ld1 elements apart), into st (32 rows of 32 floats).
template <std::size_t D>
__attribute__((always_inline)) inline void amx_scores(const bf16* k0, std::size_t ld0, const bf16* k1, std::size_t ld1, const bf16* qt,
                                                      float* st) noexcept {
    constexpr std::size_t QL = 32, row = QL * sizeof(float), pair_row = 2 * QL * sizeof(bf16);
    simd::tile_zero<0>();
    simd::tile_zero<1>();
    simd::tile_zero<2>();
    simd::tile_zero<3>();
    for (std::size_t d = 0; d < D; d += 32) {  // 32 of the head dimension: 16 pair rows of qt
        simd::tile_load<4>(k0 + d, ld0 * sizeof(bf16));
        simd::tile_load<5>(k1 + d, ld1 * sizeof(bf16));
        simd::tile_load<6>(qt + d * QL, pair_row);
        simd::tile_load<7>(qt + d * QL + 32, pair_row);
        simd::tile_dot_bf16<0, 4, 6>();
        simd::tile_dot_bf16<1, 4, 7>();
        simd::tile_dot_bf16<2, 5, 6>();
        simd::tile_dot_bf16<3, 5, 7>();
    }
    simd::tile_store<0>(st, row);
    simd::tile_store<1>(st + 16, row);
    simd::tile_store<2>(st + 16 * QL, row);
    simd::tile_store<3>(st + 16 * QL + 16, row);
}

// O (32 x DV floats) = (fresh ? 0 : O) + P V over KP keys: P 32 rows of KP bf16, V as KP / 2 pair
// rows of 2 DV bf16 (pair row r: V[2r][c], V[2r+1][c] for each column c).
template <std::size_t DV, std::size_t KP>
__attribute__((always_inline)) inline void amx_pv(const bf16* p, const bf16* vp, float* o, bool fresh) noexcept {
    static_assert(DV % 32 == 0 && KP % 32 == 0);
    constexpr std::size_t orow = DV * sizeof(float), prow = KP * sizeof(bf16), vrow = 2 * DV * sizeof(bf16);
    for (std::size_t c = 0; c < DV; c += 32) {
        float* const o0 = o + c;
        float* const o1 = o + 16 * DV + c;
        if (fresh) {
            simd::tile_zero<0>();
            simd::tile_zero<1>();
            simd::tile_zero<2>();
            simd::tile_zero<3>();
        } else {
            simd::tile_load<0>(o0, orow);
            simd::tile_load<1>(o0 + 16, orow);
            simd::tile_load<2>(o1, orow);
            simd::tile_load<3>(o1 + 16, orow);
        }
        for (std::size_t j = 0; j < KP; j += 32) {
            simd::tile_load<4>(p + j, prow);
            simd::tile_load<5>(p + 16 * KP + j, prow);
            simd::tile_load<6>(vp + j * DV + 2 * c, vrow);
            simd::tile_load<7>(vp + j * DV + 2 * c + 32, vrow);
            simd::tile_dot_bf16<0, 4, 6>();
            simd::tile_dot_bf16<1, 4, 7>();
            simd::tile_dot_bf16<2, 5, 6>();
            simd::tile_dot_bf16<3, 5, 7>();
        }
        simd::tile_store<0>(o0, orow);
        simd::tile_store<1>(o0 + 16, orow);
        simd::tile_store<2>(o1, orow);
        simd::tile_store<3>(o1 + 16, orow);
    }
}
#endif

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
