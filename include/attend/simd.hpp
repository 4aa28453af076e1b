// attend/simd.hpp — the thin layer over xsimd 8.1 that every loop nest uses.
//
// It sits in the target's inline namespace (config.hpp): its bodies depend on -m flags.
// Everything here is written once for two kinds of "lane bundle" B: an xsimd batch (the vector
// body of a loop) and a plain scalar (the compile-time tail), so expression nodes have one
// definition for both. It also supplies what xsimd 8.1 lacks: horizontal max, byte-mask loads and
// stores for bool tensors, NaN-propagating maximum/minimum, and loads that convert element types
// (16-bit ones through simd_half.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "config.hpp"
#include "simd_half.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace simd {

using default_arch = xsimd::default_arch;

template <class B>
inline constexpr bool is_batch = false;
template <class T, class A>
inline constexpr bool is_batch<xsimd::batch<T, A>> = true;

// Element type and lane count of a bundle.
template <class B>
struct traits {
    using value_type = B;
    using mask_type = bool;
    static constexpr std::size_t lanes = 1;
};
template <class T, class A>
struct traits<xsimd::batch<T, A>> {
    using value_type = T;
    using mask_type = xsimd::batch_bool<T, A>;
    static constexpr std::size_t lanes = xsimd::batch<T, A>::size;
};
template <class B>
using value_t = typename traits<B>::value_type;
template <class B>
using mask_t = typename traits<B>::mask_type;
template <class B>
inline constexpr std::size_t lanes = traits<B>::lanes;

// The vector bundle of element type F for the target the translation unit is built for.
template <class F, class Arch = default_arch>
using batch = xsimd::batch<F, Arch>;

// How many vector registers the target has: what the loop nests' register tiles are sized by.
// 32 with AVX-512 (zmm0-31) and on aarch64 (v0-31), 16 for the other x86-64 targets.
template <class Arch = default_arch>
inline constexpr std::size_t vector_registers =
#if defined(__AVX512F__) || defined(__aarch64__)
    32;
#else
    16;
#endif

template <class B, class S>
inline B splat(S v) noexcept {
    return B(static_cast<value_t<B>>(v));
}

// {start, start+1, ...}: the index of each lane along the innermost axis.
template <class B>
inline B lane_index(std::size_t start) noexcept {
    using F = value_t<B>;
    if constexpr (is_batch<B>) {
        alignas(64) F ramp[lanes<B>];
        for (std::size_t l = 0; l < lanes<B>; ++l) ramp[l] = static_cast<F>(l);
        return B(static_cast<F>(start)) + B::load_aligned(ramp);
    } else {
        return static_cast<F>(start);
    }
}

// A floating value F stored as integer type T (a store of a tree whose values are integers held
// in floating lanes: what a cast gave, trunc_saturated, or integer arithmetic): its integer
// value (toward zero, NaN 0, within int64 or uint64), wrapped into T as NumPy's astype between
// integers does. Defined for every input, where a C++ conversion out of range is not. Other
// conversions as static_cast.
template <class T, class F>
inline T to_element(F x) noexcept {
    if constexpr (std::is_floating_point_v<F> && std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        constexpr F two63 = F(std::uint64_t{1} << 63);
        if (!(x > -two63)) return x != x ? T(0) : static_cast<T>(std::numeric_limits<std::int64_t>::min());
        if (x < two63) return static_cast<T>(static_cast<std::int64_t>(x));
        if (x < 2 * two63) return static_cast<T>(static_cast<std::uint64_t>(x));
        return static_cast<T>(std::numeric_limits<std::uint64_t>::max());
    } else {
        return static_cast<T>(x);
    }
}

// Load lanes of element type value_t<B> from memory of element type T (converting if they differ).
template <class B, class T>
inline B load(const T* p) noexcept {
    using F = value_t<B>;
    if constexpr (!is_batch<B>) {
        return static_cast<F>(*p);
    } else if constexpr (std::is_same_v<T, F>) {
        return B::load_unaligned(p);
    } else if constexpr (is_half<T> && std::is_same_v<F, float>) {
        return load_half<B>(p);
    } else {
        alignas(64) F tmp[lanes<B>];
        for (std::size_t l = 0; l < lanes<B>; ++l) tmp[l] = static_cast<F>(p[l]);
        return B::load_aligned(tmp);
    }
}

template <class B, class T>
inline void store(T* p, const B& v) noexcept {
    using F = value_t<B>;
    if constexpr (!is_batch<B>) {
        *p = to_element<T>(v);
    } else if constexpr (std::is_same_v<T, F>) {
        v.store_unaligned(p);
    } else if constexpr (is_half<T> && std::is_same_v<F, float>) {
        store_half(p, v);
    } else {
        alignas(64) F tmp[lanes<B>];
        v.store_aligned(tmp);
        for (std::size_t l = 0; l < lanes<B>; ++l) p[l] = to_element<T>(tmp[l]);
    }
}

// bool tensors are bytes; xsimd 8.1 loads them with a scalar loop, so widen them ourselves.
template <class B>
inline mask_t<B> load_mask(const bool* p) noexcept {
    if constexpr (!is_batch<B>) {
        return *p;
    } else {
        constexpr std::size_t n = lanes<B>;
#if defined(__AVX512F__)
        if constexpr (sizeof(B) == 64 && n == 16) {
            const __m512i w = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
            return mask_t<B>(_mm512_test_epi32_mask(w, w));
        } else if constexpr (sizeof(B) == 64 && n == 8) {
            const __m512i w = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
            return mask_t<B>(_mm512_test_epi64_mask(w, w));
        } else
#endif
#if defined(__AVX2__)
        if constexpr (sizeof(B) == 32 && n == 8) {
            const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
            return mask_t<B>(_mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256())));
        } else
#endif
        {
            std::uint64_t bits = 0;
            for (std::size_t l = 0; l < n; ++l) bits |= std::uint64_t{p[l]} << l;
            alignas(64) value_t<B> tmp[n];
            for (std::size_t l = 0; l < n; ++l) tmp[l] = ((bits >> l) & 1u) ? value_t<B>(1) : value_t<B>(0);
            return B::load_aligned(tmp) != B(0);
        }
    }
}

template <class M>
inline void store_mask(bool* p, const M& m) noexcept {
    if constexpr (std::is_same_v<M, bool>) {
        *p = m;
    } else {
        m.store_unaligned(p);
    }
}

// ---- arithmetic that must read the same for batches and scalars ----------------------------

template <class B>
inline B select(const mask_t<B>& c, const B& a, const B& b) noexcept {
    if constexpr (is_batch<B>) return xsimd::select(c, a, b);
    else return c ? a : b;
}

// xsimd 8.1 compares batches for != with _CMP_NEQ_OQ (AVX, AVX-512), which is false when an
// operand is NaN; IEEE (and scalar C++) say true. So: isnan by an unordered compare, and != as
// the negation of ==.
template <class B>
inline auto is_nan(const B& x) noexcept {
    if constexpr (is_batch<B>) return xsimd::isnan(x);
    else return x != x;
}
template <class X, class Y>
inline auto not_equal(const X& a, const Y& b) noexcept {
    if constexpr (is_batch<X> || is_batch<Y>) return !(a == b);
    else return a != b;
}

