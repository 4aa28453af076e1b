// attend/eval/attention.hpp — the fused attention plan: matmul(softmax(S), V), where S is any
// elementwise tree over matmul(Q, K^T), as one online-softmax loop nest (FlashAttention style).
// The NQ x NK score matrix never exists; nothing is allocated.
//
// Orientation: queries run along the SIMD lanes. Per query tile (QT queries) Q^T is packed once;
// per key tile (BN keys) the score tile S^T = K_tile Q^T is computed by the register-blocked
// micro-kernel (K rows broadcast, read in place), the score tree is applied to it with lanes
// along the queries (leaves see batch, head, i and j), and the running max and sum are plain
// vector operations across the tile's rows — no horizontal reductions. Then
// O^T = alpha O^T + V_tile^T P^T by the same micro-kernel (V broadcast in place), and the output
// is divided by the sum once at the end. Key tiles a mask rules out are never visited and tiles
// it keeps entirely skip the mask work, both decided per tile from the score tree's index
// expressions (bounds.hpp).
#pragma once

#include <algorithm>
#include <cstring>
#include <cstddef>
#include <limits>
#include <tuple>
#include <type_traits>

#include "bounds.hpp"
#include "contract.hpp"
#include "attention_amx.hpp"
#include "decode.hpp"
#include "lower.hpp"
#include "parallel.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

template <class E>
struct attention_parts {
    static constexpr bool value = false;
};
template <std::size_t Axis, class Sc, class V>
struct attention_parts<matmul_node<softmax_node<Axis, Sc>, V>> {
    static constexpr bool value = [] {
        if constexpr (Axis + 1 == Sc::shape_type::rank && count_materialised<Sc>() == 1 && holds_matmul<Sc>()) {
            using MM = std::remove_cvref_t<decltype(find_matmul(std::declval<const Sc&>()))>;
            return std::is_same_v<typename MM::shape_type, typename Sc::shape_type>;
        } else {
            return false;
        }
    }();
};

// Why matmul(softmax(S), V) is not fused (for explain), or "" when it is.
template <class E>
constexpr const char* attention_refusal() {
    if constexpr (!is_kind<E, kind::matmul>) {
        return "";
    } else {
        using A = std::remove_cvref_t<decltype(std::declval<const E&>().a)>;
        if constexpr (!is_kind<A, kind::softmax>) {
            return "";
        } else {
            using Sc = typename A::softmax_of;
            if constexpr (A::axis + 1 != Sc::shape_type::rank) return "the softmax is not along the keys (the last axis)";
            else if constexpr (!(count_materialised<Sc>() == 1 && holds_matmul<Sc>()))
                return "the scores are not one matmul(Q, K^T) with only elementwise work around it";
            else if constexpr (!attention_parts<E>::value)
                return "the score tree broadcasts the matmul(Q, K^T) to a bigger shape";
            else return "";
        }
    }
}

// The attention plan applies to matmul(softmax(S), V) assigned to its own shape, S an
// elementwise tree over one matmul(Q, K^T) of S's shape, softmax along the keys.
template <class E, class S>
inline constexpr bool attention_plan = [] {
    if constexpr (attention_parts<E>::value) return std::is_same_v<typename E::shape_type, S>;
    else return false;
}();

// The attention nest's schedule from the static shapes and the target's registers: two vectors
// of queries per tile, key tiles of 48, and micro-tiles of as many keys (scores) and value
// columns (output) as leave registers for the broadcasts — 12 and 8 rows of two vectors with 32
// registers, 6 and 6 with 16. The tile sizes tried and measured: docs/performance.md.
template <class F, class Arch, std::size_t NQ, std::size_t D, std::size_t DV>
struct attention_tiling {
    using B = simd::batch<F, Arch>;
    static constexpr std::size_t W = simd::lanes<B>;
    static constexpr bool wide = simd::vector_registers<Arch> >= 32;
    static constexpr std::size_t NV = NQ >= 2 * W ? 2 : 1, QT = NV * W;  // queries per tile
    static constexpr std::size_t MR = wide ? 12 : 6;                     // keys per micro-tile
    static constexpr std::size_t BN = 48;                                // keys per tile
    static constexpr std::size_t MRV = wide ? 8 : 6;                     // value columns per micro-tile
    // Up to QT / 8 queries left over by the tiles run through the decode nest (decode.hpp), more
    // as a last tile overlapping the one before it: the decode nest's cost grows with the queries
    // (~1/6 of a 32-query tile each), the tile's does not (docs/performance.md, 2026-11-27 evening).
    static constexpr std::size_t rest = NQ % QT;  // queries the tiles leave
    static constexpr bool rest_decodes = rest != 0 && rest <= QT / 8;
};

// ---- the stages of the nest -----------------------------------------------------------------
// Each works on one query tile of QL = NVq x WL queries (lanes along the queries), in the tile's
// stack buffers: qt = Q^T (D x QL), st = S^T then P^T (keys x QL), ot = O^T (DV x QL).

// Rows of an operand matrix as the micro-kernel reads them: element (r, c) at p[r * ld + c * step].
template <class F>
struct rows_view {
    const F* p;
    std::size_t ld, step;
};

