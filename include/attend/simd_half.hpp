// attend/simd_half.hpp — whole-vector conversions between float lanes and bf16 / f16 memory.
//
// Part of the SIMD layer (simd.hpp's load and store use it for 16-bit memory), in the target's
// inline namespace. Each target takes its own instructions where it has them: bf16 widens by a
// 16-bit shift left everywhere; bf16 narrows with AVX-512 BF16's vcvtneps2bf16 (which flushes
// denormal inputs to zero, so a vector holding one takes the bit path instead); f16 converts with
// vcvtph2ps / vcvtps2ph (AVX-512F, F16C) or NEON's fcvtl / fcvtn. Everything else takes the
// portable bit path below (integer lanes, the same rules as half.hpp), which the tests also call
// directly. Every path gives the bits half.hpp's scalar conversions give.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "config.hpp"
#include "half.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace simd {

// Which instructions this build converts with (explain prints it).
inline constexpr const char* half_conversion_name =
#if defined(__AVX512F__) && defined(__AVX512BF16__)
    "bf16: vcvtneps2bf16 (AVX-512 BF16; vectors holding a denormal by the bit path), widened by a shift; "
    "f16: vcvtps2ph / vcvtph2ps (AVX-512F)";
#elif defined(__AVX512F__)
    "bf16: bit path (integer lanes), widened by a shift; f16: vcvtps2ph / vcvtph2ps (AVX-512F)";
#elif defined(__F16C__)
    "bf16: bit path (integer lanes), widened by a shift; f16: vcvtps2ph / vcvtph2ps (F16C)";
#elif defined(__aarch64__)
    "bf16: bit path (integer lanes), widened by a shift; f16: fcvtn / fcvtl (NEON)";
#else
    "bf16 and f16: bit path (integer lanes)";
#endif

namespace portable {

template <class A>
using floats = xsimd::batch<float, A>;
template <class A>
using ints = xsimd::batch<std::int32_t, A>;

// The 16-bit patterns of p[0..lanes) in the low halves of integer lanes, and back.
template <class A, class H>
inline ints<A> bits_of(const H* p) noexcept {
    alignas(64) std::int32_t t[ints<A>::size];
    for (std::size_t l = 0; l < ints<A>::size; ++l) t[l] = p[l].to_bits();
    return ints<A>::load_aligned(t);
}
template <class A, class H>
inline void store_bits(H* p, const ints<A>& v) noexcept {
    alignas(64) std::int32_t t[ints<A>::size];
    v.store_aligned(t);
    for (std::size_t l = 0; l < ints<A>::size; ++l) p[l] = H::from_bits(static_cast<std::uint16_t>(t[l]));
}

// All-ones lanes where a < c, for a and c in [0, 2^31): the sign of a - c. (Masks by arithmetic,
// not xsimd::select: xsimd 8.1's integer select does not compile with g++ -O0 on AVX-512BW.)
template <class A>
inline ints<A> less(const ints<A>& a, const ints<A>& c) noexcept {
    return (a - c) >> 31;
}
template <class A>
inline ints<A> pick(const ints<A>& mask, const ints<A>& yes, const ints<A>& no) noexcept {
    return (yes & mask) | (no & ~mask);
}

template <class A>
inline floats<A> widen(const bf16* p) noexcept {
    return xsimd::bitwise_cast<floats<A>>(bits_of<A>(p) << 16);
}

template <class A>
inline floats<A> widen(const f16* p) noexcept {
    using I = ints<A>;
    const I h = bits_of<A>(p), sign = (h & I(0x8000)) << 16, em = h & I(0x7FFF);
    const I normal = (em << 13) + I(0x38000000);   // rebias the exponent by 127 - 15
    // inf and NaN: exponent all ones, payload kept, a NaN made quiet (as vcvtph2ps does)
    const I special = ((em << 13) + I(0x70000000)) | (I(0x400000) & less<A>(I(0x7C00), em));
    const I sub = xsimd::bitwise_cast<I>(xsimd::to_float(em) * floats<A>(0x1p-24f));  // exact
    const I r = pick<A>(less<A>(em, I(0x400)), sub, pick<A>(less<A>(em, I(0x7C00)), normal, special));
    return xsimd::bitwise_cast<floats<A>>(r | sign);
}

// Ties to even by integer addition (half.hpp's rule); NaN: upper half with the quiet bit.
template <class A>
inline void narrow(bf16* p, const floats<A>& x) noexcept {
    using I = ints<A>;
    const I u = xsimd::bitwise_cast<I>(x);
    const I rounded = (u + I(0x7FFF) + ((u >> 16) & I(1))) >> 16, nan = (u >> 16) | I(0x40);
    store_bits<A>(p, pick<A>(less<A>(I(0x7F800000), u & I(0x7FFFFFFF)), nan, rounded));
}

// f16 by magnitude class; the subnormal range rounds by a float addition of 0.5, whose ulp (2^-24)
// is the f16 subnormal step.
template <class A>
inline void narrow(f16* p, const floats<A>& x) noexcept {
    using I = ints<A>;
    const I u = xsimd::bitwise_cast<I>(x), a = u & I(0x7FFFFFFF), sign = (u >> 16) & I(0x8000);
    const I normal = ((a - I(0x38000000)) + I(0xFFF) + ((a >> 13) & I(1))) >> 13;
    const I sub = xsimd::bitwise_cast<I>(xsimd::bitwise_cast<floats<A>>(a) + floats<A>(0.5f)) - I(0x3F000000);
    const I nan = I(0x7E00) | ((a >> 13) & I(0x3FF));
    I h = pick<A>(less<A>(a, I(0x38800000)), sub, normal);
    h = pick<A>(less<A>(a, I(0x477FF000)), h, I(0x7C00));
    store_bits<A>(p, pick<A>(less<A>(I(0x7F800000), a), nan, h) | sign);
}

}  // namespace portable

