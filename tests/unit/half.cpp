// bf16 and f16: conversions bit for bit (scalar, this target's vector path and the portable bit
// path) against a reference rounding written from first principles in double arithmetic, and
// every plan with 16-bit operands or destinations against a double reference of the same rounded
// inputs.
#include <attend/attend.hpp>
#include <attend/nn.hpp>
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "reference.hpp"

namespace {

using attend::bf16;
using attend::f16;
using attend::tensor;
using B = attend::simd::batch<float>;
using Arch = B::arch_type;

template <class H>
struct format;
template <>
struct format<bf16> {
    static constexpr int precision = 8, emin = -126, emax = 127;  // significand bits with the leading one
};
template <>
struct format<f16> {
    static constexpr int precision = 11, emin = -14, emax = 15;
};

// x rounded to nearest even in format H, as a double (±inf past the largest finite value):
// the quantum of x's binade (or of the subnormal range) by frexp, and nearbyint of the quotient.
template <class H>
double reference_round(float x) {
    using F = format<H>;
    const double d = x;
    if (!std::isfinite(d) || d == 0) return d;
    int e;
    std::frexp(d, &e);  // |d| in [2^(e-1), 2^e)
    const double quantum = std::ldexp(1.0, std::max(e - 1, F::emin) - F::precision + 1);
    const double r = std::nearbyint(d / quantum) * quantum;  // the default rounding mode: ties to even
    const double largest = std::ldexp(2.0 - std::ldexp(1.0, 1 - F::precision), F::emax);
    return std::abs(r) > largest ? std::copysign(INFINITY, d) : r;
}

// The value of a 16-bit pattern, from its fields in double arithmetic.
template <class H>
double reference_value(std::uint16_t bits) {
    using F = format<H>;
    constexpr int mbits = F::precision - 1, ebits = 15 - mbits, bias = F::emax;
    const int e = (bits >> mbits) & ((1 << ebits) - 1);
    const int m = bits & ((1 << mbits) - 1);
    const double sign = (bits & 0x8000) ? -1.0 : 1.0;
    if (e == (1 << ebits) - 1) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * std::ldexp(m, F::emin - mbits);
    return sign * std::ldexp(1.0 + std::ldexp(m, -mbits), e - bias);
}

template <class H>
bool quiet_nan_bits(std::uint16_t bits) {
    constexpr std::uint16_t quiet = std::is_same_v<H, bf16> ? 0x0040 : 0x0200;
    return std::isnan(reference_value<H>(bits)) && (bits & quiet);
}

std::uint32_t bits_of(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Checks one rounding result against the reference; returns whether it matched.
template <class H>
bool rounds_right(float x, std::uint16_t got) {
    if (std::isnan(x)) return quiet_nan_bits<H>(got) && (got >> 15) == (bits_of(x) >> 31);
    const double want = reference_round<H>(x), value = reference_value<H>(got);
    return value == want && std::signbit(value) == std::signbit(want);
}

// Narrowing n float patterns through the three paths; the count of mismatches per path.
template <class H>
std::array<std::size_t, 3> narrow_mismatches(const std::vector<std::uint32_t>& patterns) {
    std::array<std::size_t, 3> bad{};
    constexpr std::size_t W = B::size;
    alignas(64) float in[W];
    alignas(64) H vec[W], port[W];
    for (std::size_t i = 0; i + W <= patterns.size(); i += W) {
        for (std::size_t l = 0; l < W; ++l) in[l] = float_of(patterns[i + l]);
        const B x = B::load_aligned(in);
        attend::simd::store(vec, x);
        attend::simd::portable::narrow<Arch>(port, x);
        for (std::size_t l = 0; l < W; ++l) {
            const std::uint16_t paths[3] = {H(in[l]).to_bits(), vec[l].to_bits(), port[l].to_bits()};
            for (int k = 0; k < 3; ++k)
                if (!rounds_right<H>(in[l], paths[k]) && bad[k]++ < 3)
                    BOOST_ERROR("path " << k << " rounds " << std::hex << patterns[i + l] << " to " << paths[k]);
        }
    }
    return bad;
}

// Float patterns: every class and its neighbourhood, then a large pseudo-random sample.
std::vector<std::uint32_t> float_patterns() {
    std::vector<std::uint32_t> p;
    const std::uint32_t centres[] = {0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x33000000, 0x33800000, 0x387FE000,
                                     0x38800000, 0x3F800000, 0x3F808000, 0x3F818000, 0x3F801000, 0x3F803000, 0x477FE000,
                                     0x477FF000, 0x47800000, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000,
                                     0x7FFFFFFF, 0x4B7FFF80, 0x3F7FFF80};
    for (std::uint32_t c : centres)
        for (std::uint32_t sign : {0u, 0x80000000u})
            for (std::uint32_t d = 0; d < 4096; ++d) p.push_back(sign | ((c + d - 2048) & 0x7FFFFFFF));
    std::uint32_t s = 12345;
    for (int i = 0; i < (1 << 20); ++i) {
        s = s * 1664525u + 1013904223u;
        p.push_back(s);
    }
    // Every f16 subnormal and the top of the f16 range, densely.
    for (std::uint32_t u = 0x33000000; u < 0x38900000; u += 37) p.push_back(u);
    for (std::uint32_t u = 0x477F0000; u < 0x47810000; ++u) p.push_back(u);
    while (p.size() % B::size) p.push_back(0);
    return p;
}

using half_types = boost::mpl::list<bf16, f16>;

}  // namespace

BOOST_AUTO_TEST_SUITE(half)

BOOST_AUTO_TEST_CASE(storage_types) {
    static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2);
    static_assert(std::is_trivially_copyable_v<bf16> && std::is_trivially_copyable_v<f16>);
    static_assert(bf16(1.0f).to_bits() == 0x3F80 && f16(1.0f).to_bits() == 0x3C00);  // constexpr
    static_assert(static_cast<float>(f16::from_bits(0x0001)) == 0x1p-24f);
    tensor<bf16, 3> z;
    BOOST_TEST(z(0).to_bits() == 0);  // value-initialised
    tensor<f16, 3> init{1.5f, -2, 0.1};  // braced values round like f16(x)
    BOOST_TEST(init(1).to_bits() == 0xC000);
    BOOST_TEST(init(2).to_bits() == f16(0.1).to_bits());
    z = 1.25;  // a scalar is weak: it takes the destination's type
    BOOST_TEST(z(2).to_bits() == bf16(1.25f).to_bits());
    BOOST_TEST(!std::string(attend::simd::half_conversion_name).empty());
    BOOST_TEST(float(bf16(2.5f)) == 2.5f);
    BOOST_TEST(f16(-0.1).to_bits() == 0xAE66);  // NumPy: np.float64(-0.1).astype(np.float16)
    BOOST_TEST(static_cast<double>(f16::from_bits(0xAE66)) == -0.0999755859375);
    BOOST_TEST(static_cast<int>(bf16(-3.0f)) == -3);
    // to an integer type as cast<T> converts a float (a static_cast of 1e10 into int is undefined)
    static_assert(static_cast<int>(bf16(1e10f)) == std::numeric_limits<int>::max());
    BOOST_TEST(static_cast<int>(bf16(-1e10f)) == std::numeric_limits<int>::min());
    BOOST_TEST(int(static_cast<unsigned char>(f16(-1.f))) == 0);
    BOOST_TEST(int(static_cast<unsigned char>(f16(300.f))) == 255);
    BOOST_TEST(int(static_cast<signed char>(bf16(-2.75f))) == -2);
    BOOST_TEST(static_cast<std::int64_t>(f16::from_bits(0x7E00)) == 0);  // NaN
    BOOST_TEST(static_cast<std::uint64_t>(bf16::from_bits(0x7F80)) == std::numeric_limits<std::uint64_t>::max());  // inf
    BOOST_TEST(static_cast<bool>(f16(0.25f)));
}

