// attend/half.hpp — the 2-byte storage types attend::bf16 and attend::f16, and their scalar
// conversions.
//
// Owns: the types (trivially copyable, two bytes, no arithmetic of their own: an expression reads
// them as float), rounding float and double to them (nearest, ties to even; NaN stays a quiet NaN
// with its sign and leading payload bits; ±inf stays; f16 overflow gives ±inf; f16 subnormals
// exact) and widening them to float (exact). Written on bit patterns only, so the results are the
// same on every target and in constant evaluation. The vector conversions are in simd_half.hpp.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace attend {

namespace half_bits {

// float -> bf16 bits: add 0x7FFF plus the lowest kept bit, keep the upper half (ties to even;
// carries reach the exponent, so FLT_MAX and up round to inf). A NaN keeps its upper half with
// the quiet bit set (truncating could otherwise leave an infinity).
constexpr std::uint16_t from_float_bf16(float x) noexcept {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
    return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// float -> f16 bits, class by class on the magnitude a.
constexpr std::uint16_t from_float_f16(float x) noexcept {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    std::uint32_t h;
    if (a > 0x7F800000u) {  // NaN: quiet, leading payload bits kept
        h = 0x7E00u | ((a >> 13) & 0x3FFu);
    } else if (a >= 0x477FF000u) {  // 65520 and up (the tie above 65504 goes to even: inf), inf
        h = 0x7C00u;
    } else if (a >= 0x38800000u) {  // normal f16 (from 2^-14): rebias, round 13 bits to even
        h = ((a - 0x38000000u) + 0xFFFu + ((a >> 13) & 1u)) >> 13;
    } else if (a < 0x33000000u) {  // below 2^-25: rounds to 0 (exactly 2^-25 is a tie, to even 0)
        h = 0;
    } else {  // subnormal f16: the 24-bit significand shifted right by 14..24 bits, to even
        const std::uint32_t m = (a & 0x7FFFFFu) | 0x800000u, s = 126u - (a >> 23);
        const std::uint32_t q = m >> s, rest = m & ((1u << s) - 1u), half = 1u << (s - 1u);
        h = q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u);  // 0x400 is the least normal
    }
    return static_cast<std::uint16_t>(sign | h);
}

constexpr float to_float_bf16(std::uint16_t b) noexcept {
    return std::bit_cast<float>(std::uint32_t{b} << 16);
}

constexpr float to_float_f16(std::uint16_t h) noexcept {
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u));  // inf; NaN quiet
    if (e != 0) return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
    const float sub = static_cast<float>(m) * 0x1p-24f;  // subnormal or zero: exact
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(sub));
}

// double (or long double) -> float rounded to odd (truncate, then set the last bit if anything
// was dropped). With 24 bits against bf16's 8 and f16's 11, rounding that to nearest even gives
// the source's correctly rounded value: no double rounding. (Every float is exact in D, so the
// comparisons are.)
template <class D>
constexpr float to_odd_float(D d) noexcept {
    const float f = static_cast<float>(d);
    const D back = f;
    if (back == d || d != d) return f;
    std::uint32_t b = std::bit_cast<std::uint32_t>(f);
    if ((back < 0 ? -back : back) > (d < 0 ? -d : d)) b -= 1;  // one step toward zero
    return std::bit_cast<float>(b | 1u);
}

// An integer -> float rounded to odd, on its bits (a 64-bit integer may not pass through double
// exactly): its leading 24 bits, the last one set if any bit below them is.
template <class I>
constexpr float integer_to_odd_float(I x) noexcept {
    using U = std::make_unsigned_t<I>;
    bool negative = false;
    if constexpr (std::is_signed_v<I>) negative = x < 0;
    const U u = negative ? static_cast<U>(U(0) - static_cast<U>(x)) : static_cast<U>(x);
    const int drop = std::bit_width(u) > 24 ? std::bit_width(u) - 24 : 0;
    U kept = u >> drop;
    if (drop > 0 && (u & ((U(1) << drop) - 1)) != 0) kept |= 1;
    const float scale = std::bit_cast<float>(static_cast<std::uint32_t>(127 + drop) << 23);  // 2^drop, exact
    const float f = static_cast<float>(kept) * scale;  // kept < 2^24: exact, and so is the product
    return negative ? -f : f;
}

template <class T>
constexpr float narrowing_source(T x) noexcept {
    if constexpr (std::is_same_v<T, float>) return x;
    else if constexpr (std::is_same_v<T, bool>) return x ? 1.0f : 0.0f;
    else if constexpr (std::is_integral_v<T>) return integer_to_odd_float(x);
    else return to_odd_float(x);
}

// A widened value converted to T as cast<T> converts a float: an integer type takes it toward
// zero, saturated at T's range, NaN giving 0 (a static_cast of an out-of-range float is
// undefined); a floating type or bool takes it as is.
template <class T>
constexpr T widened_to(float f) noexcept {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bool>) {
        return static_cast<T>(f);
    } else {
        if (f != f) return T(0);
        if (f <= static_cast<float>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
        if (f >= static_cast<float>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();  // (max rounds up in float)
        return static_cast<T>(f);
    }
}

}  // namespace half_bits

// bfloat16: float's sign and exponent, 7 stored significand bits.
class bf16 {
public:
    bf16() = default;  // value-initialised (tensor's storage): +0
    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr explicit bf16(T x) noexcept : bits_(half_bits::from_float_bf16(half_bits::narrowing_source(x))) {}
    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr explicit operator T() const noexcept {  // through float, which holds every value exactly
        return half_bits::widened_to<T>(half_bits::to_float_bf16(bits_));
    }
    static constexpr bf16 from_bits(std::uint16_t b) noexcept {
        bf16 r;
        r.bits_ = b;
        return r;
    }
    constexpr std::uint16_t to_bits() const noexcept { return bits_; }

private:
    std::uint16_t bits_;
};

// IEEE binary16: 5 exponent bits, 10 stored significand bits, largest finite 65504.
class f16 {
public:
    f16() = default;
    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr explicit f16(T x) noexcept : bits_(half_bits::from_float_f16(half_bits::narrowing_source(x))) {}
    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr explicit operator T() const noexcept {  // through float, which holds every value exactly
        return half_bits::widened_to<T>(half_bits::to_float_f16(bits_));
    }
    static constexpr f16 from_bits(std::uint16_t b) noexcept {
        f16 r;
        r.bits_ = b;
        return r;
    }
    constexpr std::uint16_t to_bits() const noexcept { return bits_; }

private:
    std::uint16_t bits_;
};

static_assert(sizeof(bf16) == 2 && std::is_trivially_copyable_v<bf16> && sizeof(f16) == 2 &&
              std::is_trivially_copyable_v<f16>);

// The 16-bit storage types: read as float, written through a rounding cast.
template <class T>
inline constexpr bool is_half = std::is_same_v<std::remove_cv_t<T>, bf16> || std::is_same_v<std::remove_cv_t<T>, f16>;

}  // namespace attend
