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
#include <cstddef>
#include <limits>
#include <type_traits>

#include "bounds.hpp"
#include "contract.hpp"
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

// Tiles from the static shapes and the target's registers (bench/attention): two vectors of
// queries per tile and key tiles of 48; score accumulators of 12 keys x 2 vectors and output
// accumulators of 8 value columns x 2 vectors with 32 registers (AVX-512, measured on Zen 4; on
// Zen 5 key tiles of 32 and 64 were 10-50 % slower, 96 level, 12 value columns 2-4 % slower),
// 6 x 2 and 6 x 2 with 16 (AVX2, measured on Zen 3).
template <class F, class Arch, std::size_t NQ, std::size_t D, std::size_t DV>
struct attention_tiling {
    using B = simd::batch<F, Arch>;
    static constexpr std::size_t W = simd::lanes<B>;
    static constexpr bool wide = sizeof(B) == 64;  // 32 vector registers
    static constexpr std::size_t NV = NQ >= 2 * W ? 2 : 1, QT = NV * W;  // queries per tile
    static constexpr std::size_t MR = wide ? 12 : 6;                     // keys per micro-tile
    static constexpr std::size_t BN = 48;                                // keys per tile
    static constexpr std::size_t MRV = wide ? 8 : 6;                     // value columns per micro-tile
};

