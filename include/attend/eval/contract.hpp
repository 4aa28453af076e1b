// attend/eval/contract.hpp — the contraction plan: a register-blocked SIMD matmul kernel with
// elementwise prologues (inside packing) and an epilogue (applied to each finished tile).
//
// Loop nest per batch index: column blocks of NR = NV lanes-wide (outer), k blocks of KC, row
// blocks of MR (inner). The B panel (KC x NR) is packed once per column and k block by reading
// the operand expression lane by lane — which evaluates a prologue such as `W * s`, reads a
// transposed view without materialising it, and zero-pads the column tail. The A block (MR x KC)
// is packed the same way along k. The micro-kernel keeps MR x NV accumulators in registers;
// tails in M use a kernel instantiated for the remaining rows (all extents are compile-time).
// A finished tile goes to a small stack tile, from which the epilogue tree (the expression
// around the matmul) computes the output rows while they are in L1. Nothing is allocated.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../expr/matmul.hpp"
#include "lower.hpp"
#include "machine.hpp"
#include "matvec.hpp"
#include "parallel.hpp"
#include "read.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// The contraction's schedule for element type F on the target, from the static M and N
// (measurements behind each rule: docs/performance.md, "Tuning history"). Accumulators use
// MR x NV of the target's vector registers, leaving room for B rows and the A broadcast; a
// narrow output (N at most half a vector) uses half-width vectors rather than padding.
template <class F, class Arch, std::size_t M, std::size_t N>
struct tiling {
    static constexpr bool half = sizeof(simd::batch<F, Arch>) == 64 && N * sizeof(F) <= 32;
#if defined(__AVX2__)
    using B = std::conditional_t<half, simd::batch<F, xsimd::avx2>, simd::batch<F, Arch>>;
#else
    using B = simd::batch<F, Arch>;
#endif
    static constexpr std::size_t W = simd::lanes<B>;
    static constexpr bool wide = simd::vector_registers<Arch> >= 32;
    static constexpr std::size_t NV = N > W ? 2 : 1, NR = NV * W;
    // Rows per register tile: enough accumulators (24 with 32 registers, 12 with 16) to hide the
    // FMA latency; with 32 registers a row count that divides M is preferred, because a short
    // remainder tile has too few accumulators, while with 16 the full tile matters more.
    static constexpr std::size_t MR = [] {
        const std::size_t most = (wide ? 24 : 12) / NV;
        if (M <= most) return M;
        if (!wide) return most;
        for (std::size_t r = most; 3 * r >= 2 * most; --r)
            if (M % r == 0) return r;
        return most;
    }();
    // Depth per k block: a whole K up to KC keeps the sums in registers to the end; KC makes the
    // B panel (KC x NR) 32 KiB with either register file.
    static constexpr std::size_t KC = wide ? 256 : 512;
};

// The epilogue tree: the expression around the matmul, with the matmul replaced by the tile and
// owned tensors read in place.
template <class Tile, class E>
auto with_tile(const E& e, const Tile& tile) {
    if constexpr (is_kind<E, kind::matmul>) return tile;
    else if constexpr (is_kind<E, kind::memory>) return memory_leaf<typename E::value_type, typename E::shape_type, E::strides>{{}, e.data()};
    else if constexpr (category_of<E> == category::leaf) return e;
    else if constexpr (category_of<E> == category::elementwise) return rebuild_with(e, [&](const auto& c) { return with_tile(c, tile); });
    else static_assert(unhandled_kind<E>, "attend internal: with_tile: the epilogue holds a second planned node");
}

// acc[r][v] += sum over k of A[r][k] * B[k][v lanes], with A[r][k] at a[r * lda + k * ka] and
// B rows `ldb` apart. The accumulators stay in registers (MR x NV of them, all unrolled).
// With KC > 0 the depth is that compile-time constant (small K unrolls completely); else kc.
template <class B, std::size_t MR, std::size_t NV, std::size_t KC = 0, class F>
inline void micro_kernel(const F* a, std::size_t lda, std::size_t ka, const F* b, std::size_t ldb, std::size_t kc,
                         B (&acc)[MR][NV]) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    const std::size_t depth = KC > 0 ? KC : kc;
    for (std::size_t k = 0; k < depth; ++k) {
        B bv[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) bv[v] = simd::load<B>(b + k * ldb + v * W);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const B av(a[r * lda + k * ka]);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::fma(av, bv[v], acc[r][v]);
        }
    }
}

