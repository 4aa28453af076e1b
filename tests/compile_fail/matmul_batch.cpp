// matmul whose batch axes do not broadcast names matmul and both shapes.
// expect: matmul: inner extents differ or batch axes do not broadcast
// expect: shape<2, 4, 3>
// expect: shape<3, 3, 5>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 2, 4, 3> a;
    attend::tensor<float, 1, 3, 5> ok;
    attend::tensor<float, 2, 4, 5> r = attend::matmul(a, ok);
#ifdef ATTEND_FAIL
    attend::tensor<float, 3, 3, 5> b;
    r = attend::matmul(a, b);
#endif
    return static_cast<int>(r(0, 0, 0));
}
