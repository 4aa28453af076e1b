// iota's axis must be an axis of its shape.
// expect: iota: Axis must be an axis of the shape
// expect: shape<3, 4>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 3, 4> r = attend::iota<1, 3, 4>() * 1.0f;
#ifdef ATTEND_FAIL
    r = attend::iota<2, 3, 4>() * 1.0f;
#endif
    return static_cast<int>(r(0, 0));
}
