// rope's head width must divide the row: one error naming rope, the head width and x's shape.
// errors: 1
// expect: attend::nn::rope: x must be (..., T, D) with D a multiple of the even HeadDim
// expect: shape<3, 8>
#include <attend/nn.hpp>
int main() {
    attend::tensor<float, 3, 8> x;
#ifdef ATTEND_FAIL
    attend::tensor<float, 3, 8> y = attend::nn::rope<6>(x, 0);
#else
    attend::tensor<float, 3, 8> y = attend::nn::rope<4>(x, 0);
#endif
    return static_cast<int>(y(0, 0));
}
