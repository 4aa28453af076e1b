// attend/expr/leaf.hpp — the leaves of expression trees, and how operands become them.
//
// Ownership follows the value category: an lvalue tensor or any view is read in place (the
// user keeps it alive, as with any reference); an rvalue tensor is moved into the tree, so an
// expression stored in `auto` never dangles; expression nodes are held by value; scalars become
// weak scalar leaves.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../tensor.hpp"
#include "core.hpp"
#include "types.hpp"

namespace attend {

// Memory read in place, with compile-time strides (row-major unless a view permuted them).
// `Owned` says it is an owning tensor's storage (aliasing analysis: two distinct tensors never
// overlap).
template <class T, class S, bool Owned, auto Strides = shapes::strides(S::extents)>
struct memory_leaf : expr_base {
    using value_type = T;
    using shape_type = S;
    static constexpr auto strides = Strides;
    static constexpr bool weak = false;
    static constexpr int precision = types::precision_of<T, false>;
    const T* ptr;
    const T* data() const noexcept { return ptr; }
};

// A tensor moved into the tree (possibly seen through a view).
template <class Tensor, class S = typename Tensor::shape_type, auto Strides = shapes::strides(S::extents)>
struct owning_leaf : expr_base {
    using value_type = typename Tensor::value_type;
    using shape_type = S;
    static constexpr auto strides = Strides;
    static constexpr bool weak = false;
    static constexpr int precision = types::precision_of<value_type, false>;
    Tensor tensor;
    const value_type* data() const noexcept { return tensor.data(); }
};

template <class S>
struct scalar_leaf : expr_base {
    using value_type = S;
    using shape_type = shape<>;
    static constexpr bool weak = true;
    static constexpr int precision = 0;
    S value;
};

template <class E>
inline constexpr bool is_memory_leaf = false;
template <class T, class S, bool O, auto St>
inline constexpr bool is_memory_leaf<memory_leaf<T, S, O, St>> = true;
template <class Tensor, class S, auto St>
inline constexpr bool is_memory_leaf<owning_leaf<Tensor, S, St>> = true;

// Whether a leaf is an owning tensor's storage (a moved-in tensor counts: it aliases nothing).
template <class Leaf>
inline constexpr bool leaf_owned = true;
template <class T, class S, bool O, auto St>
inline constexpr bool leaf_owned<memory_leaf<T, S, O, St>> = O;

// Leaves laid out row-major (a flat loop can read them at the output's offsets).
template <class Leaf>
inline constexpr bool is_row_major = Leaf::strides == shapes::strides(Leaf::shape_type::extents);

// Elements from data() to the last one the leaf reads, plus one (aliasing analysis).
template <class Leaf>
constexpr std::size_t span_of() {
    std::size_t last = 0;
    for (std::size_t k = 0; k < Leaf::shape_type::rank; ++k) last += (Leaf::shape_type::extents[k] - 1) * Leaf::strides[k];
    return last + 1;
}

// The node an operand becomes inside a tree.
template <class X>
constexpr auto operand(X&& x) {
    using D = std::remove_cvref_t<X>;
    if constexpr (is_tensor<D>) {
        if constexpr (std::is_lvalue_reference_v<X>)
            return memory_leaf<typename D::value_type, typename D::shape_type, true>{{}, x.data()};
        else
            return owning_leaf<D>{{}, std::move(x)};
    } else if constexpr (is_tensor_ref<D>) {
        return memory_leaf<typename D::value_type, typename D::shape_type, false>{{}, x.data()};
    } else if constexpr (scalar<D>) {
        return scalar_leaf<D>{{}, x};
    } else {
        return D(std::forward<X>(x));
    }
}

template <class X>
using operand_t = decltype(operand(std::declval<X>()));

}  // namespace attend
