// Parallel evaluation (attend::parallel: OpenMP) at 1 and 2 threads: attention over batch x heads
// x query tiles for (B=4, H=16, N=1024, d=64) and (B=1, H=8, N=4096, d=128); a contraction over
// (column block, row panel) items for a 1024 x 1024 x 1024 matmul and a batched projection with an
// epilogue; a decode step (8 x 4 heads at len 8000, and one head group at len 64000, split across
// the threads), the read of the 8 x 4 step's cache (its floor) and a one-token matvec
// (4096 x 4096); decode_paired times the decode steps on one and two threads in turn. Parallel
// efficiency at 2 threads = t(1) / (2 t(2)). Built with attend::parallel
// when CMake finds OpenMP.
#include <attend/attend.hpp>
#include <benchmark/benchmark.h>
#include <memory>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "paired.hpp"
#include "peak.hpp"

namespace {
void threads(benchmark::State& state, int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    if (n > 1) state.SkipWithError("built without OpenMP");
#endif
    state.counters["threads"] = n;
}

template <std::size_t B, std::size_t H, std::size_t N, std::size_t D, int Threads>
void run(benchmark::State& state) {
    threads(state, Threads);
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
}

// out = matmul(x, w) (* 0.5 + bias when Epilogue), x (B, M, K), w (K, N).
template <std::size_t B, std::size_t M, std::size_t K, std::size_t N, bool Epilogue, int Threads>
void contraction(benchmark::State& state) {
    threads(state, Threads);
    auto x = std::make_unique<attend::tensor<float, B, M, K>>();
    auto w = std::make_unique<attend::tensor<float, K, N>>();
    auto o = std::make_unique<attend::tensor<float, B, M, N>>();
    attend::tensor<float, N> bias;
    for (std::size_t n = 0; n < B * M * K; ++n) x->data()[n] = float(n % 13) * 0.05f - 0.3f;
    for (std::size_t n = 0; n < K * N; ++n) w->data()[n] = float(n % 7) * 0.07f - 0.2f;
    for (std::size_t n = 0; n < N; ++n) bias.data()[n] = float(n % 3);
    for (auto _ : state) {
        if constexpr (Epilogue) *o = attend::matmul(*x, *w) * 0.5f + bias;
        else *o = attend::matmul(*x, *w);
        benchmark::DoNotOptimize(o->data());
        benchmark::ClobberMemory();
    }
    state.counters["FLOPS"] = benchmark::Counter(2.0 * B * M * K * N, benchmark::Counter::kIsIterationInvariantRate);
}
// One decode step: G queries per KV head over a cache filled to len (8 x 4 heads: a work item per
// head; 1 x 4: the keys split across the threads and merged by log-sum-exp).
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX>
struct decode_step {
    std::unique_ptr<attend::tensor<float, HKV, G, D>> q = std::make_unique<attend::tensor<float, HKV, G, D>>(),
                                                      o = std::make_unique<attend::tensor<float, HKV, G, D>>();
    std::unique_ptr<attend::tensor<float, HKV, NMAX, D>> k = std::make_unique<attend::tensor<float, HKV, NMAX, D>>(),
                                                         v = std::make_unique<attend::tensor<float, HKV, NMAX, D>>();
    decode_step() {
        for (std::size_t n = 0; n < q->size; ++n) q->data()[n] = float(n % 13) * 0.05f - 0.3f;
        for (std::size_t n = 0; n < k->size; ++n) k->data()[n] = float(n % 7) * 0.07f - 0.2f, v->data()[n] = float(n % 5) - 2.0f;
    }
    void operator()(int len) {
        *o = attend::scaled_dot_product_attention(*q, *k, *v, attend::iota<2, HKV, G, NMAX>() >= len);
        benchmark::DoNotOptimize(o->data());
        benchmark::ClobberMemory();
    }
};

template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN, int Threads>
void decode(benchmark::State& state) {
    threads(state, Threads);
    decode_step<HKV, G, D, NMAX> step;
    for (auto _ : state) step(LEN);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * HKV * LEN * D * sizeof(float)));
}

