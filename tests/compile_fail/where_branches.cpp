// where() whose branches do not broadcast names where and both shapes.
// expect: where: the two branches' shapes do not broadcast
// expect: shape<4, 3>
// expect: shape<5>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<bool, 4, 3> m;
    attend::tensor<float, 4, 3> r = attend::where(m, a, 0.0f);
#ifdef ATTEND_FAIL
    attend::tensor<float, 5> b;
    r = attend::where(m, a, b);
#endif
    return static_cast<int>(r(0, 0));
}
