// Causal self-attention on a tiny static model: 4 tokens with 6-dimensional embeddings,
// projected to queries, keys and values of width 4, scaled dot-product attention with a causal
// mask, printed. Every shape is in a type; a mismatch would not compile.
#include <attend/attend.hpp>
#include <cmath>
#include <cstdio>

namespace {
constexpr std::size_t T = 4, E = 6, D = 4;

// The model's weights (a static model: in flash on a microcontroller, in .rodata here).
const attend::tensor<float, E, D> W_Q{0.2f, -0.1f, 0.4f, 0.0f,  0.1f, 0.3f, -0.2f, 0.5f,  -0.3f, 0.2f, 0.1f, 0.1f,
                                      0.0f, 0.4f, 0.3f, -0.2f,  0.5f, -0.1f, 0.0f, 0.2f,  0.1f, 0.1f, -0.4f, 0.3f};
const attend::tensor<float, E, D> W_K{-0.1f, 0.3f, 0.2f, 0.1f,  0.4f, 0.0f, -0.3f, 0.2f,  0.2f, 0.1f, 0.5f, -0.1f,
                                      0.3f, -0.2f, 0.1f, 0.0f,  0.0f, 0.2f, 0.2f, 0.4f,  -0.2f, 0.5f, 0.1f, 0.1f};
const attend::tensor<float, E, D> W_V{0.5f, 0.1f, 0.0f, -0.2f,  -0.1f, 0.4f, 0.2f, 0.1f,  0.2f, -0.3f, 0.5f, 0.0f,
                                      0.1f, 0.2f, -0.1f, 0.4f,  0.3f, 0.0f, 0.2f, 0.2f,  0.0f, 0.1f, 0.3f, -0.3f};

// Token embeddings of one sentence.
const attend::tensor<float, T, E> X{1.0f, 0.0f, 0.5f, -0.5f, 0.2f, 0.1f,  0.3f, 0.8f, -0.2f, 0.1f, 0.0f, 0.6f,
                                    -0.4f, 0.2f, 0.9f, 0.3f, -0.1f, 0.0f,  0.5f, -0.3f, 0.1f, 0.7f, 0.4f, -0.2f};

template <class Tensor>
void print(const char* title, const Tensor& t) {
    std::printf("%s\n", title);
    for (std::size_t i = 0; i < t.size; ++i)
        std::printf("%9.5f%s", double(t.data()[i]), (i + 1) % Tensor::shape_type::extents[1] == 0 ? "\n" : "");
}
}  // namespace

int main() {
    using attend::tensor;
    // Projections: each is one register-blocked matmul.
    const tensor<float, T, D> Q = attend::matmul(X, W_Q);
    const tensor<float, T, D> K = attend::matmul(X, W_K);
    const tensor<float, T, D> V = attend::matmul(X, W_V);

    // Who attends to whom: softmax(Q K^T / sqrt(D)) with future tokens masked out (true = ignore).
    const auto mask = attend::causal_mask<T, T>();
    const tensor<float, T, T> weights =
        attend::softmax(attend::masked_fill(attend::matmul(Q, attend::transpose(K)) / std::sqrt(float(D)), mask, -INFINITY));
    const tensor<float, T, D> out = attend::scaled_dot_product_attention(Q, K, V, mask);

    print("attention weights (row: query token, column: key token)", weights);
    print("attention output (one row per token)", out);
    std::printf("plan of the output:\n%s", attend::explain(attend::scaled_dot_product_attention(Q, K, V, mask)).c_str());
}
