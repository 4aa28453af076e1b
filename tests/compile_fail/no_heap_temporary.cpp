// With ATTEND_NO_HEAP, a plan that needs a temporary above the stack budget does not compile.
// expect: ATTEND_NO_HEAP forbids the heap
// expect: ATTEND_STACK_BUDGET
#define ATTEND_NO_HEAP
#include <attend/attend.hpp>
int main() {
    static attend::tensor<float, 16, 16> small;
    static attend::tensor<float, 16, 1> small_out;
    small_out = attend::max(small * 2);  // a 1 KiB temporary: fine on the stack
#ifdef ATTEND_FAIL
    static attend::tensor<float, 512, 512> big;
    static attend::tensor<float, 512, 512> big_out;
    big_out = big - attend::max(attend::softmax<0>(big));  // a 1 MiB temporary
#endif
    return static_cast<int>(small_out(0, 0));
}