// IEEE 754-2019 maximum/minimum (and NumPy's): a NaN in either operand gives NaN.
template <class B>
inline B maximum(const B& a, const B& b) noexcept {
    if constexpr (is_batch<B>) return xsimd::select(is_nan(a) || is_nan(b), a + b, xsimd::max(a, b));
    else return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? b : a);
}
template <class B>
inline B minimum(const B& a, const B& b) noexcept {
    if constexpr (is_batch<B>) return xsimd::select(is_nan(a) || is_nan(b), a + b, xsimd::min(a, b));
    else return (is_nan(a) || is_nan(b)) ? a + b : (b < a ? b : a);
}

// a * b + c in one rounding. xsimd 8.1 has no AVX-512 fma kernel (its generic one is a * b + c),
// which g++ contracts by default and clang (-ffp-contract=on) does not: a multiply and an add,
// twice the FMA-pipe work. So AVX-512 lanes call the instruction themselves.
template <class B>
inline B fma(const B& a, const B& b, const B& c) noexcept {
    if constexpr (!is_batch<B>) {
        return a * b + c;
    }
#if defined(__AVX512F__)
    else if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type> && std::is_same_v<value_t<B>, float>) {
        return _mm512_fmadd_ps(a, b, c);
    } else if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type> && std::is_same_v<value_t<B>, double>) {
        return _mm512_fmadd_pd(a, b, c);
    }
#endif
#if defined(__FMA__)
    // Narrower batches of a wider target (the contraction's half-width tiles on AVX-512 are
    // batch<float, avx2>, whose xsimd fma is the generic one too).
    else if constexpr (sizeof(B) == 32 && std::is_same_v<value_t<B>, float>) {
        return _mm256_fmadd_ps(a, b, c);
    } else if constexpr (sizeof(B) == 32 && std::is_same_v<value_t<B>, double>) {
        return _mm256_fmadd_pd(a, b, c);
    } else if constexpr (sizeof(B) == 16 && std::is_same_v<value_t<B>, float>) {
        return _mm_fmadd_ps(a, b, c);
    } else if constexpr (sizeof(B) == 16 && std::is_same_v<value_t<B>, double>) {
        return _mm_fmadd_pd(a, b, c);
    }
#endif
    else {
        return xsimd::fma(a, b, c);
    }
}

#define ATTEND_SIMD_UNARY(name, batch_fn, scalar_fn)         \
    template <class B>                                         \
    inline B name(const B& x) noexcept {                       \
        if constexpr (is_batch<B>) return batch_fn(x);         \
        else return scalar_fn(x);                              \
    }
ATTEND_SIMD_UNARY(abs, xsimd::abs, std::abs)
ATTEND_SIMD_UNARY(trunc, xsimd::trunc, std::trunc)
#undef ATTEND_SIMD_UNARY

// The largest value of floating F not above integer T's maximum (2^31 - 128 for int32 in float).
template <class T, class F>
inline constexpr F lanes_max = [] {
    constexpr int d = std::numeric_limits<T>::digits, m = std::numeric_limits<F>::digits;
    F p = 1, q = 1;  // 2^d, 2^(d - m)
    for (int e = 0; e < d; ++e) p *= 2;
    for (int e = 0; e < d - m; ++e) q *= 2;
    return d <= m ? F(std::numeric_limits<T>::max()) : p - q;
}();
// A cast of floating lanes to integer type T: toward zero, saturating at T's range as the lanes
// hold it ([min, lanes_max]), NaN to 0, never -0 — the same in every lane and the scalar tail.
template <class T, class B>
inline B trunc_saturated(const B& x) noexcept {
    using F = value_t<B>;
    constexpr F lo = F(std::numeric_limits<T>::min()), hi = lanes_max<T, F>;
    if constexpr (!is_batch<B>) {
        if (x != x) return F(0);
        return std::min(std::max(std::trunc(x), lo), hi) + F(0);
    } else {
        const B t = xsimd::min(xsimd::max(trunc(x), B(lo)), B(hi)) + B(F(0));
        return xsimd::select(is_nan(x), B(F(0)), t);
    }
}

// tanh: xsimd 8.1's converts its argument to an integer on the way (undefined for +-inf, which
// UBSan stops on): arguments clamp to +-20, where tanh is +-1 in float and double, NaN kept.
template <class B>
inline B tanh(const B& x) noexcept {
    if constexpr (is_batch<B>) return xsimd::select(is_nan(x), x, B(xsimd::tanh(xsimd::min(xsimd::max(x, B(-20)), B(20)))));
    else return std::tanh(x);
}

// sqrt: xsimd 8.1's float sqrt on NEON is a reciprocal-square-root estimate with two Newton
// steps, also on AArch64: sqrt(+inf) = NaN, sqrt(-0) = +0, and a third of the results 1-2 ulp
// off. AArch64 has the correctly rounded vector sqrt (as sqrtps on x86), so float lanes take it there.
template <class B>
inline B sqrt(const B& x) noexcept {
    if constexpr (!is_batch<B>) {
        return std::sqrt(x);
    }
#if defined(__aarch64__)
    else if constexpr (std::is_same_v<value_t<B>, float> && std::is_base_of_v<xsimd::neon, typename B::arch_type>) {
        return vsqrtq_f32(x);
    }
#endif
    else {
        return xsimd::sqrt(x);
    }
}

// exp(x) = 2^n exp(r) with r = x - n ln 2 (ln 2 in two parts, Cody-Waite), |r| <= ln2/2, and
// exp(r) by a polynomial (Cephes' expf coefficients, ~1 ulp).
template <class F>
inline F exp_poly(const F& n, const F& xc) noexcept {
    F r = simd::fma(n, F(-0.693359375f), xc);
    r = simd::fma(n, F(2.12194440e-4f), r);
    F p = F(8.369148490856347e-3f);
    p = simd::fma(p, r, F(4.191750724961526e-2f));
    p = simd::fma(p, r, F(1.6666505260408124e-1f));
    p = simd::fma(p, r, F(4.9998869378303396e-1f));
    p = simd::fma(p, r, F(1.00000001077157f));
    return simd::fma(p, r, F(1.0000000754548972f));
}

