// A transpose, permute or reshape view cannot be assigned: it reads only (assigning one of the
// same type would rebind the view and write nothing).
// expect: transpose, permute and reshape views are read-only
#include <attend/attend.hpp>
int main() {
    attend::tensor<float, 2, 3> c{1, 2, 3, 4, 5, 6}, b{10, 20, 30, 40, 50, 60};
    attend::slice<1, 1>(c, 0) = attend::slice<1, 1>(b, 0);
#ifdef ATTEND_FAIL
    attend::transpose(c) = attend::transpose(b);
#endif
    return static_cast<int>(c(0, 0));
}
