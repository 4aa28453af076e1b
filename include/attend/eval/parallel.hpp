// attend/eval/parallel.hpp — opt-in parallel loops over independent work items.
//
// Serial unless the translation unit defines ATTEND_PARALLEL and is built with OpenMP (CMake:
// link attend::parallel). OpenMP because it is the established runtime of both compilers here
// (GCC's libgomp, LLVM's libomp), costs nothing when absent (the pragma is compiled out, no
// library is linked), and its dynamic schedule balances causal attention, where later query
// tiles have more keys. Work items never share output, so results are bit-identical to serial.
#pragma once

#include <cstddef>

#include "../config.hpp"

#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
#include <omp.h>
#endif

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// How many threads parallel_for may use: a plan splits its work into at least this many items
// when one item would otherwise be the whole of it.
inline std::size_t worker_count() noexcept {
#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
    return static_cast<std::size_t>(omp_get_max_threads());
#else
    return 1;
#endif
}

// Runs f(0) ... f(n - 1); in parallel when enabled and `worth` it (enough work to pay for waking
// the threads).
template <class F>
inline void parallel_for(std::size_t n, bool worth, F&& f) {
#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
    if (worth && n > 1) {
#pragma omp parallel for schedule(dynamic, 1)
        for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) f(static_cast<std::size_t>(i));
        return;
    }
#else
    (void)worth;
#endif
    for (std::size_t i = 0; i < n; ++i) f(i);
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
