// attend/eval/machine.hpp — the properties of the running machine a plan asks for at run time:
// how many ways its L1 data cache has, and how large its last-level cache is. Everything else
// (vector width, registers) is fixed by the build's target flags; cache geometry is not, and
// -march=native on a CPU the compiler does not know (g++ 12 on Zen 5 reports znver3) says
// nothing about it.
#pragma once

#include <cstddef>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace attend::detail {

// Ways of the L1 data cache from CPUID (Intel's leaf 4, else AMD's leaf 0x80000005), 0 if unknown.
inline unsigned l1d_ways() noexcept {
    static const unsigned ways = [] {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (__get_cpuid_max(0, nullptr) >= 4) {
            for (unsigned sub = 0; sub < 8; ++sub) {
                __cpuid_count(4, sub, a, b, c, d);
                const unsigned type = a & 31, level = (a >> 5) & 7;
                if (type == 0) break;
                if (type == 1 && level == 1) return (b >> 22) + 1;  // data cache, level 1
            }
        }
        if (__get_cpuid(0x80000005, &a, &b, &c, &d)) return (c >> 16) & 0xffu;
#endif
        return 0u;
    }();
    return ways;
}

// Bytes of the L3 cache one core reaches, from CPUID's cache-parameter leaf (Intel's 4, AMD's
// 0x8000001D: one CCD's L3, where 0x80000006 gives the whole socket's), or 32 MiB if unknown.
inline std::size_t l3_bytes() noexcept {
    static const std::size_t bytes = [] {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        const unsigned leaves[] = {4u, 0x8000001Du};
        for (const unsigned leaf : leaves) {
            unsigned a = 0, b = 0, c = 0, d = 0;
            if (static_cast<unsigned>(__get_cpuid_max(leaf & 0x80000000u, nullptr)) < leaf) continue;
            for (unsigned sub = 0; sub < 8; ++sub) {
                __cpuid_count(leaf, sub, a, b, c, d);
                const unsigned type = a & 31, level = (a >> 5) & 7;
                if (type == 0) break;
                if (level == 3)  // ways x partitions x line size x sets
                    return std::size_t{(b >> 22) + 1} * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (std::size_t{c} + 1);
            }
        }
#endif
        return std::size_t{32} << 20;
    }();
    return bytes;
}

}  // namespace attend::detail
