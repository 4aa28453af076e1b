// Tokens per second of the llama2 example's model (examples/llama2/model.hpp) beside a per-token
// loop in the style of llama2.c's run.c (bench/runc/runc.c, C built by the C compiler -Ofast
// -march=native, as llama2.c's Makefile builds `runfast` with gcc: tokens_runc; the same source
// as C++ by this build's compiler: tokens_runc_cxx; the context names both compilers), and
// the floor: reading the checkpoint's weight bytes once per token (four streams, as the matvecs
// read). Random checkpoints of the stories15M config and of a grouped-query config, built in
// memory. Each iteration generates a sequence of 128 tokens (positions 0..127), so attention over
// the growing cache counts as it does in generation. Threads: the argument (1 or 2; OpenMP); the
// floor with 2 threads has each read half the bytes (what two cores can read together).
//
// main() first checks that both implementations give the same logits (1e-4 of the largest) on the
// first 8 steps, and refuses to time them otherwise.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <vector>
#include <xsimd/xsimd.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "llama2/model.hpp"
#include "paired.hpp"
#include "peak.hpp"

extern "C" {
#include "runc/runc.h"
}
namespace runc_cxx {
#include "runc/runc.h"
}

namespace {

constexpr int sequence = 128;

// The checkpoint in memory, on huge pages as the attend models are (the run.c-style loop and the
// floor read it).
using bytes = std::vector<std::byte, attend::huge_allocator<std::byte>>;

void set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

// A llama2.c checkpoint of config C with deterministic random weights (own classifier if !shared).
template <class C>
bytes checkpoint(bool shared) {
    bytes b(llama2::file_bytes<C>(shared));
    int h[7];
    std::memcpy(h, C::header, sizeof h);
    if (!shared) h[5] = -h[5];
    std::memcpy(b.data(), h, sizeof h);
    const std::size_t n = (b.size() - llama2::header_bytes) / sizeof(float);
    std::vector<float> w(n);
    std::uint32_t s = 12345;
    for (auto& x : w) {
        s = s * 1664525u + 1013904223u;
        x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
    // RMSNorm weights near 1, so activations keep their scale through the layers.
    auto ones = [&](std::size_t at, std::size_t count) {
        for (std::size_t k = 0; k < count; ++k) w[at + k] += 1.0f;
    };
    const std::size_t V = C::vocab, D = C::dim, L = C::layers, KV = C::kv_dim, F = C::hidden;
    const std::size_t rms_att = V * D, rms_ffn = rms_att + L * D + L * D * D * 2 + L * KV * D * 2;
    ones(rms_att, L * D);
    ones(rms_ffn, L * D);
    ones(rms_ffn + L * D + 3 * L * F * D, D);
    std::memcpy(b.data() + llama2::header_bytes, w.data(), n * sizeof(float));
    return b;
}

template <class C>
struct fixture {
    bytes file;
    attend::huge_ptr<llama2::model<C>> attend_model = attend::make_huge<llama2::model<C>>();
    attend::huge_ptr<llama2::model<C, attend::bf16>> attend_bf16 = attend::make_huge<llama2::model<C, attend::bf16>>();
    // The run.c-style loop built by the C compiler, and by this build's C++ compiler.
    std::unique_ptr<runc_model, void (*)(runc_model*)> runc{nullptr, runc_free};
    std::unique_ptr<runc_cxx::runc_model, void (*)(runc_cxx::runc_model*)> runc_cxx{nullptr, runc_cxx::runc_free};
    explicit fixture(bool shared) : file(checkpoint<C>(shared)) {
        if (auto e = attend_model->load(file, shared); !e.empty()) std::fprintf(stderr, "load: %s\n", e.c_str()), std::exit(1);
        if (auto e = attend_bf16->load(file, shared); !e.empty()) std::fprintf(stderr, "load: %s\n", e.c_str()), std::exit(1);
        const float* w = reinterpret_cast<const float*>(file.data() + llama2::header_bytes);
        const int* h = C::header;
        runc.reset(runc_make(h[0], h[1], h[2], h[3], h[4], shared ? h[5] : -h[5], h[6], w));
        runc_cxx.reset(runc_cxx::runc_make(h[0], h[1], h[2], h[3], h[4], shared ? h[5] : -h[5], h[6], w));
        if (!runc || !runc_cxx) std::fprintf(stderr, "run.c-style loop: out of memory\n"), std::exit(1);
    }
    // The bytes a token's step must read: every weight but the RoPE tables (and the embedding
    // table, of which a step reads one row, unless it is also the classifier).
    std::size_t weight_bytes(bool shared) const {
        return file.size() - llama2::header_bytes - C::seq_len * C::head * sizeof(float) -
               (shared ? 0 : C::vocab * C::dim * sizeof(float));
    }
};

template <class C>
fixture<C>& get(bool shared) {
    static fixture<C> f(shared);
    return f;
}

int next_token(int t) { return static_cast<int>((static_cast<unsigned>(t) * 2654435761u + 7u) % 32000u); }

// A sequence of `sequence` tokens through the attend model with float weights and cache, or
// (Half) with both in bf16.
template <class C, bool Half = false>
void attend_sequence(fixture<C>& f) {
    int t = 1;
    for (int p = 0; p < sequence; ++p) {
        t = next_token(t);
        if constexpr (Half) benchmark::DoNotOptimize(f.attend_bf16->forward(t, p));
        else benchmark::DoNotOptimize(f.attend_model->forward(t, p));
    }
}

// The same sequence through the run.c-style loop as the C compiler built it, or (Cxx) as this
// build's C++ compiler did.
template <class C, bool Cxx = false>
void runc_sequence(fixture<C>& f) {
    int t = 1;
    for (int p = 0; p < sequence; ++p) {
        t = next_token(t);
        if constexpr (Cxx) benchmark::DoNotOptimize(runc_cxx::runc_forward(f.runc_cxx.get(), t, p));
        else benchmark::DoNotOptimize(runc_forward(f.runc.get(), t, p));
    }
}

// One token's floor: the weight bytes read once (with two threads: each reads half); Half: the
// bytes of bf16 weights (half as many).
template <class C>
void floor_token(fixture<C>& f, bool shared, int threads, bool half = false) {
    const float* w = reinterpret_cast<const float*>(f.file.data() + llama2::header_bytes);
    const std::size_t n = f.weight_bytes(shared) / sizeof(float) / (half ? 2 : 1);
    float s = 0;
    if (threads == 1) {
        s = bench::read_once(w, n);
    } else {
#pragma omp parallel for num_threads(2) reduction(+ : s)
        for (int t = 0; t < 2; ++t) s += bench::read_once(w + std::size_t(t) * (n / 2), t == 0 ? n / 2 : n - n / 2);
    }
    benchmark::DoNotOptimize(s);
}

template <class C, bool Shared, bool Half = false>
void attend_tokens(benchmark::State& state) {
    auto& f = get<C>(Shared);
    set_threads(static_cast<int>(state.range(0)));
    for (auto _ : state) attend_sequence<C, Half>(f);
    state.SetItemsProcessed(state.iterations() * sequence);
    set_threads(1);
}

template <class C, bool Shared, bool Cxx = false>
void runc_tokens(benchmark::State& state) {
    auto& f = get<C>(Shared);
    set_threads(static_cast<int>(state.range(0)));
    for (auto _ : state) runc_sequence<C, Cxx>(f);
    state.SetItemsProcessed(state.iterations() * sequence);
    set_threads(1);
}

template <class C, bool Shared, bool Half = false>
void floor_tokens(benchmark::State& state) {
    auto& f = get<C>(Shared);
    for (auto _ : state) floor_token(f, Shared, static_cast<int>(state.range(0)), Half);
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * f.weight_bytes(Shared) / (Half ? 2 : 1)));
}

