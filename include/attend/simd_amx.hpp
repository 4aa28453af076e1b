// attend/simd_amx.hpp — Intel AMX tiles for bf16 products (AMX-TILE, AMX-BF16).
//
// Part of the SIMD layer, in the target's inline namespace. A build whose target has AMX-BF16
// (g++ and clang++ -march=native on Sapphire Rapids and later) gets `has_amx_bf16`; whether a
// program may use the tiles is a run-time matter (Linux grants the tile state per process on
// request, and a hypervisor may withhold it), so `amx_granted()` asks once. Tiles are eight
// registers of up to 16 rows x 64 bytes; tdpbf16ps adds to a 16 x 16 float tile the products of a
// 16 x 32 bf16 tile and a 16 x 32 bf16 tile of pairs (row p of the second holds elements 2p and
// 2p + 1 of the shared axis for each of 16 columns): 16 x 16 x 32 products per instruction.
// Denormal inputs count as zero and results round to nearest even, as with vdpbf16ps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "config.hpp"

#if (defined(__AMX_TILE__) && defined(__AMX_BF16__)) || (defined(__AMXTILE__) && defined(__AMXBF16__))
#if defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ATTEND_HAS_AMX_BF16 1
#endif
#endif

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace simd {

#if defined(ATTEND_HAS_AMX_BF16)
inline constexpr bool has_amx_bf16 = true;

// Whether this process may use the tiles: Linux's permission for the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, feature 18), asked once. False also when the kernel or
// hypervisor refuses it; the nests then take their vector path.
inline bool amx_granted() noexcept {
    static const bool granted = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
    return granted;
}

// The shape of one tile register: rows, and bytes a row (at most 16 and 64).
struct tile_shape {
    std::uint8_t rows = 16;
    std::uint16_t bytes = 64;
};

// The tile configuration (palette 1), by default every tile 16 rows x 64 bytes: 16 x 16 floats
// or 16 x 32 bf16. It is per thread; a nest holds one of these for as long as it uses the tiles
// and releases them after.
class amx_tiles {
    struct alignas(64) config {
        std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
        std::uint16_t bytes_per_row[16] = {};
        std::uint8_t rows[16] = {};
    };

public:
    amx_tiles() noexcept : amx_tiles({tile_shape{}, tile_shape{}, tile_shape{}, tile_shape{}, tile_shape{}, tile_shape{}, tile_shape{}, tile_shape{}}) {}
    explicit amx_tiles(const tile_shape (&shapes)[8]) noexcept {
        config c;
        for (int t = 0; t < 8; ++t) c.bytes_per_row[t] = shapes[t].bytes, c.rows[t] = shapes[t].rows;
        _tile_loadconfig(&c);
    }
    ~amx_tiles() { _tile_release(); }
    amx_tiles(const amx_tiles&) = delete;
    amx_tiles& operator=(const amx_tiles&) = delete;
};

// Tile T from / to memory: 16 rows of 64 bytes, `stride` bytes apart. (Inline assembly, not the
// intrinsics: g++ 12's are macros that need the tile's number as a literal, and its tile load
// does not tell the compiler it reads memory, so stores before it could move after it.)
template <int T>
__attribute__((always_inline)) inline void tile_load(const void* p, std::size_t stride) noexcept {
    __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm%c2|tileloadd\t%%tmm%c2, [%0+%1*1]}" ::"r"(p), "r"(stride), "i"(T) : "memory");
}
template <int T>
__attribute__((always_inline)) inline void tile_store(void* p, std::size_t stride) noexcept {
    __asm__ volatile("{tilestored\t%%tmm%c2, (%0,%1,1)|tilestored\t[%0+%1*1], %%tmm%c2}" ::"r"(p), "r"(stride), "i"(T) : "memory");
}
template <int T>
__attribute__((always_inline)) inline void tile_zero() noexcept {
    __asm__ volatile("tilezero\t%%tmm%c0" ::"i"(T));
}
// Float tile C += bf16 tile A (16 x 32) times bf16 pair tile B (16 pair rows x 16 columns).
template <int C, int A, int B>
__attribute__((always_inline)) inline void tile_dot_bf16() noexcept {
    __asm__ volatile("{tdpbf16ps\t%%tmm%c0, %%tmm%c1, %%tmm%c2|tdpbf16ps\t%%tmm%c2, %%tmm%c1, %%tmm%c0}" ::"i"(B), "i"(A), "i"(C));
}

// 16 floats at x, each split into three bf16 parts whose sum is x exactly (hi: x with its low 16
// bits cleared; mid: the same of the rest; lo: what is left, at most 8 significant bits; NaN and
// ±inf are their own hi, a NaN with a quiet bit, and zero mid and lo), stored as pairs of
// neighbours: out[3p + t] holds part t of x[2p] and x[2p + 1] (p < 8), as one 32-bit unit.
inline void split_in_three(const float* x, std::uint32_t* out) noexcept {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    const __m512 v = _mm512_loadu_ps(x);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(__builtin_inff()), _CMP_LT_OQ);
    __m512i hi = _mm512_and_si512(_mm512_castps_si512(v), high);
    hi = _mm512_mask_or_epi32(hi, nan, hi, _mm512_set1_epi32(0x00400000));
    const __m512 rest = _mm512_maskz_sub_ps(finite, v, _mm512_castsi512_ps(hi));  // exact: the low 16 bits
    const __m512i mid = _mm512_and_si512(_mm512_castps_si512(rest), high);
    const __m512 lo = _mm512_sub_ps(rest, _mm512_castsi512_ps(mid));  // exact
    // Each part as 16 bf16 in order (exact: nothing below the top 16 bits, or a denormal, which
    // the tiles read as zero anyway), so 32-bit unit p holds elements 2p and 2p + 1.
    const __m256i h16 = (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(hi));
    const __m256i m16 = (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(mid));
    const __m512i l16 = _mm512_castsi256_si512((__m256i)_mm512_cvtneps_pbh(lo));
    const __m512i hm = _mm512_inserti64x4(_mm512_castsi256_si512(h16), m16, 1);
    const __m512i first = _mm512_set_epi32(5, 20, 12, 4, 19, 11, 3, 18, 10, 2, 17, 9, 1, 16, 8, 0);
    const __m512i second = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 23, 15, 7, 22, 14, 6, 21, 13);
    _mm512_storeu_si512(out, _mm512_permutex2var_epi32(hm, first, l16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm512_castsi512_si256(_mm512_permutex2var_epi32(hm, second, l16)));
}
#else
inline constexpr bool has_amx_bf16 = false;
class amx_tiles {};
inline bool amx_granted() noexcept {
    return false;
}
#endif

// What a nest holds in place of amx_tiles when it does not use them.
struct no_tiles {};

// Whether a nest may take its AMX path: the target has it, the process was granted the tiles, and
// the program has not turned it off (allow_amx(false): for comparisons and for tests of the
// vector path on an AMX machine).
inline std::atomic<bool>& amx_allowed() noexcept {
    static std::atomic<bool> allowed{true};
    return allowed;
}
inline void allow_amx(bool yes) noexcept {
    amx_allowed().store(yes, std::memory_order_relaxed);
}
inline bool use_amx() noexcept {
    return has_amx_bf16 && amx_allowed().load(std::memory_order_relaxed) && amx_granted();
}

}  // namespace simd
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
