// attend/eval/explain.hpp — the planner's choice, inspectable: `plan_of<E>` at compile time and
// `explain(e)` as text (the loop nest, the tree it evaluates, what is materialised).
#pragma once

#include <algorithm>
#include <cstddef>
#include <bit>
#include <string>
#include <type_traits>

#include "assign.hpp"
#include "plan.hpp"

namespace attend {

inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

template <class Op>
constexpr const char* op_name() {
    return Op::name;
}

template <class T>
constexpr const char* type_name() {
    if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, double>) return "double";
    else if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, bf16>) return "bf16";
    else if constexpr (std::is_same_v<T, f16>) return "f16";
    else if constexpr (std::is_integral_v<T>) {
        constexpr const char* names[2][4] = {{"int8", "int16", "int32", "int64"}, {"uint8", "uint16", "uint32", "uint64"}};
        return sizeof(T) > 8 ? "int" : names[std::is_unsigned_v<T>][std::bit_width(sizeof(T)) - 1];
    } else {
        return "?";
    }
}

template <class S>
std::string extents_text() {
    std::string s = "(";
    for (std::size_t k = 0; k < S::rank; ++k) s += (k ? ", " : "") + std::to_string(S::extents[k]);
    return s + ")";
}

// Whether a tree reads 16-bit memory or rounds to a 16-bit type (explain then names the conversions).
template <class E>
constexpr bool converts_half() {
    if constexpr (category_of<E> == category::leaf) return is_half<typename E::value_type>;
    else if constexpr (is_kind<E, kind::cast>) return is_half<typename E::cast_to> || any_child<E>([]<class C>() { return converts_half<C>(); });
    else return any_child<E>([]<class C>() { return converts_half<C>(); });
}

// One line of text per tree, prefix notation.
template <class E>
std::string describe();

template <class E>
std::string describe_children(std::string head) {
    return [&]<class... C>(type_list<C...>) {
        std::size_t k = 0;
        ((head += (k++ ? ", " : "") + describe<C>()), ...);
        return head + ")";
    }(child_types<E>{});
}

template <class E>
std::string describe() {
    using S = typename E::shape_type;
    if constexpr (is_kind<E, kind::memory>) {
        std::string s = std::string(E::owning ? "owned " : "") + "tensor<" + type_name<typename E::value_type>() + ">" + extents_text<S>();
        if constexpr (!is_row_major<E>) {
            s += " strides (";
            for (std::size_t k = 0; k < S::rank; ++k) s += (k ? ", " : "") + std::to_string(E::strides[k]);
            s += ")";
        }
        return s;
    } else if constexpr (is_kind<E, kind::scalar>) {
        return std::string("scalar<") + type_name<typename E::value_type>() + ">";
    } else if constexpr (is_kind<E, kind::tile>) {
        return "tile";
    } else if constexpr (is_kind<E, kind::iota>) {
        return "iota<" + std::to_string(E::axis) + ">" + extents_text<S>();
    } else if constexpr (is_kind<E, kind::map>) {
        return describe_children<E>(std::string(op_name<typename E::rule_op>()) + "(");
    } else if constexpr (is_kind<E, kind::take>) {
        return describe_children<E>("take<" + std::to_string(E::axis) + ">(");
    } else if constexpr (is_kind<E, kind::cast>) {
        return describe_children<E>(std::string("cast<") + type_name<typename E::cast_to>() + ">(");
    } else if constexpr (is_kind<E, kind::view>) {
        return describe_children<E>("view" + extents_text<S>() + "(");
    } else if constexpr (is_kind<E, kind::matmul>) {
        return describe_children<E>(std::string(attention_plan<E, S> ? "fused_attention:" : "") + "matmul(");
    } else if constexpr (is_kind<E, kind::softmax>) {
        return describe_children<E>("softmax<" + std::to_string(E::axis) + ">(");
    } else if constexpr (is_kind<E, kind::reduce>) {
        return describe_children<E>(std::string(op_name<typename E::reduce_op>()) + "<" + std::to_string(E::axis) + ">(");
    } else {
        static_assert(unhandled_kind<E>, "attend internal: describe: unknown node kind");
    }
}

// The compute type explain reports: a reduction's is its operand's (an argmax's own value type
// is the index's).
template <class L, bool Reduce = is_kind<L, kind::reduce>>
struct explained_compute {
    using type = tree_compute_t<L, typename L::value_type>;
};
template <class L>
struct explained_compute<L, true> {
    using type = reduce_compute_t<std::remove_cvref_t<decltype(std::declval<const L&>().arg)>, typename L::value_type>;
};
template <class L>
using explained_compute_t = typename explained_compute<L>::type;
}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE

// The plan evaluation takes for `E` assigned to its own shape.
template <class E>
inline constexpr plan plan_of = detail::plan_for<operand_t<E>, shape_t<operand_t<E>>>();

// The loop nest evaluation runs for `e`, as text.
template <class E, class Arch = simd::default_arch, class Target = target>
    requires expression<E>
std::string explain(const E& e) {
    using L = operand_t<const E&>;
    using S = typename L::shape_type;
    using F = detail::explained_compute_t<L>;
    (void)e;
    std::string s = "shape " + detail::extents_text<S>() + ", compute type " + detail::type_name<F>() + "\n";
    constexpr plan p = detail::plan_for<L, S>();
    if constexpr (p == plan::attention) {
        using A = std::remove_cvref_t<decltype(detail::attention_of(std::declval<const L&>()))>;  // inside a cast
        using Sc = std::remove_cvref_t<decltype(std::declval<const A&>().a.arg)>;
        using MM = std::remove_cvref_t<decltype(detail::find_matmul(std::declval<const Sc&>()))>;
        constexpr std::size_t DV = L::shape_type::extents[L::shape_type::rank - 1];
        using G = detail::attention_tiling<F, Arch, MM::M, MM::K, DV>;
        using DT = detail::decode_tiling<F, Arch, MM::M, MM::K, DV>;
        s += "plan: attention (online softmax, no " + std::to_string(MM::M) + " x " + std::to_string(MM::N) +
             " score matrix in memory), per batch index:\n";
        if constexpr (MM::M <= DT::max_queries && DT::stream)  // as evaluate_attention and decode_keys decide
            s += "  decode nest, streamed: " + std::to_string(MM::M) + " quer" + (MM::M == 1 ? "y" : "ies") +
                 " against blocks of " + std::to_string(DT::W) +
                 " keys, scores, softmax and outputs in registers, K and V rows read in turn (every row once); keys split "
                 "across threads when there are fewer batch indices than threads\n";
        else if constexpr (MM::M <= DT::max_queries)
            s += "  decode nest: all " + std::to_string(MM::M) + " queries against each key tile of " + std::to_string(std::min(DT::BN, MM::N)) +
                 " (every K and V row read once), lanes along the head dimension; keys split across threads when there are "
                 "fewer batch indices than threads\n";
        else
            s += "  query tiles of " + std::to_string(G::QT) + " (SIMD lanes), key tiles of " + std::to_string(G::BN) +
                 "; S^T = K Q^T by a " + std::to_string(G::MR) + " x " + std::to_string(G::QT) + " register tile, O^T += V^T P^T by " +
                 std::to_string(G::MRV) + " x " + std::to_string(G::QT) + "\n";
        using Kb = std::remove_cvref_t<decltype(MM::b)>;
        using Vb = std::remove_cvref_t<decltype(A::b)>;
        constexpr bool quarters = detail::decode_quarters<DT, F, Kb, Vb, MM::M, MM::K>;  // (16-register builds only)
        constexpr bool by_key = detail::decode_by_key<DT, F, Kb, Vb, MM::M, MM::K>;
        if constexpr (MM::M <= DT::max_queries && (by_key || detail::decode_blocks_of_keys<DT, F, Kb, Vb, MM::M, MM::K, DV>))
            s += "  from DRAM: on Zen 5 and Intel cores by blocks of " + std::to_string(DT::W) +
                 " keys, the next block's K rows read beside this block's V rows" +
                 (quarters ? "; on AMD cores before Zen 5 (16 registers) by tiles, scores over the tile's quarters and P V over its thirds"
                           : "") +
                 (by_key ? "; elsewhere key by key when the keys the masks leave fill the L3\n" : "\n");
        else if constexpr (MM::M <= DT::max_queries && quarters)
            s += "  on AMD cores before Zen 5 (16 registers): by tiles, scores over the tile's quarters and P V over its thirds\n";
        if constexpr (MM::M > DT::max_queries && G::rest_decodes)
            s += (G::rest == 1 ? std::string("  the last query") : "  the last " + std::to_string(G::rest) + " queries") +
                 " through the decode nest\n";
        else if constexpr (MM::M > DT::max_queries && G::rest != 0)
            s += "  the last tile ends at the last query, overlapping the one before it (" + std::to_string(G::rest) + " new queries)\n";
        if constexpr (MM::M > DT::max_queries &&
                      detail::pair_dots<typename G::B, F, std::remove_cvref_t<decltype(MM::a)>, std::remove_cvref_t<decltype(MM::b)>,
                                        std::remove_cvref_t<decltype(A::b)>, MM::K>)
            s += detail::amx_dots<typename G::B, F, std::remove_cvref_t<decltype(MM::a)>, std::remove_cvref_t<decltype(MM::b)>,
                                  std::remove_cvref_t<decltype(A::b)>, MM::M, MM::K, DV>
                     ? "  bf16 Q, K and V: both products on AMX tiles (tdpbf16ps; query and key tiles of 64) when the OS grants them, else by "
                       "vdpbf16ps (bf16 pairs; P rounded to bf16) on cores where pairs pay (not Intel's), else float FMAs on K and V "
                       "widened as packed\n"
                     : "  bf16 Q, K and V: both products by vdpbf16ps (bf16 pairs, two products per lane; P rounded to bf16) on cores "
                       "where pairs pay (not Intel's), else float FMAs on K and V widened as packed\n";
        if constexpr (MM::M <= DT::max_queries &&
                      detail::decode_amx<DT, F, std::remove_cvref_t<decltype(MM::a)>, std::remove_cvref_t<decltype(MM::b)>, MM::M, MM::K>)
            s += "  bf16 Q and K: the tile stages' scores on AMX tiles (tdpbf16ps, 32 keys a step) when the OS grants them\n";
        if constexpr (MM::M <= DT::max_queries &&
                      detail::decode_pairs<DT, F, std::remove_cvref_t<decltype(MM::a)>, std::remove_cvref_t<decltype(MM::b)>,
                                           std::remove_cvref_t<decltype(A::b)>, MM::K, DV>)
            s += "  bf16 Q, K and V: the tile stages' products by vdpbf16ps (bf16 pairs, two products per lane; P rounded to bf16) on "
                 "cores where pairs pay (not Intel's), else float FMAs on keys widened as read\n";
        s += "  Q: " + detail::describe<decltype(MM::a)>() + "\n  K^T: " + detail::describe<decltype(MM::b)>() + "\n  V: " +
             detail::describe<decltype(A::b)>() + "\n";
        if constexpr (!std::is_same_v<A, L>)
            s += std::string("  the output computed in float, rounded once to ") + detail::type_name<typename L::cast_to>() + "\n";
        s += "  score tree per tile: " + detail::describe<Sc>() + "\n";
        if constexpr (detail::has_index_where<Sc>())
            s += "  index masks: key tiles they rule out are skipped; tiles they keep entirely run without the mask: " +
                 detail::describe<decltype(detail::without_index_masks(std::declval<const Sc&>()))>() + "\n";
        else if constexpr (detail::has_where<Sc>())
            s += "  masks over tensors: a key tile is skipped when the few values it reads (a length per head) rule it out\n";
        else
            s += "  no mask: every key tile is visited\n";
    } else if constexpr (p == plan::contraction) {
        using MM = std::remove_cvref_t<decltype(detail::find_matmul(std::declval<const L&>()))>;
        using I = detail::contraction_items<F, Arch, MM::M, MM::K, MM::N>;
        using G = typename I::G;
        s += "plan: contraction, " + std::to_string(MM::M) + " x " + std::to_string(MM::K) + " x " + std::to_string(MM::N) +
             " per batch index, register tile " + std::to_string(G::MR) + " x " + std::to_string(G::NR) + ", k block " +
             std::to_string(I::KC) + "\n";
        auto operand = []<class X, bool InPlace>(const char* name, const char* packing) {
            if constexpr (!detail::is_elementwise<X>)
                return std::string("  ") + name + " (not elementwise: materialised into a temporary first): " + detail::describe<X>() + "\n";
            else if constexpr (InPlace)
                return std::string("  ") + name + " (read in place): " + detail::describe<X>() + "\n";
            else
                return std::string("  ") + name + " (" + packing + ", its expression evaluated while packing): " + detail::describe<X>() + "\n";
        };
        using A = decltype(MM::a);
        using B = decltype(MM::b);
        s += operand.template operator()<A, detail::in_place<A, F, 0>>("A", "packed along k");
        if (detail::b_read_in_place<B, F, MM::N, G::NR, I::KC>())
            s += operand.template operator()<B, true>("B", "");
        else
            s += operand.template operator()<B, false>("B", "packed in panels");
        if constexpr (!is_kind<L, kind::matmul>) s += "  epilogue per finished tile: " + detail::describe<L>() + "\n";
    } else if constexpr (p == plan::matvec) {
        using MM = std::remove_cvref_t<decltype(detail::find_matmul(std::declval<const L&>()))>;
        using FM = detail::compute_t<MM, double>;  // the matmul's own compute type, as evaluate_contraction's
        using T = typename decltype(MM::b)::value_type;
        using G = detail::matvec_tiling<FM, Arch, MM::M, MM::N, T>;
        using A = decltype(MM::a);
        constexpr auto wl = detail::weight_layout_of<decltype(MM::b), FM>;
        constexpr bool by_rows = wl == detail::weight_layout::rows_k;
        constexpr bool pairs = detail::pair_matvec<Arch, A, decltype(MM::b), FM>;
        constexpr bool wide = detail::wide_panels<G, wl, pairs>;
        s += "plan: matvec, " + std::to_string(MM::M) + " x " + std::to_string(MM::K) + " x " + std::to_string(MM::N) +
             " per batch index, the weight streamed once, panels of " + std::to_string(wide ? G::NPW : G::NP) + " columns" +
             (wide ? " (whole rows, their sums on the heap)" : "") + "\n";
        using X = detail::matvec_x_t<Arch, MM, FM>;
        const char* x_how = detail::in_place<A, X, 0>                        ? "read in place"
                            : std::is_same_v<typename A::value_type, X> ? "materialised first"
                                                                        : "widened first";
        s += std::string("  x (") + x_how + "): " + detail::describe<A>() + "\n";
        constexpr std::size_t bytes = G::weight_bytes(MM::K);
        constexpr bool even_odd = !pairs && detail::even_odd_rows<typename G::B, FM, T, MM::M, MM::K>;
        const std::string rows_k = (pairs ? G::pair_sums_in_registers(bytes) : G::sums_in_registers(bytes))
                                       ? "sums of " + std::to_string(pairs ? G::pair_chunks : G::NV) + " vectors of columns in registers over all of K"
                                   : pairs ? std::to_string(G::pair_rows_per_step(bytes)) + " rows of (K, N) at a time added into the panel's sums"
                                   : G::grouped ? std::to_string(G::GU) + " rows of (K, N) at a time added into the panel's sums, rows of x in groups of " +
                                                      std::to_string(G::MG) + ", " + std::to_string(G::GV) +
                                                      " vectors of columns a chunk (the chunk read again from L1 by each group)"
                                   : G::whole_row_vectors(bytes) > 0
                                       ? "rows read whole, the sums of all " + std::to_string(G::whole_row_vectors(bytes)) +
                                             " vectors of columns in registers over all of K (one panel)"
                                       : std::to_string(G::rows_per_step(bytes)) + " rows of (K, N) at a time added into the panel's sums, " +
                                             std::to_string(G::chunk_vectors(bytes)) + " vector(s) of columns a chunk" +
                                             (G::blocks_on_intel(bytes) ? " (on Intel cores: sums of " + std::to_string(G::NV) +
                                                                              " vectors of columns in registers over all of K)"
                                                                        : std::string());
        const std::string rows_n = std::to_string(G::RN) + " rows of (N, K) at a time as dot products, " + std::to_string(G::MB) +
                                   " row(s) of x per register tile" +
                                   (even_odd ? "; bf16 widened into even and odd elements, against x split the same way" : "") +
                                   (pairs ? "; bf16 x and weight as pair products by vdpbf16ps (two products per lane)" : "");
        const char* rows_k_bf16 = pairs ? ", bf16 x and pairs of rows interleaved (vpunpcklwd, vpunpckhwd) as pair products by vdpbf16ps "
                                          "where they pay (else, as on Intel cores, x widened and the float-x kernels)"
                                  : detail::even_odd_columns<typename G::B, T> ? ", bf16 widened into even and odd columns"
                                                                               : "";
        s += "  weight (read in place, " + (by_rows ? rows_k + rows_k_bf16 : rows_n) +
             "): " + detail::describe<decltype(MM::b)>() + "\n";
        if constexpr (!is_kind<L, kind::matmul>) s += "  epilogue per finished panel: " + detail::describe<L>() + "\n";
    } else if constexpr (p == plan::softmax || p == plan::reduction) {
        s += std::string("plan: ") + (p == plan::softmax ? "softmax" : "reduction") + " loop nest into the output: " +
             detail::describe<L>() + "\n";
    } else if constexpr (p == plan::elementwise) {
        s += "plan: elementwise, one SIMD loop: " + detail::describe<L>() + "\n";
    } else if constexpr (detail::lands_in_destination<L, typename L::shape_type, typename L::value_type>) {
        s += "plan: materialising: the non-elementwise subtree into the destination (into a temporary when the expression "
             "reads the destination's memory), then one SIMD loop in place: " + detail::describe<L>() + "\n";
    } else {
        s += "plan: materialising: non-elementwise subtrees into temporaries, then one SIMD loop: " + detail::describe<L>() + "\n";
    }
    if constexpr (detail::converts_half<L>())
        s += std::string("16-bit conversions: ") + simd::half_conversion_name + "\n";
    if constexpr (p != plan::attention && detail::attention_refusal<L>()[0] != '\0')
        s += std::string("not fused as attention: ") + detail::attention_refusal<L>() + "\n";
    return s;
}

}  // namespace attend
