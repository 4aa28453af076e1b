// Assigning a float expression to a double tensor needs an explicit cast.
// expect: assignment: element types differ
// expect: double, float
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4> f;
    attend::tensor<double, 4> d = attend::cast<double>(f * 2);
#ifdef ATTEND_FAIL
    d = f * 2;
#endif
    return static_cast<int>(d(0));
}