// exp for float lanes: the hottest function of softmax. On AVX-512 the scaling by 2^n is one
// vscalefps, which also gives denormals, 0 and inf exactly; elsewhere 2^n is built as two
// exponent-field factors, which keeps denormal results and overflows to inf by itself above
// ln(FLT_MAX) (x is clamped to 88.8, where n = 128). Max and min take x second, so a NaN in x
// passes through; exp(-inf) = 0. (Measured against xsimd's and Eigen's: docs/design.md.)
template <class A>
inline xsimd::batch<float, A> exp_float(const xsimd::batch<float, A>& x) noexcept {
    using F = xsimd::batch<float, A>;
    const F lo(-104.0f);
#if defined(__AVX512F__)
    if constexpr (std::is_base_of_v<xsimd::avx512f, A>) {
        const F hi(88.7228394f);
        // max/min with x second: a NaN in x passes through.
        const F xc = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
        const F n = _mm512_roundscale_ps(xc * F(1.44269504088896341f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const F y = _mm512_scalef_ps(exp_poly(n, xc), n);
        return xsimd::select(x > hi, F(std::numeric_limits<float>::infinity()), y);
    } else
#endif
    {
        using I = xsimd::batch<std::int32_t, A>;
        const F magic(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer in the low bits
        const F xc = xsimd::min(F(88.8f), xsimd::max(lo, x));
        const F k = simd::fma(xc, F(1.44269504088896341f), magic);
        const F p = exp_poly(k - magic, xc);
        const I ni = xsimd::bitwise_cast<I>(k) - xsimd::bitwise_cast<I>(magic);
        const I n1 = ni >> 1, n2 = ni - n1;
        const F s1 = xsimd::bitwise_cast<F>((n1 + I(127)) << 23), s2 = xsimd::bitwise_cast<F>((n2 + I(127)) << 23);
        return p * s1 * s2;
    }
}

// f applied to each lane of x in turn (the scalar function on a vector's rare lanes).
template <class B, class Fn>
inline B lane_by_lane(const B& x, Fn f) noexcept {
    alignas(64) value_t<B> v[lanes<B>];
    x.store_aligned(v);
    for (auto& e : v) e = f(e);
    return B::load_aligned(v);
}

template <class B>
inline B exp(const B& x) noexcept {
    if constexpr (is_batch<B> && std::is_same_v<value_t<B>, float>) {
        return exp_float(x);
    } else if constexpr (is_batch<B>) {
        // xsimd 8.1's double exp overflows from 709.5 (std's limit is 709.78) and gives 0 for
        // every subnormal result (below -708.4): lanes in (708, inf) or (-746, -708) take std::exp
        // (rare; infinities and -1e9 padding stay on the vector path, as do the other lanes).
        // It also converts its argument to an integer before range checks (UB for -inf, which
        // softmax feeds it): clamp to where exp is 0 or inf anyway, keep NaN.
        const B clamped = xsimd::min(xsimd::max(x, B(-746.0)), B(710.0));
        const B fast = xsimd::select(is_nan(x), x, xsimd::exp(clamped));
        const B inf(std::numeric_limits<value_t<B>>::infinity());
        const auto edge = (x > B(708.0) && x < inf) || (x < B(-708.0) && x > B(-746.0));
        if (xsimd::any(edge)) return xsimd::select(edge, lane_by_lane(x, [](value_t<B> e) { return std::exp(e); }), fast);
        return fast;
    } else {
        return std::exp(x);
    }
}

// sin and cos: xsimd's (Cody-Waite reduction and minimax polynomials) on batches, std:: on scalars.
template <class B>
inline B sin(const B& x) noexcept {
    if constexpr (is_batch<B>) return xsimd::sin(x);
    else return std::sin(x);
}
template <class B>
inline B cos(const B& x) noexcept {
    if constexpr (is_batch<B>) return xsimd::cos(x);
    else return std::cos(x);
}

// sigmoid(x) = 1 / (1 + exp(-x)): exp(-x) = inf gives 0, exp(-x) = 0 gives 1, NaN stays NaN.
template <class B>
inline B sigmoid(const B& x) noexcept {
    return B(1) / (B(1) + simd::exp(-x));
}

// The online softmax's exponential in scaled units: exp2_eighths(t) = 2^(t / 8). With
// t = fma(s, log2e_x8, -m8), where m8 = m * log2e_x8, that is exp(s - m): the shift and the
// change of base take one fma, and the reference m8 is kept in these units so that rescaling
// by 2^((m8_old - m8_new) / 8) matches the probabilities exactly. Arguments are <= 0 up to
// rounding, or -inf, or NaN: NaN passes through, -inf gives 0, and t < -1000 (2^-125) may give 0
// rather than a denormal — next to the row's largest term, 1, far below a float's resolution.
template <class F>
inline constexpr F log2e_x8 = F(8 * 1.4426950408889634);

// 2^(j/8) for j = 0..7, twice: a 16-lane vpermps reads four index bits, an 8-lane one three.
alignas(64) inline constexpr float exp2_eighths_table[16] = {
    1.0f, 1.09050775f, 1.18920708f, 1.29683959f, 1.41421354f, 1.54221082f, 1.68179286f, 1.83400810f,
    1.0f, 1.09050775f, 1.18920708f, 1.29683959f, 1.41421354f, 1.54221082f, 1.68179286f, 1.83400810f};

// With AVX2 or AVX-512, float lanes split round(t) = 8 q + j: 2^(j/8) from an 8-entry table (one
// vpermps; the 16-lane form reads 4 index bits, so its table holds the 8 entries twice), 2^q into
// the exponent field, and 2^(f/8) for |f| <= 1/2 by a cubic (relative error 2.7e-8). That is 5
// operations on the FMA pipes where exp needs 9 (AVX2) or 10 (AVX-512, with its range clamps).
template <class B>
inline B exp2_eighths(const B& t) noexcept {
#if defined(__AVX2__)
    if constexpr (is_batch<B> && std::is_same_v<value_t<B>, float> && sizeof(B) >= 32) {
        using I = xsimd::batch<std::int32_t, typename B::arch_type>;
        // No clamp: below lo (-inf included) the result is set to 0 whatever the steps give.
        const B lo(-1000.0f), magic(12582912.0f);  // magic: 1.5 * 2^23, rounds to an integer in the low bits
        const B k = t + magic;
        const B f = t - (k - magic);  // exact, in [-1/2, 1/2]
        const B p = simd::fma(simd::fma(simd::fma(B(1.08391046e-4f), f, B(3.75402533e-3f)), f, B(8.66434053e-2f)), f, B(1.0f));
        const I n = xsimd::bitwise_cast<I>(k);  // round(t) in the low bits: 8 q + j
        B frac;  // 2^(j/8)
#if defined(__AVX512F__)
        if constexpr (sizeof(B) == 64) frac = _mm512_permutexvar_ps(n, _mm512_load_ps(exp2_eighths_table));
        else
#endif
            frac = _mm256_permutevar8x32_ps(_mm256_load_ps(exp2_eighths_table), n);
        // q into the exponent field: bits 3.. of n shifted to 23.. (2^q 2^(j/8) stays normal for q >= -125).
        const B scale = xsimd::bitwise_cast<B>(xsimd::bitwise_cast<I>(frac) + ((n >> 3) << 23));
        // A NaN in t makes p and the product NaN.
        if constexpr (sizeof(B) == 64) {
            return xsimd::select(t < lo, B(0.0f), p * scale);  // one masked move
        } else {
            // and-not with the mask (xsimd 8.1's bitwise_andnot(m, y) is ~m & y); a select made
            // g++ re-derive a full mask from its sign bits first.
            return xsimd::bitwise_andnot(B((t < lo).data), p * scale);
        }
    } else
#endif
    {
        return simd::exp(t * B(0.0866433975699931636));  // ln(2) / 8; qualified: ADL would pick xsimd::exp
    }
}

// exp(x - m) for a shift m8 = m * log2e_x8 in those units: one fma and exp2_eighths (the online
// softmax of the attention nest and the softmax plan).
template <class B>
inline B exp_shifted(const B& x, const B& m8) noexcept {
    return exp2_eighths(simd::fma(x, B(log2e_x8<value_t<B>>), -m8));
}

// The larger of a running maximum m and x, ignoring a NaN in x: where only the shift of an
// online softmax depends on it, a NaN score still reaches the output through exp and the sums.
template <class B>
inline B running_max(const B& m, const B& x) noexcept {
    if constexpr (is_batch<B>) return xsimd::max(x, m);  // maxps returns its second operand on NaN
    else return m < x ? x : m;
}

// log: xsimd 8.1's log does not compile with g++ at -O0 on AVX-512BW (its integer select
// reaches byte-blend intrinsics that g++ defines as macros without optimisation), so such
// unoptimised builds take the log lane by lane; every other build uses xsimd's, except in lanes
// holding a positive subnormal double (xsimd's is off by up to 38 there), which take std::log.
template <class B>
inline B log(const B& x) noexcept {
    if constexpr (!is_batch<B>) {
        return std::log(x);
    } else {
        auto std_log = [](value_t<B> e) { return std::log(e); };
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__) && defined(__AVX512BW__)
        return lane_by_lane(x, std_log);
#else
        if constexpr (std::is_same_v<value_t<B>, double>) {
            const auto edge = x > B(0.0) && x < B(std::numeric_limits<double>::min());
            if (xsimd::any(edge)) return xsimd::select(edge, lane_by_lane(x, std_log), B(xsimd::log(x)));
        }
        return xsimd::log(x);
#endif
    }
}

// Horizontal reductions (xsimd 8.1 has hadd only).
template <class B>
inline value_t<B> reduce_add(const B& x) noexcept {
    if constexpr (is_batch<B>) return xsimd::hadd(x);
    else return x;
}
template <class B>
inline value_t<B> reduce_max(const B& x) noexcept {
    if constexpr (is_batch<B>) {
        alignas(64) value_t<B> tmp[lanes<B>];
        x.store_aligned(tmp);
        value_t<B> m = tmp[0];
        for (std::size_t l = 1; l < lanes<B>; ++l) m = maximum(m, tmp[l]);
        return m;
    } else {
        return x;
    }
}

// out[r] = reduce_add(a[r]) for r < N, for many sums at once: float lanes of AVX or AVX-512 in
// groups of 4 or 8 by a transposing tree (pairs interleaved within 128-bit blocks, then the
// blocks folded), about 3 operations a sum where one reduce_add takes 6 to 8. The sums are
// associated differently from reduce_add's (both are one tree over the lanes).
#if defined(__AVX512F__)
inline __m512 pair_sum(__m512 a, __m512 b) noexcept {  // 4-lane blocks: a b a b partials
    return _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
}
inline __m512 quad_sum(__m512 x, __m512 y) noexcept {  // 4-lane blocks: keys 0 1 2 3 partials
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x44), _mm512_shuffle_ps(x, y, 0xEE));
}
// Four sums: lanes 0..3 of the result.
inline __m512 reduce_add_4(const __m512* a) noexcept {
    const __m512 q = quad_sum(pair_sum(a[0], a[1]), pair_sum(a[2], a[3]));
    const __m512 h = _mm512_add_ps(q, _mm512_shuffle_f32x4(q, q, 0x4E));
    return _mm512_add_ps(h, _mm512_shuffle_f32x4(h, h, 0xB1));
}
// Eight sums: lanes 0..7 of the result.
inline __m512 reduce_add_8(const __m512* a) noexcept {
    const __m512 x = quad_sum(pair_sum(a[0], a[1]), pair_sum(a[2], a[3]));
    const __m512 y = quad_sum(pair_sum(a[4], a[5]), pair_sum(a[6], a[7]));
    // blocks: x's keys (two partials), y's keys (two partials)
    const __m512 r = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(r, r, 0x08), _mm512_shuffle_f32x4(r, r, 0x0D));
}
#endif
#if defined(__AVX__)
inline __m256 pair_sum(__m256 a, __m256 b) noexcept { return _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b)); }
inline __m256 quad_sum(__m256 x, __m256 y) noexcept {
    return _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x44), _mm256_shuffle_ps(x, y, 0xEE));
}
inline __m256 reduce_add_4(const __m256* a) noexcept {
    const __m256 q = quad_sum(pair_sum(a[0], a[1]), pair_sum(a[2], a[3]));
    return _mm256_add_ps(q, _mm256_permute2f128_ps(q, q, 0x01));
}
// Four pair_sum halves of rows (0, 1), (2, 3), (4, 5), (6, 7) as one vector of the eight sums.
inline __m256 sum_halves(__m256 h0, __m256 h1, __m256 h2, __m256 h3) noexcept {
    const __m256 x = quad_sum(h0, h1), y = quad_sum(h2, h3);
    return _mm256_add_ps(_mm256_permute2f128_ps(x, y, 0x20), _mm256_permute2f128_ps(x, y, 0x31));
}
inline __m256 reduce_add_8(const __m256* a) noexcept {
    return sum_halves(pair_sum(a[0], a[1]), pair_sum(a[2], a[3]), pair_sum(a[4], a[5]), pair_sum(a[6], a[7]));
}
#endif

