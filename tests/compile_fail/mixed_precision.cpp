// float with double is an error naming the operation and both element types; cast<> fixes it.
// expect: operator*: element types do not combine
// expect: float, double
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 8> f;
    attend::tensor<double, 8> d;
    attend::tensor<double, 8> r = attend::cast<double>(f) * d;
#ifdef ATTEND_FAIL
    r = f * d;
#endif
    return static_cast<int>(r(0));
}