// f16 expectations from NumPy 1.24.2: np.float32(x).astype(np.float16).view(np.uint16); bf16 ones
// by hand from the float's bits (upper half, rounded to even).
BOOST_AUTO_TEST_CASE(literal_expectations) {
    struct row {
        std::uint32_t in;
        std::uint16_t f16_bits;
    };
    const row numpy[] = {
        {0x3f800000, 0x3c00}, {0xbf800000, 0xbc00}, {0x00000000, 0x0000}, {0x80000000, 0x8000}, {0x7f800000, 0x7c00},
        {0xff800000, 0xfc00}, {0x477fe000, 0x7bff},  // 65504
        {0x477feffd, 0x7bff},                        // 65519.988
        {0x477ff000, 0x7c00},                        // 65520
        {0x47800000, 0x7c00}, {0x47c35000, 0x7c00}, {0xc788b800, 0xfc00}, {0x38800000, 0x0400}, {0x33800000, 0x0001},
        {0x33000000, 0x0000},  // 2^-25: the tie goes to even 0
        {0x33400000, 0x0001}, {0x33c00000, 0x0002}, {0x33000001, 0x0001}, {0x3380d959, 0x0001}, {0x337ffae5, 0x0001},
        {0x2edbe6ff, 0x0000}, {0x3dcccccd, 0x2e66}, {0x3eaaaaab, 0x3555}, {0x44ffe000, 0x67ff}, {0x45001000, 0x6800},
        {0x45003000, 0x6802}, {0x45800800, 0x6c00}, {0x3f801000, 0x3c00}, {0x3f803000, 0x3c02},
        {0x44ffffff, 0x6800},  // into the next binade
        {0x3900f990, 0x0808}, {0xc0490fd0, 0xc248}, {0x3727c5ac, 0x00a8},
        {0x387fda40, 0x03ff}, {0x387fc000, 0x03ff}, {0x3f7ff000, 0x3c00}};
    for (const row& r : numpy) BOOST_TEST(f16(float_of(r.in)).to_bits() == r.f16_bits, std::hex << r.in);

    const std::pair<std::uint32_t, std::uint16_t> by_hand[] = {
        {0x3F808000, 0x3F80},  // tie, lower even: stays
        {0x3F818000, 0x3F82},  // tie, lower odd: up
        {0x3F808001, 0x3F81},  // just above the tie
        {0x3F7FFFFF, 0x3F80},  // into the next binade
        {0x7F7FFFFF, 0x7F80},  // past the largest finite bf16: inf
        {0x7F7F7FFF, 0x7F7F},  // largest finite
        {0x00000001, 0x0000},  // float denormals: bf16 denormals, rounded
        {0x00008000, 0x0000},  // tie to even 0
        {0x00018000, 0x0002},  // tie to even 2
        {0x807FFFFF, 0x8080},  // largest denormal rounds up to the least normal, sign kept
        {0xFF800000, 0xFF80}, {0x80000000, 0x8000}, {0x7FC00000, 0x7FC0},
        {0xFF800001, 0xFFC0},  // a signalling NaN comes back quiet, sign kept
    };
    for (auto [in, want] : by_hand) BOOST_TEST(bf16(float_of(in)).to_bits() == want, std::hex << in);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(widen_every_pattern, H, half_types) {
    constexpr std::size_t W = B::size;
    std::size_t bad = 0;
    for (std::uint32_t h0 = 0; h0 < 65536; h0 += W) {
        alignas(64) H in[W];
        for (std::size_t l = 0; l < W; ++l) in[l] = H::from_bits(static_cast<std::uint16_t>(h0 + l));
        alignas(64) float vec[W], port[W];
        attend::simd::load<B>(static_cast<const H*>(in)).store_aligned(vec);
        attend::simd::portable::widen<Arch>(static_cast<const H*>(in)).store_aligned(port);
        for (std::size_t l = 0; l < W; ++l) {
            const double want = reference_value<H>(in[l].to_bits());
            for (float got : {static_cast<float>(in[l]), vec[l], port[l]}) {
                const bool ok = std::isnan(want) ? std::isnan(got) && std::signbit(got) == bool(in[l].to_bits() >> 15)
                                                 : double(got) == want && std::signbit(got) == std::signbit(want);
                if (!ok && bad++ < 5) BOOST_ERROR("widening " << std::hex << h0 + l << " gave " << got);
            }
            if (std::is_same_v<H, bf16> && (bits_of(vec[l]) != std::uint32_t(h0 + l) << 16 || bits_of(port[l]) != bits_of(vec[l])))
                ++bad;  // bf16 widens by a shift, NaN payloads included
        }
    }
    BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(narrow_sampled_patterns, H, half_types) {
    const auto bad = narrow_mismatches<H>(float_patterns());
    BOOST_TEST(bad[0] == 0u);  // scalar
    BOOST_TEST(bad[1] == 0u);  // this target's vector path
    BOOST_TEST(bad[2] == 0u);  // the portable bit path
}

// From double the rounding is direct, not through float (which would round a second time).
BOOST_AUTO_TEST_CASE(double_rounds_once) {
    const double above_tie = 1.0 + 0x1p-8 + 0x1p-40;  // as float exactly 1 + 2^-8: a tie, to even 1
    BOOST_TEST(bf16(above_tie).to_bits() == 0x3F81);
    BOOST_TEST(bf16(static_cast<float>(above_tie)).to_bits() == 0x3F80);
    BOOST_TEST(f16(1.0 + 0x1p-11 + 0x1p-40).to_bits() == 0x3C01);
    BOOST_TEST(f16(65519.999).to_bits() == 0x7BFF);
    BOOST_TEST(f16(65520.0).to_bits() == 0x7C00);
    BOOST_TEST(bf16(-0.0).to_bits() == 0x8000);
    BOOST_TEST(bf16(3).to_bits() == 0x4040);  // integers too
    // cast<> of a double expression rounds once too, in the vector body and the scalar tail
    tensor<double, 17> d;
    for (std::size_t i = 0; i < 17; ++i) d(i) = i % 2 ? 65519.999 : above_tie;
    const tensor<bf16, 17> b = attend::cast<bf16>(d * 1.0);
    const tensor<f16, 17> h = attend::cast<f16>(d);
    for (std::size_t i = 0; i < 17; ++i) {
        BOOST_TEST(b(i).to_bits() == bf16(d(i)).to_bits(), "element " << i);
        BOOST_TEST(h(i).to_bits() == f16(d(i)).to_bits(), "element " << i);
    }
    BOOST_TEST(h(1).to_bits() == 0x7BFF);
    BOOST_TEST(b(0).to_bits() == 0x3F81);
}

// 64-bit integers and long double round once too (through double they would round twice), and a
// 16-bit tensor takes braced values of its own type.
BOOST_AUTO_TEST_CASE(wide_sources_round_once) {
    const std::int64_t i = (std::int64_t{1} << 62) + (std::int64_t{1} << 54) + 1;  // just above a tie
    BOOST_TEST(bf16(i).to_bits() == 0x5E81);
    BOOST_TEST(bf16(-i).to_bits() == 0xDE81);
    BOOST_TEST(bf16((std::uint64_t{1} << 63) + (std::uint64_t{1} << 55) + 1).to_bits() == 0x5F01);
    BOOST_TEST(bf16(~std::uint64_t(0)).to_bits() == 0x5F80);                      // 2^64 - 1 rounds up to 2^64
    BOOST_TEST(bf16(std::numeric_limits<std::int64_t>::min()).to_bits() == 0xDF00);  // -2^63 exactly
    BOOST_TEST(f16(std::int64_t{65519}).to_bits() == 0x7BFF);
    BOOST_TEST(f16(std::int64_t{65520}).to_bits() == 0x7C00);
    BOOST_TEST(bf16(true).to_bits() == 0x3F80);
    BOOST_TEST(bf16(std::uint8_t{255}).to_bits() == 0x437F);
    const long double l = 1.0L + 0x1p-8L + 0x1p-60L;
    if (std::numeric_limits<long double>::digits > 60) {  // (where long double holds it)
        BOOST_TEST(bf16(l).to_bits() == 0x3F81);
        BOOST_TEST(f16(1.0L + 0x1p-11L + 0x1p-60L).to_bits() == 0x3C01);
    }
    const tensor<bf16, 2> b{bf16(1.0f), bf16(2.5f)};
    BOOST_TEST(float(b(1)) == 2.5f);
}

// ---- expressions ---------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(element_types) {
    tensor<bf16, 4> h;
    tensor<f16, 4> g;
    tensor<float, 4> f;
    static_assert(std::is_same_v<attend::element_t<decltype(h * 2)>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(h + g)>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(h * f)>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(exp(h))>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(attend::cast<bf16>(f))>, bf16>);
    static_assert(std::is_same_v<attend::element_t<decltype(attend::cast<bf16>(f) + 1)>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(attend::sum(h))>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(attend::softmax(h))>, float>);
    static_assert(std::is_same_v<attend::element_t<decltype(attend::cast<double>(h))>, double>);
    // Kernels never read 16-bit memory as float in place: they pack (convert) it.
    static_assert(!attend::detail::in_place<attend::operand_t<tensor<bf16, 4>&>, float, 0>);
    static_assert(!attend::detail::in_place<attend::operand_t<tensor<f16, 4>&>, float, 0>);
    // Views over 16-bit memory read the same way.
    ref::fill(h, 71);
    const attend::tensor_ref<const bf16, 2, 2> r(h.data());
    f = attend::reshape<4>(r * 2);
    for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(f(i) == 2.0f * static_cast<float>(h(i)));
}

BOOST_AUTO_TEST_CASE(mixed_trees_broadcasting) {
    tensor<bf16, 5, 37> a;
    tensor<float, 37> b;
    tensor<f16, 5, 1> c;
    ref::fill(a, 1);
    ref::fill(b, 2);
    ref::fill(c, 3);
    tensor<float, 5, 37> out = a * b + c - exp(a) / (c * c + 1.0f);
    ref::expect_all(out, [&](const ref::index& i) {
        const double x = ref::at(a, i), y = ref::at(b, i), z = ref::at(c, i);
        return x * y + z - std::exp(x) / (z * z + 1.0);
    }, 1e-5);
    // A bf16 tensor assigned to float is exact; cast<float> too.
    tensor<float, 5, 37> wide = a, wide2 = attend::cast<float>(a);
    for (std::size_t i = 0; i < wide.size; ++i) {
        BOOST_TEST(bits_of(wide.data()[i]) == std::uint32_t(a.data()[i].to_bits()) << 16);
        BOOST_TEST(bits_of(wide2.data()[i]) == bits_of(wide.data()[i]));
    }
    // A double tree reads bf16 through cast<double> (exact).
    tensor<double, 5, 37> d = attend::cast<double>(a) * 2.0;
    BOOST_TEST(d(4, 36) == 2.0 * static_cast<double>(a(4, 36)));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(cast_rounds_to_nearest_even, H, half_types) {
    tensor<float, 1027> x;  // whole vectors and a tail
    ref::fill(x, 5, -70000.0, 70000.0);
    x(0) = 65520.0f;
    x(1) = 65519.99f;
    x(2) = std::numeric_limits<float>::quiet_NaN();
    x(3) = -INFINITY;
    x(4) = 1e-7f;
    x(1026) = 3e-8f;
    tensor<H, 1027> h = attend::cast<H>(x);                            // a 16-bit destination
    tensor<float, 1027> back = attend::cast<float>(attend::cast<H>(x));  // rounding inside a float tree
    for (std::size_t i = 0; i < x.size; ++i) {
        BOOST_TEST(rounds_right<H>(x(i), h(i).to_bits()), i);
        BOOST_TEST(bits_of(back(i)) == bits_of(static_cast<float>(h(i))), i);
    }
}

BOOST_AUTO_TEST_CASE(destination_on_the_right_side) {
    tensor<bf16, 9, 9> h, t;
    ref::fill(h, 11);
    const tensor<bf16, 9, 9> h0 = h;
    h = attend::cast<bf16>(h * 2 + 1);
    for (std::size_t i = 0; i < h.size; ++i)
        BOOST_TEST(h.data()[i].to_bits() == bf16(static_cast<float>(h0.data()[i]) * 2.0f + 1.0f).to_bits());
    // Reading the destination transposed: every element depends on another one.
    t = h;
    h = attend::cast<bf16>(attend::transpose(h) - h);
    for (std::size_t i = 0; i < 9; ++i)
        for (std::size_t j = 0; j < 9; ++j)
            BOOST_TEST(h(i, j).to_bits() == bf16(static_cast<float>(t(j, i)) - static_cast<float>(t(i, j))).to_bits());
    // Writing columns 2..5 (a strided destination) from rows 2..5 read through a transpose.
    t = h;
    attend::slice<1, 4>(h, 2) = attend::cast<bf16>(attend::slice<1, 4>(attend::transpose(h), 2) * 3);
    for (std::size_t i = 0; i < 9; ++i)
        for (std::size_t j = 0; j < 9; ++j) {
            const bf16 want = (j >= 2 && j < 6) ? bf16(static_cast<float>(t(j, i)) * 3.0f) : t(i, j);
            BOOST_TEST(h(i, j).to_bits() == want.to_bits());
        }
}

// Views over one bf16 buffer, shifted by one element (two bytes) either way: the overlap test
// measures address ranges in the leaves' own element size.
BOOST_AUTO_TEST_CASE(shifted_views_of_the_destination) {
    for (int shift : {-1, 1, 0}) {
        tensor<bf16, 40> buf;
        ref::fill(buf, 91);
        const tensor<bf16, 40> before = buf;
        attend::tensor_ref<bf16, 4, 8> dst(buf.data() + 4);
        const attend::tensor_ref<const bf16, 4, 8> src(buf.data() + 4 + shift);
        dst = attend::cast<bf16>(src * 2 + attend::transpose(attend::reshape<8, 4>(src)) * 0);
        for (std::size_t i = 0; i < 32; ++i)
            BOOST_TEST(buf(4 + i).to_bits() == bf16(static_cast<float>(before(4 + i + shift)) * 2.0f).to_bits(), shift << " " << i);
    }
}

// The destination read during a contraction (a temporary) and in step (in place): bit for bit
// the result of evaluating into a fresh tensor.
BOOST_AUTO_TEST_CASE(destination_inside_matmul) {
    tensor<bf16, 8, 40> m;
    tensor<bf16, 40, 40> w;
    ref::fill(m, 51);
    ref::fill(w, 52, -0.3, 0.3);
    const tensor<bf16, 8, 40> m0 = m;
    const tensor<bf16, 8, 40> fresh = attend::cast<bf16>(attend::matmul(m0, w) + m0);
    m = attend::cast<bf16>(attend::matmul(m, w) + m);
    for (std::size_t i = 0; i < m.size; ++i) BOOST_TEST(m.data()[i].to_bits() == fresh.data()[i].to_bits());
    tensor<bf16, 40, 40> sq = w;
    const tensor<bf16, 40, 40> sq2 = attend::cast<bf16>(attend::matmul(w, w));
    sq = attend::cast<bf16>(attend::matmul(sq, sq));
    for (std::size_t i = 0; i < sq.size; ++i) BOOST_TEST(sq.data()[i].to_bits() == sq2.data()[i].to_bits());
}

BOOST_AUTO_TEST_CASE(reductions_and_softmax) {
    tensor<bf16, 6, 45> a;
    ref::fill(a, 21, -4.0, 4.0);
    tensor<float, 6, 1> s = attend::sum(a), m = attend::max(a);
    tensor<float, 1, 45> s0 = attend::sum<0>(a);
    tensor<float, 6, 45> p = attend::softmax(a);
    tensor<f16, 6, 45> p16 = attend::cast<f16>(attend::softmax(a));  // rounded once, from float
    for (std::size_t i = 0; i < 6; ++i) {
        double sum = 0, mx = -INFINITY, z = 0;
        for (std::size_t j = 0; j < 45; ++j) {
            const double v = static_cast<double>(a(i, j));
            sum += v;
            mx = std::max(mx, v);
        }
        for (std::size_t j = 0; j < 45; ++j) z += std::exp(static_cast<double>(a(i, j)) - mx);
        BOOST_TEST(ref::close(s(i, 0), sum, 1e-5));
        BOOST_TEST(m(i, 0) == mx);
        for (std::size_t j = 0; j < 45; ++j) {
            const double want = std::exp(static_cast<double>(a(i, j)) - mx) / z;
            BOOST_TEST(ref::close(p(i, j), want, 1e-6));
            BOOST_TEST(p16(i, j).to_bits() == f16(p(i, j)).to_bits());
        }
    }
    for (std::size_t j = 0; j < 45; ++j) {
        double sum = 0;
        for (std::size_t i = 0; i < 6; ++i) sum += static_cast<double>(a(i, j));
        BOOST_TEST(ref::close(s0(0, j), sum, 1e-5));
    }
}

namespace {
// The double product of two matrices of any element types (the rounded inputs).
template <class X, class Y>
double dot_at(const X& x, const Y& y, std::size_t b, std::size_t i, std::size_t j, std::size_t K) {
    double acc = 0;
    for (std::size_t k = 0; k < K; ++k) acc += ref::at(x, {b, i, k}) * ref::at(y, {b, k, j});
    return acc;
}
}  // namespace

BOOST_AUTO_TEST_CASE(matmul_small_and_over_k_blocks) {
    auto a = std::make_unique<tensor<bf16, 2, 7, 33>>();
    auto b = std::make_unique<tensor<f16, 2, 33, 20>>();
    ref::fill(*a, 31);
    ref::fill(*b, 32);
    tensor<float, 2, 7, 20> c = attend::matmul(*a, *b);
    ref::expect_all(c, [&](const ref::index& i) { return dot_at(*a, *b, i[0], i[1], i[2], 33); }, 1e-5);

    // K = 1100 spans several k blocks (256 with 32 registers, 512 with 16); a 16-bit destination.
    auto x = std::make_unique<tensor<bf16, 1, 20, 1100>>();
    auto y = std::make_unique<tensor<bf16, 1, 1100, 40>>();
    ref::fill(*x, 33);
    ref::fill(*y, 34);
    auto z = std::make_unique<tensor<float, 1, 20, 40>>();
    auto zh = std::make_unique<tensor<bf16, 1, 20, 40>>();
    *z = attend::matmul(*x, *y) + 1.0f;
    *zh = attend::cast<bf16>(attend::matmul(*x, *y) + 1.0f);
    ref::expect_all(*z, [&](const ref::index& i) { return dot_at(*x, *y, i[0], i[1], i[2], 1100) + 1.0; }, 2e-5);
    for (std::size_t i = 0; i < z->size; ++i) BOOST_TEST(zh->data()[i].to_bits() == bf16(z->data()[i]).to_bits());
    // transpose(W) of a bf16 weight: the matvec shape, x float.
    auto w = std::make_unique<tensor<bf16, 96, 256>>();
    tensor<float, 1, 256> v;
    ref::fill(*w, 35);
    ref::fill(v, 36);
    tensor<float, 1, 96> mv = attend::matmul(v, attend::transpose(*w));
    ref::expect_all(mv, [&](const ref::index& i) {
        double acc = 0;
        for (std::size_t k = 0; k < 256; ++k) acc += static_cast<double>(v(0, k)) * static_cast<double>((*w)(i[1], k));
        return acc;
    }, 1e-5);
    // transpose(W) of 16-bit weights in the contraction (20 rows): whole panels widened and block
    // transposed, a tail panel and a tail k block evaluated lane by lane.
    auto x20 = std::make_unique<tensor<float, 20, 600>>();
    auto wb = std::make_unique<tensor<bf16, 40, 600>>();
    auto wh = std::make_unique<tensor<f16, 40, 600>>();
    ref::fill(*x20, 39);
    ref::fill(*wb, 40);
    ref::fill(*wh, 41);
    auto weight_dot = [&](const auto& wt, const ref::index& i) {
        double acc = 0;
        for (std::size_t k = 0; k < 600; ++k) acc += static_cast<double>((*x20)(i[0], k)) * static_cast<double>(wt(i[1], k));
        return acc;
    };
    static_assert(attend::plan_of<decltype(attend::matmul(*x20, attend::transpose(*wb)))> == attend::plan::contraction);
    tensor<float, 20, 40> cb = attend::matmul(*x20, attend::transpose(*wb));
    ref::expect_all(cb, [&](const ref::index& i) { return weight_dot(*wb, i); }, 2e-5);
    tensor<float, 20, 40> ch = attend::matmul(*x20, attend::transpose(*wh));
    ref::expect_all(ch, [&](const ref::index& i) { return weight_dot(*wh, i); }, 2e-5);
    // K below one k block and not whole vectors (the block is all of K: its widened rows, of
    // whole vectors, once stored misaligned and crashed).
    auto short_k = [&]<std::size_t M, std::size_t K, std::size_t N, class T>() {
        auto xs = std::make_unique<tensor<float, M, K>>();
        auto ws = std::make_unique<tensor<T, N, K>>();
        ref::fill(*xs, 42);
        ref::fill(*ws, 43);
        tensor<float, M, N> c = attend::matmul(*xs, attend::transpose(*ws));
        ref::expect_all(c, [&](const ref::index& i) {
            double acc = 0;
            for (std::size_t k = 0; k < K; ++k) acc += static_cast<double>((*xs)(i[0], k)) * static_cast<double>((*ws)(i[1], k));
            return acc;
        }, 2e-5);
    };
    short_k.template operator()<20, 17, 32, bf16>();
    short_k.template operator()<3, 17, 32, bf16>();
    short_k.template operator()<20, 17, 32, f16>();
    short_k.template operator()<20, 100, 64, bf16>();
    // And a bf16 x against a float weight, residual into float.
    tensor<bf16, 1, 256> vh = attend::cast<bf16>(v);
    tensor<float, 256, 96> wf;
    ref::fill(wf, 37);
    tensor<float, 1, 96> r;
    ref::fill(r, 38);
    const tensor<float, 1, 96> r0 = r;
    r = attend::matmul(vh, wf) + r;
    ref::expect_all(r, [&](const ref::index& i) {
        double acc = r0(0, i[1]);
        for (std::size_t k = 0; k < 256; ++k) acc += static_cast<double>(vh(0, k)) * double(wf(k, i[1]));
        return acc;
    }, 1e-5);
}

// The matvec plan streams a 16-bit weight in either layout, widening as it reads: M = 1 and 3
// rows, odd K and N (vector tails), a bias and the residual fused, against double.
template <class H, std::size_t M, std::size_t K, std::size_t N>
void check_matvec_16() {
    auto x = std::make_unique<tensor<float, M, K>>();
    auto wkn = std::make_unique<tensor<H, K, N>>();
    auto wnk = std::make_unique<tensor<H, N, K>>();
    auto r = std::make_unique<tensor<float, M, N>>();
    tensor<float, N> bias;
    ref::fill(*x, 51);
    ref::fill(*wkn, 52);
    ref::fill(*wnk, 53);
    ref::fill(*r, 54);
    ref::fill(bias, 55);
    static_assert(attend::plan_of<decltype(attend::matmul(*x, *wkn))> == attend::plan::matvec);
    static_assert(attend::plan_of<decltype(attend::matmul(*x, attend::transpose(*wnk)) + *r)> == attend::plan::matvec);
    if constexpr (M == 1) {
        // With 32 registers a 16-bit weight in L2 (up to 1 MiB) is read in chunks of rows only
        // when its rows are whole (at most 24 vectors); wider ones keep column sums in registers,
        // in blocks of up to 24 vectors (one row of x). Beyond L2: 8 rows a step in chunks of 8
        // vectors.
        using G = attend::detail::matvec_tiling<float, attend::simd::default_arch, M, N>;
        constexpr std::size_t bytes = K * N * sizeof(H), W = G::W;
        constexpr bool l2 = bytes <= (std::size_t{1} << 20), wide = G::regs >= 32;
        constexpr bool whole_rows = wide && l2 && bytes > (std::size_t{32} << 10) && N / W >= 1 && N / W <= 24;
        constexpr bool in_registers = wide && l2 && !whole_rows && (bytes <= (std::size_t{32} << 10) || N / W > 24);
        const std::string want = in_registers ? "sums of 24 vectors of columns in registers"
                                 : whole_rows ? "rows read whole, the sums of all " + std::to_string(N / W) + " vectors"
                                 : !l2        ? "8 rows of (K, N) at a time added into the panel's sums, 8 vector(s) of columns a chunk"
                                              : " rows of (K, N) at a time";
        const std::string how = attend::explain(attend::matmul(*x, *wkn));
        BOOST_TEST(how.find(want) != std::string::npos, how);
    }
    const tensor<float, M, N> r0 = *r;
    tensor<float, M, N> y = attend::matmul(*x, *wkn) + bias;
    auto rkn = std::make_unique<tensor<float, M, N>>(r0);
    *rkn = attend::matmul(*x, *wkn) + *rkn;  // the destination on the right
    *r = attend::matmul(*x, attend::transpose(*wnk)) + *r;
    const double tol = 1e-5 * std::sqrt(double(K));
    ref::expect_all(y, [&](const ref::index& i) {
        double acc = bias(i[1]);
        for (std::size_t k = 0; k < K; ++k) acc += double((*x)(i[0], k)) * static_cast<double>((*wkn)(k, i[1]));
        return acc;
    }, tol);
    ref::expect_all(*r, [&](const ref::index& i) {
        double acc = r0(i[0], i[1]);
        for (std::size_t k = 0; k < K; ++k) acc += double((*x)(i[0], k)) * static_cast<double>((*wnk)(i[1], k));
        return acc;
    }, tol);
    ref::expect_all(*rkn, [&](const ref::index& i) {
        double acc = r0(i[0], i[1]);
        for (std::size_t k = 0; k < K; ++k) acc += double((*x)(i[0], k)) * static_cast<double>((*wkn)(k, i[1]));
        return acc;
    }, tol);
}

BOOST_AUTO_TEST_CASE(matvec_streams_16_bit_weights) {
    check_matvec_16<bf16, 1, 301, 77>();
    check_matvec_16<f16, 1, 288, 768>();
    check_matvec_16<bf16, 3, 1024, 1031>();  // M x 256 KiB of weight and more: the plan beyond two rows
    check_matvec_16<bf16, 1, 2903, 2901>();  // beyond 16 MiB: W (K, N) 8 rows per step, a K tail of 7
    // beyond L2, within L3: 8 rows per step in chunks of 8 vectors (4 pairs), the last chunks of 4
    // and 1 vector, 7 scalar columns, a K tail of 3 (f16: of 5)
    check_matvec_16<bf16, 1, 771, 2135>();
    check_matvec_16<f16, 1, 765, 2135>();
    // W (K, N) in cache, narrow: column sums in blocks of 4, 2 and 1 vectors after the wide ones
    check_matvec_16<bf16, 1, 299, 48>();
    check_matvec_16<bf16, 1, 299, 112>();
    check_matvec_16<f16, 2, 299, 48>();
    // more than four rows of x against W (K, N): groups of 4 and a last group of 2 (bf16: 67
    // vectors of columns, chunks of 4 and a last of 3: a pair in even/odd order and one in order)
    // or of 1 (f16), a K tail of 7 and of 9
    check_matvec_16<bf16, 6, 1031, 1077>();
    check_matvec_16<f16, 5, 777, 1077>();
}

// A 16-bit W (K, N) beyond L2 as every core runs it: on Zen 5 and Intel cores each line also
// requests the line 512 bytes on in its row, and the last chunks of a step the next step's first
// lines (row_lead); elsewhere no requests. From L3 and from DRAM; the same weights as rows (N, K),
// whose widened lines on Intel cores request the line 2 KiB on from DRAM (even_odd_later).
BOOST_AUTO_TEST_CASE(matvec_16_bit_weights_of_every_core) {
    using attend::detail::core_kind;
    for (const core_kind kind : {core_kind::intel, core_kind::amd_zen5, core_kind::other}) {
        attend::detail::pretend_core(kind);
        check_matvec_16<bf16, 1, 771, 2135>();
        check_matvec_16<bf16, 1, 2903, 2901>();
    }
    attend::detail::pretend_core(core_kind::automatic);
}

// bf16 weight rows (N, K) widened into even and odd elements against x split the same way: every
// register tile shape (1, 2, 4, 8 and 16 rows of x; even and odd products in their own
// accumulators or one), K tails below two vectors, and an x too large to split on the stack
// (16 x 1100: the widening in order). Within float accuracy of double.
template <std::size_t M, std::size_t K, std::size_t N>
void check_even_odd_rows() {
    auto x = std::make_unique<tensor<float, M, K>>();
    auto w = std::make_unique<tensor<bf16, N, K>>();
    ref::fill(*x, 61);
    ref::fill(*w, 62);
    auto y = std::make_unique<tensor<float, M, N>>();
    static_assert(attend::plan_of<decltype(attend::matmul(*x, attend::transpose(*w)))> == attend::plan::matvec);
    *y = attend::matmul(*x, attend::transpose(*w));
    ref::expect_all(*y, [&](const ref::index& i) {
        double acc = 0;
        for (std::size_t k = 0; k < K; ++k) acc += double((*x)(i[0], k)) * static_cast<double>((*w)(i[1], k));
        return acc;
    }, 1e-5 * std::sqrt(double(K)));
}

BOOST_AUTO_TEST_CASE(matvec_bf16_weights_even_and_odd) {
    check_even_odd_rows<1, 331, 37>();
    check_even_odd_rows<1, 64, 9>();
    check_even_odd_rows<2, 96, 33>();
    check_even_odd_rows<1, 4000, 515>();  // > 256 KiB of weight: the plan beyond two rows of x
    check_even_odd_rows<4, 4000, 515>();
    check_even_odd_rows<8, 2000, 515>();
    check_even_odd_rows<16, 1100, 1000>();

    // ±inf, NaN and values near the float limit give what float products give.
    constexpr std::size_t K = 64;
    tensor<float, 1, K> x;
    auto w = std::make_unique<tensor<bf16, 4, K>>();
    for (std::size_t k = 0; k < K; ++k) {
        x(0, k) = 0.25f;
        for (std::size_t n = 0; n < 4; ++n) (*w)(n, k) = bf16(0.5f);
    }
    x(0, 3) = std::numeric_limits<float>::infinity();
    tensor<float, 1, 4> y = attend::matmul(x, attend::transpose(*w));
    for (std::size_t n = 0; n < 4; ++n) BOOST_TEST(y(0, n) == std::numeric_limits<float>::infinity());
    x(0, 3) = std::numeric_limits<float>::quiet_NaN();
    y = attend::matmul(x, attend::transpose(*w));
    for (std::size_t n = 0; n < 4; ++n) BOOST_TEST(std::isnan(y(0, n)));
    x(0, 3) = 3.4e38f;
    (*w)(0, 3) = bf16(0.5f);
    y = attend::matmul(x, attend::transpose(*w));
    BOOST_TEST(std::abs(y(0, 0) - (1.7e38 + 63 * 0.125)) <= 1e-6 * 1.7e38);
}

namespace {
// How the bf16 nests take their products: 0 AMX tiles where there are (else as -1), 1 vdpbf16ps
// pairs where the target has them, 2 float FMAs; -1 the defaults.
void use_products(int mode) {
    attend::simd::allow_amx(mode <= 0);
    attend::simd::pair_products(mode == 1 ? attend::simd::choice::always
                                : mode == 2 ? attend::simd::choice::never
                                            : attend::simd::choice::automatic);
}
}  // namespace

// bf16 x against bf16 weights where the target has AVX-512 BF16 (exact products, float sums):
// rows (N, K) as pair products, W (K, N) as pairs of rows (the matvec plan up to its row limit,
// the contraction beyond). x stored in bf16 and x as cast<bf16>(float x) give the same bits;
// W (K, N) on pairs gives the bits of its documented order (for each pair of rows, the second
// row's product added first, each rounded; an odd last row alone), whatever the blocks, panels
// and masked last columns, and elsewhere the bits of float x of the same values; bias and
// residual fused; K tails below a pair vector, odd N, 1 to 16 rows of x (tiles of up to 8 rows
// and their remainders), column blocks of every kind. Against double of the same rounded values.
// W (K, N) takes the pairs only where they pay (pair_products_pay: not on Intel cores), else x
// widened and the bits of float x; the test case runs both.
template <std::size_t M, std::size_t K, std::size_t N>
void check_matvec_bf16_x() {
    auto x = std::make_unique<tensor<float, M, K>>();
    auto xh = std::make_unique<tensor<bf16, M, K>>();
    auto wnk = std::make_unique<tensor<bf16, N, K>>();
    auto wkn = std::make_unique<tensor<bf16, K, N>>();
    auto r = std::make_unique<tensor<float, M, N>>();
    tensor<float, N> bias;
    ref::fill(*x, 71);
    ref::fill(*wnk, 72);
    ref::fill(*wkn, 73);
    ref::fill(*r, 74);
    ref::fill(bias, 75);
    *xh = attend::cast<bf16>(*x);
    static_assert(attend::plan_of<decltype(attend::matmul(*xh, attend::transpose(*wnk)) + bias)> == attend::plan::matvec);
    static_assert(attend::plan_of<decltype(attend::matmul(attend::cast<bf16>(*x), attend::transpose(*wnk)))> == attend::plan::matvec);
    auto y = std::make_unique<tensor<float, M, N>>(), yc = std::make_unique<tensor<float, M, N>>();
    *y = attend::matmul(*xh, attend::transpose(*wnk)) + bias;
    *yc = attend::matmul(attend::cast<bf16>(*x), attend::transpose(*wnk)) + bias;
    BOOST_TEST(std::memcmp(y->data(), yc->data(), sizeof(float) * M * N) == 0);
    const auto r0 = std::make_unique<tensor<float, M, N>>(*r);
    *r = attend::matmul(*xh, *wkn) + *r;
    auto xf = std::make_unique<tensor<float, M, K>>();
    auto rf = std::make_unique<tensor<float, M, N>>();
    *xf = attend::cast<float>(*xh);
    *rf = attend::matmul(*xf, *wkn) + *r0;
    using kn_t = decltype(attend::matmul(*xh, *wkn) + *r);
    if (attend::simd::has_bf16_pair_dot && attend::plan_of<kn_t> == attend::plan::matvec && attend::detail::pair_products_pay()) {
        std::size_t wrong = 0;
        for (std::size_t m = 0; m < M; ++m)
            for (std::size_t n = 0; n < N; ++n) {
                float s = 0;
                std::size_t k = 0;
                for (; k + 2 <= K; k += 2)
                    s = std::fma(float((*xh)(m, k + 1)), float((*wkn)(k + 1, n)), s), s = std::fma(float((*xh)(m, k)), float((*wkn)(k, n)), s);
                if (k < K) s = std::fma(float((*xh)(m, k)), float((*wkn)(k, n)), s);
                wrong += (s + (*r0)(m, n) != (*r)(m, n));
            }
        BOOST_TEST(wrong == 0u);
    } else {
        BOOST_TEST(std::memcmp(r->data(), rf->data(), sizeof(float) * M * N) == 0);
    }
    const double tol = 1e-5 * std::sqrt(double(K));
    ref::expect_all(*y, [&](const ref::index& i) {
        double acc = bias(i[1]);
        for (std::size_t k = 0; k < K; ++k) acc += static_cast<double>((*xh)(i[0], k)) * static_cast<double>((*wnk)(i[1], k));
        return acc;
    }, tol);
    ref::expect_all(*r, [&](const ref::index& i) {
        double acc = (*r0)(i[0], i[1]);
        for (std::size_t k = 0; k < K; ++k) acc += static_cast<double>((*xh)(i[0], k)) * static_cast<double>((*wkn)(k, i[1]));
        return acc;
    }, tol);
}

BOOST_AUTO_TEST_CASE(matvec_bf16_x_pairs) {
    for (const int mode : {1, 2}) {  // pairs, x widened (use_products)
        use_products(mode);
        check_matvec_bf16_x<1, 301, 77>();
        check_matvec_bf16_x<1, 288, 768>();
        check_matvec_bf16_x<2, 96, 33>();
        check_matvec_bf16_x<1, 7, 5>();
        check_matvec_bf16_x<3, 1024, 1031>();
        check_matvec_bf16_x<5, 2000, 515>();
        check_matvec_bf16_x<16, 1100, 1000>();
        check_matvec_bf16_x<1, 768, 288>();    // W (K, N) column blocks of 10 and 8 vectors
        check_matvec_bf16_x<2, 299, 288>();    // two rows of x: three blocks of 6
        check_matvec_bf16_x<1, 299, 533>();    // blocks of 12, 10 and 11 (an odd vector last), 5 scalar columns
        check_matvec_bf16_x<1, 768, 2048>();   // beyond 1 MiB: sums in L1, 4 rows per step
        check_matvec_bf16_x<1, 2101, 4001>();  // beyond 16 MiB: 8 rows per step, a K tail of two pairs and one row
    }
    use_products(-1);
    const auto x = std::make_unique<tensor<bf16, 1, 96>>();
    const auto w = std::make_unique<tensor<bf16, 40, 96>>();
    const std::string how = attend::explain(attend::matmul(*x, attend::transpose(*w)));
    BOOST_TEST((how.find("vdpbf16ps") != std::string::npos) == attend::simd::has_bf16_pair_dot, how);
    const auto wt = std::make_unique<tensor<bf16, 96, 40>>();
    const std::string how_kn = attend::explain(attend::matmul(*x, *wt));
    BOOST_TEST((how_kn.find("pairs of rows") != std::string::npos) == attend::simd::has_bf16_pair_dot, how_kn);

    // ±inf and NaN in x or in a weight give what float products give, and stay in their columns
    // (the vector part, and the K tail added in scalars: k = 66).
    constexpr std::size_t K = 70;
    tensor<bf16, 1, K> xs;
    auto ws = std::make_unique<tensor<bf16, 4, K>>();
    for (std::size_t k = 0; k < K; ++k) {
        xs(0, k) = bf16(0.25f);
        for (std::size_t n = 0; n < 4; ++n) (*ws)(n, k) = bf16(0.5f);
    }
    const float inf = std::numeric_limits<float>::infinity();
    (*ws)(1, 5) = bf16(inf);
    (*ws)(2, 6) = bf16(std::numeric_limits<float>::quiet_NaN());
    tensor<float, 1, 4> ys = attend::matmul(xs, attend::transpose(*ws));
    BOOST_TEST(ys(0, 0) == 8.75f);
    BOOST_TEST(ys(0, 1) == inf);
    BOOST_TEST(std::isnan(ys(0, 2)));
    BOOST_TEST(ys(0, 3) == 8.75f);
    xs(0, 3) = bf16(-inf);
    ys = attend::matmul(xs, attend::transpose(*ws));
    BOOST_TEST(ys(0, 0) == -inf);
    BOOST_TEST(std::isnan(ys(0, 1)));  // -inf + inf
    BOOST_TEST(ys(0, 3) == -inf);
    xs(0, 3) = bf16(0.25f);
    (*ws)(3, 66) = bf16(-inf);
    ys = attend::matmul(xs, attend::transpose(*ws));
    BOOST_TEST(ys(0, 0) == 8.75f);
    BOOST_TEST(ys(0, 3) == -inf);

    // W (K, N) on pairs of rows: a non-finite weight stays in its column (10, 21; not in their
    // neighbours 11 and 20), in the sums held in registers and in those added in L1 (a weight
    // beyond 1 MiB), with an odd last row (paired with zeros) and masked last columns.
    auto non_finite_in_column = [&]<std::size_t KN, std::size_t NN>() {
        auto xk = std::make_unique<tensor<bf16, 1, KN>>();
        auto wk = std::make_unique<tensor<bf16, KN, NN>>();
        for (std::size_t k = 0; k < KN; ++k) {
            (*xk)(0, k) = bf16(0.25f);
            for (std::size_t n = 0; n < NN; ++n) (*wk)(k, n) = bf16(0.5f);
        }
        (*wk)(5, 10) = bf16(inf);
        (*wk)(6, 21) = bf16(std::numeric_limits<float>::quiet_NaN());
        auto yk = std::make_unique<tensor<float, 1, NN>>();
        *yk = attend::matmul(*xk, *wk);
        const float all = 0.125f * KN;
        for (std::size_t n = 0; n < NN; ++n) {
            if (n == 10) BOOST_TEST((*yk)(0, n) == inf);
            else if (n == 21) BOOST_TEST(std::isnan((*yk)(0, n)));
            else BOOST_TEST((*yk)(0, n) == all, "column " << n);
        }
        (*xk)(0, 3) = bf16(-inf);  // -inf in x: -inf everywhere but -inf + inf (10) and NaN (21)
        *yk = attend::matmul(*xk, *wk);
        for (std::size_t n = 0; n < NN; ++n) {
            if (n == 10 || n == 21) BOOST_TEST(std::isnan((*yk)(0, n)));
            else BOOST_TEST((*yk)(0, n) == -inf, "column " << n);
        }
    };
    for (const int mode : {1, 2}) {  // pairs, x widened
        use_products(mode);
        non_finite_in_column.template operator()<40, 64>();
        non_finite_in_column.template operator()<41, 57>();
        non_finite_in_column.template operator()<1040, 512>();
        non_finite_in_column.template operator()<1041, 530>();
    }
    use_products(-1);
}

// The matvec plan over 16-bit weights writing the row it reads (a residual stream updated in
// place), in both weight layouts: the same bits as into a fresh tensor.
BOOST_AUTO_TEST_CASE(matvec_16_bit_weights_into_its_input) {
    constexpr std::size_t K = 512;
    tensor<float, 1, K> x, x0;
    auto w = std::make_unique<tensor<bf16, K, K>>();
    ref::fill(x, 57);
    ref::fill(*w, 58, -0.1, 0.1);
    x0 = x;
    static_assert(attend::plan_of<decltype(attend::matmul(x, attend::transpose(*w)) + x)> == attend::plan::matvec);
    static_assert(attend::plan_of<decltype(attend::matmul(x, *w))> == attend::plan::matvec);
    const tensor<float, 1, K> fresh_nk = attend::matmul(x0, attend::transpose(*w)) + x0;
    x = attend::matmul(x, attend::transpose(*w)) + x;
    BOOST_TEST(std::memcmp(x.data(), fresh_nk.data(), sizeof(float) * K) == 0);
    const tensor<float, 1, K> fresh_kn = attend::matmul(x0, *w);
    x = x0;
    x = attend::matmul(x, *w);
    BOOST_TEST(std::memcmp(x.data(), fresh_kn.data(), sizeof(float) * K) == 0);
    // x rounded to bf16 on the right side (pair products against (N, K), and against (K, N)'s
    // pairs of rows): the same bits as fresh and the right values (the
    // assignment runs through a temporary: alias.hpp).
    static_assert(attend::plan_of<decltype(attend::matmul(attend::cast<bf16>(x), attend::transpose(*w)) + x)> == attend::plan::matvec);
    static_assert(attend::plan_of<decltype(attend::matmul(attend::cast<bf16>(x), *w) + x)> == attend::plan::matvec);
    auto check_pairs_in_place = [&](bool rows_n) {
        auto step = [&](const tensor<float, 1, K>& in) -> tensor<float, 1, K> {
            if (rows_n) return attend::matmul(attend::cast<bf16>(in), attend::transpose(*w)) + in;
            return attend::matmul(attend::cast<bf16>(in), *w) + in;
        };
        const tensor<float, 1, K> fresh = step(x0);
        tensor<float, 1, K> xp = x0;
        if (rows_n) xp = attend::matmul(attend::cast<bf16>(xp), attend::transpose(*w)) + xp;
        else xp = attend::matmul(attend::cast<bf16>(xp), *w) + xp;
        BOOST_TEST(std::memcmp(xp.data(), fresh.data(), sizeof(float) * K) == 0);
        double worst = 0;
        for (std::size_t n = 0; n < K; ++n) {
            double acc = x0(0, n);
            for (std::size_t k = 0; k < K; ++k)
                acc += double(float(bf16(x0(0, k)))) * static_cast<double>(rows_n ? (*w)(n, k) : (*w)(k, n));
            worst = std::max(worst, std::abs(acc - xp(0, n)));
        }
        BOOST_TEST(worst < 1e-4);
    };
    check_pairs_in_place(true);
    check_pairs_in_place(false);
    double err = 0;  // and the values themselves
    for (std::size_t n = 0; n < K; ++n) {
        double acc = 0;
        for (std::size_t k = 0; k < K; ++k) acc += double(x0(0, k)) * static_cast<double>((*w)(k, n));
        err = std::max(err, std::abs(acc - x(0, n)));
    }
    BOOST_TEST(err < 1e-4);
}

namespace {
// softmax(Q K^T / sqrt(D) [causal]) V in double over the rounded inputs, and the same with |V|:
// the scale of the error that rounding P to bf16 may add (at most 2^-8 of each term), the bound
// the vdpbf16ps nest is held to. Keys from `len` on are masked (a cache filled to a run-time
// length; none left: zeros). A row's scores are computed once and kept while the columns of the
// same row (b, i) are asked for in turn (per element they made the sanitizer runs 20x slower).
template <class Q, class K, class V>
class attention_reference {
    static constexpr std::size_t NK = K::shape_type::extents[1], D = K::shape_type::extents[2];
    static constexpr std::size_t DV = V::shape_type::extents[2];
    const Q& q_;
    const K& k_;
    const V& v_;
    bool causal_;
    std::size_t len_, b_ = std::size_t(-1), i_ = std::size_t(-1);
    std::vector<double> o_ = std::vector<double>(DV), oa_ = std::vector<double>(DV);

    void row(std::size_t b, std::size_t i) {
        std::vector<double> s(NK);
        double mx = -INFINITY, z = 0;
        for (std::size_t j = 0; j < NK; ++j) {
            double acc = 0;
            for (std::size_t d = 0; d < D; ++d) acc += ref::at(q_, {b, i, d}) * ref::at(k_, {b, j, d});
            s[j] = ((causal_ && j > i) || j >= len_) ? -INFINITY : acc / std::sqrt(double(D));
            mx = std::max(mx, s[j]);
        }
        std::fill(o_.begin(), o_.end(), 0.0);
        std::fill(oa_.begin(), oa_.end(), 0.0);
        if (mx == -INFINITY) return;
        for (std::size_t j = 0; j < NK; ++j) {
            if (s[j] == -INFINITY) continue;  // a masked key takes no part, whatever its row holds
            const double p = std::exp(s[j] - mx);
            z += p;
            for (std::size_t c = 0; c < DV; ++c) {
                const double vj = ref::at(v_, {b, j, c});
                o_[c] += p * vj;
                oa_[c] += p * std::abs(vj);
            }
        }
        for (std::size_t c = 0; c < DV; ++c) o_[c] /= z, oa_[c] /= z;
    }

public:
    attention_reference(const Q& q, const K& k, const V& v, bool causal, std::size_t len = std::size_t(-1))
        : q_(q), k_(k), v_(v), causal_(causal), len_(len) {}
    // Element (b, i, c) and its |V| scale.
    std::pair<double, double> operator()(std::size_t b, std::size_t i, std::size_t c) {
        if (b != b_ || i != i_) row(b, i), b_ = b, i_ = i;
        return {o_[c], oa_[c]};
    }
};

// The reference's values of an attention output O over the element types of q, k and v.
template <class O, class Q, class K, class V>
void expect_attention(const O& o, const Q& q, const K& k, const V& v, double tol, std::size_t len = std::size_t(-1)) {
    attention_reference<Q, K, V> want(q, k, v, false, len);
    ref::expect_all(o, [&](const ref::index& i) { return want(i[0], i[1], i[2]).first; }, tol);
}

// Attention over bf16 Q, K, V, which may run on pair dot products (P rounded to bf16): every
// element within 2^-8 (bf16's unit roundoff; x 1.01 for the float sums) of sum p |v| / sum p,
// plus the float nest's 2e-5.
template <class O, class Q, class K, class V>
void expect_bf16_attention(const O& o, const Q& q, const K& k, const V& v, bool causal, std::size_t len = std::size_t(-1)) {
    std::size_t bad = 0;
    attention_reference<Q, K, V> reference(q, k, v, causal, len);
    ref::for_each_index(ref::extents_of<O>(), [&](const ref::index& i, std::size_t flat) {
        const auto [want, scale] = reference(i[0], i[1], i[2]);
        const double bound = 0x1.02p-8 * scale + 2e-5 * (1 + std::abs(want));
        const double got = static_cast<double>(o.data()[flat]);
        if (!(std::abs(got - want) <= bound) && bad++ < 5)
            BOOST_ERROR("at (" << i[0] << "," << i[1] << "," << i[2] << "): got " << got << ", want " << want << " within " << bound);
    });
    BOOST_CHECK_EQUAL(bad, 0u);
}
}  // namespace

BOOST_AUTO_TEST_CASE(attention_prefill_and_decode) {
    auto q = std::make_unique<tensor<bf16, 2, 48, 64>>();
    auto k = std::make_unique<tensor<bf16, 2, 80, 64>>();
    auto v = std::make_unique<tensor<bf16, 2, 80, 64>>();
    ref::fill(*q, 41);
    ref::fill(*k, 42);
    ref::fill(*v, 43);
    static_assert(attend::plan_of<decltype(attend::scaled_dot_product_attention(*q, *k, *v))> == attend::plan::attention);
    tensor<float, 2, 48, 64> o = attend::scaled_dot_product_attention(*q, *k, *v);
    expect_bf16_attention(o, *q, *k, *v, false);
    tensor<float, 2, 48, 64> oc = attend::scaled_dot_product_attention(*q, *k, *v, attend::causal_mask<48, 80>());
    expect_bf16_attention(oc, *q, *k, *v, true);
    tensor<bf16, 2, 48, 64> oh = attend::cast<bf16>(attend::scaled_dot_product_attention(*q, *k, *v));
    for (std::size_t i = 0; i < oh.size; ++i)
        BOOST_TEST(ref::close(static_cast<double>(oh.data()[i]), o.data()[i], 0x1p-8));

    // Decode: 4 queries over a cache of 300 (the decode nest), K and V bf16, Q float.
    auto dq = std::make_unique<tensor<float, 2, 4, 64>>();
    auto dk = std::make_unique<tensor<bf16, 2, 300, 64>>();
    auto dv = std::make_unique<tensor<bf16, 2, 300, 64>>();
    ref::fill(*dq, 44);
    ref::fill(*dk, 45);
    ref::fill(*dv, 46);
    tensor<float, 2, 4, 64> od = attend::scaled_dot_product_attention(*dq, *dk, *dv);
    expect_attention(od, *dq, *dk, *dv, 2e-5);
    // And all three bf16, with a cache filled to a run-time length.
    tensor<bf16, 2, 4, 64> dqh = attend::cast<bf16>(*dq);
    const std::int64_t len = 211;
    auto j = attend::iota<2, 2, 4, 300>();
    tensor<float, 2, 4, 64> ol = attend::matmul(
        attend::softmax(attend::masked_fill(attend::matmul(dqh, attend::transpose(*dk)) / 8.0f, j >= len, -INFINITY)), *dv);
    auto k_len = std::make_unique<tensor<bf16, 2, 211, 64>>();
    auto v_len = std::make_unique<tensor<bf16, 2, 211, 64>>();
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t r = 0; r < 211; ++r)
            for (std::size_t c = 0; c < 64; ++c) {
                (*k_len)(b, r, c) = (*dk)(b, r, c);
                (*v_len)(b, r, c) = (*dv)(b, r, c);
            }
    // (the decode nest's pair dot products where the target has them: P rounded to bf16)
    expect_bf16_attention(ol, dqh, *k_len, *v_len, false);
}

// The prefill nest with bf16 Q, K and V (vdpbf16ps where the target has AVX-512 BF16): an odd
// last key tile (77 = 48 + 29 keys: a pair padded with a zero key), a value width that is not a
// whole number of 32-value blocks (40), queries past the last whole tile (70 = 2 x 32 + 6, run
// in float), causal, and a bf16 result written over its own V.
BOOST_AUTO_TEST_CASE(prefill_pair_dots) {
    auto q = std::make_unique<tensor<bf16, 2, 70, 48>>();
    auto k = std::make_unique<tensor<bf16, 2, 77, 48>>();
    auto v = std::make_unique<tensor<bf16, 2, 77, 40>>();
    ref::fill(*q, 71);
    ref::fill(*k, 72);
    ref::fill(*v, 73);
    auto o = std::make_unique<tensor<float, 2, 70, 40>>();
    for (const int mode : {1, 2}) {  // pairs, float FMAs
        use_products(mode);
        *o = attend::scaled_dot_product_attention(*q, *k, *v);
        expect_bf16_attention(*o, *q, *k, *v, false);
        *o = attend::scaled_dot_product_attention(*q, *k, *v, attend::causal_mask<70, 77>());
        expect_bf16_attention(*o, *q, *k, *v, true);
    }
    use_products(-1);

    // The destination on the right side: V (64 x 32 per head) replaced by the attention output.
    auto sq = std::make_unique<tensor<bf16, 2, 64, 32>>();
    auto sk = std::make_unique<tensor<bf16, 2, 64, 32>>();
    auto sv = std::make_unique<tensor<bf16, 2, 64, 32>>();
    ref::fill(*sq, 74);
    ref::fill(*sk, 75);
    ref::fill(*sv, 76);
    const auto v0 = std::make_unique<tensor<bf16, 2, 64, 32>>(*sv);
    const tensor<bf16, 2, 64, 32> fresh = attend::cast<bf16>(attend::scaled_dot_product_attention(*sq, *sk, *v0));
    *sv = attend::cast<bf16>(attend::scaled_dot_product_attention(*sq, *sk, *sv));
    const auto wide = std::make_unique<tensor<float, 2, 64, 32>>();
    *wide = attend::scaled_dot_product_attention(*sq, *sk, *v0);
    expect_bf16_attention(*wide, *sq, *sk, *v0, false);
    std::size_t differ = 0, unrounded = 0;
    for (std::size_t i = 0; i < sv->size; ++i) {
        differ += sv->data()[i].to_bits() != fresh.data()[i].to_bits();
        unrounded += fresh.data()[i].to_bits() != bf16(wide->data()[i]).to_bits();  // rounded once, from float
    }
    BOOST_TEST(differ == 0u);
    BOOST_TEST(unrounded == 0u);
    // Rounded through a cast into a float destination: the same plan, the same rounding.
    using rounded = decltype(attend::cast<bf16>(attend::scaled_dot_product_attention(*sq, *sk, *v0)));
    static_assert(attend::plan_of<rounded> == attend::plan::attention);
    const tensor<float, 2, 64, 32> back = attend::cast<bf16>(attend::scaled_dot_product_attention(*sq, *sk, *v0));
    std::size_t not_back = 0;
    for (std::size_t i = 0; i < back.size; ++i) not_back += back.data()[i] != static_cast<float>(fresh.data()[i]);
    BOOST_TEST(not_back == 0u);

    const std::string how = attend::explain(attend::scaled_dot_product_attention(*q, *k, *v));
    BOOST_TEST((how.find("vdpbf16ps") != std::string::npos) == attend::simd::has_bf16_pair_dot, how);
}

// The prefill nest on AMX tiles (where the target has AMX-BF16 and the OS grants the tiles), on
// vdpbf16ps pairs and on float FMAs with K and V widened as packed, each against the reference: a last key tile of 36
// (a tile of 32 and one of 4 live rows), value width 96, causal, a run-time length as an index
// mask (tiles it cuts read no key row past it) and as a bool tensor (cut where it ends), and no
// keys at all (zeros).
BOOST_AUTO_TEST_CASE(prefill_amx_tiles) {
    auto q = std::make_unique<tensor<bf16, 2, 96, 64>>();
    auto k = std::make_unique<tensor<bf16, 2, 100, 64>>();
    auto v = std::make_unique<tensor<bf16, 2, 100, 96>>();
    ref::fill(*q, 81);
    ref::fill(*k, 82);
    ref::fill(*v, 83);
    auto o = std::make_unique<tensor<float, 2, 96, 96>>();
    const auto j = attend::iota<2, 2, 96, 100>();
    const auto scores = attend::matmul(*q, attend::transpose(*k)) / 8.0f;
    for (const int mode : {0, 1, 2}) {  // AMX tiles (where there are), vdpbf16ps pairs, float FMAs
        use_products(mode);
        *o = attend::scaled_dot_product_attention(*q, *k, *v);
        expect_bf16_attention(*o, *q, *k, *v, false);
        *o = attend::scaled_dot_product_attention(*q, *k, *v, attend::causal_mask<96, 100>());
        expect_bf16_attention(*o, *q, *k, *v, true);
        for (const std::int64_t len : {std::int64_t{77}, std::int64_t{3}, std::int64_t{0}}) {
            *o = attend::matmul(attend::softmax(attend::masked_fill(scores, j >= len, -INFINITY)), *v);
            expect_bf16_attention(*o, *q, *k, *v, false, static_cast<std::size_t>(len));
            tensor<bool, 100> past{};
            for (std::size_t c = 0; c < 100; ++c) past(c) = static_cast<std::int64_t>(c) >= len;
            *o = attend::matmul(attend::softmax(attend::masked_fill(scores, past, -INFINITY)), *v);
            expect_bf16_attention(*o, *q, *k, *v, false, static_cast<std::size_t>(len));
        }
    }
    // A value width of 16-column blocks only (48), head dimension 32, 64 queries, 50 keys.
    auto q2 = std::make_unique<tensor<bf16, 2, 64, 32>>();
    auto k2 = std::make_unique<tensor<bf16, 2, 50, 32>>();
    auto v2 = std::make_unique<tensor<bf16, 2, 50, 48>>();
    ref::fill(*q2, 84);
    ref::fill(*k2, 85);
    ref::fill(*v2, 86);
    auto o2 = std::make_unique<tensor<float, 2, 64, 48>>();
    for (const int mode : {0, 1, 2}) {
        use_products(mode);
        *o2 = attend::scaled_dot_product_attention(*q2, *k2, *v2, attend::causal_mask<64, 50>());
        expect_bf16_attention(*o2, *q2, *k2, *v2, true);
    }
    use_products(-1);
    const std::string how = attend::explain(attend::scaled_dot_product_attention(*q, *k, *v));
    BOOST_TEST((how.find("AMX") != std::string::npos) == attend::simd::has_amx_bf16, how);
}

// One, two and five queries per batch index (the decode nest's stages), over 16-bit caches.
namespace {
// sdpa of Q (HB, NQ, D) against K, V (HB, NK, D) of element types QT, KT, VT, filled from `seed`
// on, into a float output, against attention_reference in double over the same rounded inputs.
// Returns the output.
template <class QT, class KT, class VT, std::size_t HB, std::size_t NQ, std::size_t NK, std::size_t D>
std::unique_ptr<tensor<float, HB, NQ, D>> check_decode_16(int seed) {
    auto q = std::make_unique<tensor<QT, HB, NQ, D>>();
    auto k = std::make_unique<tensor<KT, HB, NK, D>>();
    auto v = std::make_unique<tensor<VT, HB, NK, D>>();
    ref::fill(*q, seed);
    ref::fill(*k, seed + 1);
    ref::fill(*v, seed + 2);
    auto o = std::make_unique<tensor<float, HB, NQ, D>>();
    *o = attend::scaled_dot_product_attention(*q, *k, *v);
    expect_attention(*o, *q, *k, *v, 2e-5);
    return o;
}
}  // namespace

BOOST_AUTO_TEST_CASE(decode_over_16_bit_caches) {
    check_decode_16<float, bf16, bf16, 4, 1, 1000, 128>(101);
    check_decode_16<bf16, f16, bf16, 2, 2, 500, 64>(104);
    // Five queries (the whole-row stages, a group of two twice and one), 16-bit rows read in place.
    check_decode_16<float, bf16, f16, 2, 5, 1000, 128>(107);
    // A bf16 V with 3+ queries (the whole-row stages: with 16 registers four queries a pass over
    // bf16 key rows as even and odd elements, P V over three keys at a time; with 32 registers
    // query groups of two and a last group of one, or four queries over two column parts; value
    // widths of 2, 4 and 8 vectors), held to the float bound: P stays float in decode.
    check_decode_16<float, bf16, bf16, 2, 4, 1000, 128>(110);
    check_decode_16<float, f16, bf16, 3, 3, 700, 64>(113);
    // One query over a bf16 cache of 64 MB (from DRAM: by blocks of keys on Zen 5 and Intel
    // cores, elsewhere the stream).
    check_decode_16<float, bf16, bf16, 32, 1, 4096, 128>(116);
}

// Caches of 32 MiB and more as each core would run them (eval/machine.hpp, taken on any
// machine): one query by blocks of keys (Zen 5 and Intel cores), by tiles whose scores read their
// quarters (others, with 16 registers), or the stream; two queries' stream requesting its rows
// ahead (Zen 5 and Intel cores) or not (others);
// four queries' tile stages requesting rows ahead (into L2 on Intel cores, the scores 32 keys
// ahead; else the next tile into L1), the scores with a block's rows unrolled (Intel cores; Zen 5
// over 16-bit rows, and over float rows in clang++ builds) or in a loop, bf16 rows four queries a
// pass or two (clang++ builds off Intel cores), over float and bf16 rows, the same bits either way.
BOOST_AUTO_TEST_CASE(decode_choices_of_every_core) {
    using attend::detail::core_kind;
    constexpr std::size_t NF = 4352, NB = 8704;  // 17 and 34 tiles: 34 MiB caches, float and bf16
    BOOST_TEST_REQUIRE(8 * NF * 128 * sizeof(float) * 2 >= attend::detail::request_ahead_bytes());
    std::unique_ptr<tensor<float, 8, 4, 128>> first_f, first_b;
    for (const core_kind kind : {core_kind::intel, core_kind::amd_zen5, core_kind::other}) {
        BOOST_TEST_CONTEXT("core " << int(kind)) {
            attend::detail::pretend_core(kind);
            const bool zen5 = kind == core_kind::amd_zen5;
            BOOST_TEST(attend::detail::scores_unrolled<float>() == (kind == core_kind::intel || (zen5 && attend::detail::compiled_by_clang)));
            BOOST_TEST(attend::detail::scores_unrolled<bf16>() == (kind == core_kind::intel || zen5));
            BOOST_TEST(attend::detail::key_blocks_from_dram() == (kind == core_kind::amd_zen5 || kind == core_kind::intel));
            BOOST_TEST(attend::detail::quarter_runs() == (kind == core_kind::other));
            BOOST_TEST(attend::detail::rows_into_l2() == (kind == core_kind::intel));
            const bool lead = kind == core_kind::intel && attend::simd::vector_registers<> >= 32;
            BOOST_TEST((attend::detail::scores_lead<256, 1, false>()) == (lead ? 32u : 256u));
            BOOST_TEST((attend::detail::scores_lead<256, 2, false>()) == 256u);
            BOOST_TEST(attend::detail::split_fours() == (!attend::detail::compiled_by_clang || kind == core_kind::intel));
            check_decode_16<float, bf16, bf16, 32, 1, 4096, 128>(150);
            check_decode_16<float, bf16, bf16, 16, 2, 4096, 128>(162);  // (the last requests clamped to the cache's last row)
            check_decode_16<float, float, float, 8, 1, NF, 128>(159);  // two tiles of 2048 keys and 256
            auto of = check_decode_16<float, float, float, 8, 4, NF, 128>(153);
            auto ob = check_decode_16<float, bf16, bf16, 8, 4, NB, 128>(156);
            if (!first_f) {
                first_f = std::move(of), first_b = std::move(ob);
            } else {
                BOOST_TEST(std::memcmp(of->data(), first_f->data(), sizeof(*of)) == 0);
                BOOST_TEST(std::memcmp(ob->data(), first_b->data(), sizeof(*ob)) == 0);
            }
        }
    }
    attend::detail::pretend_core(core_kind::automatic);
}

// One and two queries per KV head over a bf16, f16 or float cache filled to a run-time length (the
// rows past it inf and NaN), as cores before Zen 5 run it: one query takes the tile stages
// without requests where the target has 16 registers, from DRAM (34 MiB) and in L3 (2 and 4
// MiB, with a last tile of 52 keys; a float cache in clang++ builds only), its scores over a
// tile's quarters (bf16 rows as even and odd elements, f16 ones widened in order; a tile the
// length cuts over the quarters of its whole groups of 32 keys); two queries (34 MiB caches)
// score over the quarters too. The result is written over Q itself (the destination on the
// right).
namespace {
template <class T, std::size_t HKV, std::size_t G, std::size_t NMAX>
void check_cache_lengths(int seed, bool rising = false) {
    constexpr std::size_t D = 128;
    using TQ = tensor<float, HKV, G, D>;
    using TK = tensor<T, HKV, NMAX, D>;
    auto q = std::make_unique<TQ>();
    auto k = std::make_unique<TK>(), v = std::make_unique<TK>();
    ref::fill(*q, seed);
    ref::fill(*k, seed + 1);
    ref::fill(*v, seed + 2);
    const auto q0 = std::make_unique<TQ>(*q);
#ifdef ATTEND_TEST_SWEEP_EDGES  // (the sanitizers' and the emulated builds: CI's time)
    const std::size_t lens[] = {NMAX - 1, 17};
#else
    // (a last tile with 249 and one with 200 live keys: their whole groups of 32 keys score by
    // quarters, the rest block by block)
    const std::size_t lens[] = {NMAX - 1, NMAX - NMAX % 256 - 7, NMAX / 2 + 1, 257, 256, 200, 17, 16, 15, 1};
#endif
    for (const std::size_t len : lens) {
        BOOST_TEST_CONTEXT("G " << G << ", NMAX " << NMAX << ", len " << len) {
            for (std::size_t b = 0; b < HKV; ++b)
                for (std::size_t j = len; j < NMAX; ++j)
                    for (std::size_t d = 0; d < D; ++d) (*k)(b, j, d) = T(INFINITY), (*v)(b, j, d) = T(d % 2 ? NAN : -INFINITY);
            *q = *q0;
            auto s = attend::matmul(*q, attend::transpose(*k)) * (1 / std::sqrt(float(D)));
            *q = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, HKV, G, NMAX>() >= std::int64_t(len), -INFINITY)), *v);
            expect_attention(*q, *q0, *k, *v, 2e-5, len);
        }
    }
    if (rising) {  // scores rising key after key: every key moves the maximum (and rescales O)
        ref::fill(*v, seed + 2);
        for (std::size_t b = 0; b < HKV; ++b)
            for (std::size_t j = 0; j < NMAX; ++j)
                for (std::size_t d = 0; d < D; ++d) (*k)(b, j, d) = T(float((*q0)(b, 0, d)) * float(j) * (8.0f / NMAX));
        *q = *q0;
        auto s = attend::matmul(*q, attend::transpose(*k)) * (1 / std::sqrt(float(D)));
        *q = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, HKV, G, NMAX>() >= std::int64_t(NMAX), -INFINITY)), *v);
        expect_attention(*q, *q0, *k, *v, 2e-5);
    }
    const std::string how = attend::explain(attend::scaled_dot_product_attention(*q, *k, *v));
    const bool quarters = G == 1 && attend::simd::key_quarter_rows<B, float, T, 1, D>;
    BOOST_TEST((how.find("quarters") != std::string::npos) == quarters, how);
}
}  // namespace