// Stage 1, pack Q: Q^T of queries i0 .. i0+QL, by 8 x 8 block transposes when Q's rows are
// contiguous memory of the compute type, else lane by lane through its expression.
template <class Vb, std::size_t NVq, std::size_t D, class F, class Ql, std::size_t Rs>
inline void pack_q(const Ql& q, nd_pos<Rs, Rs - 2> sp, std::size_t i0, F* qt) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    if constexpr (in_place<Ql, F, 0>) {
        sp.idx[Rs - 2] = i0;
        sp.idx[Rs - 1] = 0;
        constexpr std::size_t ldq = Ql::layout::template strides_at<Rs>[Rs - 2];
        simd::transpose<QL, D, ldq, QL>(q.data() + Ql::layout::offset(sp.idx), qt);
    } else {
        for (std::size_t d = 0; d < D; ++d) {
            sp.idx[Rs - 1] = d;
            for (std::size_t c = 0; c < NVq; ++c) {
                sp.idx[Rs - 2] = i0 + c * WL;
                simd::store(qt + d * QL + c * WL, read<Vb>(q, sp));
            }
        }
    }
}

// Key rows j0 .. j0+KB (K^T's columns), read in place when K is memory of the compute type,
// else packed into `pack` (KB x D), rows from `live` on as zeros (never read): 16-bit memory
// rows widened a vector at a time, anything else element by element through its expression.
template <std::size_t KB, std::size_t D, class F, class Kt, std::size_t Rs>
inline rows_view<F> key_rows(const Kt& kt, nd_pos<Rs, Rs - 2> sp, std::size_t j0, F* pack, std::size_t live = KB) noexcept {
    if constexpr (is_memory_leaf<Kt> && std::is_same_v<typename Kt::value_type, F>) {
        sp.idx[Rs - 2] = 0;
        sp.idx[Rs - 1] = j0;
        constexpr auto kst = Kt::layout::template strides_at<Rs>;
        return {kt.data() + Kt::layout::offset(sp.idx), kst[Rs - 1], kst[Rs - 2]};
    } else if constexpr (is_memory_leaf<Kt> && is_half<typename Kt::value_type> && in_place<Kt, typename Kt::value_type, 1>) {
        sp.idx[Rs - 2] = 0;
        sp.idx[Rs - 1] = j0;
        widen_rows<KB, D>(kt.data() + Kt::layout::offset(sp.idx), Kt::layout::template strides_at<Rs>[Rs - 1], live, pack);
        return {pack, D, 1};
    } else {
        for (std::size_t j = 0; j < KB; ++j)
            for (std::size_t d = 0; d < D; ++d) {
                sp.idx[Rs - 2] = d;
                sp.idx[Rs - 1] = j0 + j;
                pack[j * D + d] = j < live ? read<F>(kt, nd_pos<Rs>{sp.idx}) : F(0);
            }
        return {pack, D, 1};
    }
}

// V^T's rows for keys j0 .. j0+KB (value column dv of key j at p[dv * ld + j * step]), in place
// or packed into `pack` (KB x DV), rows from `live` on as zeros (never read); 16-bit memory
// rows widened a vector at a time.
template <std::size_t KB, std::size_t DV, class F, class Vl, std::size_t R>
inline rows_view<F> value_rows(const Vl& v, nd_pos<R> ob, std::size_t j0, F* pack, std::size_t live = KB) noexcept {
    if constexpr (is_memory_leaf<Vl> && std::is_same_v<typename Vl::value_type, F>) {
        ob.idx[R - 2] = j0;
        ob.idx[R - 1] = 0;
        constexpr auto vst = Vl::layout::template strides_at<R>;
        return {v.data() + Vl::layout::offset(ob.idx), vst[R - 1], vst[R - 2]};
    } else if constexpr (is_memory_leaf<Vl> && is_half<typename Vl::value_type> && in_place<Vl, typename Vl::value_type, 0>) {
        ob.idx[R - 2] = j0;
        ob.idx[R - 1] = 0;
        widen_rows<KB, DV>(v.data() + Vl::layout::offset(ob.idx), Vl::layout::template strides_at<R>[R - 2], live, pack);
        return {pack, 1, DV};
    } else {
        for (std::size_t j = 0; j < KB; ++j)
            for (std::size_t dv = 0; dv < DV; ++dv) {
                ob.idx[R - 2] = j0 + j;
                ob.idx[R - 1] = dv;
                pack[j * DV + dv] = j < live ? read<F>(v, ob) : F(0);
            }
        return {pack, 1, DV};
    }
}

// acc += rows r0 .. r0+Rows of `a` times the tile buffer b (QL lanes per row) over Depth values
// of the shared axis: float FMAs, or with bf16 operands pair dot products (Depth even; pair k of
// row r at a.p[r * a.ld + k * a.step], b's pair rows 2 QL values apart).
template <class Vb, std::size_t Rows, std::size_t NVq, std::size_t Depth, class E>
__attribute__((always_inline)) inline void tile_product(rows_view<E> a, std::size_t r0, const E* b, Vb (&acc)[Rows][NVq]) noexcept {
    constexpr std::size_t QL = NVq * simd::lanes<Vb>;
    if constexpr (std::is_same_v<E, bf16>) pair_kernel<Vb, Rows, NVq, Depth / 2>(a.p + r0 * a.ld, a.ld, a.step, b, 2 * QL, acc);
    else micro_kernel<Vb, Rows, NVq, Depth>(a.p + r0 * a.ld, a.ld, a.step, b, QL, Depth, acc);
}

// Rows jr .. jr+Rows of k copied into `pad` (Rows x D, the same element order), those from row
// n on as zeros: a micro-tile the masks cut, whose keys from n on are never read.
template <std::size_t Rows, std::size_t D, class E>
inline rows_view<E> cut_rows(rows_view<E> k, std::size_t jr, std::size_t n, E* pad) noexcept {
    constexpr bool pairs = std::is_same_v<E, bf16>;  // pair p of a row at p * step: elements 2p, 2p + 1
    for (std::size_t r = 0; r < Rows; ++r)
        for (std::size_t d = 0; d < D; ++d)
            pad[r * D + d] = r >= n ? E{} : pairs ? k.p[(jr + r) * k.ld + d / 2 * k.step + d % 2] : k.p[(jr + r) * k.ld + d * k.step];
    return {pad, D, pairs ? 2 : 1};
}

