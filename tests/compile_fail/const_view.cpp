// A view of const elements cannot be assigned.
// expect: cannot assign to a view of const elements
#include <attend/attend.hpp>
int main() {
    float buffer[4] = {1, 2, 3, 4};
    attend::tensor_ref<float, 4> w(buffer);
    attend::tensor_ref<const float, 4> v(buffer);
    w = v * 2;
#ifdef ATTEND_FAIL
    v = w * 2;
#endif
    return static_cast<int>(buffer[0]);
}
