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

// Row-major memory read in place. `Owned` says it is an owning tensor's storage (aliasing
// analysis: two distinct tensors never overlap).
template <class T, class S, bool Owned>
struct memory_leaf : expr_base {
    using value_type = T;
    using shape_type = S;
    static constexpr bool weak = false;
    static constexpr int precision = types::precision_of<T, false>;
    const T* ptr;
    const T* data() const noexcept { return ptr; }
};

// A tensor moved into the tree.
template <class Tensor>
struct owning_leaf : expr_base {
    using value_type = typename Tensor::value_type;
    using shape_type = typename Tensor::shape_type;
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
template <class T, class S, bool O>
inline constexpr bool is_memory_leaf<memory_leaf<T, S, O>> = true;
template <class Tensor>
inline constexpr bool is_memory_leaf<owning_leaf<Tensor>> = true;

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
