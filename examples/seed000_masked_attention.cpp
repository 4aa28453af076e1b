// Scaled dot-product attention with a mask on unbatched (2D) inputs: Q (n_q, d_k), K (n_k, d_k),
// V (n_k, d_v); a true mask entry means "ignore this key". Each output row is a convex combination
// of the rows of V.
#include <attend/attend.hpp>

#include "show.hpp"

int main() {
    using attend::tensor;
    const tensor<float, 3, 4> Q{1, 0, 1, 0,  0, 2, 0, 1,  1, 1, 1, 1};
    const tensor<float, 5, 4> K{1, 0, 0, 0,  0, 1, 0, 0,  0, 0, 1, 0,  0, 0, 0, 1,  1, 1, 0, 0};
    const tensor<float, 5, 2> V{1, 0,  0, 1,  1, 1,  2, 0,  0, 2};
    // Query 0 may not look at keys 3 and 4, query 1 not at key 0; query 2 sees everything.
    const tensor<bool, 3, 5> mask{false, false, false, true, true,  true, false, false, false, false,
                                  false, false, false, false, false};
    const tensor<float, 3, 2> out = attend::scaled_dot_product_attention(Q, K, V, mask);
    // The weights themselves, written as the formula.
    const tensor<float, 3, 5> P =
        attend::softmax(attend::masked_fill(attend::matmul(Q, attend::transpose(K)) / 2.0f, mask, -INFINITY));
    show("Q", Q);
    show("K", K);
    show("V", V);
    show("mask", mask);
    show("weights", P);
    show("output", out);
}
