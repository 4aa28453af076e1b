// Single-head causal self-attention on batched (batch, time, embedding) inputs: each token
// attends to itself and earlier tokens only (the tril mask), through the nn layer.
#include <attend/nn.hpp>

#include "show.hpp"

int main() {
    using attend::tensor;
    constexpr std::size_t B = 2, T = 4, E = 3, D = 2;
    const tensor<float, B, T, E> x{0.1f, 0.2f, 0.3f,  0.4f, 0.5f, 0.6f,  0.7f, 0.8f, 0.9f,  1.0f, 1.1f, 1.2f,
                                   1.0f, -1.0f, 0.0f,  0.0f, 1.0f, -1.0f,  -1.0f, 0.0f, 1.0f,  0.5f, 0.5f, 0.5f};
    const tensor<float, E, D> W_Q{0.5f, -0.2f,  0.1f, 0.4f,  -0.3f, 0.2f};
    const tensor<float, E, D> W_K{0.3f, 0.1f,  -0.1f, 0.5f,  0.2f, -0.4f};
    const tensor<float, E, D> W_V{1.0f, 0.0f,  0.0f, 1.0f,  0.5f, 0.5f};
    const tensor<float, B, T, D> y = attend::nn::self_attention<attend::nn::masking::causal>(x, W_Q, W_K, W_V);
    show("x", x);
    show("W_Q", W_Q);
    show("W_K", W_K);
    show("W_V", W_V);
    show("output", y);
}
