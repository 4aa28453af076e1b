// A layer's shape error is one error naming the layer and both shapes, not echoes from the
// formula inside it.
// errors: 1
// expect: attend::nn::rms_norm: the weight must be a vector as long as x's last axis
// expect: shape<3, 8>
// expect: shape<7>
#include <attend/nn.hpp>
int main() {
    attend::tensor<float, 3, 8> x;
    attend::tensor<float, 8> w;
#ifdef ATTEND_FAIL
    attend::tensor<float, 7> wrong;
    attend::tensor<float, 3, 8> y = attend::nn::rms_norm(x, wrong);
#else
    attend::tensor<float, 3, 8> y = attend::nn::rms_norm(x, w);
#endif
    return static_cast<int>(y(0, 0));
}