template <std::size_t N, class B>
inline void reduce_add_each(const B (&a)[N], value_t<B>* out) noexcept {
    constexpr bool tree = is_batch<B> && std::is_same_v<value_t<B>, float> && N % 4 == 0 &&
#if defined(__AVX512F__)
                          (sizeof(B) == 64 || sizeof(B) == 32);
#elif defined(__AVX__)
                          sizeof(B) == 32;
#else
                          false;
#endif
    if constexpr (tree) {
        using R = decltype(a[0].data);  // __m512 or __m256
        constexpr std::size_t G = N % 8 == 0 ? 8 : 4;
        for (std::size_t g = 0; g < N; g += G) {
            R r[G];
            for (std::size_t k = 0; k < G; ++k) r[k] = a[g + k];
            alignas(64) float s[sizeof(B) / sizeof(float)];
            B(G == 8 ? reduce_add_8(r) : reduce_add_4(r)).store_aligned(s);
            for (std::size_t k = 0; k < G; ++k) out[g + k] = s[k];
        }
    } else {
        for (std::size_t r = 0; r < N; ++r) out[r] = reduce_add(a[r]);
    }
}

// op folded over a bundle's lanes, the result in every lane: butterflies on AVX-512 and AVX (so
// that a chain that needs it stays in vector registers); `fold` for other bundles.
template <class B, class Op, class Fold>
inline B across(B x, [[maybe_unused]] Op op, Fold fold) noexcept {
#if defined(__AVX512F__)
    if constexpr (is_batch<B> && std::is_same_v<value_t<B>, float> && lanes<B> == 16) {
        x = op(x, B(_mm512_shuffle_f32x4(x, x, 0x4E)));
        x = op(x, B(_mm512_shuffle_f32x4(x, x, 0xB1)));
        x = op(x, B(_mm512_permute_ps(x, 0x4E)));
        return op(x, B(_mm512_permute_ps(x, 0xB1)));
    }
#endif
#if defined(__AVX__)
    if constexpr (is_batch<B> && std::is_same_v<value_t<B>, float> && lanes<B> == 8) {
        x = op(x, B(_mm256_permute2f128_ps(x, x, 0x01)));
        x = op(x, B(_mm256_permute_ps(x, 0x4E)));
        return op(x, B(_mm256_permute_ps(x, 0xB1)));
    }
#endif
    return B(fold(x));
}
// The maximum (no NaN handling: callers clean) and the sum of the lanes, in every lane.
template <class B>
inline B max_across(const B& x) noexcept {
    return across(x, [](const auto& a, const auto& b) { return B(xsimd::max(a, b)); }, [](const auto& v) { return reduce_max(v); });
}
template <class B>
inline B sum_across(const B& x) noexcept {
    return across(x, [](const auto& a, const auto& b) { return B(a + b); }, [](const auto& v) { return reduce_add(v); });
}

