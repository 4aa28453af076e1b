// attend/config.hpp — build-wide knobs and the target's inline namespace.
//
// Code whose body depends on the instruction set (loop nests, SIMD helpers that are not
// templated on the xsimd arch) lives in `attend::ATTEND_ARCH_NAMESPACE`, an inline namespace
// named after the target, so translation units built with different -m flags never share a
// symbol with different bodies (the ODR trap of header-only SIMD libraries).
#pragma once

#include <cstddef>

#if defined(__AVX512F__)
#define ATTEND_ARCH_NAMESPACE arch_avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define ATTEND_ARCH_NAMESPACE arch_avx2_fma
#elif defined(__AVX2__)
#define ATTEND_ARCH_NAMESPACE arch_avx2
#elif defined(__AVX__)
#define ATTEND_ARCH_NAMESPACE arch_avx
#elif defined(__SSE4_2__)
#define ATTEND_ARCH_NAMESPACE arch_sse4_2
#elif defined(__SSE2__) || defined(_M_X64)
#define ATTEND_ARCH_NAMESPACE arch_sse2
#elif defined(__ARM_NEON)
#define ATTEND_ARCH_NAMESPACE arch_neon
#else
#define ATTEND_ARCH_NAMESPACE arch_scalar
#endif

namespace attend::config {
// Temporaries a plan must materialise live on the stack up to this many bytes, above it on the
// heap. An embedded build defines ATTEND_NO_HEAP to turn any heap temporary into a compile error.
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
}  // namespace attend::config