// The score tree on rows jr .. je of a tile's products (in place in `tile`), and their maximum
// per query vector into mx.
template <class Vb, std::size_t NVq, class F, class Tree, class Pos>
__attribute__((always_inline)) inline void apply_tree(const Tree& t, Pos& pos, std::size_t i0, std::size_t j0, std::size_t jr, std::size_t je,
                                                      F* tile, Vb (&mx)[NVq]) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL, Rs = std::tuple_size_v<decltype(pos.idx)>;
    for (std::size_t j = jr; j < je; ++j) {
        pos.idx[Rs - 1] = j0 + j;
        for (std::size_t c = 0; c < NVq; ++c) {
            pos.idx[Rs - 2] = i0 + c * WL;
            const Vb s = read<Vb>(t, pos);
            simd::store(tile + j * QL + c * WL, s);
            mx[c] = simd::running_max(mx[c], s);
        }
    }
}

// Stage 2, scores: S^T = K_tile Q^T, MR keys at a time, and the score tree `t` on each micro-tile
// while it is in L1 (its loads and stores overlap the next micro-tile's FMAs). Scores go to st;
// their maximum per query vector to mt. Position, pointer and maxima are locals: vector stores
// may alias anything reached through a reference. Cut (a tile the masks cut): key rows from
// `live` on are never read (their products are zeros; the tree masks them).
template <class Vb, std::size_t NVq, std::size_t KB, std::size_t MR, std::size_t D, bool Cut, class E, class F, class Tree, class Pos>
__attribute__((always_inline)) inline void score_tile(rows_view<E> k, const E* qt, const Tree& t, Pos pos, std::size_t i0, std::size_t j0, F* st,
                       Vb (&mt)[NVq], std::size_t live) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    F* const tile = st;
    Vb mx[NVq];
    for (auto& x : mx) x = Vb(-std::numeric_limits<F>::infinity());
    alignas(64) E pad[Cut ? MR * D : 1];
    auto rows = [&]<std::size_t Rows>(std::size_t jr) __attribute__((always_inline)) {
        Vb acc[Rows][NVq];
        for (auto& row : acc)
            for (auto& x : row) x = Vb(F(0));
        if constexpr (Cut) {
            if (jr + Rows <= live) tile_product<Vb, Rows, NVq, D>(k, jr, qt, acc);
            else if (jr < live) tile_product<Vb, Rows, NVq, D>(cut_rows<Rows, D>(k, jr, live - jr, pad), 0, qt, acc);
        } else {
            tile_product<Vb, Rows, NVq, D>(k, jr, qt, acc);
        }
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NVq; ++c) simd::store(tile + (jr + r) * QL + c * WL, acc[r][c]);
        apply_tree<Vb, NVq>(t, pos, i0, j0, jr, jr + Rows, tile, mx);
    };
    std::size_t jr = 0;
    for (; jr + MR <= KB; jr += MR) rows.template operator()<MR>(jr);
    if constexpr (KB % MR != 0) rows.template operator()<KB % MR>(jr);
    for (std::size_t c = 0; c < NVq; ++c) mt[c] = mx[c];
}

// Stage 3, online softmax in units of 8 log2(e) (simd::exp2_eighths): the new running max m,
// the factor alpha that rescales what came before, the probabilities exp(s - max) in place of
// the scores in st, and the running sum l.
template <class Vb, std::size_t NVq, std::size_t KB, class F>
__attribute__((always_inline)) inline void online_softmax(F* const st, const Vb (&mt)[NVq], Vb (&m)[NVq], Vb (&l)[NVq], Vb (&alpha)[NVq]) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    const Vb L8(simd::log2e_x8<F>);
    Vb shift[NVq], sum[NVq];
    for (std::size_t c = 0; c < NVq; ++c) {
        constexpr F ninf = -std::numeric_limits<F>::infinity();
        check_tile_max(simd::reduce_max(simd::select<Vb>(mt[c] == Vb(-ninf), Vb(ninf), mt[c])) * simd::log2e_x8<F>);
        alpha[c] = advance_max(m[c], mt[c] * L8, shift[c]);
        sum[c] = Vb(F(0));
    }
    for (std::size_t j = 0; j < KB; ++j)
        for (std::size_t c = 0; c < NVq; ++c) {
            const Vb p = simd::exp_shifted(simd::load<Vb>(st + j * QL + c * WL), shift[c]);
            simd::store(st + j * QL + c * WL, p);
            sum[c] = sum[c] + p;
        }
    for (std::size_t c = 0; c < NVq; ++c) l[c] = simd::fma(l[c], alpha[c], sum[c]);
}

