// attend/eval/lower.hpp — the materialising planner: turns any tree into an elementwise one.
//
// Elementwise nodes pass through; every other node (reduction, softmax, matmul, a view of a
// computed expression) is evaluated by its own loop nest into a temporary sized at compile time
// and replaced by a leaf reading it. Temporaries live on the stack up to config::stack_budget,
// else on the heap; ATTEND_NO_HEAP turns a heap temporary into a compile error. The rewriting is
// continuation-passing: `lower(e, k)` calls k with the lowered tree while the temporaries live.
#pragma once

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "../expr/matmul.hpp"
#include "../expr/reduce.hpp"
#include "../expr/view.hpp"
#include "elementwise.hpp"
#include "read.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

template <class T, std::size_t N, bool OnStack = (sizeof(T) * N <= config::stack_budget)>
struct temp_buffer {
    alignas(64) T storage[N];
    T* data() noexcept { return storage; }
};
template <class T, std::size_t N>
struct temp_buffer<T, N, false> {
    static_assert(config::heap_allowed && N > 0,  // dependent: checked only when such a plan is made
                  "attend: this expression needs a temporary larger than ATTEND_STACK_BUDGET and ATTEND_NO_HEAP "
                  "forbids the heap: evaluate the sub-expression into a tensor you own, or raise the budget");
    std::unique_ptr<T[]> storage = std::make_unique_for_overwrite<T[]>(N);
    T* data() noexcept { return storage.get(); }
};

// Nodes the elementwise loop can read directly.
template <class E>
inline constexpr bool is_elementwise_leaf = category_of<E> == category::leaf;

// Whether a tree is elementwise all the way down (nothing to materialise).
template <class E>
constexpr bool elementwise_tree() {
    if constexpr (category_of<E> == category::leaf) return true;
    else if constexpr (category_of<E> == category::elementwise) return all_children<E>([]<class C>() { return elementwise_tree<C>(); });
    else return false;
}
template <class E>
inline constexpr bool is_elementwise = elementwise_tree<E>();

// Node-specific loop nests, defined in reduce.hpp and contract.hpp. Each writes the node's
// values, row-major, to `out`, which no leaf of the node overlaps.
template <class Arch, class T, class Op, std::size_t Axis, class A>
void evaluate_node(T* out, const reduce_node<Op, Axis, A>& node);
template <class Arch, class T, std::size_t Axis, class A>
void evaluate_node(T* out, const softmax_node<Axis, A>& node);
template <class Arch, class T, class A, class B>
void evaluate_node(T* out, const matmul_node<A, B>& node);

template <class Arch, class E, class K, class Land = std::nullptr_t>
decltype(auto) lower(const E& e, K&& k, Land land = nullptr);

// Evaluates any tree into `out` of shape S (assign.hpp); `out` overlaps none of its leaves.
template <class Arch, class S, class T, class E>
void run_plan(T* out, const E& e);

// Lowers each operand of `args` in turn and calls k with them all.
template <class Arch, std::size_t I, class Tuple, class K>
decltype(auto) lower_each(const Tuple& args, K&& k) {
    return lower_each<Arch, I>(args, k, nullptr);
}
template <class Arch, std::size_t I, class Tuple, class K, class Land, class... Done>
decltype(auto) lower_each(const Tuple& args, K&& k, Land land, Done&&... done) {
    if constexpr (I == std::tuple_size_v<Tuple>) {
        return k(std::forward<Done>(done)...);
    } else {
        return lower<Arch>(
            std::get<I>(args),
            [&](auto&& a) -> decltype(auto) {
                return lower_each<Arch, I + 1>(args, k, land, std::forward<Done>(done)..., std::forward<decltype(a)>(a));
            },
            land);
    }
}

// Evaluates a non-elementwise node into a temporary (or into `land`, the destination, when the
// tree lands its one planned node there: lands_in_destination) and continues with a leaf
// reading it.
template <class Arch, class E, class K, class Land = std::nullptr_t>
decltype(auto) materialise(const E& e, K&& k, Land land = nullptr) {
    using T = typename E::value_type;
    using S = typename E::shape_type;
    if constexpr (std::is_same_v<Land, T*>) {
        run_plan<Arch, S>(land, e);
        return k(memory_leaf<T, S>{{}, land});
    } else {
        temp_buffer<T, S::size> buffer;
        run_plan<Arch, S>(buffer.data(), e);  // the subtree gets its own best plan (attention, contraction, ...)
        return k(memory_leaf<T, S>{{}, buffer.data()});
    }
}

// The tree with its planned nodes replaced by leaves reading their values, passed to k while
// those live. `land`: nullptr, or the destination for the tree's one planned node.
template <class Arch, class E, class K, class Land>
decltype(auto) lower(const E& e, K&& k, Land land) {
    if constexpr (is_elementwise<E>) {
        return k(e);
    } else if constexpr (category_of<E> == category::elementwise) {
        return lower_each<Arch, 0>(
            e.children(), [&](auto&&... a) -> decltype(auto) { return k(E::rebuild(std::forward<decltype(a)>(a)...)); }, land);
    } else if constexpr (is_kind<E, kind::view>) {
        // View of a computed operand: materialise the operand, then view the buffer as a leaf.
        static_assert(std::is_null_pointer_v<Land>, "attend internal: lower: a view does not land in the destination");
        return materialise<Arch>(
            e.arg, [&](const auto& leaf) -> decltype(auto) { return lower<Arch>(view_of<typename E::view>(leaf), k); }, nullptr);
    } else if constexpr (category_of<E> == category::planned) {
        return materialise<Arch>(e, k, land);
    } else {
        static_assert(unhandled_kind<E>, "attend internal: lower: unknown node kind");
    }
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