BOOST_AUTO_TEST_CASE(decode_cache_lengths) {
    using attend::detail::core_kind;
    attend::detail::pretend_core(core_kind::other);
    BOOST_TEST(attend::detail::quarter_runs());
    BOOST_TEST_REQUIRE(2 * 8 * 8448 * 128 * sizeof(bf16) >= attend::detail::request_ahead_bytes());
    check_cache_lengths<bf16, 8, 1, 8448>(170);  // (33 tiles of 256 keys)
    check_cache_lengths<bf16, 8, 2, 8448>(173);
    check_cache_lengths<bf16, 2, 1, 2100>(176);
    check_cache_lengths<float, 2, 1, 2100>(179);
    check_cache_lengths<f16, 8, 1, 8448>(182);  // (f16 rows widened in order)
    check_cache_lengths<f16, 8, 2, 8448>(185);
    check_cache_lengths<f16, 2, 1, 2100>(188);
    attend::detail::pretend_core(core_kind::automatic);
}

// One query over a float, bf16 or f16 cache from DRAM by blocks of keys (Zen 5's plan,
// decode_key_blocks; the keys past the last whole block key by key, decode_per_key): every length edge, and scores
// rising key after key, so that the rescale the loops take only when the maximum moves runs at
// every block and key (check_cache_lengths above, as Zen 5 runs it).
BOOST_AUTO_TEST_CASE(decode_key_blocks) {
    using attend::detail::core_kind;
    attend::detail::pretend_core(core_kind::amd_zen5);
    BOOST_TEST(attend::detail::key_blocks_from_dram());
    BOOST_TEST_REQUIRE(2 * 8 * 8448 * 128 * sizeof(float) >= attend::detail::request_ahead_bytes());
    check_cache_lengths<float, 8, 1, 8448>(191, true);
    check_cache_lengths<bf16, 8, 1, 8448>(194, true);  // (16-bit rows widened as read)
    check_cache_lengths<f16, 8, 1, 8448>(197);
    attend::detail::pretend_core(core_kind::automatic);
}

