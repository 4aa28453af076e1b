// attend/eval/machine.hpp — the properties of the running machine a plan asks for at run time:
// how many ways its L1 data cache has, how large its last-level cache is, from which size a stream
// gains from requests ahead, whether it is an Intel core, and whether it is an AMD core of family
// 26 (Zen 5) or later, whose prefetchers outrun requests tuned on Zen 4 (or, for tests, which of
// those to pretend). Everything else (vector width, registers) is fixed by the build's target
// flags; cache geometry is not, and -march=native on a CPU the compiler does not know (g++ 12 on
// Zen 5 reports znver3) says nothing about it.
#pragma once

#include <atomic>
#include <cstddef>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace attend::detail {

// One cache as CPUID's cache-parameter leaves describe it (Intel's 4, AMD's 0x8000001D, same
// format): the first entry of `level` that holds data (type 1 data, 3 unified). Zeros if none.
struct cache_geometry {
    unsigned ways = 0;
    std::size_t bytes = 0;
};
inline cache_geometry cache_at_level(unsigned level) noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    const unsigned leaves[] = {4u, 0x8000001Du};
    for (const unsigned leaf : leaves) {
        if (static_cast<unsigned>(__get_cpuid_max(leaf & 0x80000000u, nullptr)) < leaf) continue;
        for (unsigned sub = 0; sub < 8; ++sub) {
            unsigned a = 0, b = 0, c = 0, d = 0;
            __cpuid_count(leaf, sub, a, b, c, d);
            const unsigned type = a & 31;
            if (type == 0) break;
            if ((type == 1 || type == 3) && ((a >> 5) & 7) == level) {
                const unsigned ways = (b >> 22) + 1;  // x partitions x line size x sets
                return {ways, std::size_t{ways} * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (std::size_t{c} + 1)};
            }
        }
    }
#else
    (void)level;
#endif
    return {};
}

// Ways of the L1 data cache (else AMD's leaf 0x80000005), 0 if unknown.
inline unsigned l1d_ways() noexcept {
    static const unsigned ways = [] {
        if (const unsigned w = cache_at_level(1).ways; w != 0) return w;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (__get_cpuid(0x80000005, &a, &b, &c, &d)) return (c >> 16) & 0xffu;
#endif
        return 0u;
    }();
    return ways;
}

// Bytes of the L3 cache one core reaches (AMD's 0x80000006 gives the whole socket's: 384 MiB on
// a 32 MiB CCD here), or 32 MiB if unknown.
inline std::size_t l3_bytes() noexcept {
    static const std::size_t bytes = [] {
        const std::size_t b = cache_at_level(3).bytes;
        return b != 0 ? b : std::size_t{32} << 20;
    }();
    return bytes;
}

// CPUID leaf 0's vendor string as its three registers (ebx, edx, ecx), zeros if unknown.
struct cpu_vendor {
    unsigned b = 0, d = 0, c = 0;
    bool is(const char (&name)[13]) const noexcept {  // "GenuineIntel", "AuthenticAMD"
        auto word = [&](int i) {
            return unsigned(static_cast<unsigned char>(name[i])) | unsigned(static_cast<unsigned char>(name[i + 1])) << 8 |
                   unsigned(static_cast<unsigned char>(name[i + 2])) << 16 | unsigned(static_cast<unsigned char>(name[i + 3])) << 24;
        };
        return b == word(0) && d == word(4) && c == word(8);
    }
};
inline cpu_vendor vendor() noexcept {
    static const cpu_vendor v = [] {
        cpu_vendor r;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        unsigned a = 0;
        if (!__get_cpuid(0, &a, &r.b, &r.c, &r.d)) r = {};
#endif
        return r;
    }();
    return v;
}

// The core the run-time choices below take: the machine's own (`automatic`), or another's, so
// that tests run every choice's code on any machine (`pretend_core`, tests only).
enum class core_kind { automatic, intel, amd_zen5, other };
inline std::atomic<core_kind>& pretended_core() noexcept {
    static std::atomic<core_kind> kind{core_kind::automatic};
    return kind;
}
inline void pretend_core(core_kind kind) noexcept { pretended_core().store(kind, std::memory_order_relaxed); }

// Whether this is an AMD core of family 0x1A (Zen 5) or later (leaf 1's family: base plus
// extended). Its hardware prefetchers stream a weight's rows faster without software requests
// that Zen 4 gained from (docs/performance.md, 2026-11-28 Zen 5).
inline bool amd_zen5_or_later() noexcept {
    if (const core_kind k = pretended_core().load(std::memory_order_relaxed); k != core_kind::automatic) return k == core_kind::amd_zen5;
    static const bool yes = [] {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!vendor().is("AuthenticAMD") || !__get_cpuid(1, &a, &b, &c, &d)) return false;
        const unsigned base = (a >> 8) & 0xfu, family = base == 0xfu ? base + ((a >> 20) & 0xffu) : base;
        return family >= 0x1Au;
#else
        return false;
#endif
    }();
    return yes;
}

// Whether this is an Intel core.
inline bool intel_core() noexcept {
    if (const core_kind k = pretended_core().load(std::memory_order_relaxed); k != core_kind::automatic) return k == core_kind::intel;
    return vendor().is("GenuineIntel");
}

// Bytes from which a stream gains from software requests of its rows ahead: the L3's size, at
// most 32 MiB. A core of a large shared L3 reads it at nearly DRAM's rate (an Intel Xeon VM: 480
// MiB of L3 read at 28 GB/s, DRAM at 15), and requests paid there from 32 MiB, not at 8 MiB.
inline std::size_t request_ahead_bytes() noexcept {
    return l3_bytes() < (std::size_t{32} << 20) ? l3_bytes() : std::size_t{32} << 20;
}

}  // namespace attend::detail
