// Arithmetic on a bool expression is an error naming the operation.
// expect: operator+: element types do not combine
// expect: bool, int
#include <attend/attend.hpp>
int main() {
    attend::tensor<bool, 8> m;
    attend::tensor<float, 8> r = attend::cast<float>(m) + 1;
#ifdef ATTEND_FAIL
    r = m + 1;
#endif
    return static_cast<int>(r(0));
}