// One query over a bf16 cache (2 x 2100 keys, in the quarter runs on cores before Zen 5) with a
// window mask — keys [len - win, len) — whose tiles keep 3 to 6 live eighths: the eighths the
// window rules out before it are never read (their rows hold NaN), so the output is that of the
// window's keys alone. Written over Q itself (the destination on the right).
BOOST_AUTO_TEST_CASE(decode_window_eighths_unread) {
    using attend::detail::core_kind;
    attend::detail::pretend_core(core_kind::other);
    constexpr std::size_t H = 2, N = 2100, D = 128;
    auto q = std::make_unique<tensor<float, H, 1, D>>();
    auto k0 = std::make_unique<tensor<bf16, H, N, D>>(), v0 = std::make_unique<tensor<bf16, H, N, D>>();
    ref::fill(*q, 191);
    ref::fill(*k0, 192);
    ref::fill(*v0, 193);
    const auto q0 = std::make_unique<tensor<float, H, 1, D>>(*q);
    auto k = std::make_unique<tensor<bf16, H, N, D>>(), v = std::make_unique<tensor<bf16, H, N, D>>();
    for (const auto& [len, win] : {std::pair<long, long>{300, 150}, {300, 200}, {400, 100}, {1100, 150}, {2000, 100}}) {
        BOOST_TEST_CONTEXT("len " << len << ", window " << win) {
            *k = *k0, *v = *v0;
            for (std::size_t h = 0; h < H; ++h)
                for (long j = 0; j < (len - win) / 32 * 32; ++j)
                    for (std::size_t d = 0; d < D; ++d) (*k)(h, j, d) = bf16(NAN), (*v)(h, j, d) = bf16(NAN);
            *q = *q0;
            const auto j = attend::iota<2, H, 1, N>();
            auto s = attend::matmul(*q, attend::transpose(*k)) * (1 / std::sqrt(double(D)));
            *q = attend::matmul(attend::softmax(attend::masked_fill(s, (j >= len) || (j < len - win), -INFINITY)), *v);
            for (std::size_t h = 0; h < H; ++h) {  // the double reference over the window's keys
                std::vector<double> sc(N), o(D), oa(D);
                double m = -INFINITY, l = 0;
                for (long jj = len - win; jj < len; ++jj) {
                    double x = 0;
                    for (std::size_t d = 0; d < D; ++d) x += double((*q0)(h, 0, d)) * double(float((*k)(h, jj, d)));
                    sc[jj] = x * (1 / std::sqrt(double(D)));
                    m = std::max(m, sc[jj]);
                }
                for (long jj = len - win; jj < len; ++jj) {
                    const double p = std::exp(sc[jj] - m);
                    l += p;
                    for (std::size_t d = 0; d < D; ++d) o[d] += p * double(float((*v)(h, jj, d))), oa[d] += p * std::abs(double(float((*v)(h, jj, d))));
                }
                for (std::size_t d = 0; d < D; ++d) {
                    const double got = (*q)(h, 0, d), want = o[d] / l;
                    BOOST_TEST(std::abs(got - want) <= 2e-5 * (oa[d] / l) + 1e-7, "head " << h << ", d " << d << ": got " << got << ", want " << want);
                }
            }
        }
    }
    attend::detail::pretend_core(core_kind::automatic);
}