// Whether this target has the f16 conversion instructions for 128- and 256-bit vectors.
inline constexpr bool has_f16c =
#if defined(__F16C__)
    true;
#else
    false;
#endif

// Float lanes B (an xsimd float batch) from 16-bit memory H: exact.
template <class B, class H>
inline B load_half(const H* p) noexcept {
    [[maybe_unused]] const void* at = p;
    [[maybe_unused]] constexpr bool bf = std::is_same_v<H, bf16>;
    if constexpr (false) {
    }
#if defined(__AVX512F__)
    else if constexpr (sizeof(B) == 64) {
        const __m256i v = _mm256_loadu_si256(static_cast<const __m256i*>(at));
        if constexpr (bf) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
        else return _mm512_cvtph_ps(v);
    }
#endif
#if defined(__AVX2__)
    else if constexpr (sizeof(B) == 32 && (bf || has_f16c)) {
        const __m128i v = _mm_loadu_si128(static_cast<const __m128i*>(at));
        if constexpr (bf) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
#if defined(__F16C__)
        else return _mm256_cvtph_ps(v);
#endif
    }
#endif
#if defined(__SSE2__)
    else if constexpr (sizeof(B) == 16 && (bf || has_f16c)) {
        const __m128i v = _mm_loadl_epi64(static_cast<const __m128i*>(at));
        if constexpr (bf) return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), v));  // v << 16
#if defined(__F16C__)
        else return _mm_cvtph_ps(v);
#endif
    }
#endif
#if defined(__aarch64__)
    else if constexpr (sizeof(B) == 16) {
        const uint16x4_t v = vld1_u16(static_cast<const std::uint16_t*>(at));
        if constexpr (bf) return vreinterpretq_f32_u32(vshll_n_u16(v, 16));
        else return vcvt_f32_f16(vreinterpret_f16_u16(v));
    }
#endif
    else {
        return portable::widen<typename B::arch_type>(p);
    }
}

// 16-bit memory H from float lanes B, rounded to nearest even (the bits half.hpp gives).
template <class H, class B>
inline void store_half(H* p, const B& x) noexcept {
    [[maybe_unused]] void* at = p;
    [[maybe_unused]] constexpr bool bf = std::is_same_v<H, bf16>;
    if constexpr (false) {
    }
#if defined(__AVX512F__)
    else if constexpr (sizeof(B) == 64 && !bf) {
        _mm256_storeu_si256(static_cast<__m256i*>(at), _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#if defined(__AVX512BF16__)
    else if constexpr (sizeof(B) == 64) {
        // vcvtneps2bf16 treats denormal inputs as zero: a vector holding one (rare) takes the bit path.
        const __m512i a = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF));
        if (_mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7FFFFF)) != 0) {
            portable::narrow<typename B::arch_type>(p, x);
        } else {
            const __m256bh h = _mm512_cvtneps_pbh(x);
            std::memcpy(at, &h, sizeof h);
        }
    }
