// where() with a non-bool condition is an error naming where.
// expect: where: the condition must be a bool expression
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4, 3> a;
    attend::tensor<float, 4, 3> r = attend::where(a > 0, a, 1.0f);
#ifdef ATTEND_FAIL
    r = attend::where(a, a, 1.0f);
#endif
    return static_cast<int>(r(0, 0));
}