// The value of lane j in every lane.
template <class B>
inline B lane_broadcast(const B& x, std::size_t j) noexcept {
#if defined(__AVX512F__)
    if constexpr (is_batch<B> && std::is_same_v<value_t<B>, float> && lanes<B> == 16)
        return _mm512_permutexvar_ps(_mm512_set1_epi32(static_cast<int>(j)), x);
#endif
#if defined(__AVX2__)
    if constexpr (is_batch<B> && std::is_same_v<value_t<B>, float> && lanes<B> == 8)
        return _mm256_permutevar8x32_ps(x, _mm256_set1_epi32(static_cast<int>(j)));
#endif
    alignas(64) value_t<B> t[lanes<B>];
    x.store_aligned(t);
    return B(t[j]);
}

// A compiler barrier (an empty asm that may read and write memory; no instruction): no load or
// store moves across it, so loops the compiler would split or interleave stay as written.
inline void memory_barrier() noexcept { asm volatile("" ::: "memory"); }

// With clang, memory reads and writes stay on their side of this point (a compiler barrier, no
// instruction): it keeps the rows of a block read one after another where clang's scheduler
// interleaves them to save registers, which halves a DRAM stream on Zen 5. g++ keeps the order
// by itself, and there the barrier cost 10–14 % in decode (docs/design.md, "Decode streams").
inline void keep_memory_order() noexcept {
#if defined(__clang__)
    memory_barrier();
#endif
}

// s[i] lane j = sum over d < D of q[i * D + d] * k[j * ldk + d], for the lanes j of one bundle:
// dot products of NQ queries with W adjacent rows, summed across lanes by the transposing tree,
// so the scores arrive in one register (not in W scalar stores read back as a vector, which
// cannot be forwarded from the store queue). `after_row(r)` runs after row r is read (work to
// spread along the rows, such as requests for memory needed next).
struct no_row_work {
    void operator()(std::size_t) const noexcept {}
};
// Whether dot_block can read rows of T as their even and odd elements (its Split: bf16, a shift
// and a mask of 32-bit lanes for 2W values, where widening in order takes two shuffles and two
// shifts); its queries are then split the same way (split_even_odd: D/2 even values, then D/2 odd).
template <class B, class T, std::size_t D>
inline constexpr bool split_keys = is_batch<B> && std::is_same_v<value_t<B>, float> && std::is_same_v<std::remove_cv_t<T>, bf16> &&
                                   D % (2 * lanes<B>) == 0;
// Whether dot_block can take bf16 queries and rows of D values as pair dot products (dot_pairs:
// exact products, float sums; AVX-512 BF16).
template <class B, std::size_t D>
inline constexpr bool pair_rows = has_bf16_pair_dot && is_batch<B> && std::is_same_v<value_t<B>, float> && lanes<B> == 16 &&
                                  D % 32 == 0;

// Whether AVX and FMA are compiled (the intrinsics of two_key_dots).
#if defined(__AVX__) && defined(__FMA__)
inline constexpr bool avx_fma_built = true;
#else
inline constexpr bool avx_fma_built = false;
#endif
// Whether dot_block takes two keys at a time against NQ queries read from L1 (dot_key_pairs):
// rows longer than the registers hold, on 16-register targets with 8 lanes (AVX2), where a
// query's vectors held in registers spilled and each query re-read the tile's K rows from L2.
// Float rows, or bf16 rows read as their even and odd elements (dot_block's Split; queries split
// the same way).
template <class B, class F, class T, std::size_t NQ, std::size_t D>
inline constexpr bool key_pair_rows = is_batch<B> && std::is_same_v<value_t<B>, float> && std::is_same_v<F, float> &&
                                      (std::is_same_v<std::remove_cv_t<T>, float> || (std::is_same_v<std::remove_cv_t<T>, bf16> && D % 16 == 0)) &&
                                      lanes<B> == 8 && vector_registers<> < 32 && NQ >= 2 && NQ <= 4 && D % 8 == 0 && NQ * D / 8 > 16 &&
                                      avx_fma_built;