// bf16 Q, K and V with 3 to 15 queries: the decode nest's tile stages on pair dot products where
// the target has AVX-512 BF16 (P rounded to bf16: the bound of expect_bf16_attention), over a
// cache filled to a run-time length — empty, one key, eighths of a tile (37, 100), a tile's edge
// (255, 256, 257) and the capacity, whose last 44 keys are no whole block (float products) —;
// Q as a cast of floats the same bits as Q stored in bf16; and explain names the instructions.
namespace {
template <std::size_t HB, std::size_t NQ, std::size_t NK, std::size_t D>
void check_decode_pairs(int seed) {
    auto q = std::make_unique<tensor<bf16, HB, NQ, D>>();
    auto k = std::make_unique<tensor<bf16, HB, NK, D>>();
    auto v = std::make_unique<tensor<bf16, HB, NK, D>>();
    ref::fill(*q, seed);
    ref::fill(*k, seed + 1);
    ref::fill(*v, seed + 2);
    auto o = std::make_unique<tensor<float, HB, NQ, D>>();
    auto of = std::make_unique<tensor<float, HB, NQ, D>>();
    tensor<float, HB, NQ, D> qf = *q;
    const float scale = 1 / std::sqrt(float(D));
    const auto k0 = std::make_unique<tensor<bf16, HB, NK, D>>(*k), v0 = std::make_unique<tensor<bf16, HB, NK, D>>(*v);
    for (std::size_t len : {std::size_t(0), std::size_t(1), std::size_t(37), std::size_t(100), std::size_t(255), std::size_t(256),
                            std::size_t(257), NK}) {
        BOOST_TEST_CONTEXT("NQ " << NQ << ", D " << D << ", len " << len) {
            *k = *k0, *v = *v0;  // rows past len hold NaN and inf, and take no part
            for (std::size_t b = 0; b < HB; ++b)
                for (std::size_t j = len; j < NK; ++j)
                    for (std::size_t d = 0; d < D; ++d) (*k)(b, j, d) = bf16(INFINITY), (*v)(b, j, d) = bf16(d % 2 ? NAN : -INFINITY);
            const auto cut = attend::iota<2, HB, NQ, NK>() >= std::int64_t(len);
            *o = attend::matmul(attend::softmax(attend::masked_fill(attend::matmul(*q, attend::transpose(*k)) * scale, cut, -INFINITY)), *v);
            expect_bf16_attention(*o, *q, *k, *v, false, len);
            *of = attend::matmul(
                attend::softmax(attend::masked_fill(attend::matmul(attend::cast<bf16>(qf), attend::transpose(*k)) * scale, cut, -INFINITY)),
                *v);
            BOOST_TEST(std::memcmp(o->data(), of->data(), sizeof(*o)) == 0);
        }
    }
    const std::string how = attend::explain(attend::scaled_dot_product_attention(*q, *k, *v));
    BOOST_TEST((how.find("vdpbf16ps") != std::string::npos) == attend::simd::has_bf16_pair_dot, how);
}
}  // namespace

