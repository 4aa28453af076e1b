// Run-time preconditions stop the program with a message naming the operation and the values
// (CTest matches the message; the process ends in abort()). Built with -fno-exceptions: the stop
// must not depend on them. The argument names the case; the no_heap build (ATTEND_NO_HEAP) also
// stops where an overlap needs a temporary larger than the stack budget.
#include <attend/attend.hpp>
#include <attend/nn.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
    static attend::tensor<float, 3, 7, 5> cache;
    static attend::tensor<float, 9, 4> table;
    const char* which = argc > 1 ? argv[1] : "";
    std::size_t pos = 6;
    if (std::strcmp(which, "slice_read") == 0) {
        attend::tensor<float, 3, 2, 5> w = attend::slice<1, 2>(cache, pos);  // positions 6 .. 7 of 7
        std::printf("%g\n", double(w(0, 0, 0)));
    } else if (std::strcmp(which, "slice_write") == 0) {
        attend::slice<1, 1>(cache, pos + 1) = attend::tensor<float, 3, 1, 5>{};  // position 7 of 7
    } else if (std::strcmp(which, "take_high") == 0) {
        const attend::tensor<std::int32_t, 3> ids{1, 9, 2};
        attend::tensor<float, 3, 4> e = attend::take<0>(table, ids);
        std::printf("%g\n", double(e(0, 0)));
    } else if (std::strcmp(which, "take_view") == 0) {  // 2-d indices through a transpose: entries in its row-major order
        const attend::tensor<std::int32_t, 2, 3> ids{1, 2, 3, 4, 9, 5};
        attend::tensor<float, 3, 2, 4> e = attend::take<0>(table, attend::transpose(ids));
        std::printf("%g\n", double(e(0, 0, 0)));
    } else if (std::strcmp(which, "no_heap_overlap") == 0) {
#ifdef ATTEND_NO_HEAP
        static attend::tensor<float, 256, 256> big;  // a transpose of itself needs a 256 KiB temporary
        big = attend::transpose(big) + 1;
        std::printf("%g\n", double(big(0, 1)));
#endif
    } else if (std::strcmp(which, "no_heap_attention_overlap") == 0) {
#ifdef ATTEND_NO_HEAP
        // the attention lands in a destination no leaf reads (no temporary), but not in one the
        // residual reads: that needs a 256 KiB temporary
        static attend::tensor<float, 1024, 64> q, k, v, x, y;
        y = attend::scaled_dot_product_attention(q, k, v) + x;
        std::printf("%g\n", double(y(0, 1)));
        x = attend::scaled_dot_product_attention(q, k, v) + x;
        std::printf("%g\n", double(x(0, 1)));
#endif
    } else if (std::strcmp(which, "decoder_past_capacity") == 0) {
        using C = attend::nn::decoder_config<8, 8, 2, 1, 6>;
        static attend::tensor<float, 8> norm;
        static attend::tensor<float, 8, 8> sq;
        static attend::tensor<float, 4, 8> kv;
        static attend::tensor<float, 8, 8> wide, down;
        const attend::nn::decoder_weights<C> w{norm, sq, kv, kv, sq, norm, wide, down, wide};
        static attend::nn::kv_cache<C> kvc;
        static attend::nn::decoder_scratch<C> scratch;
        attend::tensor<float, 1, 8> x{};
        attend::nn::decoder_step(x, w, kvc, pos, scratch);
        std::printf("%g\n", double(x(0, 0)));
    } else if (std::strcmp(which, "take_negative") == 0) {
        const attend::tensor<std::int64_t, 2> ids{0, -1};
        attend::tensor<float, 2, 4> e = attend::take<0>(table, ids) + 1;
        std::printf("%g\n", double(e(0, 0)));
    } else if (std::strcmp(which, "rope_past_table") == 0) {
        static const attend::nn::rotary_table<4, 8> rotations;
        const attend::tensor<float, 3, 4> x{};
        attend::tensor<float, 3, 4> y = attend::nn::rope(x, rotations, pos);  // positions 6 .. 8 of 8
        std::printf("%g\n", double(y(0, 0)));
    } else if (std::strcmp(which, "attention_huge_scores") == 0) {
        const attend::tensor<float, 1, 1> q{1.0f};
        const attend::tensor<float, 2, 1> k{1e10f, 7.5e9f}, v{3.0f, 5.0f};
        attend::tensor<float, 1, 1> o = attend::scaled_dot_product_attention(q, k, v);  // once 0, silently
        std::printf("%g\n", double(o(0, 0)));
    } else if (std::strcmp(which, "attention_overflowing_scores") == 0) {
        attend::tensor<float, 20, 1> q;  // the prefill nest; a score of 5e37 overflows 8 log2(e) x score
        for (std::size_t n = 0; n < 20; ++n) q.data()[n] = 1.0f;
        const attend::tensor<float, 2, 1> k{5e37f, 1.0f}, v{3.0f, 5.0f};
        attend::tensor<float, 20, 1> o = attend::scaled_dot_product_attention(q, k, v);  // once 0, silently
        std::printf("%g\n", double(o(0, 0)));
    } else if (std::strcmp(which, "take_unsigned") == 0) {
        const attend::tensor<std::uint64_t, 2> ids{0, ~std::uint64_t(0)};  // printed as itself, not as -1
        attend::tensor<float, 2, 4> e = attend::take<0>(table, ids);
        std::printf("%g\n", double(e(0, 0)));
    } else if (std::strcmp(which, "lse_overlap") == 0) {
        static attend::tensor<float, 2, 3, 4> qk;  // lse written over the queries' memory
        const attend::tensor_ref<float, 3, 4> q(qk.data()), k(qk.data() + 12);
        attend::tensor_ref<float, 3> lse(qk.data());
        attend::tensor<float, 3, 4> out;
        attend::eval_with_lse(out, lse, attend::scaled_dot_product_attention(q, k, k));
        std::printf("%g\n", double(out(0, 0)));
    } else if (std::strcmp(which, "slice_wrapping") == 0) {
        attend::tensor<float, 3, 2, 5> w = attend::slice<1, 2>(cache, std::size_t(-1));
        std::printf("%g\n", double(w(0, 0, 0)));
    } else if (std::strcmp(which, "misaligned_view") == 0) {  // floats read from two bytes into a buffer
        alignas(64) static unsigned char bytes[64] = {};
        const attend::tensor_ref<const float, 4> v(reinterpret_cast<const float*>(bytes + 2));
        attend::tensor<float, 4> w = v * 2.0f;
        std::printf("%g\n", double(w(0)));
    }
    std::puts("no stop");
    return 0;
}
