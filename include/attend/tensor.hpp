// attend/tensor.hpp — storage: the owning `tensor` and the non-owning `tensor_ref`.
//
// Both are row-major with strides known at compile time, and both are expressions (they can
// appear on the right of any operation). Assignment from an expression is where evaluation
// happens; its body lives in eval/assign.hpp, in the target's inline namespace.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <type_traits>

#include "check.hpp"
#include "config.hpp"
#include "layout.hpp"
#include "expr/core.hpp"
#include "expr/types.hpp"
#include "simd.hpp"

namespace attend {

inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {
// Evaluates `e` into the row-major buffer `out` of shape S (eval/assign.hpp), as if the right
// side were computed first whatever it reads; `Op` names the operation in diagnostics.
template <class Arch, class Op, class S, class T, class E>
void assign(T* out, E&& e);
// The same into memory of layout L (strided: a slice along an inner axis).
template <class Arch, class Op, class L, class T, class E>
void assign_strided(T* out, E&& e);
}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE

namespace op {
struct assign {};
struct construct {};
}  // namespace op

namespace detail {
template <class S, class... I>
constexpr std::size_t offset_of(I... i) noexcept {
    static_assert(sizeof...(I) == S::rank, "attend: element access takes one index per axis");
    return row_major<S>::offset(std::array<std::size_t, S::rank>{static_cast<std::size_t>(i)...});
}
}  // namespace detail

// Owning, statically shaped, value-initialised, no heap. Big shapes belong on huge-page memory
// (`make_huge<tensor<...>>()`, memory.hpp), the heap or in static storage: a tensor is exactly its
// elements.
template <class T, std::size_t... D>
class tensor : public expr_base {
    static_assert(check::extents_positive<D...>::ok, "attend::tensor: every extent must be at least 1");
    static_assert(types::storable<T>, "attend::tensor: element type must be arithmetic, attend::bf16 or attend::f16");

public:
    using value_type = T;
    using shape_type = shape<D...>;
    static constexpr std::size_t rank = shape_type::rank;
    static constexpr std::size_t size = shape_type::size;

    constexpr tensor() noexcept : data_{} {}

    // Flat row-major braced initialisation: tensor<float, 2, 2>{1, 2, 3, 4}, tensor<bf16, 2>{bf16(1), bf16(2)}.
    template <class... V>
        requires(sizeof...(V) > 0 && ((std::is_arithmetic_v<V> || std::is_same_v<V, T>) && ...))
    constexpr tensor(V... v) noexcept : data_{static_cast<T>(v)...} {
        static_assert(sizeof...(V) == size, "attend::tensor: a braced initialiser gives exactly `size` values");
    }

    // Evaluates an expression (tensor<float, 4, 4> t = a * b + c;).
    template <class E, class Arch = simd::default_arch, class Target = target>
        requires expression<E>
    tensor(E&& e) {  // NOLINT: implicit on purpose, as the result of an expression
        detail::assign<Arch, op::construct, shape_type>(data_, static_cast<E&&>(e));
    }

    // Evaluates as if the right side were computed before any element is written.
    template <class E, class Arch = simd::default_arch, class Target = target>
        requires(expression<E> || scalar<E>)
    tensor& operator=(E&& e) {
        detail::assign<Arch, op::assign, shape_type>(data_, static_cast<E&&>(e));
        return *this;
    }

    template <class... I>
    constexpr T& operator()(I... i) noexcept {
        return data_[detail::offset_of<shape_type>(i...)];
    }
    template <class... I>
    constexpr const T& operator()(I... i) const noexcept {
        return data_[detail::offset_of<shape_type>(i...)];
    }

    constexpr T* data() noexcept { return data_; }
    constexpr const T* data() const noexcept { return data_; }

private:
    alignas(64) T data_[size];
};

// A view of row-major memory the user owns (weights in flash, a mapped file, a slice of a
// bigger buffer), at any alignment of its element type (SIMD alignment is never needed).
// Assigning to it writes the elements; it never rebinds.
template <class T, std::size_t... D>
class tensor_ref : public expr_base {
    static_assert(check::extents_positive<D...>::ok, "attend::tensor_ref: every extent must be at least 1");
    static_assert(types::storable<std::remove_const_t<T>>, "attend::tensor_ref: element type must be arithmetic, attend::bf16 or attend::f16");

public:
    using value_type = std::remove_const_t<T>;
    using shape_type = shape<D...>;
    static constexpr std::size_t rank = shape_type::rank;
    static constexpr std::size_t size = shape_type::size;

    // p must be aligned to the element type, as any T* (no more: SIMD alignment is never
    // needed); a pointer that is not stops the program (a misaligned read is undefined).
    constexpr explicit tensor_ref(T* p) noexcept : p_(p) {
        if (!std::is_constant_evaluated()) check::element_aligned<value_type>(p, "tensor_ref");
    }
    template <class U>
        requires std::is_convertible_v<U*, T*>
    constexpr tensor_ref(tensor<U, D...>& t) noexcept : p_(t.data()) {}
    template <class U>
        requires std::is_convertible_v<const U*, T*>
    constexpr tensor_ref(const tensor<U, D...>& t) noexcept : p_(t.data()) {}
    constexpr tensor_ref(const tensor_ref&) noexcept = default;

