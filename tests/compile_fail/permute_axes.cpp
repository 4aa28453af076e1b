// permute with a repeated axis names permute, the shape and the axes.
// expect: permute: the axes must list every axis of the shape exactly once
// expect: shape<2, 3, 4>
// expect: axes<0, 0, 2>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 2, 3, 4> a;
    attend::tensor<float, 4, 2, 3> r = attend::permute<2, 0, 1>(a);
#ifdef ATTEND_FAIL
    auto bad = attend::permute<0, 0, 2>(a);
    (void)bad;
#endif
    return static_cast<int>(r(0, 0, 0));
}