// Writes the attention output to `out` and, when `lse` is given, the log-sum-exp of each query's
// (modified) scores to lse[batch * NQ + i] (-inf for a query whose every key is masked).
template <class Arch, class S, class T, class E, class U = T>
void evaluate_attention(T* out, const E& root, U* lse = nullptr) {
    const auto& sc = root.a.arg;  // the score tree
    using Sc = typename std::remove_cvref_t<decltype(sc)>::shape_type;
    const auto& scores = find_matmul(sc);
    using MM0 = std::remove_cvref_t<decltype(scores)>;
    constexpr std::size_t R = S::rank, Rs = Sc::rank;
    constexpr std::size_t NQ = MM0::M, D = MM0::K, NK = MM0::N, DV = S::extents[R - 1];
    using F = compute_t<E, floating_or_double<T>>;
    using G = attention_tiling<F, Arch, NQ, D, DV>;
    constexpr std::size_t MR = G::MR, BN = G::BN, MRV = G::MRV;

    lower<Arch>(scores.a, [&](const auto& q) {
    lower<Arch>(scores.b, [&](const auto& kt) {
    lower<Arch>(root.b, [&](const auto& v) {
        using Ql = std::remove_cvref_t<decltype(q)>;
        using Kt = std::remove_cvref_t<decltype(kt)>;
        using Vl = std::remove_cvref_t<decltype(v)>;
        // K rows and V are broadcast by the micro-kernels; read in place when they are memory of
        // the compute type, else packed per key tile.
        constexpr bool k_direct = is_memory_leaf<Kt> && std::is_same_v<typename Kt::value_type, F>;
        constexpr bool v_direct = is_memory_leaf<Vl> && std::is_same_v<typename Vl::value_type, F>;
        constexpr bool q_rows = in_place<Ql, F, 0>;  // Q^T packed by block transposes
        using Bv = typename G::B;
        constexpr std::size_t QT = G::QT, tiles = NQ / QT, items = tiles + NQ % QT;  // per batch index
        constexpr std::size_t batches = S::size / (NQ * DV);

        // Work items: (batch index, query tile), the last queries one by one. Each item owns its
        // stack tiles and writes its own output rows, so items run in any order, on any thread,
        // with bit-identical results.
        constexpr bool worth = batches * NQ * NK * (D + DV) >= (std::size_t{1} << 20);  // ~2 MFLOP
        // Items go batch index by batch index (consecutive items share K and V in cache), last
        // query tile first within each: under a causal mask those have the most keys, so the
        // dynamic schedule ends on short items.
        parallel_for(batches * items, worth, [&](std::size_t item) {
            const std::size_t batch = item / items, t = items - 1 - item % items;
            nd_pos<R> ob = batch_position<S>(batch);  // output batch index in ob.idx[0 .. R-3]
            // The score tree over a tile: built per key tile around a cursor that lives as long,
            // so the compiler sees every field of both as a constant of the tile and keeps them
            // in registers (one tree for the whole item, read through a cursor it updated,
            // reloaded the cursor and re-converted scalars at every read: 3x the tree's work).
            auto tree_at = [&](const tile_cursor<F>& cur) { return with_tile(sc, tile_leaf<F, Sc, true>{{}, &cur}); };
            using Tree = decltype(tree_at(std::declval<const tile_cursor<F>&>()));
            alignas(64) F kpack[k_direct ? 1 : BN * D];
            alignas(64) F vpack[v_direct ? 1 : BN * DV];
            // The same batch index at the rank of the score tree (its own broadcasting applies).
            nd_pos<Rs, Rs - 2> sp{};
            for (std::size_t k = 0; k + 2 < Rs; ++k) sp.idx[k] = ob.idx[k + R - Rs];
            box<Rs> tile_box{sp.idx, sp.idx};

            auto query_tile = [&]<class Vb, std::size_t NVq>(std::size_t i0) {
                constexpr std::size_t WL = simd::lanes<Vb>, QL = NVq * WL;
                alignas(64) F qt[D * QL];  // Q^T: row d holds the tile's queries
                alignas(64) F st[BN * QL];  // S^T, then P^T: row j holds the tile's queries
                alignas(64) F ot[DV * QL];  // O^T accumulators
                if constexpr (q_rows) {  // Q's rows are contiguous: transpose them in blocks
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
                bool fresh = true;  // O^T not yet written: the first visited key tile starts it from zero
                Vb m[NVq], l[NVq];  // running max (times 8 log2(e)) and sum of the probabilities
                for (std::size_t c = 0; c < NVq; ++c) m[c] = Vb(-std::numeric_limits<F>::infinity()), l[c] = Vb(F(0));
                tile_box.lo[Rs - 2] = i0;
                tile_box.hi[Rs - 2] = i0 + QL - 1;

                // One key tile with the score tree `t` (the full tree, or the tree without its
                // index masks on a tile they keep entirely).
                auto visit = [&]<std::size_t KB>(std::size_t j0, const auto& t) {
                    // K rows j0 .. j0+KB: a[j * lda + d * ka].
                    const F* kp = kpack;
                    std::size_t lda = D, ka = 1;
                    if constexpr (k_direct) {
                        sp.idx[Rs - 2] = 0;
                        sp.idx[Rs - 1] = j0;
                        constexpr auto kst = Kt::layout::template strides_at<Rs>;
                        kp = kt.data() + Kt::layout::offset(sp.idx);
                        lda = kst[Rs - 1], ka = kst[Rs - 2];
                    } else {
                        for (std::size_t j = 0; j < KB; ++j)
                            for (std::size_t d = 0; d < D; ++d) {
                                sp.idx[Rs - 2] = d;
                                sp.idx[Rs - 1] = j0 + j;
                                kpack[j * D + d] = read<F>(kt, nd_pos<Rs>{sp.idx});
                            }
                    }
                    // S^T = K_tile Q^T, MR keys at a time, and the score tree on each micro-tile while
                    // it is in L1 (its work overlaps the next micro-tile's FMAs): the scores stay in
                    // st, their maximum per query goes to mt.
                    Vb mt[NVq];
                    {
                        auto pos = sp;  // local position, pointer and maxima stay in registers
                        F* const tile = st;
                        Vb mx[NVq];
                        for (auto& x : mx) x = Vb(-std::numeric_limits<F>::infinity());
                        auto rows = [&]<std::size_t Rows>(std::size_t jr) {
                            Vb acc[Rows][NVq];
                            for (auto& row : acc)
                                for (auto& x : row) x = Vb(F(0));
                            micro_kernel<Vb, Rows, NVq, D>(kp + jr * lda, lda, ka, qt, QL, D, acc);
                            for (std::size_t r = 0; r < Rows; ++r)
                                for (std::size_t c = 0; c < NVq; ++c) simd::store(tile + (jr + r) * QL + c * WL, acc[r][c]);
                            for (std::size_t j = jr; j < jr + Rows; ++j) {
                                pos.idx[Rs - 1] = j0 + j;
                                for (std::size_t c = 0; c < NVq; ++c) {
                                    pos.idx[Rs - 2] = i0 + c * WL;
                                    const Vb s = read<Vb>(t, pos);
                                    simd::store(tile + j * QL + c * WL, s);
                                    mx[c] = simd::running_max(mx[c], s);
                                }
                            }
                        };
                        std::size_t jr = 0;
                        for (; jr + MR <= KB; jr += MR) rows.template operator()<MR>(jr);
                        if constexpr (KB % MR != 0) rows.template operator()<KB % MR>(jr);
                        for (std::size_t c = 0; c < NVq; ++c) mt[c] = mx[c];
                    }

                    // Online softmax in units of 8 log2(e) (simd::exp2_eighths): new max, rescale
                    // factor, probabilities exp(s - max) = 2^((s L8 - max L8) / 8) and their sums.
                    const Vb L8(simd::log2e_x8<F>);
                    Vb alpha[NVq], shift[NVq], sum[NVq];
                    for (std::size_t c = 0; c < NVq; ++c) {
                        const Vb mn = simd::maximum(m[c], mt[c] * L8);
                        shift[c] = simd::select<Vb>(mn == Vb(-std::numeric_limits<F>::infinity()), Vb(F(0)), mn);
                        alpha[c] = simd::exp2_eighths(m[c] - shift[c]);
                        m[c] = mn;
                        sum[c] = Vb(F(0));
                    }
                    F* const pt = st;  // a local pointer: vector stores may alias the closure's
                    for (std::size_t j = 0; j < KB; ++j)
                        for (std::size_t c = 0; c < NVq; ++c) {
                            const Vb p = simd::exp_shifted(simd::load<Vb>(pt + j * QL + c * WL), shift[c]);
                            simd::store(pt + j * QL + c * WL, p);
                            sum[c] = sum[c] + p;
                        }
                    for (std::size_t c = 0; c < NVq; ++c) l[c] = simd::fma(l[c], alpha[c], sum[c]);

                    // V rows j0 .. j0+KB as A[dv][j] = a[dv * lda + j * ka].
                    const F* vp = vpack;
                    std::size_t vlda = 1, vka = DV;
                    if constexpr (v_direct) {
                        ob.idx[R - 2] = j0;
                        ob.idx[R - 1] = 0;
                        constexpr auto vst = Vl::layout::template strides_at<R>;
                        vp = v.data() + Vl::layout::offset(ob.idx);
                        vlda = vst[R - 1], vka = vst[R - 2];
                    } else {
                        for (std::size_t j = 0; j < KB; ++j)
                            for (std::size_t dv = 0; dv < DV; ++dv) {
                                ob.idx[R - 2] = j0 + j;
                                ob.idx[R - 1] = dv;
                                vpack[j * DV + dv] = read<F>(v, ob);
                            }
                    }
                    // O^T = alpha O^T + V_tile^T P^T, MRV value columns at a time.
                    auto value_rows = [&]<std::size_t Rows>(std::size_t dv0) {
                        Vb acc[Rows][NVq];
                        for (std::size_t r = 0; r < Rows; ++r)
                            for (std::size_t c = 0; c < NVq; ++c)
                                acc[r][c] = fresh ? Vb(F(0)) : simd::load<Vb>(ot + (dv0 + r) * QL + c * WL) * alpha[c];
                        micro_kernel<Vb, Rows, NVq, KB>(vp + dv0 * vlda, vlda, vka, st, QL, KB, acc);
                        for (std::size_t r = 0; r < Rows; ++r)
                            for (std::size_t c = 0; c < NVq; ++c) simd::store(ot + (dv0 + r) * QL + c * WL, acc[r][c]);
                    };
                    std::size_t dv0 = 0;
                    for (; dv0 + MRV <= DV; dv0 += MRV) value_rows.template operator()<MRV>(dv0);
                    if constexpr (DV % MRV != 0) value_rows.template operator()<DV % MRV>(dv0);
                    fresh = false;
                };
                // Tiles an index mask cuts through run out of line, each whole tile: inlined next to
                // the unmasked one, the masked tree made g++ compile every tile worse (causal
                // (2048, 64) 8.4 -> 7.6 ms on Zen 3), and a call from inside the tile made it keep
                // the tile's state in memory around the call (unmasked tiles 17 % slower on Zen 5).
                auto masked_visit = [&]<std::size_t KB>(std::size_t j0, const Tree& t) __attribute__((noinline)) {
                    visit.template operator()<KB>(j0, t);
                };
                auto key_tile = [&]<std::size_t KB>(std::size_t j0) {
                    tile_box.lo[Rs - 1] = j0;
                    tile_box.hi[Rs - 1] = j0 + KB - 1;
                    const tile_cursor<F> cursor{st, QL, i0, j0};
                    const Tree tree = tree_at(cursor);
                    if (bounds(tree, tile_box).hi == -inf) return;  // every score -inf: nothing to add
                    if constexpr (has_index_where<Tree>()) {
                        if (index_conditions_never(tree, tile_box)) visit.template operator()<KB>(j0, without_index_masks(tree));
                        else masked_visit.template operator()<KB>(j0, tree);
                    } else {
                        visit.template operator()<KB>(j0, tree);
                    }
                };
                std::size_t j0 = 0;
                for (; j0 + BN <= NK; j0 += BN) key_tile.template operator()<BN>(j0);
                if constexpr (NK % BN != 0) key_tile.template operator()<NK % BN>(j0);

                if (fresh) std::fill(ot, ot + DV * QL, F(0));  // every key tile was masked out
                // Divide once; a query whose every key was masked has l = 0 and gets zeros.
                Vb inv[NVq];
                for (std::size_t c = 0; c < NVq; ++c) inv[c] = simd::select<Vb>(l[c] == Vb(F(0)), Vb(F(0)), Vb(F(1)) / l[c]);
                for (std::size_t dv = 0; dv < DV; ++dv)
                    for (std::size_t c = 0; c < NVq; ++c)
                        simd::store(ot + dv * QL + c * WL, simd::load<Vb>(ot + dv * QL + c * WL) * inv[c]);
                ob.idx[R - 2] = i0;
                ob.idx[R - 1] = 0;
                T* o = out + row_major<S>::offset(ob.idx);
                if constexpr (std::is_same_v<T, F>) {
                    simd::transpose<DV, QL, QL, DV>(ot, o);
                } else {
                    for (std::size_t c = 0; c < QL; ++c)
                        for (std::size_t dv = 0; dv < DV; ++dv) o[c * DV + dv] = static_cast<T>(ot[dv * QL + c]);
                }
                if (lse != nullptr)
                    for (std::size_t c = 0; c < NVq; ++c)
                        simd::store(lse + batch * NQ + i0 + c * WL, m[c] / Vb(simd::log2e_x8<F>) + simd::log(l[c]));
            };

            if (t < tiles) query_tile.template operator()<Bv, G::NV>(t * QT);
            else query_tile.template operator()<F, 1>(tiles * QT + (t - tiles));
        });
    });
    });
    });
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