#if defined(__AVX__) && defined(__FMA__)
// The NQ queries' dot products with rows k0 and k1, per column vector the query vectors loaded
// once for both rows (2 NQ sums, NQ + 2 registers: six loads to eight FMAs at four queries, where
// a key held against queries folded into the FMAs takes five to four), each pair of sums halved
// at once (pair_sum). bf16 rows: 16 elements at a time as even and odd lanes (widen_even_odd),
// against the query's even values at d / 2 and odd ones at D / 2 + d / 2. Ahead > 0: the rows
// Ahead and Ahead + 1 past k0 are asked for as it goes, every other float line (the line beside
// comes with it; each line asked for cost more than it gained: Zen 3, 8 x 4 heads over 1000 keys
// in L3, 237 against 270 µs), every bf16 line.
template <std::size_t NQ, std::size_t D, std::size_t Ahead = 0, class T>
__attribute__((always_inline)) inline void two_key_dots(const float* q, const T* k0, const T* k1, std::size_t ldk,
                                                        __m256 (&halves)[NQ]) noexcept {
    __m256 acc[NQ][2];
    for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
    auto ask = [&](std::size_t d) __attribute__((always_inline)) {
        if constexpr (Ahead > 0)
            if (d % 16 == 0) __builtin_prefetch(k0 + (Ahead + 2 * d / D) * ldk + 2 * d % D, 0, 3);
    };
    for (std::size_t d = 0; d < D; d += 8) {
        if constexpr (std::is_same_v<T, float>) {
            __m256 qv[NQ];
            for (std::size_t i = 0; i < NQ; ++i) qv[i] = _mm256_loadu_ps(q + i * D + d);
            const __m256 a = _mm256_loadu_ps(k0 + d), b = _mm256_loadu_ps(k1 + d);
            ask(d);  // (after the loads: before them, 8 x 4 heads over 1000 keys in L3 took 1.14x the time)
            for (std::size_t i = 0; i < NQ; ++i) {
                acc[i][0] = _mm256_fmadd_ps(qv[i], a, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(qv[i], b, acc[i][1]);
            }
        } else if (d % 16 == 0) {
            using F8 = xsimd::batch<float, xsimd::avx2>;
            F8 ae, ao, be, bo;
            widen_even_odd<true>(k0 + d, ae, ao);
            widen_even_odd<true>(k1 + d, be, bo);
            ask(d);
            for (std::size_t i = 0; i < NQ; ++i) {
                const __m256 qe = _mm256_loadu_ps(q + i * D + d / 2), qo = _mm256_loadu_ps(q + i * D + D / 2 + d / 2);
                acc[i][0] = _mm256_fmadd_ps(qo, ao, _mm256_fmadd_ps(qe, ae, acc[i][0]));
                acc[i][1] = _mm256_fmadd_ps(qo, bo, _mm256_fmadd_ps(qe, be, acc[i][1]));
            }
        }
    }
    for (std::size_t i = 0; i < NQ; ++i) halves[i] = pair_sum(acc[i][0], acc[i][1]);
}

// dot_block on key_pair_rows: the block's rows two at a time (two_key_dots), the four halves
// summed as reduce_add_8 sums them (sum_halves).
template <std::size_t NQ, std::size_t D, std::size_t Ahead, class B, class T, class After>
__attribute__((always_inline)) inline void dot_key_pairs(const float* q, const T* k, std::size_t ldk, B (&s)[NQ],
                                                         After&& after_row) noexcept {
    __m256 half[4][NQ];
    for (std::size_t g = 0; g < 8; g += 2) {
        two_key_dots<NQ, D, Ahead>(q, k + g * ldk, k + (g + 1) * ldk, ldk, half[g / 2]);
        after_row(g);
        after_row(g + 1);
    }
    for (std::size_t i = 0; i < NQ; ++i) s[i] = sum_halves(half[0][i], half[1][i], half[2][i], half[3][i]);
}

// Two blocks of 8 keys, a and b (rows ldk apart), against NQ queries as pairs (a_g, b_g): the
// blocks lie apart (a tile's halves), so that K is read as two ascending streams the prefetchers
// follow, where pairs of neighbouring rows read 0, 8, 1, 9, ... lines of a page were not
// followed (Zen 3, DRAM: a stand-alone loop of such pairs took 2x the time of one over halves).
// after_row(r): a's row r, then b's (r + 8).
template <std::size_t NQ, std::size_t D, class B, class T, class After>
__attribute__((always_inline)) inline void dot_key_halves(const float* q, const T* ka, const T* kb, std::size_t ldk, B (&sa)[NQ],
                                                          B (&sb)[NQ], After&& after_row) noexcept {
    __m256 four[2][NQ];  // per four rows: a's sums in lanes 0-3, b's in 4-7
    for (std::size_t h = 0; h < 2; ++h) {
        __m256 half[4][NQ];
        for (std::size_t g = 0; g < 4; ++g) {
            two_key_dots<NQ, D>(q, ka + (4 * h + g) * ldk, kb + (4 * h + g) * ldk, ldk, half[g]);
            after_row(4 * h + g);
            after_row(8 + 4 * h + g);
        }
        for (std::size_t i = 0; i < NQ; ++i)  // lanes a b a b ...: a's four, then b's
            four[h][i] = _mm256_permutevar8x32_ps(sum_halves(half[0][i], half[1][i], half[2][i], half[3][i]),
                                                  _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    }
    for (std::size_t i = 0; i < NQ; ++i) {
        sa[i] = _mm256_permute2f128_ps(four[0][i], four[1][i], 0x20);
        sb[i] = _mm256_permute2f128_ps(four[0][i], four[1][i], 0x31);
    }
}
// Whether one or two queries can take four keys at a time from a tile's quarters
// (dot_key_quarters): float, bf16 (widened in order, or Split) or f16 rows (F16C builds) of whole
// 16-element parts on 16-register targets with 8 lanes.
template <class B, class F, class T, std::size_t NQ, std::size_t D>
inline constexpr bool key_quarter_rows = is_batch<B> && std::is_same_v<value_t<B>, float> && std::is_same_v<F, float> &&
                                         (std::is_same_v<std::remove_cv_t<T>, float> || std::is_same_v<std::remove_cv_t<T>, bf16> ||
                                          (std::is_same_v<std::remove_cv_t<T>, f16> && has_f16c)) &&
                                         lanes<B> == 8 && vector_registers<> < 32 && (NQ == 1 || NQ == 2) && D % 16 == 0;
// One or two queries against four blocks of 8 keys a quarter of a tile apart (the rows r,
// h + r, 2h + r and 3h + r past k, r < 8): four ascending streams, which the hardware prefetchers
// follow from DRAM without requests. Each key's sums in two chains of FMAs (one query: the row's
// even and odd vectors; two: a chain a query), stored once a row and summed 8 rows at a time
// (reduce_add_8). s[t][i]: quarter t's 8 scores for query i. Split: bf16 rows 16 elements at a
// time as even and odd lanes (widen_even_odd: two integer operations where widening in order
// takes four), against q split the same way (its even values at d / 2, odd at D / 2 + d / 2).
template <std::size_t NQ, std::size_t D, bool Split = false, class B, class T>
__attribute__((always_inline)) inline void dot_key_quarters(const float* q, const T* k, std::size_t ldk, std::size_t h,
                                                            B (&s)[4][NQ]) noexcept {
    static_assert(!Split || std::is_same_v<std::remove_cv_t<T>, bf16>, "attend internal: dot_key_quarters: Split needs bf16 rows");
    alignas(32) float sums[4][NQ][8][8];
    for (std::size_t r = 0; r < 8; ++r) {
        __m256 acc[4][2];
        for (auto& a : acc) a[0] = a[1] = _mm256_setzero_ps();
        for (std::size_t d = 0; d < D; d += 16) {
            if constexpr (Split) {
                __m256 qe[NQ], qo[NQ];
                for (std::size_t i = 0; i < NQ; ++i) qe[i] = _mm256_loadu_ps(q + i * D + d / 2), qo[i] = _mm256_loadu_ps(q + i * D + D / 2 + d / 2);
                for (std::size_t t = 0; t < 4; ++t) {
                    xsimd::batch<float, xsimd::avx2> ke, ko;
                    widen_even_odd<true>(k + (r + t * h) * ldk + d, ke, ko);
                    if constexpr (NQ == 1) acc[t][0] = _mm256_fmadd_ps(qe[0], ke, acc[t][0]), acc[t][1] = _mm256_fmadd_ps(qo[0], ko, acc[t][1]);
                    else
                        for (std::size_t i = 0; i < NQ; ++i) acc[t][i] = _mm256_fmadd_ps(qo[i], ko, _mm256_fmadd_ps(qe[i], ke, acc[t][i]));
                }
            } else {
                // 8 elements at d + 8 E; one query's two chains take one half each (E a constant,
                // so that the sums stay in registers even where the loop is not unrolled)
                auto half = [&]<std::size_t E>() __attribute__((always_inline)) {
                    __m256 qv[NQ];
                    for (std::size_t i = 0; i < NQ; ++i) qv[i] = _mm256_loadu_ps(q + i * D + d + 8 * E);
                    for (std::size_t t = 0; t < 4; ++t) {
                        const __m256 kv = load<xsimd::batch<float, xsimd::avx2>>(k + (r + t * h) * ldk + d + 8 * E);  // (16-bit: load_half)
                        if constexpr (NQ == 1) acc[t][E] = _mm256_fmadd_ps(qv[0], kv, acc[t][E]);
                        else
                            for (std::size_t i = 0; i < NQ; ++i) acc[t][i] = _mm256_fmadd_ps(qv[i], kv, acc[t][i]);
                    }
                };
                half.template operator()<0>();
                half.template operator()<1>();
            }
        }
        for (std::size_t t = 0; t < 4; ++t)
            for (std::size_t i = 0; i < NQ; ++i) _mm256_store_ps(sums[t][i][r], NQ == 1 ? _mm256_add_ps(acc[t][0], acc[t][1]) : acc[t][i]);
    }
    for (std::size_t t = 0; t < 4; ++t)
        for (std::size_t i = 0; i < NQ; ++i) {
            __m256 rows[8];
            for (std::size_t r = 0; r < 8; ++r) rows[r] = _mm256_load_ps(sums[t][i][r]);
            s[t][i] = reduce_add_8(rows);
        }
}
#else
// (declared for discarded branches; never called: key_pair_rows is false)
template <std::size_t NQ, std::size_t D, std::size_t Ahead, class B, class T, class After>
void dot_key_pairs(const float*, const T*, std::size_t, B (&)[NQ], After&&) noexcept;
template <std::size_t NQ, std::size_t D, class B, class T, class After>
void dot_key_halves(const float*, const T*, const T*, std::size_t, B (&)[NQ], B (&)[NQ], After&&) noexcept;
template <class B, class F, class T, std::size_t NQ, std::size_t D>
inline constexpr bool key_quarter_rows = false;
template <std::size_t NQ, std::size_t D, bool Split = false, class B, class T>
void dot_key_quarters(const float*, const T*, std::size_t, std::size_t, B (&)[4][NQ]) noexcept;
#endif

// With bf16 queries (F = bf16) the products run as pair dot products (pair_rows).
template <std::size_t NQ, std::size_t D, bool Split = false, bool Unroll = false, std::size_t Ahead = 0, class B, class F, class T,
          class After = no_row_work>
__attribute__((always_inline)) inline void dot_block(const F* q, const T* k, std::size_t ldk, B (&s)[NQ],
                                                     After&& after_row = {}) noexcept {
    // G keys at a time, each key's row read whole before the next (Zen 5 streamed K at half the
    // speed when a tile's rows were read interleaved): NQ x G accumulators, a key vector, and the
    // queries in registers when they fit.
    if constexpr (Split == std::is_same_v<std::remove_cv_t<T>, bf16> && key_pair_rows<B, F, T, NQ, D>)
        return dot_key_pairs<NQ, D, Ahead>(q, k, ldk, s, after_row);
    using V = value_t<B>;
    constexpr bool pairs = std::is_same_v<F, bf16>;
    static_assert(!pairs || (pair_rows<B, D> && std::is_same_v<std::remove_cv_t<T>, bf16> && !Split),
                  "attend internal: dot_block: bf16 queries need bf16 rows of whole pair vectors");
    constexpr std::size_t W = lanes<B>, QW = pairs ? 2 * W : W, DW = D / QW * QW, QV = DW / QW;
    constexpr bool q_regs = QV > 0 && NQ * QV <= 16;
    constexpr std::size_t G = std::min<std::size_t>(W, NQ == 1 || (!q_regs && NQ <= 2) ? 8 : 4);
    constexpr bool tree = std::is_same_v<V, float> && DW == D && (G == 8 || G == 4) && (W == 16 || W == 8);
    // Queries read from L1 against each key vector held in a register (float or widened rows in
    // order, with 32 registers), where they do not fit in registers. With Unroll, the G rows of
    // those and of Split rows are unrolled (below), so that g++ keeps their sums in registers: in
    // a loop over the rows it kept them on the stack, storing each after every vector (Split:
    // every 2W elements; an Intel Xeon VM, 4 queries over 1024 bf16 keys in L2, 24 -> 18 µs).
    constexpr bool from_l1 = !pairs && !Split && !q_regs && is_batch<B> && vector_registers<> >= 32;
    constexpr bool unrolled = Unroll && (from_l1 || Split) && vector_registers<> >= 32;
    // Rows from cache (Ahead > 0: the stage reads L2 or L3, not a stream from DRAM) and queries
    // from L1 take the G rows a vector of d at a time, each query vector loaded once for the G keys
    // and the G x NQ chains of FMAs side by side: one row after another, the loads of the queries
    // and the FMAs' latency held the stage at about 37 % of the FMA peak (Zen 5, 8 x 4 heads over
    // 1000 keys in L3: 144-148 -> 125-127 µs with g++, 185-202 -> 164-168 with clang++). From DRAM
    // the rows stay whole, one after another (interleaved, 8 x 4 heads over 8000 keys took 1.1x as long).
    constexpr bool interleaved = from_l1 && Unroll && Ahead > 0;
    alignas(64) V part[NQ][W];
    B h[NQ][W / G];  // each group's G sums in lanes 0 .. G-1
    B qr[q_regs ? NQ : 1][q_regs ? QV : 1];  // bf16 queries: their pairs' bits
    if constexpr (q_regs)
        for (std::size_t i = 0; i < NQ; ++i)
            for (std::size_t d = 0; d < QV; ++d) {
                if constexpr (pairs) qr[i][d] = bits_as<B>(q + i * D + d * QW);
                else qr[i][d] = B::load_unaligned(q + i * D + d * W);
            }
    for (std::size_t g = 0; g < W; g += G) {
        B acc[NQ][G];
        for (auto& row : acc)
            for (auto& a : row) a = B(V(0));
        auto row = [&](std::size_t r) __attribute__((always_inline)) {  // row g + r's products into acc[.][r]
            if constexpr (pairs) {
#if defined(__AVX512F__) && defined(__AVX512BF16__)
                for (std::size_t d = 0; d < D; d += QW) {
                    const bf16_pairs kp = load_pairs(k + (g + r) * ldk + d);
                    for (std::size_t i = 0; i < NQ; ++i) {
                        if constexpr (q_regs) acc[i][r] = dot_pairs(acc[i][r], as_pairs(qr[i][d / QW]), kp);
                        else acc[i][r] = dot_pairs(acc[i][r], load_pairs(q + i * D + d), kp);
                    }
                }
#endif
            } else if constexpr (Split) {
                static_assert(split_keys<B, T, D>, "attend internal: dot_block: Split needs bf16 rows of whole 2W vectors");
                // 2W elements of k from d as its even and odd lanes; q split the same way: its even
                // values of this stretch at d/2, its odd ones at D/2 + d/2.
                for (std::size_t d = 0; d < D; d += 2 * W) {
                    B ke, ko;
                    widen_even_odd<true>(k + (g + r) * ldk + d, ke, ko);
                    for (std::size_t i = 0; i < NQ; ++i) {
                        const std::size_t e = d / 2, o = D / 2 + d / 2;
                        if constexpr (q_regs) {
                            acc[i][r] = simd::fma(qr[i][e / W], ke, acc[i][r]);
                            acc[i][r] = simd::fma(qr[i][o / W], ko, acc[i][r]);
                        } else {
                            acc[i][r] = simd::fma(B::load_unaligned(q + i * D + e), ke, acc[i][r]);
                            acc[i][r] = simd::fma(B::load_unaligned(q + i * D + o), ko, acc[i][r]);
                        }
                    }
                }
            } else {
                // (the queries' address laundered for each key, or g++ hoists all of them into
                // registers and keeps the sums on the stack)
                const F* qk = q;
                if constexpr (unrolled) asm("" : "+r"(qk));
                for (std::size_t d = 0; d < DW; d += W) {
                    B kv = load<B>(k + (g + r) * ldk + d);  // T: F, or 16-bit widened
                    // (queries from L1: one load of the key vector, not one folded into each FMA,
                    // which from DRAM left four loads of a missing line in the load queue; measured
                    // with 32 registers only)
                    if constexpr (from_l1) in_register(kv.data);
                    for (std::size_t i = 0; i < NQ; ++i) {
                        if constexpr (q_regs) acc[i][r] = simd::fma(qr[i][d / W], kv, acc[i][r]);
                        else acc[i][r] = simd::fma(B::load_unaligned(qk + i * D + d), kv, acc[i][r]);
                    }
                }
            }
            keep_memory_order();  // row g + r read whole before the next
            after_row(g + r);
        };
        if constexpr (interleaved) {
            // (each query vector loaded once for the G keys; the rows' chains side by side)
            for (std::size_t d = 0; d < DW; d += W) {
                B kv[G];
                for (std::size_t r = 0; r < G; ++r) {
                    kv[r] = load<B>(k + (g + r) * ldk + d);
                    in_register(kv[r].data);
                }
                for (std::size_t i = 0; i < NQ; ++i) {
                    B qv = B::load_unaligned(q + i * D + d);
                    in_register(qv.data);
                    for (std::size_t r = 0; r < G; ++r) acc[i][r] = simd::fma(qv, kv[r], acc[i][r]);
                }
            }
            for (std::size_t r = 0; r < G; ++r) after_row(g + r);
        } else if constexpr (unrolled) {
            // (the sums in registers and the rows' chains of FMAs side by side, where g++ kept a
            // loop over the rows with the sums on the stack, storing them after every vector:
            // Zen 5, 8 x 4 heads over 1000 keys in L3, 137 -> 129 µs, but 1.2x slower from DRAM
            // where the scores stage requests rows ahead; decode_scores and scores_unrolled choose)
#pragma GCC unroll 16
            for (std::size_t r = 0; r < G; ++r) row(r);
        } else {
            for (std::size_t r = 0; r < G; ++r) row(r);
        }
        for (std::size_t i = 0; i < NQ; ++i) {
            if constexpr (tree) {
                decltype(acc[i][0].data) r[G];
                for (std::size_t u = 0; u < G; ++u) r[u] = acc[i][u];
                if constexpr (G == 8) h[i][g / G] = reduce_add_8(r);
                else h[i][g / G] = reduce_add_4(r);
            } else {
                reduce_add_each(acc[i], part[i] + g);
                for (std::size_t r = 0; r < G; ++r)
                    for (std::size_t d = DW; d < D; ++d) part[i][g + r] += q[i * D + d] * load<F>(k + (g + r) * ldk + d);
            }
        }
    }
    for (std::size_t i = 0; i < NQ; ++i) {
        if constexpr (!tree) {
            s[i] = B::load_aligned(part[i]);
        } else if constexpr (W == G) {
            s[i] = h[i][0];
        } else if constexpr (W == 16 && G == 8) {
#if defined(__AVX512F__)
            s[i] = _mm512_shuffle_f32x4(h[i][0], h[i][1], 0x44);
#endif
        } else if constexpr (W == 16) {  // four groups of 4
#if defined(__AVX512F__)
            const __m512 a = _mm512_shuffle_f32x4(h[i][0], h[i][1], 0x00), b = _mm512_shuffle_f32x4(h[i][2], h[i][3], 0x00);
            s[i] = _mm512_shuffle_f32x4(a, b, 0x88);
#endif
        } else {  // W == 8: two groups of 4
#if defined(__AVX__)
            s[i] = _mm256_permute2f128_ps(h[i][0], h[i][1], 0x20);
#endif
        }
    }
}

// dst[c * LDD + r] = src[r * LDS + c] for r < Rows, c < Cols. Float goes through 8 x 8 blocks in
// ymm registers where AVX is on (also on AVX-512 targets): the attention nest transposes each
// query tile in and out, and element-wise that costs as much as the tile's work at 16 x 16.
template <std::size_t Rows, std::size_t Cols, std::size_t LDS, std::size_t LDD, class F>
inline void transpose(const F* src, F* dst) noexcept {
#if defined(__AVX__)
    constexpr bool blocks = std::is_same_v<F, float>;
#else
    constexpr bool blocks = false;
#endif
    // Rows and columns covered by whole 8 x 8 blocks; the rest element by element. (All bounds
    // are compile-time: g++ -O3 reports false -Waggressive-loop-optimizations on tail loops whose
    // emptiness it cannot see.)
    constexpr std::size_t RB = blocks ? Rows / 8 * 8 : 0, CB = blocks ? Cols / 8 * 8 : 0;
#if defined(__AVX__)
    if constexpr (RB > 0 && CB > 0) {
        for (std::size_t r0 = 0; r0 < RB; r0 += 8)
            for (std::size_t c0 = 0; c0 < CB; c0 += 8) {
                const float* s = src + r0 * LDS + c0;
                __m256 r[8], t[8];
                for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(s + k * LDS);
                for (int k = 0; k < 8; k += 2) {
                    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
                    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
                }
                for (int k = 0; k < 8; k += 4) {
                    r[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
                    r[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
                    r[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
                    r[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
                }
                float* d = dst + c0 * LDD + r0;
                for (int k = 0; k < 4; ++k) {
                    _mm256_storeu_ps(d + k * LDD, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
                    _mm256_storeu_ps(d + (k + 4) * LDD, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
                }
            }
    }
#endif
    if constexpr (CB < Cols)
        for (std::size_t r = 0; r < RB; ++r)
            for (std::size_t c = CB; c < Cols; ++c) dst[c * LDD + r] = src[r * LDS + c];
    if constexpr (RB < Rows)
        for (std::size_t r = RB; r < Rows; ++r)
            for (std::size_t c = 0; c < Cols; ++c) dst[c * LDD + r] = src[r * LDS + c];
}

}  // namespace simd
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
