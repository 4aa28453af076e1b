// Adding tensors whose shapes do not broadcast names operator+ and both shapes.
// expect: operator+: shapes do not broadcast
// expect: shape<4, 3>
// expect: shape<5>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<float, 3> ok;
    attend::tensor<float, 4, 3> r = a + ok;
#ifdef ATTEND_FAIL
    attend::tensor<float, 5> b;
    r = a + b;
#endif
    return static_cast<int>(r(0, 0));
}