// Stage 4, P V: O^T = alpha O^T + V_tile^T P^T, MRV value columns at a time (from zero when
// O^T holds nothing yet).
template <class Vb, std::size_t NVq, std::size_t KB, std::size_t MRV, std::size_t DV, class E, class F>
__attribute__((always_inline)) inline void accumulate_pv(rows_view<E> v, const E* pt, F* ot, const Vb (&alpha)[NVq], bool fresh) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    constexpr std::size_t depth = std::is_same_v<E, bf16> ? KB + KB % 2 : KB;  // pairs: a last key of zeros
    auto value_rows = [&]<std::size_t Rows>(std::size_t dv0) __attribute__((always_inline)) {
        Vb acc[Rows][NVq];
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NVq; ++c)
                acc[r][c] = fresh ? Vb(F(0)) : simd::load<Vb>(ot + (dv0 + r) * QL + c * WL) * alpha[c];
        tile_product<Vb, Rows, NVq, depth>(v, dv0, pt, acc);
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NVq; ++c) simd::store(ot + (dv0 + r) * QL + c * WL, acc[r][c]);
    };
    std::size_t dv0 = 0;
    for (; dv0 + MRV <= DV; dv0 += MRV) value_rows.template operator()<MRV>(dv0);
    if constexpr (DV % MRV != 0) value_rows.template operator()<DV % MRV>(dv0);
}

// The log-sum-exp of the tile's queries from `skip` on, from the running max (units of 8 log2(e))
// and sum.
template <class Vb, std::size_t NVq, class U>
inline void store_lse(const Vb (&m)[NVq], const Vb (&l)[NVq], U* lse, std::size_t skip) noexcept {
    using F = simd::value_t<Vb>;
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    alignas(64) F all[QL];
    for (std::size_t c = 0; c < NVq; ++c) simd::store(all + c * WL, m[c] / Vb(simd::log2e_x8<F>) + simd::log(l[c]));
    std::copy(all + skip, all + QL, lse + skip);
}

// Stage 5, finish: O = O^T / l transposed into the output rows (zeros for a query whose every
// key was masked: l = 0), and the log-sum-exp when asked for. The first `skip` queries are not
// written (the last tile overlaps the one before it: evaluate_attention).
template <class Vb, std::size_t NVq, std::size_t DV, class F, class T, class U>
inline void finish_queries(F* ot, bool fresh, const Vb (&m)[NVq], const Vb (&l)[NVq], T* o, U* lse, std::size_t skip) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    if (fresh) std::fill(ot, ot + DV * QL, F(0));  // every key tile was masked out
    Vb inv[NVq];
    for (std::size_t c = 0; c < NVq; ++c) inv[c] = simd::select<Vb>(l[c] == Vb(F(0)), Vb(F(0)), Vb(F(1)) / l[c]);
    for (std::size_t dv = 0; dv < DV; ++dv)
        for (std::size_t c = 0; c < NVq; ++c) simd::store(ot + dv * QL + c * WL, simd::load<Vb>(ot + dv * QL + c * WL) * inv[c]);
    bool transposed = false;
    if constexpr (std::is_same_v<T, F>) {
        if (skip == 0) simd::transpose<DV, QL, QL, DV>(ot, o), transposed = true;
    }
    if (!transposed)
        for (std::size_t c = skip; c < QL; ++c)
            for (std::size_t dv = 0; dv < DV; ++dv) o[c * DV + dv] = static_cast<T>(ot[dv * QL + c]);
    if (lse != nullptr) store_lse<Vb, NVq>(m, l, lse, skip);
}

// ---- bf16 operands as pairs (vdpbf16ps) ----------------------------------------------------
// With Q, K and V all bf16 memory whose rows are contiguous, on a target with AVX-512 BF16, both
// products run as pair dot products at twice the FMA's rate: Q K^T pairs along the head
// dimension (exact products and float sums, as the float nest), P V pairs along the keys with P
// rounded to bf16 (the error: docs/numerics.md). Q^T, each tile's P^T and V are stored as pairs.
template <class Vb, class F, class Ql, class Kt, class Vl, std::size_t D>
inline constexpr bool pair_dots = simd::has_bf16_pair_dot && std::is_same_v<F, float> && simd::lanes<Vb> == 16 && D % 2 == 0 &&
                                  in_place<Ql, bf16, 0> && in_place<Kt, bf16, 1> && in_place<Vl, bf16, 0>;

// Stage 1 for pairs: pair row p of qt holds (Q[i][2p], Q[i][2p+1]) for the QL queries i0 + i.
template <std::size_t QL, std::size_t D, class Ql, std::size_t Rs>
inline void pack_q_pairs(const Ql& q, nd_pos<Rs, Rs - 2> sp, std::size_t i0, bf16* qt) noexcept {
    constexpr std::size_t ldq = Ql::layout::template strides_at<Rs>[Rs - 2];
    sp.idx[Rs - 2] = i0;
    sp.idx[Rs - 1] = 0;
    const bf16* rows = q.data() + Ql::layout::offset(sp.idx);
    for (std::size_t i = 0; i < QL; ++i)
        for (std::size_t p = 0; p < D / 2; ++p) std::memcpy(qt + (p * QL + i) * 2, rows + i * ldq + 2 * p, 2 * sizeof(bf16));
}

// Key rows j0 .. for pairs, in place: pair p of key j at p[j * ld + 2p].
template <class Kt, std::size_t Rs>
inline rows_view<bf16> key_pairs(const Kt& kt, nd_pos<Rs, Rs - 2> sp, std::size_t j0) noexcept {
    sp.idx[Rs - 2] = 0;
    sp.idx[Rs - 1] = j0;
    return {kt.data() + Kt::layout::offset(sp.idx), Kt::layout::template strides_at<Rs>[Rs - 1], 2};
}