// The same with bf16 operands in pairs along k (simd::dot_pairs, two products per lane): KP pairs;
// pair k of A's row r at a[r * lda + k * ka] (two adjacent values), B's pair row k at b + k * ldb
// (each lane's two values adjacent). Only on targets with AVX-512 BF16.
template <class B, std::size_t MR, std::size_t NV, std::size_t KP>
inline void pair_kernel(const bf16* a, std::size_t lda, std::size_t ka, const bf16* b, std::size_t ldb,
                        B (&acc)[MR][NV]) noexcept {
#if defined(__AVX512F__) && defined(__AVX512BF16__)
    constexpr std::size_t W = simd::lanes<B>;
    for (std::size_t k = 0; k < KP; ++k) {
        simd::bf16_pairs bv[NV];
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) bv[v] = simd::load_pairs(b + k * ldb + v * 2 * W);
#pragma GCC unroll 16
        for (std::size_t r = 0; r < MR; ++r) {
            const simd::bf16_pairs av = simd::broadcast_pair(a + r * lda + k * ka);
#pragma GCC unroll 4
            for (std::size_t v = 0; v < NV; ++v) acc[r][v] = simd::dot_pairs(acc[r][v], av, bv[v]);
        }
    }
#else
    static_assert(sizeof(B) == 0, "attend internal: pair_kernel needs AVX-512 BF16");
    (void)a, (void)lda, (void)ka, (void)b, (void)ldb, (void)acc;
#endif
}

// Whether every column block of B can be read in place (memory of the compute type, whole
// blocks), and whether its rows are so far apart (N * sizeof(F) a multiple of 2 KiB, or 1 KiB
// over a k block of more than 64 KiB) that they share a few L1 sets: such a panel is packed on an
// L1 of fewer than 12 ways, where its rows kept coming back from L2, and read in place on wider
// ones, where that was faster at every shape measured. The ways are read at run time
// (machine.hpp), because -march=native does not tell such machines apart.
template <class Bop, class F, std::size_t N, std::size_t NR>
inline constexpr bool b_in_place_possible = in_place<Bop, F, 0> && N % NR == 0;
template <class Bop, class F, std::size_t N, std::size_t NR, std::size_t KC>
inline constexpr bool b_rows_conflict = [] {
    constexpr std::size_t row = N * sizeof(F);
    return b_in_place_possible<Bop, F, N, NR> && (row % 2048 == 0 || (row >= 1024 && KC * row > 65536));
}();
template <class Bop, class F, std::size_t N, std::size_t NR, std::size_t KC>
inline bool b_read_in_place() noexcept {
    if constexpr (b_rows_conflict<Bop, F, N, NR, KC>) return l1d_ways() >= 12;
    else return b_in_place_possible<Bop, F, N, NR>;
}

// Runs the contraction; for each finished tile calls
// finish(p, tile, ld, rows, ncols, first, last) with p at the tile's first output position.
// With Plain (a bare matmul into `out` of the compute type), whole tiles skip the stack tile.
//
// Work items: (batch index, column block of NR columns, panel of up to MC rows). Each item owns
// its stack tiles and writes only its own output block; row panels are whole multiples of MR, so
// every output element is computed by the same register tile and k-block order however the
// items are scheduled — results are bit-identical on any number of threads.
template <class F, class Arch, std::size_t M, std::size_t K, std::size_t N>
struct contraction_items {
    using G = tiling<F, Arch, M, N>;
    static constexpr std::size_t KC = std::min(K, G::KC);                             // k block in use
    static constexpr std::size_t MC = G::MR * std::max<std::size_t>(1, 128 / G::MR);  // rows per item
    static constexpr std::size_t blocks = (N + G::NR - 1) / G::NR, panels = (M + MC - 1) / MC;
};

// g++ 12 -O3 cannot bound the column loops of a work item and of finish_tile once inlined (it
// does not carry ncols <= NR through the item index) and reports false
// -Waggressive-loop-optimizations errors; silenced from here to the end of finish_tile only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