#endif
#endif
#if defined(__F16C__)
    else if constexpr (sizeof(B) == 32 && !bf) {
        _mm_storeu_si128(static_cast<__m128i*>(at), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else if constexpr (sizeof(B) == 16 && !bf) {
        _mm_storel_epi64(static_cast<__m128i*>(at), _mm_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#endif
#if defined(__aarch64__)
    else if constexpr (sizeof(B) == 16 && !bf) {
        vst1_u16(static_cast<std::uint16_t*>(at), vreinterpret_u16_f16(vcvt_f16_f32(x)));
    }
#endif
    else {
        portable::narrow<typename B::arch_type>(p, x);
    }
}

// v rounded to H and widened back (cast<bf16>(e) inside an expression).
template <class H, class B>
inline B round_to(const B& v) noexcept {
    if constexpr (xsimd::is_batch<B>::value) {
        alignas(64) H tmp[B::size];
        store_half(tmp, v);
        return load_half<B>(tmp);
    } else {
        return static_cast<B>(static_cast<float>(H(v)));
    }
}

// Keeps r in a register from here (an empty asm it passes through; no instruction), so that the
// compilers load it once instead of folding its load into every instruction that uses it.
template <class R>
inline void in_register(R& r) noexcept {
#if defined(__GNUC__) && defined(__x86_64__)
    asm("" : "+v"(r));
#elif defined(__GNUC__) && defined(__aarch64__)
    asm("" : "+w"(r));
#else
    (void)r;
#endif
}
// x held in a register (in_register on a batch's register; a scalar as it is): a value used
// by several instructions is then loaded once, not folded into each. (The copy through a plain
// register type: on a batch's member g++ kept storing the value to the stack as well.)
template <class B>
inline B held(const B& x) noexcept {
    if constexpr (requires { x.data; }) {
        auto r = x.data;
        in_register(r);
        return B(r);
    } else {
        return x;
    }
}

// 2 x lanes bf16 values at p as float lanes: even = p[0], p[2], ...; odd = p[1], p[3], ... (a
// shift and a mask of 32-bit lanes: no shuffle). Dot products along p's axis take them against
// x split the same way (split_even_odd). OneLoad: the bytes are loaded once into a register
// (left alone, the compilers fold the load into both the shift and the mask, two loads of the
// same bytes: faster where registers are short, slower where loads bound the loop).
template <bool OneLoad = false, class B>
inline void widen_even_odd(const bf16* p, B& even, B& odd) noexcept {
    using I = xsimd::batch<std::uint32_t, typename B::arch_type>;
    I v = I::load_unaligned(reinterpret_cast<const std::uint32_t*>(p));
    if constexpr (OneLoad) {
        auto r = static_cast<typename I::register_type>(v);
        in_register(r);
        v = I(r);
    }
    even = xsimd::bitwise_cast<B>(v << 16);
    odd = xsimd::bitwise_cast<B>(v & I(0xFFFF0000u));
}
// x[0..2n) into even = x[0], x[2], ... and odd = x[1], x[3], ... (n each).
inline void split_even_odd(const float* x, std::size_t n, float* even, float* odd) noexcept {
    for (std::size_t i = 0; i < n; ++i) even[i] = x[2 * i], odd[i] = x[2 * i + 1];
}
// The inverse of widen_even_odd's lane order: sums of even and odd columns stored at p in column
// order (p[2i] = even[i], p[2i + 1] = odd[i]), by two lane permutes where the target has them (a
// copy through the stack compiled to gathers and scalar stores with clang++).
template <class B>
inline void store_even_odd(typename B::value_type* p, const B& even, const B& odd) noexcept {
    using T = typename B::value_type;
    constexpr std::size_t W = B::size;
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<T, float> && W == 16) {
        const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
        _mm512_storeu_ps(p, _mm512_permutex2var_ps(even, lo, odd));
        _mm512_storeu_ps(p + 16, _mm512_permutex2var_ps(even, hi, odd));
        return;
    }
#endif
#if defined(__AVX__)
    if constexpr (std::is_same_v<T, float> && W == 8) {
        const __m256 a = _mm256_unpacklo_ps(even, odd), b = _mm256_unpackhi_ps(even, odd);  // per 128-bit half
        _mm256_storeu_ps(p, _mm256_permute2f128_ps(a, b, 0x20));
        _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(a, b, 0x31));
        return;
    }
#endif
    if constexpr (sizeof(B) == 16) {  // 128-bit vectors: zip is a whole interleave (SSE2, NEON)
        xsimd::zip_lo(even, odd).store_unaligned(p);
        xsimd::zip_hi(even, odd).store_unaligned(p + W);
    } else {
        alignas(64) T e[W], o[W];
        even.store_aligned(e);
        odd.store_aligned(o);
        for (std::size_t i = 0; i < W; ++i) p[2 * i] = e[i], p[2 * i + 1] = o[i];
    }
}

// The bytes at p as a float register (bf16 pairs held where an array of their type may not be).
template <class B, class T>
inline B bits_as(const T* p) noexcept {
    B x;
    std::memcpy(static_cast<void*>(&x), static_cast<const void*>(p), sizeof x);
    return x;
}

// Whether nests take bf16 pair products (vdpbf16ps) where they may: `automatic` lets the nest
// decide from the core (eval/matvec.hpp, pair_products_pay); `always` and `never` are for
// comparisons and for tests of either path on any machine.
enum class choice { automatic, always, never };
inline std::atomic<choice>& pair_products_choice() noexcept {
    static std::atomic<choice> c{choice::automatic};
    return c;
}
inline void pair_products(choice c) noexcept {
    pair_products_choice().store(c, std::memory_order_relaxed);
}
inline choice pair_products() noexcept {
    return pair_products_choice().load(std::memory_order_relaxed);
}

// ---- bf16 pair dot products (AVX-512 BF16) ---------------------------------------------------
// vdpbf16ps: each float lane adds the products of the two bf16 values in the matching 32-bit
// lane of its operands (two products per lane per instruction, twice the FMA's rate). The
// instruction treats denormal inputs as zero and flushes denormal results, rounding to nearest
// even. A "pair vector" holds 16 such lanes: element 2l and 2l+1 of the pair axis for lane l.
#if defined(__AVX512F__) && defined(__AVX512BF16__)
inline constexpr bool has_bf16_pair_dot = true;
using bf16_pairs = __m512bh;

// The two bf16 values at p in every lane.
inline bf16_pairs broadcast_pair(const bf16* p) noexcept {
    std::uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return (bf16_pairs)_mm512_set1_epi32(static_cast<int>(w));
}
// The bf16 value at p as the first (Second: the second) element of every lane's pair, zero the
// other: against a row's pairs, the products of p with its even (odd) elements.
template <bool Second>
inline bf16_pairs lone_pair(const bf16* p) noexcept {
    std::uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return (bf16_pairs)_mm512_set1_epi32(static_cast<int>(Second ? std::uint32_t{h} << 16 : std::uint32_t{h}));
}
inline bf16_pairs load_pairs(const bf16* p) noexcept {
    return (bf16_pairs)_mm512_loadu_si512(p);
}
// Pairs held in a float register (an array of bf16_pairs drops the type's attributes).
inline bf16_pairs as_pairs(__m512 x) noexcept {
    return (bf16_pairs)x;
}
// acc + a.first * b.first + a.second * b.second per float lane.
template <class B>
inline B dot_pairs(const B& acc, bf16_pairs a, bf16_pairs b) noexcept {
    return B(_mm512_dpbf16_ps(acc, a, b));
}
// Float lanes x and y rounded to bf16 (nearest even; denormals to zero) and stored as pairs:
// p = x0 y0 x1 y1 ... x15 y15.
template <class B>
inline void store_pairs(bf16* p, const B& x, const B& y) noexcept {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5,
                                         20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i w = (__m512i)_mm512_cvtne2ps_pbh(y, x);  // x in the low 16 words, y in the high
    _mm512_storeu_si512(p, _mm512_permutexvar_epi16(idx, w));
}
// Two rows of 32 bf16 interleaved into pairs: p = a0 b0 a1 b1 ... a31 b31 (64 values).
inline void interleave_rows(const bf16* a, const bf16* b, bf16* p) noexcept {
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37, 5, 36,
                                        4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    const __m512i ra = _mm512_loadu_si512(a), rb = _mm512_loadu_si512(b);
    _mm512_storeu_si512(p, _mm512_permutex2var_epi16(ra, lo, rb));
    _mm512_storeu_si512(p + 32, _mm512_permutex2var_epi16(ra, hi, rb));
}
// Rows a and b, 32 bf16 each, interleaved into pair vectors within 128-bit blocks (vpunpcklwd,
// vpunpckhwd: an interleave in element order takes a two-source permute each): lane l of lo pairs
// element 8 (l / 4) + l % 4 of a with the same of b, lane l of hi the element 4 further on.
inline void unpack_rows(const bf16* a, const bf16* b, bf16_pairs& lo, bf16_pairs& hi) noexcept {
    const __m512i ra = _mm512_loadu_si512(a), rb = _mm512_loadu_si512(b);
    lo = (bf16_pairs)_mm512_unpacklo_epi16(ra, rb);
    hi = (bf16_pairs)_mm512_unpackhi_epi16(ra, rb);
}
// The same for the first n (<= 32) elements of rows a and b, zeros past them; b null: a row of
// zeros (an odd last row: its pairs are a's elements and 0).
inline void unpack_rows(const bf16* a, const bf16* b, std::size_t n, bf16_pairs& lo, bf16_pairs& hi) noexcept {
    const __mmask32 m = n >= 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1;
    const __m512i ra = _mm512_maskz_loadu_epi16(m, a), rb = b ? _mm512_maskz_loadu_epi16(m, b) : _mm512_setzero_si512();
    lo = (bf16_pairs)_mm512_unpacklo_epi16(ra, rb);
    hi = (bf16_pairs)_mm512_unpackhi_epi16(ra, rb);
}
// Sums of 32 elements in order (n0: 0..15, n1: 16..31) into the lane order of unpack_rows' lo
// and hi; and lo and hi stored at p in element order.
inline void to_unpacked(__m512 n0, __m512 n1, __m512& lo, __m512& hi) noexcept {
    lo = _mm512_shuffle_f32x4(n0, n1, _MM_SHUFFLE(2, 0, 2, 0));
    hi = _mm512_shuffle_f32x4(n0, n1, _MM_SHUFFLE(3, 1, 3, 1));
}
inline void store_unpacked(float* p, __m512 lo, __m512 hi) noexcept {
    const __m512 a = _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(1, 0, 1, 0)), b = _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_ps(p, _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(3, 1, 2, 0)));
    _mm512_storeu_ps(p + 16, _mm512_shuffle_f32x4(b, b, _MM_SHUFFLE(3, 1, 2, 0)));
}
// 16 floats at x rounded to bf16 at p, in order (nearest even; denormals to zero, which is how
// vdpbf16ps reads them anyway).
inline void round_for_pairs(const float* x, bf16* p) noexcept {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x));
    std::memcpy(static_cast<void*>(p), &h, sizeof h);
}
#else
inline constexpr bool has_bf16_pair_dot = false;
// Portable forms of the pair stores (kernels take pairs only with AVX-512 BF16).
inline void round_for_pairs(const float* x, bf16* p) noexcept {
    for (std::size_t i = 0; i < 16; ++i) p[i] = bf16(x[i]);
}
inline void interleave_rows(const bf16* a, const bf16* b, bf16* p) noexcept {
    for (std::size_t i = 0; i < 32; ++i) p[2 * i] = a[i], p[2 * i + 1] = b[i];
}
template <class B>
inline void store_pairs(bf16* p, const B& x, const B& y) noexcept {
    if constexpr (xsimd::is_batch<B>::value) {
        alignas(64) float tx[B::size], ty[B::size];
        x.store_aligned(tx);
        y.store_aligned(ty);
        for (std::size_t i = 0; i < B::size; ++i) p[2 * i] = bf16(tx[i]), p[2 * i + 1] = bf16(ty[i]);
    } else {
        p[0] = bf16(x), p[1] = bf16(y);
    }
}
#endif

}  // namespace simd
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
