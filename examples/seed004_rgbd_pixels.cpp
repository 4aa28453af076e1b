// Attention over three RGB-D pixels (red, green, blue, depth, scaled to [0, 1]): first with no
// parameters (w_ij = x_i . x_j, then softmax-normalised with a temperature), then with query,
// key and value projections, in matrix form, and finally two heads with an output projection W_O.
#include <attend/nn.hpp>
#include <cmath>

#include "show.hpp"

int main() {
    using attend::tensor;
    constexpr std::size_t N = 3, F = 4;
    const tensor<float, N, F> X = tensor<float, N, F>{200, 30, 40, 120,  25, 180, 60, 90,  210, 50, 35, 110} / 255.0f;

    // Parameter-free: raw weights, their weighted sums, then softmax(X X^T / sqrt(F)) X.
    const tensor<float, N, N> w = attend::matmul(X, attend::transpose(X));
    const tensor<float, N, F> y_raw = attend::matmul(w, X);
    const tensor<float, N, F> y_soft = attend::matmul(attend::softmax(w / std::sqrt(float(F))), X);

    // Queries, keys and values from learned projections (fixed here).
    const tensor<float, F, 3> W_Q{0.9f, 0.1f, -0.3f,  0.2f, 0.8f, 0.1f,  -0.4f, 0.3f, 0.7f,  0.5f, -0.2f, 0.4f};
    const tensor<float, F, 3> W_K{0.6f, -0.1f, 0.2f,  0.1f, 0.9f, -0.2f,  0.3f, 0.2f, 0.8f,  -0.3f, 0.4f, 0.1f};
    const tensor<float, F, 3> W_V{1.0f, 0.0f, 0.2f,  0.0f, 1.0f, 0.1f,  0.2f, 0.1f, 1.0f,  0.3f, 0.3f, 0.3f};
    const tensor<float, N, 3> Q = attend::matmul(X, W_Q), K = attend::matmul(X, W_K), V = attend::matmul(X, W_V);
    // The matrix form: all queries at once.
    const tensor<float, N, 3> y_qkv = attend::scaled_dot_product_attention(Q, K, V);

    // Two heads of width 2 over the 4 features, concatenated and projected by W_O.
    const tensor<float, F, F> W_Q2{0.9f, 0.1f, -0.3f, 0.2f,  0.2f, 0.8f, 0.1f, -0.1f,  -0.4f, 0.3f, 0.7f, 0.5f,  0.5f, -0.2f, 0.4f, 0.3f};
    const tensor<float, F, F> W_K2{0.6f, -0.1f, 0.2f, 0.4f,  0.1f, 0.9f, -0.2f, 0.3f,  0.3f, 0.2f, 0.8f, -0.1f,  -0.3f, 0.4f, 0.1f, 0.6f};
    const tensor<float, F, F> W_V2{1.0f, 0.0f, 0.2f, 0.1f,  0.0f, 1.0f, 0.1f, 0.2f,  0.2f, 0.1f, 1.0f, 0.0f,  0.3f, 0.3f, 0.3f, 1.0f};
    const tensor<float, F, F> W_O{0.5f, 0.5f, 0.0f, 0.0f,  0.0f, 0.5f, 0.5f, 0.0f,  0.0f, 0.0f, 0.5f, 0.5f,  0.5f, 0.0f, 0.0f, 0.5f};
    const tensor<float, N, F> y_heads = attend::nn::multi_head_attention<2>(X, W_Q2, W_K2, W_V2, W_O);

    show("X", X);
    show("w", w);
    show("y_raw", y_raw);
    show("y_soft", y_soft);
    show("W_Q", W_Q);
    show("W_K", W_K);
    show("W_V", W_V);
    show("y_qkv", y_qkv);
    show("W_Q2", W_Q2);
    show("W_K2", W_K2);
    show("W_V2", W_V2);
    show("W_O", W_O);
    show("y_heads", y_heads);
}
