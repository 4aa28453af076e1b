// The score stage of attention, written as one expression: scaled scores of 4 queries against
// 6 keys, an ALiBi-style distance bias, soft-capping, and a causal mask aligned to the last key.
// Nothing is computed until the assignment, which runs one fused SIMD loop over the scores.
#include <attend/attend.hpp>
#include <cmath>
#include <cstdio>
#include <limits>

int main() {
    using attend::tensor;
    constexpr std::size_t NQ = 4, NK = 6, d_k = 8;

    // Raw dot products q_i . k_j of a tiny static model (rows: queries, columns: keys).
    const tensor<float, NQ, NK> dots{
        4.1f, 1.3f, -2.0f, 0.7f, 3.3f, -1.1f,
        0.2f, 5.0f, 1.9f, -0.4f, 2.2f, 0.9f,
        -3.0f, 0.6f, 6.1f, 1.4f, -0.8f, 2.7f,
        1.0f, -1.7f, 0.3f, 4.4f, 1.8f, 3.9f};

    const auto i = attend::iota<0, NQ, NK>();  // query index
    const auto j = attend::iota<1, NQ, NK>();  // key index
    const float slope = 0.5f, cap = 2.0f;

    const auto scores = dots / std::sqrt(float(d_k)) - slope * abs(i + (NK - NQ) - j);
    const auto capped = cap * tanh(scores / cap);
    const auto causal = j > i + (NK - NQ);  // query i sees keys up to its own position
    tensor<float, NQ, NK> masked = attend::masked_fill(capped, causal, -std::numeric_limits<float>::infinity());

    std::printf("masked, soft-capped, ALiBi-biased scores (%zu queries x %zu keys):\n", NQ, NK);
    for (std::size_t q = 0; q < NQ; ++q) {
        for (std::size_t k = 0; k < NK; ++k) std::printf(" %8.4f", double(masked(q, k)));
        std::printf("\n");
    }

    // Attention weights of each query: exp(s - m) / sum, with the row's max m taken by hand
    // here (reductions come with the contraction layer).
    tensor<float, NQ, NK> weights = exp(masked - 2.0f);  // every capped score is below cap = 2
    for (std::size_t q = 0; q < NQ; ++q) {
        float sum = 0;
        for (std::size_t k = 0; k < NK; ++k) sum += weights(q, k);
        std::printf("query %zu weights:", q);
        for (std::size_t k = 0; k < NK; ++k) std::printf(" %.4f", double(weights(q, k) / sum));
        std::printf("\n");
    }
}
