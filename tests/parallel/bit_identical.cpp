// Parallel evaluation (OpenMP, ATTEND_PARALLEL) gives bit-identical results to one thread:
// fused attention (plain, causal, GQA), contractions (batched with an epilogue, several k blocks
// and a column tail; a packed B panel), one-row matvecs in both weight layouts, and elementwise
// trees (dense, broadcast, index-generated), at sizes above the parallel threshold; decode over
// eight KV heads too, and decode split across threads within a bound (its merge reassociates).
// A plain main.
#include <attend/attend.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <omp.h>

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
}  // namespace

int main() {
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
    return ok ? 0 : 1;
}