BOOST_AUTO_TEST_CASE(decode_pair_dots) {
    for (const int mode : {0, 1, 2}) {  // scores on AMX tiles where there are, pair products, float FMAs (use_products)
        use_products(mode);
        check_decode_pairs<2, 3, 300, 64>(130);
        check_decode_pairs<2, 4, 300, 128>(133);
        check_decode_pairs<1, 5, 300, 32>(136);
        check_decode_pairs<1, 15, 300, 64>(139);
    }
    use_products(-1);
}

// bf16 Q and K with 3 to 15 queries: where the target has AMX-BF16 and the OS grants the tiles,
// the decode nest's tile stages take their scores on tiles (exact products, float sums). Within
// the float bound of double, and of the vector stages' result, over a cache filled to a
// run-time length (whole 32-key steps on the tiles, the rest as before); explain says so.
namespace {
template <std::size_t NQ, std::size_t D>
void check_decode_amx_scores(int seed) {
    constexpr std::size_t HB = 2, NK = 300;
    auto q = std::make_unique<tensor<bf16, HB, NQ, D>>();
    auto k = std::make_unique<tensor<bf16, HB, NK, D>>();
    auto v = std::make_unique<tensor<float, HB, NK, D>>();
    ref::fill(*q, seed);
    ref::fill(*k, seed + 1);
    ref::fill(*v, seed + 2);
    auto o = std::make_unique<tensor<float, HB, NQ, D>>(), ov = std::make_unique<tensor<float, HB, NQ, D>>();
    for (std::size_t len : {std::size_t(0), std::size_t(1), std::size_t(31), std::size_t(32), std::size_t(255), std::size_t(256),
                            std::size_t(257), NK}) {
        BOOST_TEST_CONTEXT("NQ " << NQ << ", D " << D << ", len " << len) {
            const auto cut = attend::iota<2, HB, NQ, NK>() >= std::int64_t(len);
            const float scale = 1 / std::sqrt(float(D));
            auto run = [&](tensor<float, HB, NQ, D>& out, bool amx) {
                attend::simd::allow_amx(amx);
                out = attend::matmul(attend::softmax(attend::masked_fill(attend::matmul(*q, attend::transpose(*k)) * scale, cut, -INFINITY)), *v);
            };
            run(*ov, false);
            run(*o, true);
            attention_reference<tensor<bf16, HB, NQ, D>, tensor<bf16, HB, NK, D>, tensor<float, HB, NK, D>> want(*q, *k, *v, false, len);
            ref::expect_all(*o, [&](const ref::index& i) { return want(i[0], i[1], i[2]).first; }, 2e-5);
            ref::expect_all(*o, [&](const ref::index& i) { return double((*ov)(i[0], i[1], i[2])); }, 2e-5);
        }
    }
    attend::simd::allow_amx(true);
    const std::string how = attend::explain(attend::scaled_dot_product_attention(*q, *k, *v));
    BOOST_TEST((how.find("scores on AMX tiles") != std::string::npos) == attend::simd::has_amx_bf16, how);
}
}  // namespace

