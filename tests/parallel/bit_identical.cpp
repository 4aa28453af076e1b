// Parallel evaluation (OpenMP, ATTEND_PARALLEL) gives bit-identical results to one thread:
// fused attention (plain, causal, GQA), contractions (batched with an epilogue, several k blocks
// and a column tail; a packed B panel), one-row matvecs in both weight layouts, and elementwise
// trees (dense, broadcast, index-generated), at sizes above the parallel threshold; decode over
// eight KV heads too, and decode split across threads within a bound (its merge reassociates),
// but not split inside the user's OpenMP region (bit-identical to one thread there).
// The team that runs the loops: items reach a second thread, nested loops and loops inside the
// user's OpenMP region run serially, loops from two threads at once both finish, the team wakes
// after sleeping, and a forked child's loops run serially. A plain main.
#include <attend/attend.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <omp.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>
#include <thread>
#include <vector>

namespace {
template <class T>
void fill(T& t, unsigned seed) {
    unsigned s = seed;
    for (std::size_t k = 0; k < T::size; ++k) {
        s = s * 1664525u + 1013904223u;
        t.data()[k] = static_cast<float>(s >> 8) / float(1u << 24) * 2.0f - 1.0f;
    }
}

template <class Out, class Make>
bool identical(const char* what, Make&& make) {
    auto one = std::make_unique<Out>(), two = std::make_unique<Out>();
    omp_set_num_threads(1);
    *one = make();
    omp_set_num_threads(2);
    *two = make();
    const bool same = std::memcmp(one->data(), two->data(), sizeof(float) * Out::size) == 0;
    std::printf("%s: %s\n", what, same ? "bit-identical" : "DIFFERENT");
    return same;
}
// The same within `tol` (relative to the largest magnitude): split-KV decode merges its parts in
// an order that depends on the thread count.
template <class Out, class Make>
bool close_enough(const char* what, double tol, Make&& make) {
    auto one = std::make_unique<Out>(), two = std::make_unique<Out>();
    omp_set_num_threads(1);
    *one = make();
    omp_set_num_threads(2);
    *two = make();
    double err = 0, mag = 0;
    for (std::size_t n = 0; n < Out::size; ++n) {
        err = std::max(err, double(std::abs(one->data()[n] - two->data()[n])));
        mag = std::max(mag, double(std::abs(one->data()[n])));
    }
    const bool ok = err <= tol * mag && mag > 0;
    std::printf("%s: max difference %g of %g (%s)\n", what, err, mag, ok ? "within the bound" : "TOO FAR");
    return ok;
}

using attend::detail::parallel_for;
using namespace std::chrono_literals;

// How many threads ran a loop of n items that each take `busy`; 0 when some item did not run
// exactly once.
std::size_t threads_used(std::size_t n, std::chrono::microseconds busy) {
    std::vector<std::thread::id> who(n);
    std::vector<int> runs(n, 0);
    parallel_for(n, true, [&](std::size_t i) {
        const auto until = std::chrono::steady_clock::now() + busy;
        while (std::chrono::steady_clock::now() < until) {
        }
        who[i] = std::this_thread::get_id();
        runs[i] += 1;
    });
    const bool once = std::all_of(runs.begin(), runs.end(), [](int r) { return r == 1; });
    return once ? std::set<std::thread::id>(who.begin(), who.end()).size() : 0;
}

// Busy items run on both threads, each once.
bool team_spreads(const char* what, std::size_t n, std::chrono::microseconds busy) {
    const std::size_t threads = threads_used(n, busy);
    std::printf("team, %s: %zu items on %zu threads (%s)\n", what, n, threads, threads == 2 ? "ok" : "WRONG");
    return threads == 2;
}

// The sum of 0 .. n - 1 by a loop of n items, each adding its index (atomically).
std::size_t sum_by_loop(std::size_t n, bool nested = false) {
    std::atomic<std::size_t> sum{0};
    parallel_for(n, true, [&](std::size_t i) {
        if (nested) {
            parallel_for(4, true, [&](std::size_t) { sum.fetch_add(i, std::memory_order_relaxed); });
            sum.fetch_sub(3 * i, std::memory_order_relaxed);
        } else {
            sum.fetch_add(i, std::memory_order_relaxed);
        }
    });
    return sum.load();
}

bool team_cases() {
    omp_set_num_threads(2);
    bool ok = team_spreads("busy items", 8, 2000us);
    std::this_thread::sleep_for(50ms);  // the workers sleep by now
    ok &= team_spreads("after a sleep", 8, 2000us);
    bool sums = true;
    for (std::size_t r = 0; r < 100000; ++r) sums &= sum_by_loop(2 + r % 7) == (2 + r % 7) * (1 + r % 7) / 2;
    std::printf("team, 100000 short loops in a row: %s\n", sums ? "every sum right" : "WRONG");
    ok &= sums;
    const bool nested = sum_by_loop(64, true) == 64 * 63 / 2;
    std::printf("team, a loop inside a loop: %s\n", nested ? "right" : "WRONG");
    ok &= nested;
    std::size_t in_region = 0;
#pragma omp parallel num_threads(2) reduction(+ : in_region)
    in_region += sum_by_loop(100) == 4950;
    std::printf("team, loops inside an OpenMP region of two threads: %zu of 2 right\n", in_region);
    ok &= in_region == 2;
    std::atomic<int> right{0};
    {
        std::vector<std::thread> users;
        for (int u = 0; u < 2; ++u)
            users.emplace_back([&] {
                bool all = true;
                for (std::size_t r = 0; r < 20000; ++r) all &= sum_by_loop(2 + r % 5) == (2 + r % 5) * (1 + r % 5) / 2;
                right += all;
            });
        for (auto& t : users) t.join();
    }
    std::printf("team, two threads of the user's looping at once: %d of 2 right\n", right.load());
    ok &= right == 2;
    std::fflush(stdout);
    if (const pid_t child = fork(); child == 0) {  // the child has no workers: its loops run serially
        alarm(10);                                     // (a loop that waits for them fails the test)
        std::_Exit(sum_by_loop(1000) == 1000 * 999 / 2 && threads_used(4, 100us) == 1 ? 0 : 1);
    } else {
        int status = -1;
        waitpid(child, &status, 0);
        const bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        std::printf("team, loops in a forked child: %s\n", child_ok ? "right, on one thread" : "WRONG");
        ok &= child_ok;
    }
    omp_set_num_threads(1);
    ok &= sum_by_loop(10) == 45;
    return ok;
}
}  // namespace

