// attend/config.hpp — build-wide knobs and the target's inline namespace.
//
// Code whose body depends on the instruction set (loop nests, SIMD helpers that are not
// templated on the xsimd arch) lives in `attend::ATTEND_ARCH_NAMESPACE`, an inline namespace
// named after the target and every feature macro the headers test (AVX-512 BF16, F16C, FMA), so
// translation units built with different -m flags never share a symbol with different bodies
// (the ODR trap of header-only SIMD libraries: a -march=x86-64-v4 unit linked beside a
// -march=native one on a BF16 machine would otherwise run vdpbf16ps on any AVX-512 CPU).
#pragma once

#include <cstddef>

// xsimd 8.1 has float and double kernels for AVX-512 only with AVX512BW (Skylake-SP and later).
#if defined(__AVX512F__) && !defined(__AVX512BW__)
#error "attend: AVX-512 without AVX512BW (e.g. -march=knl) is not supported by xsimd 8.1: build for AVX2 (-mno-avx512f) or a CPU with AVX512BW"
#endif

#if defined(__AVX512F__)
#define ATTEND_ARCH_BASE arch_avx512
#elif defined(__AVX2__)
#define ATTEND_ARCH_BASE arch_avx2
#elif defined(__AVX__)
#define ATTEND_ARCH_BASE arch_avx
#elif defined(__SSE4_2__)
#define ATTEND_ARCH_BASE arch_sse4_2
#elif defined(__SSE2__) || defined(_M_X64)
#define ATTEND_ARCH_BASE arch_sse2
#elif defined(__ARM_NEON)
#define ATTEND_ARCH_BASE arch_neon
#else
#define ATTEND_ARCH_BASE arch_scalar
#endif
#if defined(__AVX512BF16__)
#define ATTEND_ARCH_BF16 _bf16
#else
#define ATTEND_ARCH_BF16
#endif
#if defined(__F16C__)
#define ATTEND_ARCH_F16C _f16c
#else
#define ATTEND_ARCH_F16C
#endif
#if defined(__FMA__)
#define ATTEND_ARCH_FMA _fma
#else
#define ATTEND_ARCH_FMA
#endif
// The unit's evaluation settings name it too, as their bodies differ: parallel evaluation
// (ATTEND_PARALLEL with OpenMP: plans split their work for threads), ATTEND_NO_HEAP, and
// ATTEND_STACK_BUDGET (an integer literal, pasted), so that a serial unit and an attend::parallel
// one linked into one program each run as built (a review found the linker's pick running the
// serial unit's decode on four threads, or the parallel one's on one).
#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
#define ATTEND_ARCH_OMP _omp
#else
#define ATTEND_ARCH_OMP
#endif
#if defined(ATTEND_NO_HEAP)
#define ATTEND_ARCH_HEAP _noheap
#else
#define ATTEND_ARCH_HEAP
#endif
#define ATTEND_ARCH_PASTE2(a, b) a##b
#define ATTEND_ARCH_CAT2(a, b) ATTEND_ARCH_PASTE2(a, b)
#if defined(ATTEND_STACK_BUDGET)
#define ATTEND_ARCH_BUDGET ATTEND_ARCH_CAT2(_stack, ATTEND_STACK_BUDGET)
#else
#define ATTEND_ARCH_BUDGET
#endif
#define ATTEND_ARCH_PASTE(a, b, c, d, e, f, g) a##b##c##d##e##f##g
#define ATTEND_ARCH_NAME(a, b, c, d, e, f, g) ATTEND_ARCH_PASTE(a, b, c, d, e, f, g)
// e.g. arch_avx512_bf16_f16c_fma (-march=native on Zen 4), arch_avx2_f16c_fma (x86-64-v3), arch_sse2,
// arch_avx512_bf16_f16c_fma_omp (the same with attend::parallel)
#define ATTEND_ARCH_NAMESPACE                                                                                        \
    ATTEND_ARCH_NAME(ATTEND_ARCH_BASE, ATTEND_ARCH_BF16, ATTEND_ARCH_F16C, ATTEND_ARCH_FMA, ATTEND_ARCH_OMP, ATTEND_ARCH_HEAP, \
                     ATTEND_ARCH_BUDGET)

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
// The target a translation unit is built for, as a type: the last, defaulted template parameter
// of every entry point declared outside the target namespace (tensor construction and
// assignment, eval, eval_with_lse, explain, nn::decoder_step), so that units built for different
// targets never share one of those symbols with different bodies (the linker keeps one).
struct target {};
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace config {
// Temporaries a plan must materialise live on the stack up to this many bytes, above it on the
// heap. An embedded build defines ATTEND_NO_HEAP to turn any heap temporary into a compile error.
// (In the target namespace: units built with other settings have their own.)
#ifdef ATTEND_STACK_BUDGET
inline constexpr std::size_t stack_budget = ATTEND_STACK_BUDGET;
#else
inline constexpr std::size_t stack_budget = 64 * 1024;
#endif
#ifdef ATTEND_NO_HEAP
inline constexpr bool heap_allowed = false;
#else
inline constexpr bool heap_allowed = true;
#endif
}  // namespace config
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend

// A kernel whose hot loop is long enough that its speed depends on how it lies in the 64-byte
// lines the front end fetches asks g++ to start its loops on a line (clang++ has no per-function
// form). Zen 5, bf16 288 x 768 W (K, N) blocks: 273 bytes of loop at offset 48 of a line took
// 4.3-4.6 µs, on a line 3.2-3.3 (docs/performance.md, 2026-11-29, morning).
#if defined(__GNUC__) && !defined(__clang__)
#define ATTEND_LOOPS_ON_LINES __attribute__((optimize("align-loops=64")))
#else
#define ATTEND_LOOPS_ON_LINES
#endif