BOOST_AUTO_TEST_CASE(decode_scores_on_amx_tiles) {
    BOOST_WARN_MESSAGE(!attend::simd::has_amx_bf16 || attend::simd::use_amx(), "AMX-BF16 target, but the OS refused the tiles: not exercised");
    check_decode_amx_scores<3, 64>(140);
    check_decode_amx_scores<4, 128>(143);
    check_decode_amx_scores<15, 32>(146);
}

// Decode into the first rows of its own bf16 V or K (read in place while the result lands there):
// as if the right side came first, and the rows past them untouched. With bf16 Q, K is what the
// scores on AMX tiles read, where the target has them.
BOOST_AUTO_TEST_CASE(decode_into_its_bf16_cache) {
    constexpr std::size_t HKV = 2, G = 4, NMAX = 300, D = 128;
    auto q = std::make_unique<tensor<float, HKV, G, D>>();
    auto k = std::make_unique<tensor<bf16, HKV, NMAX, D>>(), v = std::make_unique<tensor<bf16, HKV, NMAX, D>>();
    ref::fill(*q, 120);
    ref::fill(*k, 121);
    ref::fill(*v, 122);
    const auto k0 = std::make_unique<tensor<bf16, HKV, NMAX, D>>(*k), v0 = std::make_unique<tensor<bf16, HKV, NMAX, D>>(*v);
    const auto cache_len = attend::iota<2, HKV, G, NMAX>() >= 291;
    // Q in float, and rounded to bf16 (the tile stages on pair dot products or AMX tiles where the
    // target has them); the result written into V, then into K
    auto check = [&](const auto& query, bool into_k) {
        *k = *k0, *v = *v0;
        auto& cache = into_k ? *k : *v;
        const auto& before = into_k ? *k0 : *v0;
        const tensor<bf16, HKV, G, D> want = attend::cast<bf16>(attend::scaled_dot_product_attention(query, *k0, *v0, cache_len));
        attend::slice<1, G>(cache, 0) = attend::cast<bf16>(attend::scaled_dot_product_attention(query, *k, *v, cache_len));
        std::size_t differ = 0, touched = 0;
        for (std::size_t h = 0; h < HKV; ++h)
            for (std::size_t j = 0; j < NMAX; ++j)
                for (std::size_t d = 0; d < D; ++d) {
                    const auto got = cache(h, j, d).to_bits();
                    if (j < G) differ += got != want(h, j, d).to_bits();
                    else touched += got != before(h, j, d).to_bits();
                }
        BOOST_TEST(differ == 0u, "into " << (into_k ? "K" : "V"));
        BOOST_TEST(touched == 0u, "into " << (into_k ? "K" : "V"));
    };
    for (const bool into_k : {false, true}) {
        check(*q, into_k);
        check(attend::cast<bf16>(*q), into_k);
    }
}

