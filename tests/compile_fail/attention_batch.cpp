// Attention whose batch axes do not broadcast (two heads of Q and K, three of V) names the
// attention and the three shapes, not the score matmul inside it.
// expect: scaled_dot_product_attention: needs Q (..., NQ, DK), K (..., NK, DK), V (..., NK, DV) with batch axes (...) that broadcast
// expect: shape<2, 4, 8>
// expect: shape<3, 6, 8>
// errors: 1
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 2, 4, 8> q;
    attend::tensor<float, 2, 6, 8> k;
    attend::tensor<float, 1, 6, 8> v;  // one head of V broadcasts
    attend::tensor<float, 2, 4, 8> r = attend::scaled_dot_product_attention(q, k, v);
#ifdef ATTEND_FAIL
    attend::tensor<float, 3, 6, 8> v3;
    r = attend::scaled_dot_product_attention(q, k, v3);
#endif
    return static_cast<int>(r(0, 0, 0));
}
