// A variant a user invents, written as one expression: ALiBi-style distance bias, soft-capping
// and a causal sliding window of 4 keys, over 2 heads. The planner fuses it into the online-softmax
// nest (no score matrix in memory, key tiles outside the window never visited); explain() shows it.
#include <attend/attend.hpp>
#include <cmath>
#include <cstdio>

#include "show.hpp"

int main() {
    using attend::tensor;
    constexpr std::size_t H = 2, T = 10, D = 4, W = 4;
    tensor<float, H, T, D> q, k, v;
    for (std::size_t n = 0; n < q.size; ++n) {
        q.data()[n] = std::sin(0.37f * float(n));
        k.data()[n] = std::cos(0.23f * float(n));
        v.data()[n] = float(n % 7) - 3.0f;
    }
    const tensor<float, H, 1, 1> slope{0.5f, 0.25f};  // one ALiBi slope per head
    const float cap = 5.0f;
    const auto i = attend::iota<0, T, T>();  // query position
    const auto j = attend::iota<1, T, T>();  // key position

    const auto scores = attend::matmul(q, attend::transpose(k)) / std::sqrt(float(D)) - slope * (i - j);
    const auto capped = cap * tanh(scores / cap);
    const auto outside = j > i || j + W <= i;  // causal, and at most W keys back
    const auto attention = attend::matmul(attend::softmax(attend::masked_fill(capped, outside, -INFINITY)), v);
    const tensor<float, H, T, D> out = attention;

    show("q", q);
    show("k", k);
    show("v", v);
    show("slope", slope);
    show("output", out);
    std::printf("%s", attend::explain(attention).c_str());
}