// A whole panel (KC x NR) of a transposed weight in memory, its NR rows ld apart and k
// contiguous, into `panel` (rows NR apart) by block transposes; 16-bit storage is widened row by
// row first.
template <class B, std::size_t NR, std::size_t KC, std::size_t ld, class F, class T>
inline void pack_transposed(const T* w, F* panel) noexcept {
    if constexpr (std::is_same_v<std::remove_cv_t<T>, F>) {
        simd::transpose<NR, KC, ld, NR>(w, panel);
    } else {
        constexpr std::size_t W = simd::lanes<B>, LD = (KC + W - 1) / W * W;  // rows of whole vectors: aligned stores
        alignas(64) F rows[NR * LD];
        for (std::size_t r = 0; r < NR; ++r) {
            std::size_t k = 0;
            for (; k + W <= KC; k += W) simd::load<B>(w + r * ld + k).store_aligned(rows + r * LD + k);
            for (; k < KC; ++k) rows[r * LD + k] = simd::load<F>(w + r * ld + k);
        }
        simd::transpose<NR, KC, LD, NR>(rows, panel);
    }
}

// Packs B[k0 .. k0+kc, j0 .. j0+NR) of the matrix at batch position p into `panel` (rows NR
// apart), evaluating the operand lane by lane and zero-padding past ncols. A whole panel of a
// transposed weight (`transpose(W)`, W (N, K) in memory of F or 16 bits: B's k contiguous) is
// transposed in blocks instead, where reading lanes along j gathers one element per row of W
// (8 x 4096 x 64 on Zen 5: float 175 -> 31 µs, bf16 208 -> 38 µs).
template <class B, std::size_t NR, std::size_t KC, class F, class Bop, std::size_t R>
inline void pack_b(const Bop& b, nd_pos<R> p, std::size_t k0, std::size_t kc, std::size_t j0, std::size_t ncols, F* panel) {
    constexpr std::size_t W = simd::lanes<B>;
    if constexpr (streamed<Bop, F, 1> && !streamed<Bop, F, 0>) {
        if (kc == KC && ncols == NR) {
            p.idx[R - 2] = k0;
            p.idx[R - 1] = j0;
            constexpr std::size_t ld = Bop::layout::template strides_at<R>[R - 1];
            return pack_transposed<B, NR, KC, ld>(b.data() + Bop::layout::offset(p.idx), panel);
        }
    }
#if defined(__clang__)
    // Whole panel rows in memory as NR / W vectors each, a constant count: clang++ 14 compiled
    // the loop below into a copy of run-time length per row, 2.4x slower from DRAM (16 x 4096 x
    // 4096: 38 -> 15.8 ms); g++ 12 compiles both alike and ran this form up to 1.2x slower when
    // W's rows were not 64-byte aligned (docs/performance.md).
    if constexpr (streamed<Bop, F, 0>) {
        if (ncols == NR) {
            const auto [src, ld] = matrix_at(b, p, k0, j0);
            for (std::size_t k = 0; k < kc; ++k)
                for (std::size_t c = 0; c < NR; c += W) simd::load<B>(src + k * ld + c).store_aligned(panel + k * NR + c);
            return;
        }
    }
#endif
    for (std::size_t k = 0; k < kc; ++k) {
        p.idx[R - 2] = k0 + k;
        F* dst = panel + k * NR;
        std::size_t c = 0;
        for (; c + W <= ncols; c += W) {
            p.idx[R - 1] = j0 + c;
            read<B>(b, p).store_aligned(dst + c);
        }
        for (; c < ncols; ++c) {
            p.idx[R - 1] = j0 + c;
            dst[c] = read<F>(b, p);
        }
        for (; c < NR; ++c) dst[c] = F(0);
    }
}

// Packs A[i0 .. i0+rows, k0 .. k0+kc) along k into `block` (rows LDA apart).
template <class B, std::size_t LDA, class F, class Aop, std::size_t R>
inline void pack_a(const Aop& a, nd_pos<R> p, std::size_t i0, std::size_t rows, std::size_t k0, std::size_t kc, F* block) {
    constexpr std::size_t W = simd::lanes<B>;
    for (std::size_t r = 0; r < rows; ++r) {
        p.idx[R - 2] = i0 + r;
        std::size_t k = 0;
        for (; k + W <= kc; k += W) {
            p.idx[R - 1] = k0 + k;
            read<B>(a, p).store_aligned(block + r * LDA + k);
        }
        for (; k < kc; ++k) {
            p.idx[R - 1] = k0 + k;
            block[r * LDA + k] = read<F>(a, p);
        }
    }
}

