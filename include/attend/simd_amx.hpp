// attend/simd_amx.hpp — Intel AMX tiles for bf16 products (AMX-TILE, AMX-BF16).
//
// Part of the SIMD layer, in the target's inline namespace. A build whose target has AMX-BF16
// (g++ and clang++ -march=native on Sapphire Rapids and later) gets `has_amx_bf16`; whether a
// program may use the tiles is a run-time matter (Linux grants the tile state per process on
// request, and a hypervisor may withhold it), so `amx_granted()` asks once. Tiles are eight
// registers of 16 rows x 64 bytes; tdpbf16ps adds to a 16 x 16 float tile the products of a
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

// Every tile 16 rows x 64 bytes (palette 1): 16 x 16 floats or 16 x 32 bf16. The configuration is
// per thread; a nest holds one of these for as long as it uses the tiles and releases them after.
class amx_tiles {
    struct alignas(64) config {
        std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
        std::uint16_t bytes_per_row[16] = {};
        std::uint8_t rows[16] = {};
    };

public:
    amx_tiles() noexcept {
        config c;
        for (int t = 0; t < 8; ++t) c.bytes_per_row[t] = 64, c.rows[t] = 16;
        // (inline assembly with the configuration as its operand: g++ 12's _tile_loadconfig does not
        // tell the compiler it reads memory, and a build dropped the stores above as dead: ldtilecfg
        // then faulted on the rows it found zero)
        __asm__ volatile("ldtilecfg %0" ::"m"(c) : "memory");
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
