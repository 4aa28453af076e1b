// attend/expr/types.hpp — the operation tags and the element-type rules of expressions.
//
// Kinds: bool, integer, floating. The 16-bit storage types bf16 and f16 read as float: an
// operation on them computes in float and gives float (`reads_as`; a leaf keeps its storage type
// as value_type, so kernels never take it for float memory). A scalar operand is *weak*: it
// adopts the element type of the expression it meets (NumPy's rule for Python scalars). Integer
// expressions meeting floating ones become floating; strong float meeting strong double is an
// error (use cast); bool takes no arithmetic. `result<Op, A...>` gives `type`, `weak` and `ok` for an operation on operand
// nodes A...; when !ok, `type` is still defined so that the static_assert is the only error.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../half.hpp"

namespace attend {

namespace op {
// Each tag says which rule types it.
struct arith_rule {};
struct divide_rule {};
struct math_rule {};
struct same_rule {};
struct compare_rule {};
struct logic_rule {};
struct select_rule {};

struct add { using rule = arith_rule; static constexpr const char* name = "add"; };
struct sub { using rule = arith_rule; static constexpr const char* name = "sub"; };
struct mul { using rule = arith_rule; static constexpr const char* name = "mul"; };
struct div { using rule = divide_rule; static constexpr const char* name = "div"; };
struct maximum { using rule = arith_rule; static constexpr const char* name = "maximum"; };
struct minimum { using rule = arith_rule; static constexpr const char* name = "minimum"; };
struct neg { using rule = same_rule; static constexpr const char* name = "neg"; };
struct abs { using rule = same_rule; static constexpr const char* name = "abs"; };
struct exp { using rule = math_rule; static constexpr const char* name = "exp"; };
struct log { using rule = math_rule; static constexpr const char* name = "log"; };
struct sqrt { using rule = math_rule; static constexpr const char* name = "sqrt"; };
struct tanh { using rule = math_rule; static constexpr const char* name = "tanh"; };
struct sin { using rule = math_rule; static constexpr const char* name = "sin"; };
struct cos { using rule = math_rule; static constexpr const char* name = "cos"; };
struct sigmoid { using rule = math_rule; static constexpr const char* name = "sigmoid"; };
struct rsqrt { using rule = math_rule; static constexpr const char* name = "rsqrt"; };
struct less { using rule = compare_rule; static constexpr const char* name = "less"; };
struct less_equal { using rule = compare_rule; static constexpr const char* name = "less_equal"; };
struct greater { using rule = compare_rule; static constexpr const char* name = "greater"; };
struct greater_equal { using rule = compare_rule; static constexpr const char* name = "greater_equal"; };
struct equal { using rule = compare_rule; static constexpr const char* name = "equal"; };
struct not_equal { using rule = compare_rule; static constexpr const char* name = "not_equal"; };
struct logical_and { using rule = logic_rule; static constexpr const char* name = "and"; };
struct logical_or { using rule = logic_rule; static constexpr const char* name = "or"; };
struct logical_not { using rule = logic_rule; static constexpr const char* name = "not"; };
struct where { using rule = select_rule; static constexpr const char* name = "where"; };
struct iota {};
struct cast {};
}  // namespace op

namespace types {

enum class kind { boolean, integer, floating };

// The type an operation reads an element of type T as: float for bf16 and f16, else T.
template <class T>
using reads_as = std::conditional_t<is_half<T>, float, T>;

// An operand node's value type as operations read it.
template <class A>
using value_of = reads_as<typename A::value_type>;

// What tensors and casts may hold: numbers, bool, and the 16-bit storage types.
template <class T>
inline constexpr bool storable = std::is_arithmetic_v<T> || is_half<T>;

template <class T>
inline constexpr kind kind_of = std::is_same_v<T, bool>  ? kind::boolean
                                : std::is_integral_v<T> ? kind::integer
                                                        : kind::floating;

// Strong floating precision of a type: 0 none, 1 float, 2 double. The tree's compute type is
// the widest strong floating type in it.
template <class T, bool Weak>
inline constexpr int precision_of = (Weak || kind_of<T> != kind::floating) ? 0 : (sizeof(T) <= 4 ? 1 : 2);

template <class T, bool Weak, bool Ok = true>
struct typed {
    using type = T;
    static constexpr bool weak = Weak;
    static constexpr bool ok = Ok;
};

// Two numeric operands.
template <class A, bool WA, class B, bool WB>
struct arith {
    static constexpr kind ka = kind_of<A>, kb = kind_of<B>;
    static constexpr bool ok = ka != kind::boolean && kb != kind::boolean &&
                               !(ka == kind::floating && kb == kind::floating && !WA && !WB &&
                                 !std::is_same_v<A, B>);
    using pick = std::conditional_t<
        ka == kb,
        std::conditional_t<WA == WB, typed<std::common_type_t<A, B>, WA>,
                           std::conditional_t<WA, typed<B, false>, typed<A, false>>>,
        // integer meets floating: the floating side wins, weak if it was
        std::conditional_t<ka == kind::floating, typed<A, WA>, typed<B, WB>>>;
    using type = std::conditional_t<ok, typename pick::type, A>;
    static constexpr bool weak = ok && pick::weak;
};

template <class Rule, class... A>
struct by_rule;

template <class A, class B>
struct by_rule<op::arith_rule, A, B> : arith<value_of<A>, A::weak, value_of<B>, B::weak> {};

// True division: integer / integer is floating (double, weak so it adopts float trees).
template <class A, class B>
struct by_rule<op::divide_rule, A, B> : by_rule<op::arith_rule, A, B> {
    using base = by_rule<op::arith_rule, A, B>;
    using type = std::conditional_t<kind_of<typename base::type> == kind::integer, double, typename base::type>;
    static constexpr bool weak = base::weak || kind_of<typename base::type> == kind::integer;
};

template <class A>
struct by_rule<op::same_rule, A> : typed<value_of<A>, A::weak, kind_of<value_of<A>> != kind::boolean> {};

template <class A>
struct by_rule<op::math_rule, A>
    : std::conditional_t<kind_of<value_of<A>> == kind::floating, typed<value_of<A>, A::weak>,
                         typed<double, true, kind_of<value_of<A>> == kind::integer>> {};

template <class A, class B>
struct by_rule<op::compare_rule, A, B>
    : typed<bool, false,
            arith<value_of<A>, A::weak, value_of<B>, B::weak>::ok ||
                (std::is_same_v<value_of<A>, bool> && std::is_same_v<value_of<B>, bool>)> {};

template <class... A>
struct by_rule<op::logic_rule, A...> : typed<bool, false, (std::is_same_v<value_of<A>, bool> && ...)> {};

template <class C, class A, class B>
struct by_rule<op::select_rule, C, A, B>
    : std::conditional_t<std::is_same_v<value_of<A>, bool> && std::is_same_v<value_of<B>, bool>,
                         typed<bool, A::weak && B::weak, std::is_same_v<value_of<C>, bool>>,
                         typed<typename arith<value_of<A>, A::weak, value_of<B>, B::weak>::type,
                               arith<value_of<A>, A::weak, value_of<B>, B::weak>::weak,
                               std::is_same_v<value_of<C>, bool> &&
                                   arith<value_of<A>, A::weak, value_of<B>, B::weak>::ok>> {};

}  // namespace types

template <class Op, class... A>
using result = types::by_rule<typename Op::rule, A...>;

}  // namespace attend
