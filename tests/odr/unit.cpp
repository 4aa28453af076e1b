// One translation unit of a program whose units are built for different targets (the ODR check
// in tests/CMakeLists.txt builds it twice, optimised and not): every kind of entry point (tensor
// construction and assignment, views, slices, eval, eval_with_lse, explain, nn::decoder_step) on
// a bf16 matvec and a decode step, whose bodies take AVX-512 BF16 instructions where the target
// has them.
#include <attend/attend.hpp>
#include <attend/nn.hpp>

#include <limits>
#include <string>

using attend::bf16;
using attend::tensor;

namespace {
using C = attend::nn::decoder_config<64, 96, 4, 2, 300>;
}

std::string ATTEND_ODR_UNIT(const tensor<float, 1, 64>& x, const tensor<bf16, 96, 64>& w, tensor<float, 1, 96>& y,
                            const tensor<bf16, 2, 4, 32>& q, const tensor<bf16, 2, 300, 32>& k, const tensor<bf16, 2, 300, 32>& v,
                            tensor<float, 2, 4, 32>& o, tensor<float, 2, 4>& lse, int len, const attend::nn::decoder_weights<C, const bf16>& dw,
                            attend::nn::kv_cache<C, bf16>& cache, attend::nn::decoder_scratch<C>& scratch, tensor<float, 1, C::dim>& h) {
    y = attend::matmul(attend::cast<bf16>(x), attend::transpose(w));
    auto s = attend::matmul(q, attend::transpose(k)) * 0.125f;
    auto a = attend::matmul(attend::softmax(attend::masked_fill(s, attend::iota<2, 2, 4, 300>() >= len, -std::numeric_limits<float>::infinity())), v);
    o = a;
    const tensor<float, 2, 4, 32> made = a;
    attend::tensor_ref<float, 2, 4, 32> view(o);
    view = made * 2.0f;
    attend::slice<1, 2>(o, 1) = attend::slice<1, 2>(made, 2);
    const auto evaluated = attend::eval(a);
    o = o + evaluated;
    tensor<float, 2, 4, 32> split;
    attend::eval_with_lse(split, lse, a);
    o = o + split;
    attend::nn::decoder_step(h, dw, cache, std::size_t(len), scratch);
    return attend::explain(a);
}
