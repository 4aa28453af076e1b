// Assigning a float expression to a bf16 tensor rounds, so it needs cast<attend::bf16>.
// expect: assignment: element types differ
// expect: bf16
// expect: float
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 4> f;
    attend::tensor<attend::bf16, 4> h = attend::cast<attend::bf16>(f * 2);
#ifdef ATTEND_FAIL
    h = f * 2;
#endif
    return static_cast<int>(h(0));
}
