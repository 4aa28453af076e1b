// attend: no-exceptions
// An embedded-style static model, built with -fno-exceptions -fno-rtti: weights are constant
// tables (flash on a microcontroller) read through views, activations live in static storage,
// and ATTEND_NO_HEAP makes any plan that would need the heap a compile error.
#define ATTEND_NO_HEAP
#include <attend/attend.hpp>

#include "show.hpp"

namespace {
constexpr std::size_t T = 4, E = 4;
constexpr float w_q[E * E] = {0.5f, 0.1f, 0.0f, -0.2f,  0.0f, 0.4f, 0.3f, 0.1f,  -0.1f, 0.2f, 0.6f, 0.0f,  0.3f, 0.0f, 0.1f, 0.5f};
constexpr float w_k[E * E] = {0.2f, 0.0f, 0.4f, 0.1f,  0.1f, 0.5f, -0.2f, 0.0f,  0.0f, 0.3f, 0.2f, 0.4f,  0.4f, 0.1f, 0.0f, 0.2f};
constexpr float w_v[E * E] = {1.0f, 0.0f, 0.0f, 0.5f,  0.0f, 1.0f, 0.5f, 0.0f,  0.5f, 0.0f, 1.0f, 0.0f,  0.0f, 0.5f, 0.0f, 1.0f};
constexpr float input[T * E] = {0.9f, 0.1f, 0.3f, 0.0f,  0.2f, 0.8f, 0.0f, 0.4f,  0.0f, 0.3f, 0.7f, 0.5f,  0.6f, 0.0f, 0.2f, 0.9f};

attend::tensor<float, T, E> q, k, v, out;  // static storage: no stack growth, no heap
}  // namespace

int main() {
    using view = attend::tensor_ref<const float, E, E>;
    const attend::tensor_ref<const float, T, E> x(input);
    q = attend::matmul(x, view(w_q));
    k = attend::matmul(x, view(w_k));
    v = attend::matmul(x, view(w_v));
    out = attend::scaled_dot_product_attention(q, k, v, attend::causal_mask<T, T>());
    show("x", x);
    show("W_Q", view(w_q));
    show("W_K", view(w_k));
    show("W_V", view(w_v));
    show("output", out);
}