// One work item: output rows [m0, m1) of column block j0 of matrix `batch`. Over several k
// blocks the partial sums stay in the item's own buffer, never in `out`: the output is written
// once, by the last block, so an epilogue may read the destination at the tile's own positions
// (`x = matmul(h, w) + x`) and an integer destination never holds a partial sum.
template <class Arch, class S, class T, bool Plain, class A, class Bop, class Finish>
void contract_item(const matmul_node<A, Bop>& mm, T* out, Finish& finish, std::size_t item) {
    using MM = matmul_node<A, Bop>;
    using F = compute_t<MM, floating_or_double<T>>;
    constexpr std::size_t R = S::rank, M = MM::M, K = MM::K, N = MM::N;
    using G = tiling<F, Arch, M, N>;
    using I = contraction_items<F, Arch, M, K, N>;
    using B = typename G::B;
    constexpr std::size_t W = G::W, NV = G::NV, NR = G::NR, MR = G::MR;
    constexpr std::size_t KC = I::KC, MC = I::MC, blocks = I::blocks, panels = I::panels;
    constexpr bool direct_a = in_place<A, F, 0>, b_may_read = b_in_place_possible<Bop, F, N, NR>;
    constexpr bool b_may_pack = !b_may_read || b_rows_conflict<Bop, F, N, NR, KC>;
    constexpr std::size_t LDA = (KC + W - 1) / W * W;  // packed A rows: whole vectors, aligned
    const bool b_in_place = b_read_in_place<Bop, F, N, NR, KC>();

    alignas(64) F bpanel[b_may_pack ? KC * NR : 1];
    alignas(64) F ablock[direct_a ? 1 : MR * LDA];
    alignas(64) F ctile[MR * NR];
    constexpr bool blocks_of_k = KC < K;  // several k blocks: partial sums in cpart between them
    alignas(64) F cpart[blocks_of_k ? MC * NR : 1];
    const std::size_t batch = item / (blocks * panels);
    const std::size_t j0 = item / panels % blocks * NR, ncols = std::min(NR, N - j0);
    const std::size_t m0 = item % panels * MC, m1 = std::min(M, m0 + MC);
    nd_pos<R> p = batch_position<S>(batch);
    for (std::size_t k0 = 0; k0 < K; k0 += KC) {
        const std::size_t kc = std::min(KC, K - k0);
        const F* bp = bpanel;
        std::size_t ldb = NR;
        if constexpr (b_may_read)
            if (b_in_place) std::tie(bp, ldb) = matrix_at(mm.b, p, k0, j0);
        if constexpr (b_may_pack)
            if (!b_in_place) pack_b<B, NR, KC>(mm.b, p, k0, kc, j0, ncols, bpanel);
        const bool first = k0 == 0, last = k0 + kc == K;
        auto rows = [&]<std::size_t MRows>(std::size_t i0) {
            const F* ap = ablock;
            std::size_t lda = LDA;
            if constexpr (direct_a) std::tie(ap, lda) = matrix_at(mm.a, p, i0, k0);
            else pack_a<B, LDA>(mm.a, p, i0, MRows, k0, kc, ablock);
            F* const part = cpart + (blocks_of_k ? (i0 - m0) * NR : 0);
            B acc[MRows][NV];
            for (std::size_t r = 0; r < MRows; ++r)
                for (std::size_t v = 0; v < NV; ++v) acc[r][v] = B(F(0));
            if constexpr (blocks_of_k) {  // continue the sums of the earlier k blocks
                if (!first)
                    for (std::size_t r = 0; r < MRows; ++r)
                        for (std::size_t v = 0; v < NV; ++v) acc[r][v] = B::load_aligned(part + r * NR + v * W);
            }
            micro_kernel<B, MRows, NV, (KC == K ? K : 0)>(ap, lda, 1, bp, ldb, kc, acc);
            // The stores are unrolled, so they stay stores of registers (g++ otherwise turns the
            // loops into a spill plus memcpy).
            if constexpr (blocks_of_k) {
                if (!last) {
#pragma GCC unroll 24
                    for (std::size_t r = 0; r < MRows; ++r)
#pragma GCC unroll 4
                        for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_aligned(part + r * NR + v * W);
                    return;
                }
            }
            p.idx[R - 2] = i0;
            p.idx[R - 1] = j0;
            if constexpr (Plain) {
                if (ncols == NR) {  // whole tile of a bare matmul: registers straight to the output
                    T* o = out + row_major<S>::offset(p.idx);
#pragma GCC unroll 24
                    for (std::size_t r = 0; r < MRows; ++r)
#pragma GCC unroll 4
                        for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_unaligned(o + r * N + v * W);
                    return;
                }
            }
#pragma GCC unroll 24
            for (std::size_t r = 0; r < MRows; ++r)
#pragma GCC unroll 4
                for (std::size_t v = 0; v < NV; ++v) acc[r][v].store_aligned(ctile + r * NR + v * W);
            finish(p, ctile, NR, MRows, ncols);
        };
        std::size_t i0 = m0;
        for (; i0 + MR <= m1; i0 += MR) rows.template operator()<MR>(i0);
        if constexpr (M % MR != 0)
            if (m1 == M) rows.template operator()<M % MR>(i0);
    }
}