int main() {
    bool team_ok = team_cases();
    using attend::tensor;
    auto q = std::make_unique<tensor<float, 4, 256, 64>>(), k = std::make_unique<tensor<float, 4, 256, 64>>(),
         v = std::make_unique<tensor<float, 4, 256, 64>>();
    fill(*q, 1);
    fill(*k, 2);
    fill(*v, 3);
    auto gq = std::make_unique<tensor<float, 2, 3, 200, 32>>();
    auto gk = std::make_unique<tensor<float, 2, 1, 300, 32>>(), gv = std::make_unique<tensor<float, 2, 1, 300, 32>>();
    fill(*gq, 4);
    fill(*gk, 5);
    fill(*gv, 6);
    bool ok = identical<tensor<float, 4, 256, 64>>("attention", [&] { return attend::scaled_dot_product_attention(*q, *k, *v); });
    ok &= identical<tensor<float, 4, 256, 64>>(
        "causal attention", [&] { return attend::scaled_dot_product_attention(*q, *k, *v, attend::causal_mask<256, 256>()); });
    ok &= identical<tensor<float, 2, 3, 200, 32>>("grouped-query attention", [&] {
        return attend::scaled_dot_product_attention(*gq, *gk, *gv, attend::iota<1, 200, 300>() > attend::iota<0, 200, 300>() + 100);
    });
    auto a = std::make_unique<tensor<float, 2, 300, 620>>();
    auto w = std::make_unique<tensor<float, 620, 136>>();
    tensor<float, 136> wb;
    fill(*a, 11);
    fill(*w, 12);
    fill(wb, 13);
    ok &= identical<tensor<float, 2, 300, 136>>("contraction with epilogue", [&] { return attend::matmul(*a, *w) * 0.5f + wb; });
    auto x = std::make_unique<tensor<float, 512, 64>>();
    auto y2 = std::make_unique<tensor<float, 64, 512>>();
    fill(*x, 14);
    fill(*y2, 15);
    ok &= identical<tensor<float, 512, 512>>("contraction, packed panels", [&] { return attend::matmul(*x, *y2); });
    // One-token matvecs in both weight layouts: panels split across threads.
    auto x1 = std::make_unique<tensor<float, 1, 1000>>();
    auto wkn = std::make_unique<tensor<float, 1000, 3001>>();
    auto wnk = std::make_unique<tensor<float, 3001, 1000>>();
    tensor<float, 3001> mb;
    fill(*x1, 16);
    fill(*wkn, 17);
    fill(*wnk, 18);
    fill(mb, 19);
    ok &= identical<tensor<float, 1, 3001>>("matvec, W (K, N)", [&] { return attend::matmul(*x1, *wkn) + mb; });
    ok &= identical<tensor<float, 1, 3001>>("matvec, W (N, K)", [&] { return attend::matmul(*x1, attend::transpose(*wnk)); });
    // W (K, N) in L2: one thread reads whole rows (12 vectors and 8 columns), panels of it read
    // chunks of rows.
    auto wl2 = std::make_unique<tensor<float, 1000, 200>>();
    fill(*wl2, 20);
    ok &= identical<tensor<float, 1, 200>>("matvec in L2, W (K, N)", [&] { return attend::matmul(*x1, *wl2); });
    // Decode: one query group against a long cache, its keys split across the threads (merged by
    // log-sum-exp), and eight KV heads (one work item each, no split: bit-identical).
    auto dq = std::make_unique<tensor<float, 1, 4, 64>>();
    auto mq = std::make_unique<tensor<float, 8, 4, 64>>();
    auto dk = std::make_unique<tensor<float, 8, 5000, 64>>(), dv = std::make_unique<tensor<float, 8, 5000, 64>>();
    fill(*dq, 20);
    fill(*mq, 21);
    fill(*dk, 22);
    fill(*dv, 23);
    const attend::tensor_ref<const float, 1, 5000, 64> k1(dk->data()), v1(dv->data());
    ok &= close_enough<tensor<float, 1, 4, 64>>("decode, split across threads", 1e-5, [&] {
        auto s = attend::matmul(*dq, attend::transpose(k1)) * 0.125f;
        return attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, 1, 4, 5000>() >= 4321, -INFINITY)), v1);
    });
    {  // One query over a float cache of 64 MiB, from DRAM (on Intel cores in g++ builds: tiles of
       // 2048 keys requesting nothing), its keys split across the threads at tile boundaries.
        auto q1 = std::make_unique<tensor<float, 1, 1, 128>>();
        auto bk = std::make_unique<tensor<float, 1, 65536, 128>>(), bv = std::make_unique<tensor<float, 1, 65536, 128>>();
        fill(*q1, 24);
        fill(*bk, 25);
        fill(*bv, 26);
        ok &= close_enough<tensor<float, 1, 1, 128>>("decode, one query from DRAM, split across threads", 1e-5, [&] {
            auto s = attend::matmul(*q1, attend::transpose(*bk)) * 0.088f;
            return attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, 1, 1, 65536>() >= 60001, -INFINITY)), *bv);
        });
    }
    {  // inside the user's OpenMP region it runs serially and unsplit: a one-thread run's bits
        auto decode = [&] {
            auto s = attend::matmul(*dq, attend::transpose(k1)) * 0.125f;
            return attend::eval(attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, 1, 4, 5000>() >= 4321, -INFINITY)), v1));
        };
        omp_set_num_threads(1);
        const auto one = decode();
        omp_set_num_threads(2);
        int same = 0;
#pragma omp parallel num_threads(2) reduction(+ : same)
        {
            const auto mine = decode();
            same += std::memcmp(mine.data(), one.data(), sizeof(one)) == 0;
        }
        std::printf("decode inside an OpenMP region of two threads: %d of 2 bit-identical to one thread\n", same);
        ok &= same == 2;
    }
    ok &= identical<tensor<float, 8, 4, 64>>("decode, eight KV heads", [&] {
        return attend::scaled_dot_product_attention(*mq, *dk, *dv, attend::iota<2, 8, 4, 5000>() >= 4999);
    });
    tensor<float, 200> bias;
    fill(bias, 9);
    auto y = std::make_unique<tensor<float, 4, 128, 200>>();
    fill(*y, 10);
    ok &= identical<tensor<float, 4, 128, 200>>("elementwise, dense", [&] { return exp(*y * 0.5f) - *y; });
    ok &= identical<tensor<float, 4, 128, 200>>("elementwise, broadcast and index", [&] {
        return attend::masked_fill(*y + bias, attend::iota<2, 4, 128, 200>() > attend::iota<1, 4, 128, 200>(), 0.0f);
    });
    return ok && team_ok ? 0 : 1;
}
