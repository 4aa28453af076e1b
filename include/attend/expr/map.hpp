// attend/expr/map.hpp — the one elementwise node kind, and every elementwise operation.
//
// `map<Op, A...>` applies the tag Op lane by lane to its operands' values, which broadcast
// together (NumPy rules). Operators and functions only build nodes; their static_asserts are the
// library's shape and element-type diagnostics for elementwise work.
#pragma once

#include <algorithm>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../check.hpp"
#include "leaf.hpp"
#include "types.hpp"

namespace attend {

namespace detail {
template <class... S>
struct broadcast_all;
template <class S>
struct broadcast_all<S> {
    using type = S;
};
template <class S, class T, class... R>
struct broadcast_all<S, T, R...> : broadcast_all<broadcast_t<S, T>, R...> {};
}  // namespace detail

template <class Op, class... A>
struct map : expr_base {
    using kind = kind::map;
    using rule_op = Op;
    using rule = result<Op, A...>;
    using value_type = typename rule::type;
    using shape_type = typename detail::broadcast_all<typename A::shape_type...>::type;
    static constexpr bool weak = rule::weak;
    static constexpr int precision = std::max({types::precision_of<value_type, weak>, A::precision...});
    std::tuple<A...> args;
    constexpr auto children() const noexcept {
        return unpack(args, [](const A&... a) { return std::tie(a...); });
    }
    template <class... C>
    static constexpr auto rebuild(C&&... c) {
        return map<Op, std::remove_cvref_t<C>...>{{}, {std::forward<C>(c)...}};
    }
};

// cast<U>(a): conversion to U; the operand is computed in its own precision. With U = bf16 or f16
// the values are rounded to U (nearest even) and read back as float by the tree around it.
template <class U, class A>
struct cast_node : expr_base {
    using kind = kind::cast;
    using cast_to = U;
    using value_type = U;
    using shape_type = typename A::shape_type;
    static constexpr bool weak = false;
    static constexpr int precision = types::precision_of<U, false>;
    A arg;
    constexpr auto children() const noexcept { return std::tie(arg); }
    template <class C>
    static constexpr auto rebuild(C&& c) {
        return cast_node<U, std::remove_cvref_t<C>>{{}, std::forward<C>(c)};
    }
};

namespace detail {
template <class Op, class... X>
constexpr auto make_map(X&&... x) {
    return map<Op, operand_t<X>...>{{}, {operand(std::forward<X>(x))...}};
}
}  // namespace detail

// Binary elementwise operations: both checks are in the first error the user sees.
#define ATTEND_BINARY(function, tag, text)                                                                     \
    template <class A, class B>                                                                                \
        requires elementwise_operands<A, B>                                                                    \
    constexpr auto function(A&& a, B&& b) {                                                                    \
        using LA = operand_t<A>;                                                                               \
        using LB = operand_t<B>;                                                                               \
        if constexpr (any_invalid<LA, LB>) {                                                                   \
            return invalid_expr{};                                                                             \
        } else {                                                                                               \
            constexpr bool shapes_ok = check::broadcast<op::tag, typename LA::shape_type, typename LB::shape_type>::ok; \
            constexpr bool types_ok = result<op::tag, LA, LB>::ok;                                             \
            static_assert(check::broadcast<op::tag, typename LA::shape_type, typename LB::shape_type>::ok,     \
                          "attend: " text ": shapes do not broadcast");                                        \
            static_assert(check::element_types<op::tag, typename LA::value_type, typename LB::value_type,      \
                                               result<op::tag, LA, LB>::ok>::ok,                               \
                          "attend: " text ": element types do not combine (float with double needs "           \
                          "attend::cast; bool takes only comparisons and logic)");                             \
            if constexpr (shapes_ok && types_ok) return detail::make_map<op::tag>(std::forward<A>(a), std::forward<B>(b)); \
            else return invalid_expr{};                                                                        \
        }                                                                                                      \
    }

ATTEND_BINARY(operator+, add, "operator+")
ATTEND_BINARY(operator-, sub, "operator-")
ATTEND_BINARY(operator*, mul, "operator*")
ATTEND_BINARY(operator/, div, "operator/")
ATTEND_BINARY(maximum, maximum, "maximum")
ATTEND_BINARY(minimum, minimum, "minimum")
ATTEND_BINARY(operator<, less, "operator<")
ATTEND_BINARY(operator<=, less_equal, "operator<=")
ATTEND_BINARY(operator>, greater, "operator>")
ATTEND_BINARY(operator>=, greater_equal, "operator>=")
ATTEND_BINARY(operator==, equal, "operator==")
ATTEND_BINARY(operator!=, not_equal, "operator!=")
ATTEND_BINARY(operator&&, logical_and, "operator&&")
ATTEND_BINARY(operator||, logical_or, "operator||")
#undef ATTEND_BINARY

#define ATTEND_UNARY(function, tag, text)                                                                      \
    template <class A>                                                                                         \
        requires expression<A>                                                                                 \
    constexpr auto function(A&& a) {                                                                           \
        using LA = operand_t<A>;                                                                               \
        if constexpr (any_invalid<LA>) {                                                                       \
            return invalid_expr{};                                                                             \
        } else {                                                                                               \
            static_assert(check::element_types<op::tag, typename LA::value_type, typename LA::value_type,      \
                                               result<op::tag, LA>::ok>::ok,                                   \
                          "attend: " text ": element type does not fit (bool takes only logic; logic needs bool)"); \
            if constexpr (result<op::tag, LA>::ok) return detail::make_map<op::tag>(std::forward<A>(a));       \
            else return invalid_expr{};                                                                        \
        }                                                                                                      \
    }

ATTEND_UNARY(operator-, neg, "operator-")
ATTEND_UNARY(operator!, logical_not, "operator!")
ATTEND_UNARY(exp, exp, "exp")
ATTEND_UNARY(log, log, "log")
ATTEND_UNARY(sqrt, sqrt, "sqrt")
ATTEND_UNARY(tanh, tanh, "tanh")
ATTEND_UNARY(abs, abs, "abs")
ATTEND_UNARY(sin, sin, "sin")
ATTEND_UNARY(cos, cos, "cos")
ATTEND_UNARY(sigmoid, sigmoid, "sigmoid")  // 1 / (1 + exp(-x))
ATTEND_UNARY(rsqrt, rsqrt, "rsqrt")        // 1 / sqrt(x)
#undef ATTEND_UNARY

// where(cond, a, b): a where cond is true, else b; all three broadcast together.
template <class C, class A, class B>
    requires elementwise_operands<C, A, B>
constexpr auto where(C&& c, A&& a, B&& b) {
    using LC = operand_t<C>;
    using LA = operand_t<A>;
    using LB = operand_t<B>;
    if constexpr (any_invalid<LC, LA, LB>) {
        return invalid_expr{};
    } else {
        using SAB = broadcast_t<typename LA::shape_type, typename LB::shape_type>;
        constexpr bool ok = check::broadcast<op::where, typename LA::shape_type, typename LB::shape_type>::ok &&
                            check::broadcast<op::where, typename LC::shape_type, SAB>::ok &&
                            std::is_same_v<typename LC::value_type, bool> && result<op::where, LC, LA, LB>::ok;
        static_assert(check::broadcast<op::where, typename LA::shape_type, typename LB::shape_type>::ok,
                      "attend: where: the two branches' shapes do not broadcast");
        static_assert(check::broadcast<op::where, typename LC::shape_type, SAB>::ok,
                      "attend: where: the condition's shape does not broadcast with the branches'");
        static_assert(std::is_same_v<typename LC::value_type, bool>, "attend: where: the condition must be a bool expression");
        static_assert(check::element_types<op::where, typename LA::value_type, typename LB::value_type,
                                           result<op::where, LC, LA, LB>::ok>::ok,
                      "attend: where: the branches' element types do not combine (float with double needs attend::cast)");
        if constexpr (ok) return detail::make_map<op::where>(std::forward<C>(c), std::forward<A>(a), std::forward<B>(b));
        else return invalid_expr{};
    }
}

namespace op {
struct masked_fill {};  // names masked_fill in its diagnostics (it builds a where)
}  // namespace op

// masked_fill(x, mask, value): `value` where mask is true (true = ignore that position), else x.
// Its own checks first, so that a bad mask's first error names masked_fill, not where.
template <class X, class M, class V>
    requires elementwise_operands<X, M, V>
constexpr auto masked_fill(X&& x, M&& mask, V&& value) {
    using LX = operand_t<X>;
    using LM = operand_t<M>;
    if constexpr (any_invalid<LX, LM, operand_t<V>>) {
        return invalid_expr{};
    } else {
        constexpr bool fits = check::broadcast<op::masked_fill, typename LM::shape_type, typename LX::shape_type>::ok;
        constexpr bool is_bool = std::is_same_v<typename LM::value_type, bool>;
        static_assert(check::broadcast<op::masked_fill, typename LM::shape_type, typename LX::shape_type>::ok,
                      "attend: masked_fill: the mask's shape does not broadcast with x's");
        static_assert(is_bool, "attend: masked_fill: the mask must be a bool expression");
        if constexpr (fits && is_bool) return where(std::forward<M>(mask), std::forward<V>(value), std::forward<X>(x));
        else return invalid_expr{};
    }
}

template <class U, class A>
    requires expression<A>
constexpr auto cast(A&& a) {
    static_assert(types::storable<U>, "attend: cast: the target type must be arithmetic, attend::bf16 or attend::f16");
    if constexpr (any_invalid<operand_t<A>> || !types::storable<U>) return invalid_expr{};
    else return cast_node<U, operand_t<A>>{{}, operand(std::forward<A>(a))};
}

}  // namespace attend
