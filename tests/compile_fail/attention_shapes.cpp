// Attention with keys of the wrong width names the operation and the three shapes.
// expect: scaled_dot_product_attention: needs Q (..., NQ, DK), K (..., NK, DK), V (..., NK, DV) with batch axes (...) that broadcast
// expect: shape<4, 8>
// expect: shape<6, 7>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 8> q;
    attend::tensor<float, 6, 8> k;
    attend::tensor<float, 6, 2> v;
    attend::tensor<float, 4, 2> r = attend::scaled_dot_product_attention(q, k, v);
#ifdef ATTEND_FAIL
    attend::tensor<float, 6, 7> k7;
    r = attend::scaled_dot_product_attention(q, k7, v);
#endif
    return static_cast<int>(r(0, 0));
}
