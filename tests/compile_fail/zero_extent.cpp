// An extent of 0 is a compile error showing the extents.
// expect: every extent must be at least 1
// expect: 3, 0
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 3, 1> ok;
#ifdef ATTEND_FAIL
    attend::tensor<float, 3, 0> empty;
    (void)empty;
#endif
    return static_cast<int>(ok(0, 0));
}
