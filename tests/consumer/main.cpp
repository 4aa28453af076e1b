// Uses the public header and names only; returns 0 when the numbers are right.
#include <attend/attend.hpp>

int main() {
    const attend::tensor<float, 2, 3> a{1, 2, 3, 4, 5, 6};
    const attend::tensor<float, 2, 3> b = a * 2.0f + 1.0f;
    const attend::tensor<float, 2, 2> c = attend::matmul(a, attend::transpose(a));
    return b(1, 2) == 13.0f && c(1, 1) == 77.0f ? 0 : 1;
}
