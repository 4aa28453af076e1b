// Parallel attention (attend::parallel: OpenMP over batch x heads x query tiles) at 1 and 2
// threads, for (B=4, H=16, N=1024, d=64) and (B=1, H=8, N=4096, d=128). Parallel efficiency at
// 2 threads = t(1) / (2 t(2)). Built with attend::parallel when CMake finds OpenMP.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>
#include <memory>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "peak.hpp"

namespace {
template <std::size_t B, std::size_t H, std::size_t N, std::size_t D, int Threads>
void run(benchmark::State& state) {
#ifdef _OPENMP
    omp_set_num_threads(Threads);
#else
    if (Threads > 1) state.SkipWithError("built without OpenMP");
#endif
    using T = attend::tensor<float, B, H, N, D>;
    auto q = std::make_unique<T>(), k = std::make_unique<T>(), v = std::make_unique<T>(), o = std::make_unique<T>();
    for (std::size_t n = 0; n < T::size; ++n) {
        q->data()[n] = float(n % 13) * 0.05f - 0.3f;
        k->data()[n] = float(n % 7) * 0.07f - 0.2f;
        v->data()[n] = float(n % 5) - 2.0f;
    }
    for (auto _ : state) {
        *o = attend::scaled_dot_product_attention(*q, *k, *v);
        benchmark::DoNotOptimize(o->data());
        benchmark::ClobberMemory();
    }
    state.counters["FLOPS"] = benchmark::Counter(4.0 * B * H * N * N * D, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = Threads;
}
}  // namespace

BENCHMARK(bench::fma_peak);
BENCHMARK(run<4, 16, 1024, 64, 1>)->Name("parallel_1thread<4, 16, 1024, 64>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(run<4, 16, 1024, 64, 2>)->Name("parallel_2threads<4, 16, 1024, 64>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(run<1, 8, 4096, 128, 1>)->Name("parallel_1thread<1, 8, 4096, 128>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(run<1, 8, 4096, 128, 2>)->Name("parallel_2threads<1, 8, 4096, 128>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