// V's rows j0 .. j0+KB as pairs of keys: pair row j/2 holds (V[j][dv], V[j+1][dv]) for every dv
// (a zero key after an odd last one); pair k of value column dv at pack[dv * 2 + k * 2 DV]. Keys
// from `live` on are zeros (a tile the masks cut: their rows take no part, whatever they hold).
template <std::size_t KB, std::size_t DV, class Vl, std::size_t R>
inline rows_view<bf16> value_pairs(const Vl& v, nd_pos<R> ob, std::size_t j0, bf16* pack, std::size_t live = KB) noexcept {
    constexpr std::size_t ld = Vl::layout::template strides_at<R>[R - 2];
    ob.idx[R - 2] = j0;
    ob.idx[R - 1] = 0;
    const bf16* rows = v.data() + Vl::layout::offset(ob.idx);
    const std::size_t n = std::min(live, KB);
    std::fill(pack + (n + 1) / 2 * 2 * DV, pack + (KB + 1) / 2 * 2 * DV, bf16::from_bits(0));
    for (std::size_t j = 0; j < n; j += 2) {
        const bf16* a = rows + j * ld;
        bf16* out = pack + j * DV;
        if (j + 1 == n) {
            for (std::size_t dv = 0; dv < DV; ++dv) out[2 * dv] = a[dv], out[2 * dv + 1] = bf16::from_bits(0);
            break;
        }
        std::size_t dv = 0;
        for (; dv + 32 <= DV; dv += 32) simd::interleave_rows(a + dv, a + ld + dv, out + 2 * dv);
        for (; dv < DV; ++dv) out[2 * dv] = a[dv], out[2 * dv + 1] = a[ld + dv];
    }
    return {pack, 2, 2 * DV};
}

// P^T (st, KB x QL floats) rounded to bf16 pairs of keys: pair row j/2 at pt + j * QL.
template <class Vb, std::size_t NVq, std::size_t KB, class F>
__attribute__((always_inline)) inline void pack_p_pairs(const F* st, bf16* pt) noexcept {
    constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
    for (std::size_t j = 0; j < KB; j += 2)
        for (std::size_t c = 0; c < NVq; ++c) {
            const Vb x = simd::load<Vb>(st + j * QL + c * WL);
            const Vb y = j + 1 < KB ? simd::load<Vb>(st + (j + 1) * QL + c * WL) : Vb(F(0));
            simd::store_pairs(pt + j * QL + 2 * c * WL, x, y);
        }
}

// V's rows for a tile the masks cut: keys from `live` on take no part whatever their rows hold
// (0 x NaN is NaN), so they read as zeros: the rows copied into `pack` (KB x DV, as value_rows
// packs them) up to `live`, zeros after.
template <std::size_t KB, std::size_t DV, class F>
inline rows_view<F> live_rows(rows_view<F> v, std::size_t live, F* pack) noexcept {
    for (std::size_t j = 0; j < KB; ++j) {
        F* out = pack + j * DV;
        if (j >= live) std::fill(out, out + DV, F(0));
        else if (v.ld == 1) std::copy(v.p + j * v.step, v.p + j * v.step + DV, out);
        else
            for (std::size_t dv = 0; dv < DV; ++dv) out[dv] = v.p[dv * v.ld + j * v.step];
    }
    return {pack, 1, DV};
}

// ---- bf16 operands on AMX tiles (attention_amx.hpp) ----------------------------------------
// Where the pair products apply, the target has AMX-BF16, the head dimension and the value
// width are whole tiles and there are at least 64 queries, both products run on tiles when the
// process is granted them (simd::use_amx, checked at run time): 16 x 16 x 32 products per
// instruction against 16 x 2 for vdpbf16ps. Query tiles of 64, key tiles of 64; P rounded to
// bf16 as in the pair nest.
template <class Vb, class F, class Ql, class Kt, class Vl, std::size_t NQ, std::size_t D, std::size_t DV>
inline constexpr bool amx_dots =
    simd::has_amx_bf16 && pair_dots<Vb, F, Ql, Kt, Vl, D> && NQ >= 64 && D % 32 == 0 && DV % 16 == 0 && simd::lanes<Vb> == 16;
inline constexpr std::size_t amx_key_tile = 64;

#if defined(ATTEND_HAS_AMX_BF16)
// Stage 2 on tiles: S^T 16 keys at a time (keys from `live`, or past KB, read as zero rows from a
// padded copy, never in place), the score tree and the maxima as score_tile.
template <class Vb, std::size_t NVq, std::size_t KB, std::size_t D, bool Cut, class Tree, class Pos>
__attribute__((always_inline)) inline void amx_score_tile(rows_view<bf16> k, const bf16* qt, const Tree& t, Pos pos, std::size_t i0,
                                                          std::size_t j0, float* st, Vb (&mt)[NVq], std::size_t live) noexcept {
    constexpr std::size_t QL = amx_queries;
    static_assert(NVq * simd::lanes<Vb> == QL);
    constexpr bool padded = Cut || KB % 16 != 0;
    alignas(64) bf16 pad[padded ? 16 * D : 1];
    const std::size_t n = Cut ? std::min(live, KB) : KB;
    Vb mx[NVq];
    for (auto& x : mx) x = Vb(-std::numeric_limits<float>::infinity());
    for (std::size_t jr = 0; jr < KB; jr += 16) {
        const bf16* rows = k.p + jr * k.ld;
        std::size_t ld = k.ld;
        if (padded && jr + 16 > n) {
            for (std::size_t i = 0; i < 16; ++i)
                if (jr + i < n) std::memcpy(pad + i * D, rows + i * k.ld, D * sizeof(bf16));
                else std::fill(pad + i * D, pad + (i + 1) * D, bf16::from_bits(0));
            rows = pad, ld = D;
        }
        amx_scores<D>(rows, ld, qt, st + jr * QL);
        apply_tree<Vb, NVq>(t, pos, i0, j0, jr, std::min(jr + 16, KB), st, mx);
    }
    for (std::size_t c = 0; c < NVq; ++c) mt[c] = mx[c];
}

