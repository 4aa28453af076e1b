// attend/eval/parallel.hpp — opt-in parallel loops over independent work items.
//
// Serial unless the translation unit defines ATTEND_PARALLEL and is built with OpenMP (CMake:
// link attend::parallel). OpenMP sets how many threads run (OMP_NUM_THREADS,
// omp_set_num_threads); the items run on a team of attend's own, persistent workers that wait
// spinning (then asleep) and take items one at a time from a shared counter (a dynamic schedule,
// which balances causal attention). A one-token model step runs ~50 loops of a few microseconds,
// and an OpenMP region cost several times what the team's handshake does (docs/design.md).
// Work items never share output, so results are bit-identical to serial.
#pragma once

#include <cstddef>

#include "../config.hpp"

#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__unix__)
#include <pthread.h>
#endif
#endif

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
// True on a thread that is running items of a parallel_for (nested loops run serially there).
inline bool& in_parallel_loop() noexcept {
    thread_local bool inside = false;
    return inside;
}
#endif

// How many threads parallel_for may use: a plan splits its work into at least this many items
// when one item would otherwise be the whole of it. One inside a parallel loop or an active
// OpenMP region of the user's (more than one thread), where loops run serially (a split would only cost, and change decode's
// sums from a one-thread run's).
inline std::size_t worker_count() noexcept {
#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
    if (in_parallel_loop() || omp_in_parallel()) return 1;
    return static_cast<std::size_t>(omp_get_max_threads());
#else
    return 1;
#endif
}

#if defined(ATTEND_PARALLEL) && defined(_OPENMP)

// A pause for the loops that wait on another core.
inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// The team: workers 1 .. that run the items of one loop at a time beside the calling thread.
// A loop is posted by bumping `post`, a word that holds the loop's number and how many threads
// take part (so a worker that wakes late cannot mistake one loop's count for another's); the
// workers that take part add one to `finished` when the counter runs out.
class team {
public:
    static team& get() {
        static team t;
        return t;
    }
    // A child process of fork() has none of the workers: its loops run serially.
    team() {
#if defined(__unix__)
        pthread_atfork(nullptr, nullptr, [] { get().forked_ = true; });
#endif
    }
    team(const team&) = delete;
    team& operator=(const team&) = delete;
    ~team() {
        if (forked_) {  // the threads are the parent's: leave their handles be
            new std::vector<std::thread>(std::move(workers_));
            return;
        }
        post_.store(stop, std::memory_order_seq_cst);
        post_.notify_all();
        for (auto& w : workers_) w.join();
    }

    // Runs f(0) .. f(n - 1) on `threads` threads, this one included; false (nothing run) when
    // another thread has the team.
    template <class F>
    bool run(std::size_t n, std::size_t threads, F& f) {
        if (forked_) return false;
        std::unique_lock lock(m_, std::try_to_lock);
        if (!lock) return false;
        threads = std::min<std::size_t>(threads, max_threads);
        while (workers_.size() + 1 < threads) {
            const std::size_t index = workers_.size() + 1;
            workers_.emplace_back([this, index, seen = post_.load(std::memory_order_relaxed)] { work(index, seen); });
        }
        call_ = [](void* ctx, std::size_t i) { (*static_cast<F*>(ctx))(i); };
        ctx_ = &f;
        n_ = n;
        next_.store(0, std::memory_order_relaxed);
        finished_.store(0, std::memory_order_relaxed);
        loop_ += 1;
        post_.store(loop_ << 8 | threads, std::memory_order_seq_cst);  // threads <= max_threads: 8 bits
        if (sleepers_.load(std::memory_order_seq_cst) > 0) post_.notify_all();
        take_items();
        while (finished_.load(std::memory_order_acquire) + 1 < threads) spin_pause();
        return true;
    }

private:
    static constexpr std::uint64_t stop = ~std::uint64_t{0};
    static constexpr std::size_t max_threads = 255;
    // How long a worker spins for the next loop before it sleeps: the gaps between the loops
    // of a model step are a few to ~100 µs; a wake from sleep costs more than a loop.
    static constexpr std::chrono::microseconds spin_time{2000};

    void take_items() noexcept {
        for (std::size_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n_;) call_(ctx_, i);
    }

    // Waits until `post` differs from `seen`: spinning, then asleep.
    std::uint64_t next_post(std::uint64_t seen) noexcept {
        auto since = std::chrono::steady_clock::now();
        for (unsigned k = 1;; ++k) {
            const std::uint64_t p = post_.load(std::memory_order_acquire);
            if (p != seen) return p;
            spin_pause();
            if (k % 256 == 0 && std::chrono::steady_clock::now() - since > spin_time) {
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                post_.wait(seen, std::memory_order_seq_cst);
                sleepers_.fetch_sub(1, std::memory_order_seq_cst);
                since = std::chrono::steady_clock::now();
            }
        }
    }

    // A worker's life; `seen`: the last loop posted before it was started.
    void work(std::size_t index, std::uint64_t seen) noexcept {
        for (;;) {
            seen = next_post(seen);
            if (seen == stop) return;
            if (index < (seen & max_threads)) {
                take_items();
                finished_.fetch_add(1, std::memory_order_release);
            }
        }
    }

    std::mutex m_;
    bool forked_ = false;
    std::vector<std::thread> workers_;
    std::uint64_t loop_ = 0;
    void (*call_)(void*, std::size_t) = nullptr;
    void* ctx_ = nullptr;
    std::size_t n_ = 0;
    alignas(64) std::atomic<std::uint64_t> post_{0};
    alignas(64) std::atomic<std::size_t> next_{0};
    alignas(64) std::atomic<std::size_t> finished_{0};
    alignas(64) std::atomic<int> sleepers_{0};
};

#endif

// Runs f(0) ... f(n - 1); in parallel when enabled and `worth` it (enough work to pay for waking
// the threads), serially inside another parallel loop or an OpenMP region of the user's.
template <class F>
inline void parallel_for(std::size_t n, bool worth, F&& f) {
#if defined(ATTEND_PARALLEL) && defined(_OPENMP)
    const std::size_t threads = std::min(worker_count(), n);
    if (worth && threads > 1 && !in_parallel_loop() && !omp_in_parallel()) {
        auto item = [&f](std::size_t i) noexcept {
            in_parallel_loop() = true;
            f(i);
            in_parallel_loop() = false;
        };
        if (team::get().run(n, threads, item)) return;
    }
#else
    (void)worth;
#endif
    for (std::size_t i = 0; i < n; ++i) f(i);
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
