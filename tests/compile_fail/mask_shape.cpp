// A mask that does not fit the scores names the operation the user wrote (masked_fill, or the
// attention), not the where() they build, and both shapes.
// expect: masked_fill: the mask's shape does not broadcast with x's
// expect: shape<5, 3>
// expect: shape<4, 3>
// expect: scaled_dot_product_attention: the mask's shape does not broadcast with the scores' (..., NQ, NK)
// expect: shape<3, 4>
// expect: shape<2, 4, 4>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<bool, 4, 3> fits;
    attend::tensor<float, 2, 4, 8> q, k, v;
    attend::tensor<bool, 4, 4> causal;
    attend::tensor<float, 4, 3> r = attend::masked_fill(a, fits, 0.0f);
    attend::tensor<float, 2, 4, 8> o = attend::scaled_dot_product_attention(q, k, v, causal);
#ifdef ATTEND_FAIL
    attend::tensor<bool, 5, 3> wrong;
    r = attend::masked_fill(a, wrong, 0.0f);
    attend::tensor<bool, 3, 4> wrong_mask;
    o = attend::scaled_dot_product_attention(q, k, v, wrong_mask);
#endif
    return static_cast<int>(r(0, 0) + o(0, 0, 0));
}
