// With ATTEND_NO_HEAP, assigning into a strided view larger than the stack budget does not compile
// (it is written through a contiguous temporary whatever the right side reads).
// expect: a strided destination
// expect: ATTEND_NO_HEAP forbids the heap
#define ATTEND_NO_HEAP
#include <attend/attend.hpp>
int main() {
    static attend::tensor<float, 4, 64> t, u;
    attend::slice<1, 8>(t, 0) = attend::slice<1, 8>(u, 0) + 1.0f;  // 128 bytes: fine on the stack
#ifdef ATTEND_FAIL
    static attend::tensor<float, 512, 1024> big, other;
    attend::slice<1, 512>(big, 0) = attend::slice<1, 512>(other, 0) + 1.0f;  // a 1 MiB temporary
#endif
    return static_cast<int>(t(0, 0));
}
