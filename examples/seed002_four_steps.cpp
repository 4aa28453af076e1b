// The four steps of scaled dot-product attention after the projections Q = X W_Q, K = X W_K,
// V = X W_V — QK^T, scale, softmax, times V — and, for comparison, additive (Bahdanau) scores
// v_a . tanh(q_i W_1 + k_j W_2) instead of the scaled dot product.
#include <attend/attend.hpp>
#include <cmath>

#include "show.hpp"

int main() {
    using attend::tensor;
    constexpr std::size_t T = 3, E = 4, D = 2, A = 3;
    const tensor<float, T, E> X{1, 0, 1, 0,  0, 2, 0, 2,  1, 1, 1, 1};
    const tensor<float, E, D> W_Q{1, 0,  0, 1,  1, 0,  0, 1};
    const tensor<float, E, D> W_K{0, 1,  1, 0,  0, 1,  1, 0};
    const tensor<float, E, D> W_V{1, 1,  0, 1,  1, 0,  0, 0};
    const tensor<float, T, D> Q = attend::matmul(X, W_Q), K = attend::matmul(X, W_K), V = attend::matmul(X, W_V);

    const tensor<float, T, T> scores = attend::matmul(Q, attend::transpose(K));  // step 1
    const tensor<float, T, T> scaled = scores / std::sqrt(float(D));             // step 2
    const tensor<float, T, T> weights = attend::softmax(scaled);                  // step 3
    const tensor<float, T, D> out = attend::matmul(weights, V);                   // step 4

    // Additive attention: (T, 1, A) + (1, T, A) broadcast to (T, T, A), then a dot with v_a.
    const tensor<float, D, A> W_1{0.5f, -0.5f, 1,  1, 0.5f, -1};
    const tensor<float, D, A> W_2{-1, 0.5f, 0.5f,  0.5f, 1, 0};
    const tensor<float, A> v_a{1, -1, 0.5f};
    const auto q_proj = attend::reshape<T, 1, A>(attend::matmul(Q, W_1));
    const auto k_proj = attend::reshape<1, T, A>(attend::matmul(K, W_2));
    const tensor<float, T, T> additive = attend::reshape<T, T>(attend::sum(tanh(q_proj + k_proj) * v_a));
    const tensor<float, T, D> out_additive = attend::matmul(attend::softmax(additive), V);

    show("X", X);
    show("W_Q", W_Q);
    show("W_K", W_K);
    show("W_V", W_V);
    show("weights", weights);
    show("output", out);
    show("W_1", W_1);
    show("W_2", W_2);
    show("v_a", v_a);
    show("additive_scores", additive);
    show("additive_output", out_additive);
}