// P^T (st, KB rows of QL floats) as P for the tiles: QL rows of KP bf16, keys from KB on zero. A
// pair of keys of one query is one 32-bit unit of P^T's pairs (pack_p_pairs), so P is those
// units transposed.
template <class Vb, std::size_t NVq, std::size_t KB, std::size_t KP>
__attribute__((always_inline)) inline void amx_pack_p(const float* st, float* pairs, float* p) noexcept {
    constexpr std::size_t QL = NVq * simd::lanes<Vb>;
    pack_p_pairs<Vb, NVq, KB>(st, reinterpret_cast<bf16*>(pairs));
    std::fill(pairs + (KB + 1) / 2 * QL, pairs + KP / 2 * QL, 0.0f);  // (bits 0: bf16 zeros)
    simd::transpose<KP / 2, QL, QL, KP / 2>(pairs, p);
}

// O's rows (QL x DV) times their query's alpha, but for rows whose max did not move (alpha 1).
template <class Vb, std::size_t NVq, std::size_t DV>
__attribute__((always_inline)) inline void amx_rescale(float* o, const Vb (&alpha)[NVq]) noexcept {
    constexpr std::size_t W = simd::lanes<Vb>, QL = NVq * W;
    alignas(64) float a[QL];
    for (std::size_t c = 0; c < NVq; ++c) simd::store(a + c * W, alpha[c]);
    for (std::size_t i = 0; i < QL; ++i)
        if (a[i] != 1.0f)
            for (std::size_t c = 0; c < DV; c += W) simd::store(o + i * DV + c, simd::load<Vb>(o + i * DV + c) * Vb(a[i]));
}

// Stage 5 on tiles: O (QL x DV, row-major already) divided by l into the output rows from `skip`
// on (zeros where every key was masked), and the log-sum-exp when asked for.
template <class Vb, std::size_t NVq, std::size_t DV, class T, class U>
inline void amx_finish(float* o, bool fresh, const Vb (&m)[NVq], const Vb (&l)[NVq], T* out, U* lse, std::size_t skip) noexcept {
    constexpr std::size_t W = simd::lanes<Vb>, QL = NVq * W;
    if (fresh) std::fill(o, o + QL * DV, 0.0f);
    alignas(64) float inv[QL];
    for (std::size_t c = 0; c < NVq; ++c) simd::store(inv + W * c, simd::select<Vb>(l[c] == Vb(0.0f), Vb(0.0f), Vb(1.0f) / l[c]));
    for (std::size_t i = skip; i < QL; ++i)
        for (std::size_t c = 0; c < DV; c += W) simd::store(out + i * DV + c, simd::load<Vb>(o + i * DV + c) * Vb(inv[i]));
    if (lse != nullptr) store_lse<Vb, NVq>(m, l, lse, skip);
}
#endif

// ---- the nest ------------------------------------------------------------------------------

// How a query tile's two products run: float FMAs (16-bit K and V widened as they are packed),
// bf16 pair products (vdpbf16ps), or AMX tiles.
enum class products { fmas, pairs, tiles };