// The ratios of the goals, from steps timed in turn in an order shuffled every iteration
// (bench/paired.hpp): attend on one thread (the iteration time), on two, with bf16 weights and
// cache, both builds of the run.c-style loop, and the floor (a token's weights read once, as many
// times as the sequence has tokens). Each counter is named for the quotient of summed times it is.
template <class C, bool Shared>
void paired_tokens(benchmark::State& state) {
    auto& f = get<C>(Shared);
    auto threads = [](int n, auto step) { return [n, step] { set_threads(n), step(), set_threads(1); }; };
    const std::vector<std::function<void()>> steps = {
        threads(1, [&] { attend_sequence<C>(f); }),
        threads(2, [&] { attend_sequence<C>(f); }),
        [&] { attend_sequence<C, true>(f); },
        [&] { runc_sequence<C>(f); },
        [&] { runc_sequence<C, true>(f); },
        [&] { for (int p = 0; p < sequence; ++p) floor_token(f, Shared, 1); },
    };
    std::vector<std::size_t> order(steps.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937 rng(7);
    const auto sum = bench::time_in_turn(state, steps, 0, order, [&](auto& o) { std::shuffle(o.begin(), o.end(), rng); });
    state.counters["runc_per_attend"] = sum[3] / sum[0];
    state.counters["runc_cxx_per_attend"] = sum[4] / sum[0];
    state.counters["attend_per_floor"] = sum[0] / sum[5];
    state.counters["one_per_two_threads"] = sum[0] / sum[1];
    state.counters["float_per_bf16"] = sum[0] / sum[2];
}

// The implementations agree on the first steps of a sequence (fresh caches: positions 0..7): the
// float model and the C++ build of the loop within 1e-4 of the C build's largest logit, the bf16
// model within 3e-2 (its weights carry 8 bits; tests/model checks it exactly).
template <class C, bool Shared>
bool agree(const char* name) {
    fixture<C> f(Shared);
    int t = 1;
    for (int p = 0; p < 8; ++p) {
        t = next_token(t);
        const float* a = f.attend_model->forward(t, p);
        const float* h = f.attend_bf16->forward(t, p);
        const float* r = runc_forward(f.runc.get(), t, p);
        const float* x = runc_cxx::runc_forward(f.runc_cxx.get(), t, p);
        double scale = 0, err = 0, err_h = 0, err_x = 0;
        for (std::size_t v = 0; v < C::vocab; ++v) {
            scale = std::max(scale, double(std::abs(r[v])));
            err = std::max(err, double(std::abs(a[v] - r[v])));
            err_h = std::max(err_h, double(std::abs(h[v] - r[v])));
            err_x = std::max(err_x, double(std::abs(x[v] - r[v])));
        }
        if (!(err <= 1e-4 * scale) || !(err_h <= 3e-2 * scale) || !(err_x <= 1e-4 * scale)) {
            std::fprintf(stderr, "%s: attend (float: %g, bf16: %g) or the loop's C++ build (%g) and its C build differ at step %d (scale %g)\n",
                         name, err, err_h, err_x, p, scale);
            return false;
        }
    }
    return true;
}

template <class C, bool Shared>
void register_config(const char* name) {
    const std::string n = name;
    for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(("tokens_attend/" + n).c_str(), attend_tokens<C, Shared>)->Arg(threads)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("tokens_runc/" + n).c_str(), runc_tokens<C, Shared>)->Arg(threads)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("tokens_runc_cxx/" + n).c_str(), runc_tokens<C, Shared, true>)->Arg(threads)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("tokens_floor/" + n).c_str(), floor_tokens<C, Shared>)->Arg(threads)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("tokens_attend_bf16/" + n).c_str(), attend_tokens<C, Shared, true>)->Arg(threads)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("tokens_floor_bf16/" + n).c_str(), floor_tokens<C, Shared, true>)->Arg(threads)->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark(("tokens_paired/" + n).c_str(), paired_tokens<C, Shared>)
        ->UseManualTime()
        ->Iterations(8)
        ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
    set_threads(1);
    if (!agree<llama2::stories15M, true>("stories15M") || !agree<llama2::gqa512, false>("gqa512")) return 1;
    register_config<llama2::stories15M, true>("stories15M");
    register_config<llama2::gqa512, false>("gqa512");
    benchmark::AddCustomContext("runc_compiler", runc_compiler());
    benchmark::AddCustomContext("runc_cxx_compiler", runc_cxx::runc_compiler());
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
