// A braced initialiser must give every element.
// expect: a braced initialiser gives exactly `size` values
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 2, 2> ok{1, 2, 3, 4};
#ifdef ATTEND_FAIL
    attend::tensor<float, 2, 2> short_one{1, 2, 3};
    (void)short_one;
#endif
    return static_cast<int>(ok(0, 0));
}