// One work item: the queries i0 .. i0+QL of batch index `batch`, over every key tile that the
// score tree's masks do not rule out (bounds.hpp); the first `skip` are not written. Mode: how
// the products run (the caller's run-time choice, evaluate_attention).
template <class Arch, class S, class T, class F, class Vb, std::size_t NVq, products Mode, class Sc, class Ql, class Kt, class Vl, class U>
void query_tile(const Sc& sc, const Ql& q, const Kt& kt, const Vl& v, T* out, U* lse, std::size_t batch, std::size_t i0,
                std::size_t skip) {
    using Ss = typename Sc::shape_type;
    using MM = std::remove_cvref_t<decltype(find_matmul(sc))>;
    constexpr std::size_t R = S::rank, Rs = Ss::rank, NQ = MM::M, D = MM::K, NK = MM::N, DV = S::extents[R - 1];
    using G = attention_tiling<F, Arch, NQ, D, DV>;
    constexpr bool Amx = Mode == products::tiles, pairs = Mode != products::fmas;  // (tiles read pairs too)
    [[maybe_unused]] constexpr std::size_t MR = G::MR, MRV = G::MRV;  // (the vector products' micro-tiles)
    constexpr std::size_t BN = Amx ? amx_key_tile : G::BN, WL = simd::lanes<Vb>, QL = NVq * WL;
    static_assert(!pairs || pair_dots<Vb, F, Ql, Kt, Vl, D>);
    static_assert(!Amx || amx_dots<Vb, F, Ql, Kt, Vl, NQ, D, DV>);
    using E = std::conditional_t<pairs, bf16, F>;  // the type the products read
    constexpr bool k_packed = !pairs && !(is_memory_leaf<Kt> && std::is_same_v<typename Kt::value_type, F>);
    constexpr bool v_packed = !pairs && !(is_memory_leaf<Vl> && std::is_same_v<typename Vl::value_type, F>);
    constexpr std::size_t BN2 = BN + BN % 2;  // keys rounded up to whole pairs

    nd_pos<R> ob = batch_position<S>(batch);  // output batch index in ob.idx[0 .. R-3]
    nd_pos<Rs, Rs - 2> sp{};                  // the same at the score tree's rank (it broadcasts)
    for (std::size_t k = 0; k + 2 < Rs; ++k) sp.idx[k] = ob.idx[k + R - Rs];
    box<Rs> tile_box{sp.idx, sp.idx};
    tile_box.lo[Rs - 2] = i0;
    tile_box.hi[Rs - 2] = i0 + QL - 1;

    alignas(64) F kpack[k_packed ? BN * D : 1];
    alignas(64) F vpack[v_packed ? BN * DV : 1];
    alignas(64) bf16 vpairs[pairs ? BN2 * DV : 1];
    alignas(64) bf16 ppairs[pairs && !Amx ? BN2 * QL : 1];
    [[maybe_unused]] alignas(64) float punits[Amx ? BN / 2 * QL : 1], pmat[Amx ? BN / 2 * QL : 1];  // P^T as pairs, P
    [[maybe_unused]] std::conditional_t<Amx, simd::amx_tiles, simd::no_tiles> tiles;
    alignas(64) E qt[D * QL];
    alignas(64) F st[BN * QL];
    alignas(64) F ot[DV * QL];
    if constexpr (pairs) pack_q_pairs<QL, D>(q, sp, i0, qt);
    else pack_q<Vb, NVq, D>(q, sp, i0, qt);
    bool fresh = true;  // O^T not yet written: the first visited key tile starts it from zero
    Vb m[NVq], l[NVq];
    for (std::size_t c = 0; c < NVq; ++c) m[c] = Vb(-std::numeric_limits<F>::infinity()), l[c] = Vb(F(0));

    // One key tile with the score tree `t` (the full tree, or the tree without its index masks on
    // a tile they keep entirely); with `vlive`, only its first `live` keys take part in P V (a
    // tile the masks cut: V's rows past them read as zeros, live_rows).
    auto visit = [&]<std::size_t KB, bool Cut = false>(std::size_t j0, const auto& t, std::size_t live = KB, F* vlive = nullptr) {
        Vb mt[NVq], alpha[NVq];
        if constexpr (Amx) {
#if defined(ATTEND_HAS_AMX_BF16)
            constexpr std::size_t KP = (KB + 31) / 32 * 32;
            amx_score_tile<Vb, NVq, KB, D, Cut>(key_pairs(kt, sp, j0), qt, t, sp, i0, j0, st, mt, live);
            online_softmax<Vb, NVq, KB>(st, mt, m, l, alpha);
            amx_pack_p<Vb, NVq, KB, KP>(st, punits, pmat);
            const rows_view<bf16> vp = value_pairs<KP, DV>(v, ob, j0, vpairs, std::min(live, KB));
            if (!fresh) amx_rescale<Vb, NVq, DV>(ot, alpha);
            amx_pv<DV, KP>(reinterpret_cast<const bf16*>(pmat), vp.p, ot, fresh);
#endif
        } else if constexpr (pairs) {
            score_tile<Vb, NVq, KB, MR, D, Cut>(key_pairs(kt, sp, j0), qt, t, sp, i0, j0, st, mt, live);
            online_softmax<Vb, NVq, KB>(st, mt, m, l, alpha);
            pack_p_pairs<Vb, NVq, KB>(st, ppairs);
            accumulate_pv<Vb, NVq, KB, MRV, DV>(value_pairs<KB, DV>(v, ob, j0, vpairs, live), ppairs, ot, alpha, fresh);
        } else {
            score_tile<Vb, NVq, KB, MR, D, Cut>(key_rows<KB, D>(kt, sp, j0, kpack, live), qt, t, sp, i0, j0, st, mt, live);
            online_softmax<Vb, NVq, KB>(st, mt, m, l, alpha);
            rows_view<F> vr = value_rows<KB, DV>(v, ob, j0, vpack, live);
            if (live < KB) vr = live_rows<KB, DV>(vr, live, vlive);
            accumulate_pv<Vb, NVq, KB, MRV, DV>(vr, st, ot, alpha, fresh);
        }
        fresh = false;
    };
    // The score tree over a tile is built per key tile around a cursor that lives as long, so the
    // compiler sees every field of both as constants of the tile and keeps them in registers.
    using Tree = decltype(with_tile(sc, tile_leaf<F, Ss, true>{{}, nullptr}));
    // Tiles a mask cuts through run out of line, each whole tile (docs/design.md: inlined, or
    // called from inside a tile, the masked tree slowed every tile).
    constexpr std::size_t live_n = pairs ? 1 : BN * DV;  // (written inside the lambda, it crashes g++ 12)
    // (end: where the tile's live keys end, when the caller has searched it)
    constexpr std::size_t unsearched = std::size_t(-1);
    auto masked_visit = [&]<std::size_t KB>(std::size_t j0, const Tree& t, std::size_t end) __attribute__((noinline)) {
        alignas(64) F vlive[live_n];
        if (end == unsearched) end = live_end(t, tile_box);
        visit.template operator()<KB, true>(j0, t, end - j0, +vlive);
    };
    auto key_tile = [&]<std::size_t KB>(std::size_t j0) {
        tile_box.lo[Rs - 1] = j0;
        tile_box.hi[Rs - 1] = j0 + KB - 1;
        const tile_cursor<F> cursor{st, QL, i0, j0};
        const Tree tree = with_tile(sc, tile_leaf<F, Ss, true>{{}, &cursor});
        if (bounds(tree, tile_box).hi == -inf) return;  // every score -inf: nothing to add
        if constexpr (has_index_where<Tree>()) {
            if (index_conditions_never(tree, tile_box)) visit.template operator()<KB>(j0, without_index_masks(tree));
            else masked_visit.template operator()<KB>(j0, tree, unsearched);
        } else if constexpr (has_where<Tree>()) {  // masks over tensors only (a length a head): cut where they end
            if (const std::size_t end = live_end(tree, tile_box); end < j0 + KB) masked_visit.template operator()<KB>(j0, tree, end);
            else visit.template operator()<KB>(j0, tree);
        } else {
            visit.template operator()<KB>(j0, tree);
        }
    };
    std::size_t j0 = 0;
    for (; j0 + BN <= NK; j0 += BN) key_tile.template operator()<BN>(j0);
    if constexpr (NK % BN != 0) key_tile.template operator()<NK % BN>(j0);

    ob.idx[R - 2] = i0;
    ob.idx[R - 1] = 0;
    T* const rows = out + row_major<S>::offset(ob.idx);
    U* const lse_rows = lse ? lse + batch * NQ + i0 : lse;
    if constexpr (Amx) {
#if defined(ATTEND_HAS_AMX_BF16)
        amx_finish<Vb, NVq, DV>(ot, fresh, m, l, rows, lse_rows, skip);
#endif
    } else {
        finish_queries<Vb, NVq, DV>(ot, fresh, m, l, rows, lse_rows, skip);
    }
}

