// Assigning an expression whose shape does not broadcast to the destination names both shapes.
// expect: assignment: the right side's shape does not broadcast to the destination's shape
// expect: shape<4, 3>
// expect: shape<4, 5>
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> out;
    attend::tensor<float, 4, 1> col;
    out = col * 2;  // broadcasting into the destination is fine
#ifdef ATTEND_FAIL
    attend::tensor<float, 4, 5> wide;
    out = wide * 2;
#endif
    return static_cast<int>(out(0, 0));
}
