// A failed shape check is the only error: the rest of the expression absorbs the failed
// operation quietly (no "invalid operands of types 'void' and 'float'" after it).
// expect: matmul: inner extents differ or batch axes do not broadcast
// expect: shape<16, 8>
// errors: 1
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 16, 8> q, k, v;
    attend::tensor<float, 16, 8> o = attend::matmul(attend::softmax(attend::matmul(q, attend::transpose(k)) / 8.0f), v);
#ifdef ATTEND_FAIL
    o = attend::matmul(attend::softmax(attend::matmul(q, k) / 8.0f), v);  // K not transposed
    o = attend::scaled_dot_product_attention(q, k, v) + o;                  // fine: no error here
#endif
    return static_cast<int>(o(0, 0));
}
