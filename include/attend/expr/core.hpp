// attend/expr/core.hpp — what an expression is.
//
// An expression is a small value type deriving from `expr_base` that names its shape
// (`shape_type`) and element type (`value_type`). Building one does no work; evaluation
// (eval/) reads it. Arithmetic scalars combine with expressions and become scalar leaves.
#pragma once

#include <concepts>
#include <type_traits>

#include "../shape.hpp"

namespace attend {

struct expr_base {};

template <class E>
concept expression = std::derived_from<std::remove_cvref_t<E>, expr_base>;

template <class S>
concept scalar = std::is_arithmetic_v<std::remove_cvref_t<S>>;

// Operands of an elementwise operation: expressions or scalars, at least one expression.
template <class... X>
concept elementwise_operands = ((expression<X> || scalar<X>) && ...) && (expression<X> || ...);

template <class E>
using shape_t = typename std::remove_cvref_t<E>::shape_type;

template <class E>
using element_t = typename std::remove_cvref_t<E>::value_type;

}  // namespace attend
