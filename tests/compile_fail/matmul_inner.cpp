// matmul with different inner extents names matmul and both shapes.
// expect: matmul: inner extents differ or batch axes do not broadcast
// expect: shape<4, 3>
// expect: shape<4, 5>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<float, 3, 5> ok;
    attend::tensor<float, 4, 5> r = attend::matmul(a, ok);
#ifdef ATTEND_FAIL
    attend::tensor<float, 4, 5> b;
    r = attend::matmul(a, b);
#endif
    return static_cast<int>(r(0, 0));
}
