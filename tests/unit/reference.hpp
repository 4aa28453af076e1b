// Independent scalar reference for the unit tests: runtime index arithmetic in double precision,
// written without any of attend's shape machinery, so a bug there cannot hide in both.
#pragma once

#include <attend/attend.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ref {

// The sweeps over query counts, row counts and broadcast shapes run in full in g++'s native build;
// the builds for a second target of the same machine (unit.portable, unit.x86-64-v3: other vector
// widths and register counts), the aarch64 build and the sanitizers' build (memory errors sit at
// the edges) run their edges — each width's tails, one and two blocks, the largest — which keeps
// CI's compile time within its budget (ATTEND_TEST_SWEEP_EDGES, tests/CMakeLists.txt).
#ifdef ATTEND_TEST_SWEEP_EDGES
inline constexpr bool sweep_edges = true;
#else
inline constexpr bool sweep_edges = false;
#endif

// The query or row counts a sweep over 1 .. 17 visits.
using sweep_1_to_17 =
    std::conditional_t<sweep_edges, std::index_sequence<1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17>,
                       std::index_sequence<1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17>>;

using index = std::vector<std::size_t>;

// Runtime extents of a tensor or view.
template <class X>
std::vector<std::size_t> extents_of() {
    const auto e = X::shape_type::extents;
    return {e.begin(), e.end()};
}

// Element of `x` seen from output position `idx` (rank >= x's rank), NumPy broadcasting:
// right-aligned, extent-1 axes repeat. (No allocation: the matmul references call it ~10^8 times,
// which under qemu-aarch64 took minutes.)
template <class X, class Index>
double at_index(const X& x, const Index& idx) {
    constexpr auto ext = X::shape_type::extents;
    std::size_t off = 0;
    for (std::size_t k = 0; k < ext.size(); ++k) {
        const std::size_t i = idx.begin()[idx.size() - ext.size() + k];
        off = off * ext[k] + (ext[k] == 1 ? 0 : i);
    }
    return static_cast<double>(x.data()[off]);
}
template <class X>
double at(const X& x, const index& idx) {
    return at_index(x, idx);
}
template <class X>
double at(const X& x, std::initializer_list<std::size_t> idx) {
    return at_index(x, idx);
}

// Calls f(idx) for every index of the extents, row-major.
template <class F>
void for_each_index(const std::vector<std::size_t>& ext, F f) {
    std::size_t n = 1;
    for (auto e : ext) n *= e;
    index idx(ext.size(), 0);
    for (std::size_t flat = 0; flat < n; ++flat) {
        std::size_t r = flat;
        for (std::size_t k = ext.size(); k-- > 0;) {
            idx[k] = r % ext[k];
            r /= ext[k];
        }
        f(idx, flat);
    }
}

// Deterministic values in [lo, hi) (a small LCG; the tests must not depend on the platform's rand).
template <class X>
void fill(X& x, std::uint32_t seed, double lo = -2.0, double hi = 2.0) {
    std::uint32_t s = seed * 2654435761u + 12345u;
    for (std::size_t i = 0; i < X::size; ++i) {
        s = s * 1664525u + 1013904223u;
        const double u = static_cast<double>(s >> 8) / static_cast<double>(1u << 24);
        x.data()[i] = static_cast<typename X::value_type>(lo + (hi - lo) * u);
    }
}

// Is `got` within the tolerance of the double reference? NaN must meet NaN, infinities must be equal.
inline bool close(double got, double want, double rel) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::abs(got - want) <= rel * (1.0 + std::abs(want));
}

template <class T>
constexpr double tolerance = sizeof(T) == 4 ? 2e-6 : 1e-13;

// Checks got[i] against want[i] for every element (positions shown through the extents). Not a
// template: the Boost.Test reporting is compiled once, not once per checked expression.
inline void expect_values(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<std::size_t>& ext, double rel) {
    std::size_t bad = 0;
    for_each_index(ext, [&](const index& idx, std::size_t flat) {
        if (!close(got[flat], want[flat], rel) && bad++ < 5) {
            std::string where;
            for (auto i : idx) where += std::to_string(i) + ",";
            BOOST_ERROR("at (" << where << "): got " << got[flat] << ", want " << want[flat]);
        }
    });
    BOOST_CHECK_EQUAL(bad, 0u);
}

// Checks every element of `got` against want(idx) computed in double.
template <class Out, class Want>
void expect_all(const Out& got, Want want, double rel = tolerance<typename Out::value_type>) {
    const auto ext = extents_of<Out>();
    std::vector<double> g(Out::size), w(Out::size);
    for_each_index(ext, [&](const index& idx, std::size_t flat) {
        w[flat] = want(idx);
        g[flat] = static_cast<double>(got.data()[flat]);
    });
    expect_values(g, w, ext, rel);
}

}  // namespace ref
