// attend/eval/plan.hpp — the planner: which loop nest evaluates a tree assigned to a shape.
// The one copy of that choice; `run_plan` runs it and `explain` reports it.
#pragma once

#include <type_traits>

#include "../check.hpp"
#include "attention.hpp"
#include "contract.hpp"
#include "elementwise.hpp"
#include "lower.hpp"
#include "reduce.hpp"

namespace attend {

enum class plan {
    attention,      // the fused online-softmax nest: no score matrix in memory
    elementwise,    // one SIMD loop over the output
    contraction,    // the register-blocked matmul kernel, prologue in packing, epilogue per tile
    matvec,         // a few rows times a weight read in place, streamed once, epilogue per panel
    reduction,      // a reduction loop nest straight into the output
    softmax,        // the softmax loop nest (over a planned operand, in place)
    materialising,  // planned subtrees into temporaries, then one elementwise loop
};

inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// cast<bf16 or f16>(attention) into its own shape: the attention plan, its float result rounded
// once as it lands (run_plan), the nest's node reached through attention_of.
template <class E, class S>
inline constexpr bool rounded_attention = [] {
    if constexpr (is_kind<E, kind::cast>) return is_half<typename E::cast_to> && attention_plan<std::remove_cvref_t<decltype(E::arg)>, S>;
    else return false;
}();
template <class E>
constexpr const auto& attention_of(const E& e) noexcept {
    if constexpr (is_kind<E, kind::cast>) return e.arg;
    else return e;
}

// Whether a materialising tree's one planned node has the output's shape S and element type T
// and is read only at the position being written (through maps and casts, not a take or a
// view): then it may be evaluated into the destination itself, and the tree reads it there.
template <class E, class S, class T>
constexpr bool lands_at_own_position() {
    if constexpr (is_kind<E, kind::map> || is_kind<E, kind::cast>) return any_child<E>([]<class C>() { return lands_at_own_position<C, S, T>(); });
    else if constexpr (category_of<E> == category::planned && !is_kind<E, kind::view>)
        return std::is_same_v<typename E::shape_type, S> && std::is_same_v<typename E::value_type, T>;
    else return false;
}
template <class E, class S, class T>
inline constexpr bool lands_in_destination =
    category_of<E> == category::elementwise && count_materialised<E>() == 1 && lands_at_own_position<E, S, T>();

// Whether any leaf of tree E reads memory of [out, out + S::size) (alias.hpp).
template <class S, class T, class E>
bool reads_memory_of(const E& e, const T* out) noexcept;

// The plan for tree E assigned to shape S (decided from the types alone).
template <class E, class S>
constexpr plan plan_for() {
    constexpr bool own_shape = std::is_same_v<typename E::shape_type, S>;
    if constexpr (attention_plan<E, S> || rounded_attention<E, S>) {
        return plan::attention;
    } else if constexpr (contraction_plan<E, S>) {
        using MM = std::remove_cvref_t<decltype(find_matmul(std::declval<const E&>()))>;
        // Elementwise work around an attention (a residual, an activation): the attention nest
        // into a temporary, then the tree (a contraction would materialise the score matrix).
        if constexpr (attention_plan<MM, typename MM::shape_type>) return plan::materialising;
        else return matvec_applies<MM> ? plan::matvec : plan::contraction;
    } else if constexpr (is_elementwise<E>) return plan::elementwise;
    else if constexpr (own_shape && is_kind<E, kind::softmax>) return plan::softmax;
    else if constexpr (own_shape && is_kind<E, kind::reduce>) return plan::reduction;
    else return plan::materialising;
}

// out[0..N) = in[0..N) rounded to T (bf16 or f16), a vector at a time.
template <class Arch, std::size_t N, class T>
void narrow_copy(const float* in, T* out) noexcept {
    using B = simd::batch<float, Arch>;
    constexpr std::size_t W = simd::lanes<B>, NV = N / W * W;
    for (std::size_t i = 0; i < NV; i += W) simd::store(out + i, B::load_unaligned(in + i));
    for (std::size_t i = NV; i < N; ++i) out[i] = T(in[i]);
}

// The materialising plan: planned nodes into temporaries, then the tree into `out`. A tree whose
// planned node lands in the destination (an attention or softmax with elementwise work around
// it) evaluates it there when no leaf reads `out`'s memory, needing no temporary; else (under
// ATTEND_NO_HEAP a temporary above the stack budget cannot exist) the program stops.
template <class Arch, class S, class T, class E>
void run_materialising(T* out, const E& e) {
    auto tree = [&](const auto& flat) { run_elementwise<Arch, S>(out, flat); };
    if constexpr (lands_in_destination<E, S, T>) {
        if (!reads_memory_of<S>(e, out)) return lower<Arch>(e, tree, out);
        if constexpr (!config::heap_allowed && sizeof(T) * S::size > config::stack_budget)
            check::stop("assignment", "the right side's attention or softmax must be evaluated into a temporary (the "
                                      "destination is read elsewhere in the expression), which exceeds ATTEND_STACK_BUDGET "
                                      "while ATTEND_NO_HEAP forbids the heap");
        else lower<Arch>(e, tree);
    } else {
        lower<Arch>(e, tree);
    }
}

// Evaluates E into `out` of shape S by its plan; `out` overlaps nothing the plan reads unsafely
// (alias.hpp decides, assign.hpp makes it so).
template <class Arch, class S, class T, class E>
void run_plan(T* out, const E& e) {
    constexpr plan p = plan_for<E, S>();
    if constexpr (rounded_attention<E, S>) {
        using H = typename E::cast_to;
        temp_buffer<float, S::size> wide;
        evaluate_attention<Arch, S>(wide.data(), e.arg);
        if constexpr (std::is_same_v<T, H>) narrow_copy<Arch, S::size>(wide.data(), out);
        else
            for (std::size_t i = 0; i < S::size; ++i) out[i] = static_cast<T>(static_cast<float>(H(wide.data()[i])));
    } else if constexpr (is_half<T> && p != plan::elementwise && p != plan::materialising) {
        // The nests write float (and some read back what they wrote): a 16-bit destination gets
        // their result rounded once, from a float temporary.
        temp_buffer<float, S::size> wide;
        run_plan<Arch, S>(wide.data(), e);
        narrow_copy<Arch, S::size>(wide.data(), out);
    } else if constexpr (p == plan::attention) evaluate_attention<Arch, S>(out, e);
    else if constexpr (p == plan::contraction || p == plan::matvec) evaluate_contraction<Arch, S>(out, e);
    else if constexpr (p == plan::softmax || p == plan::reduction) evaluate_node<Arch>(out, e);
    else run_materialising<Arch, S>(out, e);
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
