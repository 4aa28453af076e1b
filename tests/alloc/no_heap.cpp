// Evaluation allocates nothing: a replaced global operator new counts every allocation while
// elementwise trees of every kind (dense, broadcast, index-generated, masks, casts, views,
// in-place), contractions, softmax and reductions, attention with a residual are evaluated. A
// plain main, not Boost.Test: the test framework allocates.
#include <attend/attend.hpp>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {
std::size_t allocations = 0;
}

void* operator new(std::size_t n) {
    ++allocations;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
    ++allocations;
    if (void* p = std::aligned_alloc(static_cast<std::size_t>(a), (n + static_cast<std::size_t>(a) - 1) / static_cast<std::size_t>(a) * static_cast<std::size_t>(a))) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

int main() {
    using attend::tensor;
    static tensor<float, 64, 1024> a, b, c, out;
    static tensor<bool, 64, 1024> m;
    static tensor<float, 1, 1024> row;
    for (std::size_t k = 0; k < a.size; ++k) {
        a.data()[k] = static_cast<float>(k % 13) * 0.25f;
        b.data()[k] = static_cast<float>(k % 7) - 3.0f;
    }
    attend::tensor_ref<float, 64, 1024> view(out.data());

    const std::size_t before = allocations;
    out = a * b + c * 2;
    out = exp(a - b) * c + 1;
    out = out * 2 + out;                                  // in place
    out = attend::masked_fill(a - row, b > 0, -1e9f);     // broadcast + mask
    m = attend::iota<1, 64, 1024>() > attend::iota<0, 64, 1024>();
    out = attend::where(m, a, attend::cast<float>(attend::cast<double>(b) * 0.5));
    view = a / (abs(b) + 1);                              // view destination, no overlap
    auto small = attend::eval(tensor<float, 4, 4>{} + 1.0f);  // eval returns by value
    // Contractions with prologue and epilogue, softmax and reductions (temporaries on the stack).
    static tensor<float, 64, 64> q, k, s;
    static tensor<float, 64, 32> v, o;
    s = exp(attend::matmul(q * 0.5f, attend::transpose(k)) - 1.0f) + row(0, 0);
    s = attend::softmax(attend::masked_fill(attend::matmul(q, attend::transpose(k)), attend::causal_mask<64, 64>(), -1e30f));
    o = attend::scaled_dot_product_attention(q, k, v, attend::causal_mask<64, 64>());
    s = s - attend::max(s) + attend::sum<0>(s);
    // The fused attention nest at a length where a score matrix would be 4 MiB: nothing allocated.
    static tensor<float, 1024, 64> lq, lk, lv, lo;
    lo = attend::scaled_dot_product_attention(lq, lk, lv, attend::causal_mask<1024, 1024>());
    lo = attend::matmul(attend::softmax(attend::maximum(attend::matmul(lq, attend::transpose(lk)), -30.0f)), lv);
    // An attention or softmax with elementwise work around it lands in the destination (256 KiB:
    // a temporary would be on the heap)
    lo = attend::scaled_dot_product_attention(lq, lk, lv) * 0.5f + lq;
    lo = attend::softmax(lq) * 2.0f;
    const std::size_t during = allocations - before;

    std::printf("allocations during evaluation: %zu (checksum %g)\n", during, double(out(63, 1023) + small(3, 3)));
    return during == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
