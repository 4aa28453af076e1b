// attend/expr/leaf.hpp — the leaves of expression trees, and how operands become them.
//
// Ownership follows the value category: an lvalue tensor or any view is read in place (the
// user keeps it alive, as with any reference); an rvalue tensor is moved into the tree, so an
// expression stored in `auto` never dangles; expression nodes are held by value; scalars become
// weak scalar leaves. Leaves have no operands (leaf_node, node.hpp).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../layout.hpp"
#include "../tensor.hpp"
#include "core.hpp"
#include "node.hpp"
#include "types.hpp"

namespace attend {

// Memory read in place through a layout (row-major unless a view permuted its strides).
template <class T, class S, auto Strides = shapes::strides(S::extents)>
struct memory_leaf : leaf_node {
    using kind = kind::memory;
    using value_type = T;
    using shape_type = S;
    using layout = attend::layout<S, Strides>;
    static constexpr auto strides = Strides;
    static constexpr bool weak = false;
    static constexpr bool owning = false;
    static constexpr int precision = types::precision_of<T, false>;
    const T* ptr;
    const T* data() const noexcept { return ptr; }
};

// A tensor moved into the tree (possibly seen through a view): it aliases nothing.
template <class Tensor, class S = typename Tensor::shape_type, auto Strides = shapes::strides(S::extents)>
struct owning_leaf : leaf_node {
    using kind = kind::memory;
    using value_type = typename Tensor::value_type;
    using shape_type = S;
    using layout = attend::layout<S, Strides>;
    static constexpr auto strides = Strides;
    static constexpr bool weak = false;
    static constexpr bool owning = true;
    static constexpr int precision = types::precision_of<value_type, false>;
    Tensor tensor;
    const value_type* data() const noexcept { return tensor.data(); }
};

template <class S>
struct scalar_leaf : leaf_node {
    using kind = kind::scalar;
    using value_type = S;
    using shape_type = shape<>;
    static constexpr bool weak = true;
    static constexpr int precision = 0;
    S value;
};

template <class E>
inline constexpr bool is_memory_leaf = is_kind<E, kind::memory>;

// Leaves laid out row-major (a flat loop can read them at the output's offsets).
template <class Leaf>
inline constexpr bool is_row_major = Leaf::layout::row_major;

// The node an operand becomes inside a tree.
template <class X>
constexpr auto operand(X&& x) {
    using D = std::remove_cvref_t<X>;
    if constexpr (is_tensor<D>) {
        if constexpr (std::is_lvalue_reference_v<X>)
            return memory_leaf<typename D::value_type, typename D::shape_type>{{}, x.data()};
        else
            return owning_leaf<D>{{}, std::move(x)};
    } else if constexpr (is_tensor_ref<D>) {
        return memory_leaf<typename D::value_type, typename D::shape_type>{{}, x.data()};
    } else if constexpr (is_strided_ref<D>) {
        return memory_leaf<typename D::value_type, typename D::shape_type, D::layout::strides>{{}, x.data()};
    } else if constexpr (scalar<D>) {
        return scalar_leaf<D>{{}, x};
    } else if constexpr (is_view_result<D>) {
        return typename D::node_type(std::forward<X>(x));
    } else {
        return D(std::forward<X>(x));
    }
}

template <class X>
using operand_t = decltype(operand(std::declval<X>()));

}  // namespace attend
