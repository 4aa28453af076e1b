// reshape to a different number of elements names reshape and both shapes.
// expect: reshape: the new shape must have the same number of elements
// expect: shape<4, 3>
// expect: shape<5, 2>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<float, 2, 6> r = attend::reshape<2, 6>(a);
#ifdef ATTEND_FAIL
    auto bad = attend::reshape<5, 2>(a);
    (void)bad;
#endif
    return static_cast<int>(r(0, 0));
}
