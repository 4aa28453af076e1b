// Steps timed in turn: each iteration runs every step once, in an order that changes from one
// iteration to the next, so that ratios of their summed times cancel the drift of a shared host
// (the paired benchmarks of bench/decode and bench/llama2).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

namespace bench {

// Runs `steps` in turn within every iteration, first in `order`, then in the order `next` makes
// of it after each iteration; the seconds each step has taken over all iterations. The iteration
// time is step `timed`'s.
template <class Next>
std::vector<double> time_in_turn(benchmark::State& state, const std::vector<std::function<void()>>& steps, std::size_t timed,
                                 std::vector<std::size_t> order, Next next) {
    std::vector<double> sum(steps.size());
    for (auto _ : state) {
        double timed_seconds = 0;
        for (const std::size_t which : order) {
            const auto t0 = std::chrono::steady_clock::now();
            steps[which]();
            benchmark::ClobberMemory();
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            sum[which] += t;
            if (which == timed) timed_seconds = t;
        }
        next(order);
        state.SetIterationTime(timed_seconds);
    }
    return sum;
}

}  // namespace bench
