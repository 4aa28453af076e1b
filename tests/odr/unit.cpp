// One translation unit of a program whose units are built for different targets (the ODR check
// in tests/CMakeLists.txt builds it twice): a bf16 matvec and a decode step, whose bodies take
// AVX-512 BF16 instructions where the target has them.
#include <attend/attend.hpp>

#include <limits>

using attend::bf16;
using attend::tensor;

void ATTEND_ODR_UNIT(const tensor<float, 1, 64>& x, const tensor<bf16, 96, 64>& w, tensor<float, 1, 96>& y,
                     const tensor<bf16, 2, 4, 32>& q, const tensor<bf16, 2, 300, 32>& k, const tensor<bf16, 2, 300, 32>& v,
                     tensor<float, 2, 4, 32>& o, int len) {
    y = attend::matmul(attend::cast<bf16>(x), attend::transpose(w));
    auto s = attend::matmul(q, attend::transpose(k)) * 0.125f;
    o = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, 2, 4, 300>() >= len, -std::numeric_limits<float>::infinity())), v);
}
