// Prints a tensor as one line, `name (extents): values`, full precision: readable by people and
// parsed by the test that checks every example against its own reference (tests/examples).
#pragma once

#include <cstdio>

template <class Tensor>
void show(const char* name, const Tensor& t) {
    std::printf("%s (", name);
    for (std::size_t k = 0; k < Tensor::rank; ++k) std::printf(k ? ", %zu" : "%zu", Tensor::shape_type::extents[k]);
    std::printf("):");
    for (std::size_t i = 0; i < Tensor::size; ++i) std::printf(" %.9g", double(t.data()[i]));
    std::printf("\n");
}