template <class Arch, class S, class T, bool Plain, class A, class Bop, class Finish>
void contract(const matmul_node<A, Bop>& mm, T* out, Finish&& finish) {
    using MM = matmul_node<A, Bop>;
    using F = compute_t<MM, floating_or_double<T>>;
    constexpr std::size_t M = MM::M, K = MM::K, N = MM::N;
    using I = contraction_items<F, Arch, M, K, N>;
    constexpr std::size_t batches = S::size / (M * N);
    constexpr bool worth = batches * M * N * K >= (std::size_t{1} << 20);  // ~2 MFLOP
    parallel_for(batches * I::blocks * I::panels, worth,
                 [&](std::size_t item) { contract_item<Arch, S, T, Plain>(mm, out, finish, item); });
}

// Writes tile rows [r][0 .. ncols) to `out` at position p (row stride N), through the epilogue
// tree `epi` when there is one.
template <class Arch, class S, class T, class F, class Epi>
inline void finish_tile(T* out, const nd_pos<S::rank>& p, const F* tile, std::size_t ld, std::size_t rows,
                        std::size_t ncols, const Epi* epi) {
    using B = simd::batch<F, Arch>;
    constexpr std::size_t R = S::rank, W = simd::lanes<B>, N = S::extents[R - 1];
    const std::size_t base = row_major<S>::offset(p.idx);
    for (std::size_t r = 0; r < rows; ++r) {
        T* o = out + base + r * N;
        const F* t = tile + r * ld;
        if constexpr (std::is_same_v<Epi, void>) {
            std::size_t c = 0;
            for (; c + W <= ncols; c += W) simd::store(o + c, simd::load<B>(t + c));
            for (; c < ncols; ++c) o[c] = simd::to_element<T>(t[c]);
        } else {
            nd_pos<R> q = p;
            q.idx[R - 2] += r;
            std::size_t c = 0;
            for (; c + W <= ncols; c += W) {
                q.idx[R - 1] = p.idx[R - 1] + c;
                store_lanes(o + c, read<B>(*epi, q));
            }
            for (; c < ncols; ++c) {
                q.idx[R - 1] = p.idx[R - 1] + c;
                store_lanes(o + c, read<F>(*epi, q));
            }
        }
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// How many planned nodes (contractions, reductions, softmaxes, views of computed operands) a
// tree holds outside other planned nodes.
template <class E>
constexpr std::size_t count_materialised() {
    if constexpr (category_of<E> == category::leaf) return 0;
    else if constexpr (category_of<E> == category::elementwise) return sum_children<E>([]<class C>() { return count_materialised<C>(); });
    else return 1;
}

template <class E>
constexpr bool holds_matmul() {
    if constexpr (is_kind<E, kind::matmul>) return true;
    else if constexpr (category_of<E> == category::elementwise) return any_child<E>([]<class C>() { return holds_matmul<C>(); });
    else return false;
}

// The matmul of a tree that holds one (holds_matmul), under elementwise nodes.
template <class E>
const auto& find_matmul(const E& e) {
    if constexpr (is_kind<E, kind::matmul>) {
        return e;
    } else {
        static_assert(category_of<E> == category::elementwise, "attend internal: find_matmul: no matmul here");
        constexpr std::size_t i = []<class... C>(type_list<C...>) {
            std::size_t k = 0, found = 0;
            ((holds_matmul<C>() ? (found = k, ++k) : ++k), ...);
            return found;
        }(child_types<E>{});
        return find_matmul(std::get<i>(e.children()));
    }
}

// The contraction plan applies to a tree holding exactly one matmul, of the output's shape,
// with only elementwise work around it (the epilogue).
template <class E, class S>
inline constexpr bool contraction_plan = [] {
    if constexpr (count_materialised<E>() == 1 && holds_matmul<E>() && std::is_same_v<typename E::shape_type, S>)
        return std::is_same_v<typename std::remove_cvref_t<decltype(find_matmul(std::declval<const E&>()))>::shape_type, S>;
    else
        return false;
}();

// Writes a finished tile (or matvec panel) of `tree` to `out`: through the epilogue tree when
// there is one (a few pointers, so work items stay independent).
template <class Arch, class S, class T, class F, bool Plain, class E>
auto tile_finisher(T* out, const E& tree) {
    return [out, &tree](const auto& p, const F* tile, std::size_t ld, std::size_t rows, std::size_t ncols) {
        if constexpr (Plain) {
            (void)tree;
            finish_tile<Arch, S, T>(out, p, tile, ld, rows, ncols, static_cast<const void*>(nullptr));
        } else {
            const tile_cursor<F> cursor{tile, ld, p.idx[S::rank - 2], p.idx[S::rank - 1]};
            const auto epi = with_tile(tree, tile_leaf<F, S, false>{{}, &cursor});
            finish_tile<Arch, S, T>(out, p, tile, ld, rows, ncols, &epi);
        }
    };
}

// x of the matvec plan in place as element type X: a memory leaf of X as it is, anything else
// materialised first (converted to X when its type differs).
template <class Arch, class X, class A, class K>
decltype(auto) rows_in_place(const A& a, K&& k) {
    if constexpr (in_place<A, X, 0>) return k(a);
    else if constexpr (std::is_same_v<typename A::value_type, X>) return materialise<Arch>(a, k);
    else return materialise<Arch>(cast_node<X, A>{{}, a}, k);
}

template <class Arch, class S, class T, class E>
void evaluate_contraction(T* out, const E& tree) {
    const auto& node = find_matmul(tree);
    using N0 = std::remove_cvref_t<decltype(node)>;
    if constexpr (matvec_applies<N0>) {  // a few rows: the weight streamed once (matvec.hpp)
        using F = compute_t<N0, floating_or_double<T>>;
        rows_in_place<Arch, matvec_x_t<Arch, N0, F>>(node.a, [&](const auto& a) {
            const matmul_node<std::remove_cvref_t<decltype(a)>, decltype(N0::b)> mm{{}, a, node.b};
            matvec<Arch, S, F>(mm, tile_finisher<Arch, S, T, F, is_kind<E, kind::matmul> && std::is_same_v<T, F>>(out, tree));
        });
    } else {  // operands evaluated first where they are planned; prologues stay for the packing
        lower_each<Arch, 0>(std::tie(node.a, node.b), [&](const auto& a, const auto& b) {
            using MM = matmul_node<std::remove_cvref_t<decltype(a)>, std::remove_cvref_t<decltype(b)>>;
            using F = compute_t<MM, floating_or_double<T>>;
            const MM mm{{}, a, b};
            constexpr bool plain = is_kind<E, kind::matmul> && std::is_same_v<T, F>;
            contract<Arch, S, T, plain>(mm, out, tile_finisher<Arch, S, T, F, plain>(out, tree));
        });
    }
}

template <class Arch, class T, class A, class Bop>
void evaluate_node(T* out, const matmul_node<A, Bop>& node) {
    evaluate_contraction<Arch, typename matmul_node<A, Bop>::shape_type>(out, node);
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
