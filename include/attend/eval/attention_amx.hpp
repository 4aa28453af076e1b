// attend/eval/attention_amx.hpp — products on AMX tiles: the prefill nest's two (bf16 Q, K, V) and
// the decode nest's scores (bf16 Q and K).
//
// The nest (attention.hpp) keeps its orientation: a query tile (64 queries here), S^T with keys
// as rows and the queries along the SIMD lanes, so the score tree and the online softmax are the
// vector stages they are for every other operand type. Only the products change:
// - S^T = K Q^T: K's rows are the bf16 tile A read in place (16 keys x 32 of the head dimension);
//   Q^T's pair rows (pack_q_pairs) are the pair tile B. Exact products, float sums.
// - O += P V: P (16 queries x 32 keys a tile, rounded to bf16; the tile stages transpose P^T's
//   pairs) is the tile A, V's keys interleaved in pairs (value_pairs) the pair tile B; O is
//   64 queries x DV floats, row-major, so the output needs no transpose.
// Tiles 0-3 hold the four query groups' 16 x 16 float sums. Query tiles of 64 rather than 32
// halve the V packs and K reads per query (docs/performance.md).
// The decode nest (decode.hpp) takes its scores S = Q K^T for a few bf16 queries over a bf16
// cache the same way (amx_decode_scores): K's rows the tile A, the queries the columns of the
// pair tiles B.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

#include "../half.hpp"
#include "../simd_amx.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

#if defined(ATTEND_HAS_AMX_BF16)
// Queries per tile on the AMX path: four groups of 16 (the sums of one 16-row step in tiles 0-3).
inline constexpr std::size_t amx_queries = 64;

// S^T for 16 keys (rows `ld` elements apart from k) against the 64 queries of qt (D / 2 pair rows
// of 128 bf16), into st (16 rows of 64 floats). Tile 4 holds the keys, 5-7 the query groups in turn.
template <std::size_t D>
__attribute__((always_inline)) inline void amx_scores(const bf16* k, std::size_t ld, const bf16* qt, float* st) noexcept {
    constexpr std::size_t QL = amx_queries, row = QL * sizeof(float), pair_row = 2 * QL * sizeof(bf16);
    [&]<int... g>(std::integer_sequence<int, g...>) {
        (simd::tile_zero<g>(), ...);
        for (std::size_t d = 0; d < D; d += 32) {  // 32 of the head dimension: 16 pair rows of qt
            simd::tile_load<4>(k + d, ld * sizeof(bf16));
            ((simd::tile_load<5 + g % 3>(qt + d * QL + 32 * g, pair_row), simd::tile_dot_bf16<g, 4, 5 + g % 3>()), ...);
        }
        (simd::tile_store<g>(st + 16 * g, row), ...);
    }(std::make_integer_sequence<int, 4>{});
}

// O (64 x DV floats) = (fresh ? 0 : O) + P V over KP keys: P 64 rows of KP bf16, V as KP / 2 pair
// rows of 2 DV bf16 (pair row r: V[2r][c], V[2r+1][c] for each column c). Sums of query group g
// in tile g, its P in 4 + g % 3, V's 16 columns in 7.
template <std::size_t DV, std::size_t KP>
__attribute__((always_inline)) inline void amx_pv(const bf16* p, const bf16* vp, float* o, bool fresh) noexcept {
    static_assert(DV % 16 == 0 && KP % 32 == 0);
    constexpr std::size_t orow = DV * sizeof(float), prow = KP * sizeof(bf16), vrow = 2 * DV * sizeof(bf16);
    [&]<int... g>(std::integer_sequence<int, g...>) {
        for (std::size_t c = 0; c < DV; c += 16) {
            if (fresh) (simd::tile_zero<g>(), ...);
            else (simd::tile_load<g>(o + 16 * g * DV + c, orow), ...);
            for (std::size_t j = 0; j < KP; j += 32) {
                simd::tile_load<7>(vp + j * DV + 2 * c, vrow);
                ((simd::tile_load<4 + g % 3>(p + 16 * g * KP + j, prow), simd::tile_dot_bf16<g, 4 + g % 3, 7>()), ...);
            }
            (simd::tile_store<g>(o + 16 * g * DV + c, orow), ...);
        }
    }(std::make_integer_sequence<int, 4>{});
}

// ---- decode: the scores of a few queries, 32 keys a step ----

// S (NQ rows, BN apart) for the KB keys of k (rows ld apart), 32 a step: S^T = K Q^T for two
// blocks of 16 keys in tiles 0 and 1 (16 keys x 16 columns: the queries), so that their chains
// of products overlap; K's 32-column parts in tiles 2 and 3; the query tiles of amx_query_pairs
// held in tiles 4 .. 4 + D / 32. The sums go to a buffer whose columns are gathered into S's
// rows. request(f) asks for part f of the next tile's rows, Parts a row (the tile stages'
// rows_ahead).
template <std::size_t NQ, std::size_t D, std::size_t KB, std::size_t BN, std::size_t Parts, class Request>
__attribute__((always_inline)) inline void amx_decode_scores(const bf16* k, std::size_t ld, const bf16* qt, float* st,
                                                             Request&& request) noexcept {
    static_assert(D % 32 == 0 && D / 32 <= 4 && KB % 32 == 0);
    alignas(64) float c[32 * 16];
    const __m512i rows = _mm512_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240);  // (a column's offsets)
    [&]<int... p>(std::integer_sequence<int, p...>) {
        (simd::tile_load<4 + p>(qt + p * 512, 64), ...);
        for (std::size_t jb = 0; jb < KB; jb += 32) {
            simd::tile_zero<0>();
            simd::tile_zero<1>();
            ((simd::tile_load<2>(k + jb * ld + 32 * p, ld * sizeof(bf16)), simd::tile_load<3>(k + (jb + 16) * ld + 32 * p, ld * sizeof(bf16)),
              simd::tile_dot_bf16<0, 2, 4 + p>(), simd::tile_dot_bf16<1, 3, 4 + p>()),
             ...);
            simd::tile_store<0>(c, 64);
            simd::tile_store<1>(c + 256, 64);
            for (std::size_t f = jb * Parts; f < (jb + 32) * Parts; ++f) request(f);
            for (std::size_t h = 0; h < 2; ++h)
                for (std::size_t i = 0; i < NQ; ++i)
                    _mm512_store_ps(st + i * BN + jb + 16 * h, _mm512_i32gather_ps(_mm512_add_epi32(rows, _mm512_set1_epi32(int(i))), c + 256 * h, 4));
        }
    }(std::make_integer_sequence<int, int(D / 32)>{});
}

#else
template <std::size_t NQ, std::size_t D, std::size_t KB, std::size_t BN, std::size_t Parts, class Request>
void amx_decode_scores(const bf16*, std::size_t, const bf16*, float*, Request&&) noexcept {
    static_assert(NQ == 0, "attend internal: amx_decode_scores needs AMX-BF16");
}
#endif

// bf16 queries (read as float: exact) as the pair tiles B of S^T = K Q^T: per 32 of the head
// dimension a tile of 16 pair rows x 16 columns (1 KiB), column i holding query i, the columns
// past NQ zero.
template <std::size_t NQ, std::size_t D>
inline void amx_query_pairs(const float* q, bf16* qt) noexcept {
    static_assert(D % 32 == 0 && NQ <= 16);
    std::fill(qt, qt + D * 16, bf16{});
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t d = 0; d < D; ++d) qt[d / 2 * 32 + i * 2 + d % 2] = bf16(q[i * D + d]);
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
