// softmax along an axis the shape does not have.
// expect: softmax: Axis must be an axis of the shape
// expect: shape<4, 3>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<float, 4, 3> r = attend::softmax<0>(a);
#ifdef ATTEND_FAIL
    r = attend::softmax<2>(a);
#endif
    return static_cast<int>(r(0, 0));
}