// The same step on one thread (the iteration time) and on two, in turn, the order swapped every
// iteration (bench/paired.hpp): one_per_two_threads, the speed-up, with the host's drift cancelled.
template <std::size_t HKV, std::size_t G, std::size_t D, std::size_t NMAX, std::size_t LEN>
void decode_paired(benchmark::State& state) {
    decode_step<HKV, G, D, NMAX> step;
    auto on = [&](int n) { return [&step, n, &state] { threads(state, n), step(LEN); }; };
    const auto sum = bench::time_in_turn(state, {on(1), on(2)}, 0, {0, 1}, [](auto& order) { std::swap(order[0], order[1]); });
    state.counters.erase("threads");
    state.counters["one_per_two_threads"] = sum[0] / sum[1];
}

// One-token matvec y = x W^T, W (N, K): panels of the weight split across the threads.
template <std::size_t K, std::size_t N, int Threads>
void matvec(benchmark::State& state) {
    threads(state, Threads);
    auto x = std::make_unique<attend::tensor<float, 1, K>>();
    auto w = std::make_unique<attend::tensor<float, N, K>>();
    auto y = std::make_unique<attend::tensor<float, 1, N>>();
    for (std::size_t n = 0; n < K; ++n) x->data()[n] = float(n % 13) * 0.05f - 0.3f;
    for (std::size_t n = 0; n < N * K; ++n) w->data()[n] = float(n % 7) * 0.07f - 0.2f;
    for (auto _ : state) {
        *y = attend::matmul(*x, attend::transpose(*w));
        benchmark::DoNotOptimize(y->data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * N * K * sizeof(float)));
}

// The floor of the decode steps at 1 and 2 threads: the cache's bytes (2 x HKV x LEN x D floats)
// read once, each thread its half (bench::read_once), so that a step's speed-up can be set beside
// the memory's own.
template <std::size_t HKV, std::size_t D, std::size_t LEN, int Threads>
void read_floor(benchmark::State& state) {
    threads(state, Threads);
    constexpr std::size_t n = 2 * HKV * LEN * D, half = n / 2;
    const auto buffer = attend::make_huge<attend::tensor<float, n>>();
    float* w = buffer->data();
    for (std::size_t k = 0; k < n; ++k) w[k] = float(k % 7) * 0.07f;
    for (auto _ : state) {
        float total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
        for (int t = 0; t < 2; ++t) total += bench::read_once(w + t * half, half);
        benchmark::DoNotOptimize(total);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}
}  // namespace

BENCHMARK(bench::fma_peak);
BENCHMARK(run<4, 16, 1024, 64, 1>)->Name("parallel_1thread<4, 16, 1024, 64>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(run<4, 16, 1024, 64, 2>)->Name("parallel_2threads<4, 16, 1024, 64>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(run<1, 8, 4096, 128, 1>)->Name("parallel_1thread<1, 8, 4096, 128>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(run<1, 8, 4096, 128, 2>)->Name("parallel_2threads<1, 8, 4096, 128>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(contraction<1, 1024, 1024, 1024, false, 1>)->Name("matmul_1thread<1024, 1024, 1024>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(contraction<1, 1024, 1024, 1024, false, 2>)->Name("matmul_2threads<1024, 1024, 1024>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(contraction<4, 256, 512, 512, true, 1>)->Name("projection_1thread<4, 256, 512, 512>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(contraction<4, 256, 512, 512, true, 2>)->Name("projection_2threads<4, 256, 512, 512>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(decode<8, 4, 128, 8192, 8000, 1>)->Name("decode_1thread<8, 4, 128, 8192, 8000>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(decode<8, 4, 128, 8192, 8000, 2>)->Name("decode_2threads<8, 4, 128, 8192, 8000>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(decode<1, 4, 128, 65536, 64000, 1>)->Name("decode_1thread<1, 4, 128, 65536, 64000>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(decode<1, 4, 128, 65536, 64000, 2>)->Name("decode_2threads<1, 4, 128, 65536, 64000>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(decode_paired<8, 4, 128, 8192, 8000>)->Name("decode_paired<8, 4, 128, 8192, 8000>")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(decode_paired<1, 4, 128, 65536, 64000>)->Name("decode_paired<1, 4, 128, 65536, 64000>")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(read_floor<8, 128, 8000, 1>)->Name("decode_floor_1thread<8, 4, 128, 8192, 8000>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(read_floor<8, 128, 8000, 2>)->Name("decode_floor_2threads<8, 4, 128, 8192, 8000>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(matvec<4096, 4096, 1>)->Name("matvec_1thread<4096, 4096>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(matvec<4096, 4096, 2>)->Name("matvec_2threads<4096, 4096>")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