    // (Not a template, so its body may not depend on the target: a memmove is the assignment of
    // one row-major view to another of the same shape, overlapping or not.)
    tensor_ref& operator=(const tensor_ref& other) {
        static_assert(!std::is_const_v<T>, "attend::tensor_ref: cannot assign to a view of const elements");
        if constexpr (!std::is_const_v<T>) std::memmove(p_, other.p_, size * sizeof(T));
        return *this;
    }

    template <class E, class Arch = simd::default_arch, class Target = target>
        requires(expression<E> || scalar<E>)
    tensor_ref& operator=(E&& e) {
        return assign_from<E, Arch, Target>(static_cast<E&&>(e));
    }

    template <class... I>
    constexpr T& operator()(I... i) const noexcept {
        return p_[detail::offset_of<shape_type>(i...)];
    }
    constexpr T* data() const noexcept { return p_; }

private:
    template <class E, class Arch = simd::default_arch, class Target = target>
    tensor_ref& assign_from(E&& e) {
        static_assert(!std::is_const_v<T>, "attend::tensor_ref: cannot assign to a view of const elements");
        if constexpr (!std::is_const_v<T>)
            detail::assign<Arch, op::assign, shape_type>(p_, static_cast<E&&>(e));
        return *this;
    }

    T* p_;
};

// A view of memory laid out by L (extents and compile-time strides) at a run-time address: what
// slice() returns. Readable wherever a tensor is; assignable when T is not const (elements are
// written through the strides; the view is never rebound).
template <class T, class L>
class strided_ref : public expr_base {
public:
    using value_type = std::remove_const_t<T>;
    using shape_type = typename L::shape_type;
    using layout = L;
    static constexpr std::size_t rank = shape_type::rank;
    static constexpr std::size_t size = shape_type::size;

    constexpr explicit strided_ref(T* p) noexcept : p_(p) {}
    constexpr strided_ref(const strided_ref&) noexcept = default;

    // (Not a template, so its body may not depend on the target: element by element in the order
    // that reads each source element before it is overwritten. A writable strided_ref is a slice
    // of row-major memory, whose offsets grow in row-major order, so the two views of one layout
    // overlap as two arrays do for memmove.)
    strided_ref& operator=(const strided_ref& other) {
        static_assert(!std::is_const_v<T>, "attend: slice: cannot assign to a view of const elements (a slice of a transpose or permute reads only)");
        static_assert(L::increasing, "attend internal: strided_ref: a writable view whose offsets do not grow in row-major order");
        if constexpr (!std::is_const_v<T>) {
            auto copy = [&](std::size_t n) {
                const std::size_t off = L::offset_of_flat(n);
                p_[off] = other.p_[off];
            };
            if (std::less<>{}(p_, other.p_))
                for (std::size_t n = 0; n < size; ++n) copy(n);
            else
                for (std::size_t n = size; n-- > 0;) copy(n);
        }
        return *this;
    }
    template <class E, class Arch = simd::default_arch, class Target = target>
        requires(expression<E> || scalar<E>)
    strided_ref& operator=(E&& e) {
        return assign_from<E, Arch, Target>(static_cast<E&&>(e));
    }

    template <class... I>
    constexpr T& operator()(I... i) const noexcept {
        static_assert(sizeof...(I) == rank, "attend: element access takes one index per axis");
        return p_[L::offset(std::array<std::size_t, rank>{static_cast<std::size_t>(i)...})];
    }
    constexpr T* data() const noexcept { return p_; }

private:
    template <class E, class Arch = simd::default_arch, class Target = target>
    strided_ref& assign_from(E&& e) {
        static_assert(!std::is_const_v<T>, "attend: slice: cannot assign to a view of const elements (a slice of a transpose or permute reads only)");
        if constexpr (!std::is_const_v<T>) detail::assign_strided<Arch, op::assign, L>(p_, static_cast<E&&>(e));
        return *this;
    }

    T* p_;
};

namespace detail {
template <template <class, std::size_t...> class Storage, class T, class S>
struct storage_of;
template <template <class, std::size_t...> class Storage, class T, std::size_t... D>
struct storage_of<Storage, T, shape<D...>> {
    using type = Storage<T, D...>;
};
}  // namespace detail

// The tensor / view of element type T and shape type S (e.g. a shape computed by the algebra).
template <class T, class S>
using tensor_t = typename detail::storage_of<tensor, T, S>::type;
template <class T, class S>
using tensor_ref_t = typename detail::storage_of<tensor_ref, T, S>::type;

template <class T>
inline constexpr bool is_tensor = false;
template <class T, std::size_t... D>
inline constexpr bool is_tensor<tensor<T, D...>> = true;

template <class T>
inline constexpr bool is_strided_ref = false;
template <class T, class L>
inline constexpr bool is_strided_ref<strided_ref<T, L>> = true;

template <class T>
inline constexpr bool is_tensor_ref = false;
template <class T, std::size_t... D>
inline constexpr bool is_tensor_ref<tensor_ref<T, D...>> = true;

}  // namespace attend
