// A comparison of unbroadcastable shapes names the comparison and both shapes.
// expect: operator<: shapes do not broadcast
// expect: shape<4, 3>
// expect: shape<2, 3>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<float, 1, 3> ok;
    attend::tensor<bool, 4, 3> m = a < ok;
#ifdef ATTEND_FAIL
    attend::tensor<float, 2, 3> b;
    m = a < b;
#endif
    return m(0, 0) ? 1 : 0;
}