// Writes the attention output to `out` and, when `lse` is given, the log-sum-exp of each query's
// (modified) scores to lse[batch * NQ + i] (-inf for a query whose every key is masked).
//
// Work items: (batch index, query tile). When the tiles do not divide the queries, the last item
// takes the queries left over: up to QT / 8 of them through the decode nest (decode_queries),
// more as a last tile that ends at the last query, overlapping the one before it, and writes only
// the queries the tiles before it do not. Each item owns its stack tiles and writes its own
// output rows, so items run in any order, on any thread, with bit-identical results (a query's
// lane sees the same key tiles' values in any tile: tiles skipped for one box and visited for
// another add exact zeros, or NaN where V holds NaN or inf at keys the query masks:
// docs/numerics.md).
// Items go batch index by batch index (consecutive items share K and V in cache), last query
// tile first within each: under a causal mask those have the most keys, so the dynamic schedule
// ends on short items.
template <class Arch, class S, class T, class E, class U = T>
void evaluate_attention(T* out, const E& root, U* lse = nullptr) {
    const auto& sc = root.a.arg;  // the score tree
    const auto& scores = find_matmul(sc);
    using MM = std::remove_cvref_t<decltype(scores)>;
    constexpr std::size_t NQ = MM::M, D = MM::K, NK = MM::N, DV = S::extents[S::rank - 1];
    using F = compute_t<E, floating_or_double<T>>;
    using G = attention_tiling<F, Arch, NQ, D, DV>;
    constexpr std::size_t QT = G::QT, tiles = NQ / QT, rest = G::rest, items = tiles + (rest != 0);  // per batch index
    constexpr std::size_t batches = S::size / (NQ * DV);
    constexpr bool worth = batches * NQ * NK * (D + DV) >= (std::size_t{1} << 20);  // ~2 MFLOP
    // Q, K^T and V evaluated first where they are not leaves the nest can read.
    lower_each<Arch, 0>(std::tie(scores.a, scores.b, root.b), [&](const auto& q, const auto& kt, const auto& v) {
        if constexpr (NQ <= decode_tiling<F, Arch, NQ, D, DV>::max_queries) {  // a few queries: decode.hpp
            evaluate_decode<Arch, S, T, F>(sc, q, kt, v, out, lse);
        } else {
            static_assert(NQ >= QT, "attend internal: the attention nest's query tile is wider than the queries");
            [[maybe_unused]] const bool ahead = G::rest_decodes && decode_from_dram<F>(kt, v);  // for the leftover queries
            using Vb = typename G::B;
            if constexpr (amx_dots<Vb, F, std::remove_cvref_t<decltype(q)>, std::remove_cvref_t<decltype(kt)>,
                                   std::remove_cvref_t<decltype(v)>, NQ, D, DV>) {
#if defined(ATTEND_HAS_AMX_BF16)
                // On tiles: query tiles of 64, the last one ending at the last query (overlapping).
                constexpr std::size_t QA = amx_queries, atiles = NQ / QA, aitems = atiles + (NQ % QA != 0);
                if (simd::use_amx())
                    return parallel_for(batches * aitems, worth, [&](std::size_t item) {
                        const std::size_t batch = item / aitems, t = aitems - 1 - item % aitems;
                        const std::size_t i0 = t < atiles ? t * QA : NQ - QA, skip = t < atiles ? 0 : QA - NQ % QA;
                        query_tile<Arch, S, T, F, Vb, QA / simd::lanes<Vb>, products::tiles>(sc, q, kt, v, out, lse, batch, i0, skip);
                    });
#endif
            }
            constexpr bool may_pair = pair_dots<Vb, F, std::remove_cvref_t<decltype(q)>, std::remove_cvref_t<decltype(kt)>,
                                                std::remove_cvref_t<decltype(v)>, D>;
            const bool pair = may_pair && pair_products_pay();
            parallel_for(batches * items, worth, [&](std::size_t item) {
                const std::size_t batch = item / items, t = items - 1 - item % items;
                if constexpr (G::rest_decodes)
                    if (t == tiles) return decode_queries<Arch, S, F, rest>(sc, q, kt, v, out, lse, batch, NQ - rest, ahead);
                const std::size_t i0 = t < tiles ? t * QT : NQ - QT, skip = t < tiles ? 0 : QT - rest;
                if constexpr (may_pair)
                    if (pair) return query_tile<Arch, S, T, F, Vb, G::NV, products::pairs>(sc, q, kt, v, out, lse, batch, i0, skip);
                query_tile<Arch, S, T, F, Vb, G::NV, products::fmas>(sc, q, kt, v, out, lse, batch, i0, skip);
            });
        }
    });
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