// An index mask that rounds through bf16: the interval analysis that skips key tiles or drops the
// mask must round the index range too (bf16(287) = 288: the tile of keys 240..287 is cut).
BOOST_AUTO_TEST_CASE(index_mask_through_bf16) {
    auto q = std::make_unique<tensor<float, 32, 16>>();
    auto k = std::make_unique<tensor<float, 320, 16>>();
    auto v = std::make_unique<tensor<float, 320, 16>>();
    ref::fill(*q, 61);
    ref::fill(*k, 62);
    ref::fill(*v, 63);
    auto j = attend::iota<1, 32, 320>();
    auto e = attend::matmul(
        attend::softmax(attend::masked_fill(attend::matmul(*q, attend::transpose(*k)) / 4.0f, attend::cast<bf16>(j) >= 288.0f, -INFINITY)),
        *v);
    static_assert(attend::plan_of<decltype(e)> == attend::plan::attention);
    tensor<float, 32, 16> o = e;
    ref::expect_all(o, [&](const ref::index& i) {
        double mx = -INFINITY, z = 0, acc = 0;
        std::vector<double> s(320);
        for (std::size_t c = 0; c < 320; ++c) {
            double d = 0;
            for (std::size_t x = 0; x < 16; ++x) d += double((*q)(i[0], x)) * double((*k)(c, x));
            s[c] = static_cast<float>(bf16(c)) >= 288.0f ? -INFINITY : d / 4.0;
            mx = std::max(mx, s[c]);
        }
        for (std::size_t c = 0; c < 320; ++c) {
            z += std::exp(s[c] - mx);
            acc += std::exp(s[c] - mx) * double((*v)(c, i[1]));
        }
        return acc / z;
    }, 2e-5);
}

// Layers over bf16 activations and weights compute in float: the same values as over the
// widened tensors; weights of 16 bits load, save and validate like float ones.
struct half_weights {
    BOOST_HANA_DEFINE_STRUCT(half_weights, (tensor<bf16, 8, 4>, w), (tensor<f16, 4>, g));
};

BOOST_AUTO_TEST_CASE(layers_and_weights) {
    tensor<bf16, 3, 4> x;
    tensor<bf16, 4> g;
    ref::fill(x, 81);
    ref::fill(g, 82);
    const tensor<float, 3, 4> xf = x;
    const tensor<float, 4> gf = g;
    const tensor<float, 3, 4> r = attend::nn::rms_norm(x, g), rf = attend::nn::rms_norm(xf, gf);
    const tensor<float, 3, 4> p = attend::nn::rope<4>(x, 5), pf = attend::nn::rope<4>(xf, 5);
    for (std::size_t i = 0; i < r.size; ++i) {
        BOOST_TEST(ref::close(r.data()[i], rf.data()[i], 1e-6));
        BOOST_TEST(ref::close(p.data()[i], pf.data()[i], 1e-6));
    }

    half_weights m, back;
    ref::fill(m.w, 83);
    ref::fill(m.g, 84);
    static_assert(attend::nn::byte_size<half_weights>() == 2 * (32 + 4));
    std::vector<std::byte> bytes(attend::nn::byte_size<half_weights>());
    BOOST_TEST(bool(attend::nn::save(m, bytes)));
    BOOST_TEST(bool(attend::nn::load(back, bytes, attend::nn::validation::finite)));
    for (std::size_t i = 0; i < m.w.size; ++i) BOOST_TEST(back.w.data()[i].to_bits() == m.w.data()[i].to_bits());
    bytes[bytes.size() - 1] = std::byte{0x7C};  // the last f16 becomes inf (little-endian 0x7C00)
    bytes[bytes.size() - 2] = std::byte{0x00};
    const auto res = attend::nn::load(back, bytes, attend::nn::validation::finite);
    BOOST_TEST((res.status == attend::nn::status::non_finite));
    BOOST_TEST(res.message.find("g[3] is not finite") != std::string::npos, res.message);
}

BOOST_AUTO_TEST_CASE(explain_names_the_conversions) {
    tensor<bf16, 4, 8> h;
    tensor<float, 4, 8> f;
    const std::string with = attend::explain(h * 2), without = attend::explain(f * 2);
    BOOST_TEST(with.find("16-bit conversions: ") != std::string::npos, with);
    BOOST_TEST(with.find("tensor<bf16>") != std::string::npos, with);
    BOOST_TEST(without.find("16-bit") == std::string::npos, without);
}

BOOST_AUTO_TEST_SUITE_END()
