// attend/eval/matvec.hpp — the matvec plan: a few rows (M up to 16; more than two only for a
// weight beyond L2) times a weight matrix read in place, each weight streamed from memory once.
// One-token steps are bound by memory, not FMAs.
//
// The weight is a memory leaf of the compute type in one of two layouts:
// - `rows_k`: B (K, N) with N contiguous (`matmul(x, W)`, W (K, N)). Each work item owns a panel of
//   NP output columns, keeps the panel's sums (M x NP) in L1, and walks down K, U weight rows at a
//   time, in chunks of columns whose sums are held in registers: each row's segment is read in
//   runs of a chunk's width and added into the sums (axpy_rows). A weight in L1 (or in L2 with
//   two rows of x) keeps all its sums in registers over all of K (axpy_columns), as does one row
//   of x against a weight in L2 whose rows fit in 24 vectors when one panel covers them
//   (axpy_whole_rows).
// - `rows_n`: B (K, N) with K contiguous (`matmul(x, transpose(W))`, W (N, K): the checkpoint
//   layout). Each output column is a dot product of a weight row with x: RN weight rows at once,
//   each read sequentially, into MB x RN vector accumulators, summed across lanes at the end.
// bf16 weights widen into their even and odd elements (a shift and a mask, no shuffle) in both
// layouts (even_odd_columns, even_odd_rows); bf16 x against a bf16 weight on AVX-512 BF16 takes
// pair products instead, nothing widened (pair_matvec: rows (N, K) as they lie, rows (K, N)
// interleaved two at a time).
// x is read in place (it is materialised first when it is an expression; 16-bit x gets a float
// copy unless it takes pairs). The finished panel goes through the contraction's epilogue, so
// bias, residual and activation stay fused.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "../expr/matmul.hpp"
#include "lower.hpp"
#include "machine.hpp"
#include "parallel.hpp"
#include "read.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

enum class weight_layout { none, rows_k, rows_n };

// How the kernel can stream operand B (..., K, N) of compute type F (memory of F, or of a 16-bit
// type widened to float as it is read).
template <class Bop, class F>
inline constexpr weight_layout weight_layout_of = streamed<Bop, F, 0>   ? weight_layout::rows_k
                                                  : streamed<Bop, F, 1> ? weight_layout::rows_n
                                                                        : weight_layout::none;

// The matvec schedule for compute type F on the target, for a weight stored as Stored (F, or a
// 16-bit type widened as it streams; the rules taking `bytes` are about the weight as stored)
// (docs/performance.md, "Tuning history").
template <class F, class Arch, std::size_t M, std::size_t N, class Stored = F>
struct matvec_tiling {
    using B = simd::batch<F, Arch>;
    static constexpr std::size_t W = simd::lanes<B>, regs = simd::vector_registers<Arch>, element = sizeof(Stored);
    // The bytes of a weight of K x N elements as stored: what the rules below take.
    static constexpr std::size_t weight_bytes(std::size_t K) { return K * N * element; }
    // When the plan applies: up to 16 rows; beyond two rows only for a weight of at least
    // M x 256 KiB, which comes from beyond L2 — a weight in cache with more rows is bound by
    // FMAs, where the register-blocked contraction was faster (Zen 1: 16 x 512 x 512 290 against
    // 502 µs, 16^3 0.48 against 0.86 µs), while from memory the matvec plan won up to 16 rows
    // (16 x 4096 x 4096: 28-46 against 56-64 ms; 1 x 4096 x 4096: 4.9 against 32-40 ms).
    // rows_k beyond MG rows takes register tiles of MG rows (axpy_groups): on the Intel Xeon VM
    // 16 x 4096 x 4096 ran in 6.2-7.0 ms against 20-22 for the contraction, which had taken
    // such weights on AVX-512 (on Zen 5 the axpy panels then were 11.0 ms, the contraction 7.3).
    static constexpr std::size_t max_rows = 16;
    static constexpr bool worth(std::size_t K) { return M <= 2 || K * N * sizeof(F) >= M * (std::size_t{256} << 10); }
    // Panel columns at most: the sums (M x NP) fit in 16 KiB of L1. A panel of whole weight rows
    // reads (K, N) as one forward stream, measured 20 % faster than half rows; panels are only
    // narrowed at run time to give each thread work.
    static constexpr std::size_t NP = std::min((N + W - 1) / W * W, std::max(W, 4096 / M / W * W));
    // rows_k with more than MG rows of x: groups of MG rows, chunks of GV vectors of columns, GU
    // weight rows a step (axpy_groups), the sums of a group and chunk in registers over the step.
    static constexpr std::size_t MG = 4, GV = regs >= 32 ? 4 : 2, GU = 16;
    static constexpr bool grouped = M > MG;
    // Their panels: whole rows, the sums on the heap, where it is allowed (wide_panels).
    static constexpr std::size_t NPW = (N + W - 1) / W * W;
    // rows_k: weight rows per step (one load and store of the sums per U rows) for a weight of
    // `bytes`: 8 for one row of x against a weight beyond L2 (Zen 5, from DRAM, 4096^2: float
    // 1.43 -> 1.35 ms, bf16 0.99 -> 0.77; from L3 in chunks, 768 x 2048, below); 2 for one row of x
    // against a weight in L2 given 32 registers (chunked, below); else 4 (4 rows of x with 8
    // weight rows were 33 % slower).
    static constexpr bool in_l2(std::size_t bytes) { return bytes <= (std::size_t{1} << 20); }
    // A weight of 16 MiB or more streams from DRAM (the rules that ask for requests ahead).
    static constexpr bool from_dram(std::size_t bytes) { return bytes >= (std::size_t{16} << 20); }
    // A 16-bit weight with rows of more than 24 vectors keeps the blocks (sums_in_registers):
    // chunks read 288 x 768 bf16 3-14 % slower in all of 4 runs (Zen 5, g++ and clang++,
    // 2026-11-28).
    static constexpr bool chunked(std::size_t bytes) {
        return M == 1 && regs >= 32 && in_l2(bytes) && (element >= sizeof(F) || N / W <= 24);
    }
    static constexpr std::size_t rows_per_step(std::size_t bytes) { return chunked(bytes) ? 2 : M == 1 && !in_l2(bytes) ? 8 : 4; }
    // Pair products (pair_axpy_panel, no chunks): 8 from DRAM, else 4 (a weight in cache read
    // 10-20 % slower with 8 in runs of one pair; not measured in chunks).
    static constexpr std::size_t pair_rows_per_step(std::size_t bytes) { return M == 1 && from_dram(bytes) ? 8 : 4; }
    // rows_k: vectors of columns per chunk of sums (axpy_rows: M x V sums in registers per step,
    // each weight row read in runs of V vectors). 16 for one row of x against a weight in L2: two
    // rows in runs of 16 vectors read it as fast as one stream, where runs of one vector from four
    // rows in turn took 1.6x as long (Zen 5, 288 x 768: 5.0 against 7.9 µs). 8 for one row of x
    // against a weight beyond L2 (8 rows a step, each read in runs of 512 bytes, as Eigen's gemv
    // reads them). Zen 5, docs/performance.md, 2026-12-07: from DRAM, float 4096^2 (mvkn_paired)
    // g++ 1.02-1.05x Eigen's time -> 0.97-0.98x, clang++ 1.03-1.07x -> 0.95-0.98x (runs of 4 level
    // with 8, of 16 level with 1, 16 rows a step 1.02-1.18x), bf16 level with runs of one pair;
    // from L3, 768 x 2048 with 4 rows a step in runs of one vector before, float 0.81 -> 0.68x
    // OpenBLAS's time, bf16 / float 0.79-0.86 -> 0.63-0.66 (with row_lead). Else one vector (bf16:
    // a pair).
    static constexpr std::size_t chunk_vectors(std::size_t bytes) { return chunked(bytes) ? 16 : M == 1 && !in_l2(bytes) ? 8 : 1; }
    // rows_k, one row of x against a weight from DRAM: each weight vector also requests the same columns
    // of the row two steps on into L2 (Zen 4, 4096^2 in-process A/B, both compilers: float
    // 0.82-0.90x the time, bf16 weights 0.86-0.99x; one step on or into L1 was less or slower,
    // and a weight of 3-8 MiB from L3 with 4 rows per step ran up to 1.2x slower with it). Zen 5
    // streams such a weight faster without them (float 4096^2, g++ 1.50-1.53 -> 1.33-1.37 ms,
    // clang++ 1.79-1.82 -> 1.38), as do Intel cores: the plan asks the machine (`with_weight_requests`).
    static constexpr std::size_t rows_ahead(std::size_t bytes) { return M == 1 && from_dram(bytes) ? 16 : 0; }
    // rows_k with 8 rows per step and a 16-bit weight (beyond L2), on Zen 5: each weight line also requests the
    // line `row_lead` bytes on in its row into L1, and a step's last chunks request the first
    // row_lead bytes of the next step's rows (no earlier line of theirs does). Widened, a line
    // takes four instructions where a float line takes one, so fewer lines are in flight behind a
    // miss: the kernel read 1.3-1.6x as long as a cold read of its bytes, the same work in four
    // long streams 1.01x (Zen 5, 4096^2 bf16, 2026-12-02). With the requests, alternated 300 times
    // in one process: cold (10 weights in turn) g++ 1410 -> 1267 µs (0.90x, quartiles 0.84-0.97),
    // clang++ 1447 -> 1313 (0.90x); one weight over and over 0.94x and 0.92x. 256 to 1024 bytes on
    // ran level; either half alone gained ~3 %, requests into L2 (T1) or 2-4 KiB on lost; float
    // weights (which run near their read) gained ~3 %, within the noise, so take none. From L3
    // (768 x 2048 bf16 in chunks of 4 pairs) the requests took bf16 / float 0.71-0.77 -> 0.63-0.66.
    // Intel cores take them too (Xeon VM, 4096^2 bf16, mvkn_paired, 3 rounds alternating builds:
    // bf16 / float g++ 0.58-0.61 -> 0.51, clang++ 0.58-0.60 -> 0.48-0.50; 2026-12-07, night).
    static constexpr std::size_t row_lead(std::size_t bytes) { return element < sizeof(F) && rows_per_step(bytes) == 8 ? 512 : 0; }
    // rows_k: a weight of up to 32 KiB (in L1), or one in L2 with two rows of x (or with one, a
    // 16-bit weight that takes no chunks), keeps the sums of NV vectors of columns in registers
    // over all of K (axpy_columns), given 32 registers (with 16 the sums and the weight vectors do
    // not fit: x86-64-v3 on Zen 5, 288 x 768 6.7 -> 7.2 µs).
    // Beyond L1 each weight row is then read in runs of NV vectors with a stride: with one row of
    // x 1.4-1.6x the time of chunks of rows (Zen 5, 288 x 768), with two level to faster. In L1
    // (32 x 256) the blocks took 0.09 µs, chunks 0.14. A 16-bit weight with one row of x takes
    // blocks of up to 24 vectors, as its vectors are widened and added one at a time (axpy_block):
    // 288 x 768 bf16 in two blocks instead of three, g++ 3.37-3.43 -> 3.18 µs, clang++ 4.1-4.3 ->
    // 3.8-4.4 (Zen 5, 2026-11-29). Pair products keep 8 / M chunks of 32 columns (pair_axpy_columns).
    static constexpr std::size_t NV = M <= 2 && regs >= 32 ? (M == 1 && element < sizeof(F) ? 24 : 16 / M) : 0;
    static constexpr std::size_t pair_chunks = M <= 2 ? 8 / M : 0;
    static constexpr bool sums_in_registers(std::size_t bytes) {
        return NV > 0 && (bytes <= (std::size_t{32} << 10) || (M <= 2 && in_l2(bytes) && !chunked(bytes)));
    }
    // rows_k, one row of x and a weight in L2 whose rows are at most 24 whole vectors: each row
    // read whole and in order, all the sums in registers over all of K (axpy_whole_rows, when one
    // panel covers all N columns; Zen 5, 768 x 288: 5.2-5.7 µs against 8.1-8.5 in two blocks of 9
    // vectors or in chunks); 0: not so.
    static constexpr std::size_t whole_row_vectors(std::size_t bytes) { return chunked(bytes) && N / W <= 24 ? N / W : 0; }
    // The chunked weights whose rows are not read whole (wider than 24 vectors) keep the sums of
    // NV vectors in registers (axpy_columns) on Intel cores instead, asked at run time: Intel Xeon
    // VM, 288 x 768, 6.0-6.3 against 6.8-7.4 µs in chunks; Zen 5 read it 1.4-1.6x faster in chunks.
    static constexpr bool blocks_on_intel(std::size_t bytes) { return chunked(bytes) && whole_row_vectors(bytes) == 0 && NV > 0; }
    // Pair products (bf16 x and weight, pair_axpy_columns and pair_axpy_panel) keep the rules
    // measured for them before chunks: sums in registers for one or two rows of x up to 1 MiB,
    // else pair_rows_per_step.
    static constexpr bool pair_sums_in_registers(std::size_t bytes) { return NV > 0 && in_l2(bytes); }
    // rows_n: x rows and weight rows per register tile, MB x RN accumulators plus RN weight
    // vectors and one x vector within the register file.
    static constexpr std::size_t MB = std::min(M, regs >= 32 ? std::size_t{8} : std::size_t{4});
    // (a power of two: the lanes of RN accumulators are summed by one transposing tree; at most
    // 4, as many memory streams as read fastest: on Zen 5 8 streams made 4096^2 1.18x slower)
    static constexpr std::size_t RN = std::bit_floor(std::clamp<std::size_t>((regs - 4) / (MB + 1), 1, 4));
    // rows_n, outside the even/odd rows: with two or more rows of x and a weight of 16 MiB or
    // more (from DRAM), each weight vector also requests the line 4 KiB further on in its row
    // (measured with float weights on Zen 5: 4 x 4096^2
    // 2.2-2.5 -> 1.9-2.0 ms, 16 rows 6.0-6.4 -> 5.2-5.7; from L3, 4 x 768 x 2048 went 67-72 ->
    // 77-79 µs, from L2 2 x 288 x 768 5.0 -> 5.7-6.1, and with one row of x the stream slowed).
    static constexpr std::size_t later(std::size_t bytes) { return M >= 2 && from_dram(bytes) ? 4096 : 0; }
    // rows_n, bf16 rows widened to even and odd elements against one row of x, a weight from
    // DRAM, on Intel cores (asked at run time): each widened line also requests the line 2 KiB
    // further on in its row, as the widening holds fewer lines in flight behind a miss than a
    // float row's FMAs do (Intel Xeon VM, mvnk_paired, 3 rounds alternating builds, g++: bf16 /
    // float 4096^2 0.57-0.58 -> 0.46-0.49, (288, 32000) 0.59-0.62 -> 0.45-0.46; 512 bytes on
    // 0.50-0.56, 1 KiB 0.48-0.50, 4 KiB 0.46-0.50, 8 KiB 0.49-0.50). Zen 5 unmeasured.
    static constexpr std::size_t even_odd_later(std::size_t bytes) { return M == 1 && from_dram(bytes) ? 2048 : 0; }
};

// bf16 x (memory, or the caller's `cast<bf16>(x)`) against a bf16 weight on a target with
// AVX-512 BF16: vdpbf16ps multiplies pairs exactly and sums in float (docs/design.md). Rows
// (N, K): x's pairs against each row's; rows (K, N): x's pair (x[k], x[k + 1]) against rows k and
// k + 1 interleaved (pair_axpy_block, pair_axpy_panel).
template <class Arch, class A, class Bop, class F>
inline constexpr bool pair_matvec = simd::has_bf16_pair_dot && std::is_same_v<F, float> && simd::lanes<simd::batch<float, Arch>> == 16 &&
                                    std::is_same_v<std::remove_cv_t<typename A::value_type>, bf16> &&
                                    std::is_same_v<std::remove_cv_t<typename Bop::value_type>, bf16> &&
                                    weight_layout_of<Bop, F> != weight_layout::none;

// The element type the matvec plan reads x as: bf16 for pair products, else the compute type.
template <class Arch, class MM, class F>
using matvec_x_t = std::conditional_t<pair_matvec<Arch, decltype(MM::a), decltype(MM::b), F>, bf16, F>;

// 16-bit x takes the plan where its float copy may be made: on the stack, or on the heap.
template <class MM, class F>
inline constexpr bool x_copy_allowed = pair_matvec<simd::default_arch, decltype(MM::a), decltype(MM::b), F> ||
                                       MM::M * MM::K * sizeof(F) <= config::stack_budget || config::heap_allowed;

template <class MM>
inline constexpr bool matvec_applies = [] {
    if constexpr (MM::precision == 0) {
        return false;
    } else {
        using F = compute_t<MM, double>;
        using X = typename decltype(MM::a)::value_type;
        using G = matvec_tiling<F, simd::default_arch, MM::M, MM::N>;
        constexpr weight_layout wl = weight_layout_of<decltype(MM::b), F>;
        constexpr bool pairs = pair_matvec<simd::default_arch, decltype(MM::a), decltype(MM::b), F>;
        return MM::M <= G::max_rows && wl != weight_layout::none && G::worth(MM::K) &&
               !(pairs && wl == weight_layout::rows_k && G::grouped) &&
               (std::is_same_v<X, F> || (is_half<X> && std::is_same_v<F, float> && x_copy_allowed<MM, F>));
    }
}();

// g++ 12 -O3 reports false -Waggressive-loop-optimizations errors in the tail loops below once
// they are inlined into a call with constant extents (loops that run zero times there); silenced
// for the kernels only, as in contract.hpp.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

// bf16 weights in a rows_k kernel widen a vector of 2W columns into its even and odd columns (a
// shift and a mask; widening in order takes a shuffle), whose sums are kept as W even then W odd
// until the panel is done.
template <class B, class T>
inline constexpr bool even_odd_columns = std::is_same_v<std::remove_cv_t<T>, bf16> && simd::is_batch<B>;

// Rows 0 .. KB of Cols contiguous 16-bit values (`ld` apart from src) widened into dst (KB x
// Cols) a vector at a time; rows from `live` on as zeros.
template <std::size_t KB, std::size_t Cols, class F, class T>
inline void widen_rows(const T* src, std::size_t ld, std::size_t live, F* dst) noexcept {
    using B = simd::batch<F>;
    constexpr std::size_t W = simd::lanes<B>;
    const std::size_t n = std::min(live, KB);
    for (std::size_t r = 0; r < n; ++r) {
        std::size_t c = 0;
        for (; c + W <= Cols; c += W) simd::store(dst + r * Cols + c, simd::load<B>(src + r * ld + c));
        for (; c < Cols; ++c) dst[r * Cols + c] = static_cast<F>(src[r * ld + c]);
    }
    std::fill(dst + n * Cols, dst + KB * Cols, F(0));
}

// A block of 2W sums kept as W even columns then W odd ones, put in column order.
template <class B, class F>
inline void interleave_block(F* y) noexcept {
    simd::store_even_odd(y, B::load_unaligned(y), B::load_unaligned(y + simd::lanes<B>));
}

// NV vectors of a weight row's columns from w into registers: bf16 pairs of vectors widened into
// even and odd columns (even_odd_columns), an odd last vector in order.
template <class B, std::size_t NV, class T>
__attribute__((always_inline)) inline void weight_vectors(const T* w, B (&wv)[NV]) noexcept {
    constexpr std::size_t W = simd::lanes<B>, NE = even_odd_columns<B, T> ? NV / 2 * 2 : 0;
    if constexpr (NE > 0)
#pragma GCC unroll 16
        for (std::size_t v = 0; v < NE; v += 2) simd::widen_even_odd(w + v * W, wv[v], wv[v + 1]);
#pragma GCC unroll 32
    for (std::size_t v = NE; v < NV; ++v) wv[v] = simd::load<B>(w + v * W);
}

// One weight row added into a register tile of sums: acc[m][v] += x[m * ldx] * the row's NV
// vectors of columns from w (loaded once, widened), for MB rows of x broadcast as used.
template <class B, std::size_t MB, std::size_t NV, class F, class T>
__attribute__((always_inline)) inline void add_weight_row(const F* x, std::size_t ldx, const T* w, B (&acc)[MB][NV]) noexcept {
    B wv[NV];
    weight_vectors<B, NV>(w, wv);
#pragma GCC unroll 8
    for (std::size_t m = 0; m < MB; ++m) {
        const B xb(x[m * ldx]);
#pragma GCC unroll 32
        for (std::size_t v = 0; v < NV; ++v) acc[m][v] = simd::fma(xb, wv[v], acc[m][v]);
    }
}

// y[m][c] += sum over k < K of x[m][k] * w[k * ldk + c] for the columns c0 .. ncols (those past
// the last whole vector), k in order by std::fma, so that a column's sum has the same bits in
// axpy_rows, axpy_columns and axpy_whole_rows, in a panel of any width; four columns' chains side
// by side in registers (one column after another, each waiting on the FMA's latency, took 2x).
template <std::size_t M, class F, class T>
inline void axpy_tail(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t K, std::size_t c0, std::size_t ncols,
                      F* y, std::size_t ldy) noexcept {
    for (std::size_t m = 0; m < M; ++m) {
        const F* xm = x + m * ldx;
        F* ym = y + m * ldy;
        std::size_t c = c0;
        for (; c + 4 <= ncols; c += 4) {
            F s0 = ym[c], s1 = ym[c + 1], s2 = ym[c + 2], s3 = ym[c + 3];
            for (std::size_t k = 0; k < K; ++k) {
                const T* wk = w + k * ldk + c;
                s0 = std::fma(xm[k], simd::load<F>(wk), s0), s1 = std::fma(xm[k], simd::load<F>(wk + 1), s1);
                s2 = std::fma(xm[k], simd::load<F>(wk + 2), s2), s3 = std::fma(xm[k], simd::load<F>(wk + 3), s3);
            }
            ym[c] = s0, ym[c + 1] = s1, ym[c + 2] = s2, ym[c + 3] = s3;
        }
        for (; c < ncols; ++c) {
            F s0 = ym[c];
            for (std::size_t k = 0; k < K; ++k) s0 = std::fma(xm[k], simd::load<F>(w + k * ldk + c), s0);
            ym[c] = s0;
        }
    }
}

// y[m][c .. c + V W) += sum over u < U of x[m][u] * w[u * ldk + c ..]: one chunk of V vectors of
// columns, its M x V sums loaded from y, the U weight rows' segments added row after row, stored
// back (bf16: pairs of vectors widened into even and odd columns; a chunk of one vector widens in
// order). Ahead > 0: each weight vector requests the same columns of the row Ahead rows on into L2;
// Lead > 0: the line Lead bytes on in its row into L1.
template <class B, std::size_t M, std::size_t U, std::size_t V, std::size_t Ahead, std::size_t Lead, class F, class T>
__attribute__((always_inline)) inline void axpy_chunk(const B (&xb)[M][U], const T* w, std::size_t ldk, F* y, std::size_t ldy) noexcept {
    constexpr std::size_t W = simd::lanes<B>, NE = even_odd_columns<B, T> ? V / 2 * 2 : 0;
    constexpr std::size_t step = NE > 0 ? 2 : 1;  // vectors a request covers (one line)
    B acc[M][V];
#pragma GCC unroll 16
    for (std::size_t m = 0; m < M; ++m)
#pragma GCC unroll 16
        for (std::size_t v = 0; v < V; ++v) acc[m][v] = B::load_aligned(y + m * ldy + v * W);
#pragma GCC unroll 8
    for (std::size_t u = 0; u < U; ++u) {
        if constexpr (Ahead > 0)
#pragma GCC unroll 16
            for (std::size_t v = 0; v < V; v += step) __builtin_prefetch(w + (u + Ahead) * ldk + v * W, 0, 2);
        if constexpr (Lead > 0)
#pragma GCC unroll 16
            for (std::size_t v = 0; v < V; v += step) __builtin_prefetch(w + u * ldk + v * W + Lead / sizeof(T), 0, 3);
        // each weight vector (pair, widened) into every row's sums as it is loaded: held all at
        // once, the weight vectors and the sums would not fit in the registers. With several rows
        // of x it is held in a register, else g++ folds its load into every row's FMA (three rows,
        // 1024 x 512: 28.4-28.7 against 23.1-24.6 µs loaded once).
        auto add = [&](std::size_t v, B wv) __attribute__((always_inline)) {
            if constexpr (M > 1) wv = simd::held(wv);
#pragma GCC unroll 16
            for (std::size_t m = 0; m < M; ++m) acc[m][v] = simd::fma(xb[m][u], wv, acc[m][v]);
        };
        if constexpr (NE > 0)
#pragma GCC unroll 8
            for (std::size_t v = 0; v < NE; v += 2) {
                B even, odd;
                simd::widen_even_odd(w + u * ldk + v * W, even, odd);
                add(v, even);
                add(v + 1, odd);
            }
#pragma GCC unroll 16
        for (std::size_t v = NE; v < V; ++v) add(v, simd::load<B>(w + u * ldk + v * W));
    }
#pragma GCC unroll 16
    for (std::size_t m = 0; m < M; ++m)
#pragma GCC unroll 16
        for (std::size_t v = 0; v < V; ++v) acc[m][v].store_aligned(y + m * ldy + v * W);
}

// The vectors of columns from c on that axpy_rows' whole chunks left (fewer than 2 Width), in
// chunks of Width, Width / 2 .. (bf16: down to pairs).
template <class B, std::size_t M, std::size_t U, std::size_t Width, std::size_t Ahead, std::size_t Lead, class F, class T>
__attribute__((always_inline)) inline void axpy_rest(const B (&xb)[M][U], const T* w, std::size_t ldk, std::size_t ncols, F* y, std::size_t ldy,
                                                     std::size_t& c) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    if constexpr (Width >= (even_odd_columns<B, T> ? 2 : 1)) {
        if (c + Width * W <= ncols) {
            axpy_chunk<B, M, U, Width, Ahead, Lead>(xb, w + c, ldk, y + c, ldy);
            c += Width * W;
        }
        axpy_rest<B, M, U, Width / 2, Ahead, Lead>(xb, w, ldk, ncols, y, ldy, c);
    }
}

// The first Lead bytes of the U weight rows after the U at w (the next step's), which no earlier
// line of theirs requests: the chunk of Cols columns at c, if within Lead bytes of the segment's
// end (ncols), requests as many lines of them as it reads, from where the last chunk left off.
template <std::size_t U, std::size_t Cols, std::size_t Lead, class T>
__attribute__((always_inline)) inline void request_heads(const T* w, std::size_t ldk, std::size_t c, std::size_t ncols) noexcept {
    constexpr std::size_t line = 64 / sizeof(T);  // columns a request covers
    if (const std::size_t left = ncols - c; left <= Lead / sizeof(T))
#pragma GCC unroll 16
        for (std::size_t u = 0; u < U; ++u)
#pragma GCC unroll 4
            for (std::size_t l = 0; l < Cols; l += line) __builtin_prefetch(w + (U + u) * ldk + Lead / sizeof(T) - left + l, 0, 3);
}

// y[m][c] += sum over u < U of x[m][u] * w[u * ldk + c], for m < M and c < ncols: U weight rows
// added into the sums (blocks of 2W columns in even/odd order for bf16, even_odd_columns), in
// chunks of V vectors of columns (axpy_chunk; the last narrower, halving: V/2, V/4 .. one), so
// that each weight row is read in runs of V vectors: runs of one vector from U rows in turn read
// a weight in L2 at 0.6x the speed of one stream (Zen 5, 288 x 768: 7.9 against 5.0 µs for chunks
// of 16 vectors of two rows). Every column's sum takes the rows in order whatever the chunk.
// The broadcasts of x are locals (stores to y may alias anything reached through a pointer).
// Lead > 0: the chunks within Lead bytes of the segment's end also request the first Lead bytes of
// the next U rows (request_heads).
template <class B, std::size_t M, std::size_t U, std::size_t Vmin, std::size_t Ahead, std::size_t Lead, class F, class T>
__attribute__((noinline)) void axpy_rows(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t ncols, F* y, std::size_t ldy) noexcept {
    constexpr std::size_t W = simd::lanes<B>, H = even_odd_columns<B, T> ? 2 : 1, V = std::max(Vmin, H);
    B xb[M][U];
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u) xb[m][u] = B(x[m * ldx + u]);
    std::size_t c = 0;
    for (; c + V * W <= ncols; c += V * W) {
        if constexpr (Lead > 0) request_heads<U, V * W, Lead>(w, ldk, c, ncols);
        axpy_chunk<B, M, U, V, Ahead, Lead>(xb, w + c, ldk, y + c, ldy);
    }
    axpy_rest<B, M, U, V / 2, Ahead, Lead>(xb, w, ldk, ncols, y, ldy, c);
    if constexpr (H == 2)  // one vector of columns left, in order
        if (c + W <= ncols) {
            axpy_chunk<B, M, U, 1, Ahead, Lead>(xb, w + c, ldk, y + c, ldy);
            c += W;
        }
    axpy_tail<M>(x, ldx, w, ldk, U, c, ncols, y, ldy);
}

// f.template operator()<n>() for a run-time n in 1 .. Max.
template <std::size_t Max, class Fn>
inline void with_count(std::size_t n, Fn&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (void)((n == I + 1 ? (f.template operator()<I + 1>(), true) : false) || ...); }(
        std::make_index_sequence<Max>{});
}

// rows_k with more rows of x than their broadcasts and the sums fit in registers (M > 4, G::MG):
// one chunk of V vectors of columns for MB rows of x over U weight rows, the MB x V sums loaded
// from y, each weight row's segment loaded once (widened) and added into every row's sums, x
// broadcast from memory as it is used, the sums stored back. Columns take the rows in order.
template <class B, std::size_t MB, std::size_t U, std::size_t V, class F, class T>
__attribute__((always_inline)) inline void axpy_group_chunk(const F* x, std::size_t ldx, const T* w, std::size_t ldk, F* y,
                                                            std::size_t ldy) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    B acc[MB][V];
#pragma GCC unroll 8
    for (std::size_t m = 0; m < MB; ++m)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < V; ++v) acc[m][v] = B::load_aligned(y + m * ldy + v * W);
    for (std::size_t u = 0; u < U; ++u) add_weight_row(x + u, ldx, w + u * ldk, acc);
#pragma GCC unroll 8
    for (std::size_t m = 0; m < MB; ++m)
#pragma GCC unroll 8
        for (std::size_t v = 0; v < V; ++v) acc[m][v].store_aligned(y + m * ldy + v * W);
}

// y[m][c] += sum over u < U of x[m][u] * w[u * ldk + c] for M rows of x in groups of MB (the last
// M % MB): chunks of V vectors of columns, each chunk's U weight rows read by the first group and
// again from L1 by the others; the vectors left in one narrower chunk, the columns past them by
// axpy_tail. A weight row's chunk is read at once and the panel walks down K in steps of U rows,
// so each step's U rows stream side by side.
template <class B, std::size_t M, std::size_t U, std::size_t MB, std::size_t V, class F, class T>
__attribute__((noinline)) void axpy_groups(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t ncols, F* y, std::size_t ldy) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    auto chunk = [&]<std::size_t Width>(std::size_t c) __attribute__((always_inline)) {
        std::size_t g = 0;
        for (; g + MB <= M; g += MB) axpy_group_chunk<B, MB, U, Width>(x + g * ldx, ldx, w + c, ldk, y + g * ldy + c, ldy);
        if constexpr (M % MB != 0) axpy_group_chunk<B, M % MB, U, Width>(x + g * ldx, ldx, w + c, ldk, y + g * ldy + c, ldy);
    };
    std::size_t c = 0;
    for (; c + V * W <= ncols; c += V * W) chunk.template operator()<V>(c);
    if constexpr (V > 1)
        if (const std::size_t left = (ncols - c) / W; left > 0) {
            with_count<V - 1>(left, [&]<std::size_t Width>() { chunk.template operator()<Width>(c); });
            c += left * W;
        }
    axpy_tail<M>(x, ldx, w, ldk, U, c, ncols, y, ldy);
}

// Runs panel.template operator()<A>() with A = Ahead where the machine gains from software
// requests of rows ahead, else with A = 0 (Zen 5's prefetchers, and Intel cores': an Intel Xeon
// VM read float 4096^2 at 1.03-1.04x its read with them, 1.00-1.01x without; machine.hpp). Asked
// once per work item; a plan without requests compiles one panel. x86 builds with 16 registers
// (AVX2) make none: on Zen 3, 4096^2 from DRAM, float 1.53-1.61x the read -> 1.10-1.15x, bf16
// 1.29-1.31x -> 0.96-0.98x (docs/performance.md, 2026-11-30 evening); Zen 4 measured them with
// AVX-512.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool weight_requests_built = simd::vector_registers<> >= 32;
#else
inline constexpr bool weight_requests_built = true;
#endif
// Lead (bytes on in each row, matvec_tiling::row_lead): panel.template operator()<0, Lead>() on
// Zen 5 and Intel cores instead, where it was measured.
template <std::size_t Ahead, std::size_t Lead, class Panel>
inline void with_weight_requests(const Panel& panel) {
    if constexpr ((Ahead > 0 || Lead > 0) && weight_requests_built) {
        const bool zen5 = amd_zen5_or_later();
        if (Ahead > 0 && !zen5 && !intel_core()) return panel.template operator()<Ahead, 0>();
        if (Lead > 0 && (zen5 || intel_core())) return panel.template operator()<0, Lead>();
    }
    panel.template operator()<0, 0>();
}

// Later (bytes on in each row, matvec_tiling::even_odd_later): panel.template operator()<Later>()
// on Intel cores, where it was measured; else panel.template operator()<0>().
template <std::size_t Later, class Panel>
inline void with_line_requests(const Panel& panel) {
    if constexpr (Later > 0 && weight_requests_built)
        if (intel_core()) return panel.template operator()<Later>();
    panel.template operator()<0>();
}

// A finished panel's sums of a bf16 weight (blocks of 2W kept as even then odd columns) put in
// column order; nothing for other weights.
template <class B, std::size_t M, class T, class F>
inline void columns_in_order(F* y, std::size_t ldy, std::size_t ncols) noexcept {
    if constexpr (even_odd_columns<B, T>) {
        constexpr std::size_t W = simd::lanes<B>;
        for (std::size_t m = 0; m < M; ++m)
            for (std::size_t c = 0; c + 2 * W <= ncols; c += 2 * W) interleave_block<B>(y + m * ldy + c);
    }
}

// rows_k panel: y[m][c] = sum over k of x[m][k] * w[k * ldk + c] (Ahead: rows requested ahead,
// Lead: bytes on in each row and the next step's first; never past the weight's last row).
template <class B, std::size_t M, std::size_t K, std::size_t U, std::size_t V, std::size_t Ahead, std::size_t Lead, class F, class T>
void axpy_panel(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t ncols, F* y, std::size_t ldy) {
    constexpr std::size_t beyond = Ahead > 0 ? Ahead : Lead > 0 ? U : 0;  // rows past a step that its requests reach
    std::fill(y, y + M * ldy, F(0));
    std::size_t k = 0;
    for (; k + U + beyond <= K; k += U) axpy_rows<B, M, U, V, Ahead, Lead>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    for (; k + U <= K; k += U) axpy_rows<B, M, U, V, 0, 0>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    for (; k < K; ++k) axpy_rows<B, M, 1, V, 0, 0>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    columns_in_order<B, M, T>(y, ldy, ncols);
}

// rows_k panel with more rows of x than fit as broadcasts: the same sums, U weight rows a step
// for all the rows of x in groups of MB (axpy_groups).
template <class B, std::size_t M, std::size_t K, std::size_t U, std::size_t MB, std::size_t V, class F, class T>
void axpy_group_panel(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t ncols, F* y, std::size_t ldy) {
    std::fill(y, y + M * ldy, F(0));
    std::size_t k = 0;
    for (; k + U <= K; k += U) axpy_groups<B, M, U, MB, V>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    if constexpr (K % U != 0) axpy_groups<B, M, K % U, MB, V>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    columns_in_order<B, M, T>(y, ldy, ncols);
}

// rows_k: one block of NV vectors of columns of a weight held in cache, y[m][c] = sum over k of
// x[m][k] * w[k * ldk + c], with the sums in registers over all of K (the weight rows' segments
// read with a stride), where sums in L1 cost a load and a store per U weight rows. bf16 weights
// widen pairs of vectors into even and odd columns (a shift and a mask, no shuffle), the sums put
// back in order as they are stored; an odd last vector widens in order. With one row of x each
// bf16 vector is loaded once and added as it is widened: widening a row's segment first, g++
// loaded each vector twice (into the shift and the mask) or spilled (Zen 5, 288 x 768 in blocks
// of 16 vectors: 4.2-4.4 -> 3.4-3.5 µs with g++, 4.5-4.6 -> 4.0-4.1 with clang++); with two rows
// that order was 5-10 % slower, and whole rows read in order (InOrder: axpy_whole_rows, 768 x
// 288) 2-7 % slower, so they keep widening first. K is a run-time argument, so that each width is
// compiled once for all shapes.
template <class B, std::size_t M, std::size_t NV, bool InOrder = false, class F, class T>
ATTEND_LOOPS_ON_LINES void axpy_block(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t K, F* y, std::size_t ldy) {
    constexpr std::size_t W = simd::lanes<B>, NE = even_odd_columns<B, T> ? NV / 2 * 2 : 0;
    B acc[M][NV];
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t v = 0; v < NV; ++v) acc[m][v] = B(F(0));
    for (std::size_t k = 0; k < K; ++k) {
        if constexpr (M == 1 && NE > 0 && !InOrder) {
            const B xb(x[k]);
#pragma GCC unroll 16
            for (std::size_t v = 0; v < NE; v += 2) {
                B even, odd;
                simd::widen_even_odd<true>(w + k * ldk + v * W, even, odd);
                acc[0][v] = simd::fma(xb, even, acc[0][v]);
                acc[0][v + 1] = simd::fma(xb, odd, acc[0][v + 1]);
            }
            if constexpr (NE < NV) acc[0][NE] = simd::fma(xb, simd::load<B>(w + k * ldk + NE * W), acc[0][NE]);
        } else {
            add_weight_row(x + k, ldx, w + k * ldk, acc);
        }
    }
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t v = 0; v < NV; ++v) {
            if (v >= NE) acc[m][v].store_aligned(y + m * ldy + v * W);
            else if (v % 2 == 1) simd::store_even_odd(y + m * ldy + (v - 1) * W, acc[m][v - 1], acc[m][v]);
        }
}

// rows_k panel of a weight held in cache: the panel's whole vectors of columns as the fewest
// blocks of at most NV vectors (axpy_block), their widths within one of each other (bf16: in
// pairs of vectors, an odd one last), so that no narrow block waits on the FMA's latency row after
// row (docs/performance.md: (2048, 80) 0.67x the time of blocks of 4 and 1). A column's sum is
// formed in the same order in any block, so neither the blocks nor the panels change its bits.
// The columns past the last whole vector in scalars.
template <class B, std::size_t M, std::size_t NV, std::size_t K, class F, class T>
void axpy_columns(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t ncols, F* y, std::size_t ldy) {
    constexpr std::size_t W = simd::lanes<B>, U = even_odd_columns<B, T> ? 2 : 1;  // bf16: even widths
    const std::size_t vectors = ncols / W, blocks = (vectors + NV - 1) / NV, units = vectors / U;
    std::size_t c = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t width = (units / blocks + (b < units % blocks ? 1 : 0)) * U + (b + 1 == blocks ? vectors % U : 0);
        with_count<NV>(width, [&]<std::size_t V>() { axpy_block<B, M, V>(x, ldx, w + c, ldk, K, y + c, ldy); });
        c += width * W;
    }
    for (std::size_t m = 0; m < M; ++m) std::fill(y + m * ldy + c, y + m * ldy + ncols, F(0));
    axpy_tail<M>(x, ldx, w, ldk, K, c, ncols, y, ldy);
}

// rows_k panel of all N columns (one work item: a thread's narrower panel takes axpy_panel): V
// vectors of sums (all of a row's whole vectors) in registers over all of K, each weight row read
// whole and in order (axpy_block); the columns past them by axpy_tail.
template <class B, std::size_t M, std::size_t V, class F, class T>
void axpy_whole_rows(const F* x, std::size_t ldx, const T* w, std::size_t ldk, std::size_t K, std::size_t ncols, F* y, std::size_t ldy) {
    constexpr std::size_t W = simd::lanes<B>;
    axpy_block<B, M, V, true>(x, ldx, w, ldk, K, y, ldy);
    for (std::size_t m = 0; m < M; ++m) std::fill(y + m * ldy + V * W, y + m * ldy + ncols, F(0));
    axpy_tail<M>(x, ldx, w, ldk, K, V * W, ncols, y, ldy);
}

#if defined(__AVX512F__) && defined(__AVX512BF16__)
// rows_k on bf16 pairs (pair_matvec): weight rows k and k + 1 interleaved in registers
// (simd::unpack_rows) against x's pair (x[k], x[k + 1]), 32 columns at a time into two vectors
// of sums in the unpacked lane order (simd::store_unpacked puts them in column order); an odd
// last row pairs with zeros, and the last columns of a panel are a masked load, so every column
// takes the same instructions and its sum the same order in any panel or block (vdpbf16ps adds
// the second row's exact product, then the first's, each rounded: docs/numerics.md).

// The weight pairs of rows k .. k + 2P (P pairs; Odd: then row k + 2P alone) and x's pairs.
template <std::size_t M, std::size_t P, bool Odd>
struct row_pairs {
    static constexpr std::size_t n = P + (Odd ? 1 : 0);
    simd::bf16_pairs x[M][n];
    row_pairs(const bf16* xr, std::size_t ldx) noexcept {
        for (std::size_t m = 0; m < M; ++m) {
            for (std::size_t p = 0; p < P; ++p) x[m][p] = simd::broadcast_pair(xr + m * ldx + 2 * p);
            if constexpr (Odd) x[m][P] = simd::lone_pair<false>(xr + m * ldx + 2 * P);
        }
    }
};

// y[m][c .. c + 32) (unpacked order) += the pair products of P row pairs (and an odd row) from
// w's columns c .. c + cols (cols <= 32; zeros past them). Ahead > 0: requests the row Ahead on.
template <class B, std::size_t M, std::size_t P, bool Odd, std::size_t Ahead>
__attribute__((always_inline)) inline void pair_chunk(const row_pairs<M, P, Odd>& xp, const bf16* w, std::size_t ldk, std::size_t cols,
                                                      float* y, std::size_t ldy) noexcept {
    constexpr std::size_t W = 16, n = row_pairs<M, P, Odd>::n;
    simd::bf16_pairs lo[n], hi[n];
#pragma GCC unroll 8
    for (std::size_t p = 0; p < n; ++p) {
        if constexpr (Ahead > 0) __builtin_prefetch(w + (2 * p + Ahead) * ldk, 0, 2), __builtin_prefetch(w + (2 * p + 1 + Ahead) * ldk, 0, 2);
        simd::unpack_rows(w + 2 * p * ldk, Odd && p == P ? nullptr : w + (2 * p + 1) * ldk, cols, lo[p], hi[p]);
    }
#pragma GCC unroll 16
    for (std::size_t m = 0; m < M; ++m) {
        B a = B::load_aligned(y + m * ldy), b = B::load_aligned(y + m * ldy + W);
#pragma GCC unroll 8
        for (std::size_t p = 0; p < n; ++p) a = simd::dot_pairs(a, xp.x[m][p], lo[p]), b = simd::dot_pairs(b, xp.x[m][p], hi[p]);
        a.store_aligned(y + m * ldy);
        b.store_aligned(y + m * ldy + W);
    }
}

// The rows of row_pairs<M, P, Odd> added into a panel's sums (y in unpacked order, its rows a
// multiple of 32 long): whole chunks of 32 columns, then the last columns masked. Everything the
// loop reads is a parameter: stores to y may alias anything reached through a pointer.
template <class B, std::size_t M, std::size_t P, bool Odd, std::size_t Ahead>
void pair_rows(const bf16* x, std::size_t ldx, const bf16* w, std::size_t ldk, std::size_t ncols, float* y, std::size_t ldy) noexcept {
    const row_pairs<M, P, Odd> xp(x, ldx);
    const std::size_t whole = ncols / 32 * 32;
    for (std::size_t c = 0; c < whole; c += 32) pair_chunk<B, M, P, Odd, Ahead>(xp, w + c, ldk, 32, y + c, ldy);
    if (whole < ncols) pair_chunk<B, M, P, Odd, 0>(xp, w + whole, ldk, ncols - whole, y + whole, ldy);
}

// rows_k panel on pairs, the sums in L1: U rows a step (U even), the last rows in pairs and an
// odd one alone; then each 32 columns put in column order.
template <class B, std::size_t M, std::size_t K, std::size_t U, std::size_t Ahead>
void pair_axpy_panel(const bf16* x, std::size_t ldx, const bf16* w, std::size_t ldk, std::size_t ncols, float* y, std::size_t ldy) {
    std::fill(y, y + M * ldy, 0.0f);
    std::size_t k = 0;
    for (; k + U + Ahead <= K; k += U) pair_rows<B, M, U / 2, false, Ahead>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    for (; k + U <= K; k += U) pair_rows<B, M, U / 2, false, 0>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    for (; k + 2 <= K; k += 2) pair_rows<B, M, 1, false, 0>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    if constexpr (K % 2 == 1) pair_rows<B, M, 0, true, 0>(x + k, ldx, w + k * ldk, ldk, ncols, y, ldy);
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t c = 0; c < ncols; c += 32)
            simd::store_unpacked(y + m * ldy + c, B::load_aligned(y + m * ldy + c), B::load_aligned(y + m * ldy + c + 16));
}

// rows_k on pairs with the sums in registers over all of K: a block of NC chunks of 32 columns,
// the last holding `last` (1 .. 32) columns; stored in column order (y's rows a multiple of 32).
template <class B, std::size_t M, std::size_t NC>
void pair_axpy_block(const bf16* x, std::size_t ldx, const bf16* w, std::size_t ldk, std::size_t K, std::size_t last, float* y,
                     std::size_t ldy) {
    B acc[M][2 * NC];
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t v = 0; v < 2 * NC; ++v) acc[m][v] = B(0.0f);
    auto rows = [&]<bool Odd>(std::size_t k) {
        const row_pairs<M, Odd ? 0 : 1, Odd> xp(x + k, ldx);
        simd::bf16_pairs lo[NC], hi[NC];
#pragma GCC unroll 16
        for (std::size_t v = 0; v < NC; ++v)
            simd::unpack_rows(w + k * ldk + 32 * v, Odd ? nullptr : w + (k + 1) * ldk + 32 * v, v + 1 == NC ? last : 32, lo[v], hi[v]);
#pragma GCC unroll 4
        for (std::size_t m = 0; m < M; ++m)
#pragma GCC unroll 16
            for (std::size_t v = 0; v < NC; ++v)
                acc[m][2 * v] = simd::dot_pairs(acc[m][2 * v], xp.x[m][0], lo[v]), acc[m][2 * v + 1] = simd::dot_pairs(acc[m][2 * v + 1], xp.x[m][0], hi[v]);
    };
    std::size_t k = 0;
    for (; k + 2 <= K; k += 2) rows.template operator()<false>(k);
    if (k < K) rows.template operator()<true>(k);
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t v = 0; v < NC; ++v) simd::store_unpacked(y + m * ldy + 32 * v, acc[m][2 * v], acc[m][2 * v + 1]);
}

// rows_k panel on pairs held in cache: the fewest blocks of at most NC chunks of 32 columns, their
// widths within one of each other, the last block's last chunk masked.
template <class B, std::size_t M, std::size_t NC, std::size_t K>
void pair_axpy_columns(const bf16* x, std::size_t ldx, const bf16* w, std::size_t ldk, std::size_t ncols, float* y, std::size_t ldy) {
    const std::size_t chunks = (ncols + 31) / 32, blocks = (chunks + NC - 1) / NC;
    std::size_t c = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t width = chunks / blocks + (b < chunks % blocks ? 1 : 0), end = std::min(ncols, c + 32 * width);
        with_count<NC>(width, [&]<std::size_t V>() { pair_axpy_block<B, M, V>(x, ldx, w + c, ldk, K, end - c - 32 * (V - 1), y + c, ldy); });
        c = end;
    }
}
#endif

// bf16 weight rows (N, K) are widened into their even and odd elements (a shift and a mask of
// 32-bit lanes; widening in order takes a shuffle, which bound in-cache matvecs to half their read
// speed) and meet x split once into its even and odd elements: exact float products, summed in
// another order. x's split is a stack copy of up to 64 KiB.
template <class B, class F, class T, std::size_t M, std::size_t K>
inline constexpr bool even_odd_rows = std::is_same_v<F, float> && std::is_same_v<std::remove_cv_t<T>, bf16> && simd::is_batch<B> &&
                                      K >= 2 * simd::lanes<B> && M * K * sizeof(F) <= (std::size_t{64} << 10);

// The vector part of a register tile's dot products with bf16 weight rows widened to even and
// odd lanes (simd::widen_even_odd) against x split the same way (x[m] at xs + m * K: K/2 even
// values, then K/2 odd), into acc[m][r]; even and odd products in their own accumulators while the
// tile has too few to cover the FMA's latency. Later: as dot_tile's.
template <class B, std::size_t MB, std::size_t RN, std::size_t K, std::size_t KV, std::size_t Later>
inline void even_odd_dots(const float* xs, const bf16* w, std::size_t ldn, B (&acc)[MB][RN]) noexcept {
    constexpr std::size_t W = simd::lanes<B>, split = MB * RN <= 8 ? 2 : 1;
    // Each weight vector loaded once given 32 registers (x86-64-v3's 16 ran (288, 768) at 5.1
    // against 4.3 µs that way).
    constexpr bool one_load = simd::vector_registers<typename B::arch_type> >= 32;
    B odd_acc[split == 2 ? MB : 1][RN];
    for (std::size_t m = 0; m < (split == 2 ? MB : 1); ++m)
        for (std::size_t r = 0; r < RN; ++r) odd_acc[m][r] = B(0.0f);
    for (std::size_t k = 0; k < KV; k += 2 * W) {
        B we[RN], wo[RN];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < RN; ++r) {
            if constexpr (Later > 0) __builtin_prefetch(w + r * ldn + k + Later / sizeof(bf16), 0, 3);
            simd::widen_even_odd<one_load>(w + r * ldn + k, we[r], wo[r]);
        }
#pragma GCC unroll 8
        for (std::size_t m = 0; m < MB; ++m) {
            const B xe = B::load_unaligned(xs + m * K + k / 2), xo = B::load_unaligned(xs + m * K + K / 2 + k / 2);
#pragma GCC unroll 8
            for (std::size_t r = 0; r < RN; ++r) {
                acc[m][r] = simd::fma(xe, we[r], acc[m][r]);
                if constexpr (split == 2) odd_acc[m][r] = simd::fma(xo, wo[r], odd_acc[m][r]);
                else acc[m][r] = simd::fma(xo, wo[r], acc[m][r]);
            }
        }
    }
    if constexpr (split == 2)
        for (std::size_t m = 0; m < MB; ++m)
            for (std::size_t r = 0; r < RN; ++r) acc[m][r] += odd_acc[m][r];
}

// The vector part of a register tile's dot products of bf16 x with bf16 weight rows as pair
// products (pair_matvec), into acc[m][r]; two sets of accumulators while the tile has too few to
// cover vdpbf16ps' latency.
template <class B, std::size_t MB, std::size_t RN, std::size_t KV>
inline void pair_row_dots(const bf16* x, std::size_t ldx, const bf16* w, std::size_t ldn, B (&acc)[MB][RN]) noexcept {
#if defined(__AVX512F__) && defined(__AVX512BF16__)
    constexpr std::size_t P = 2 * simd::lanes<B>, split = MB * RN <= 8 ? 2 : 1;
    B second[split == 2 ? MB : 1][RN];
    for (auto& row : second)
        for (auto& a : row) a = B(0.0f);
    auto step = [&](std::size_t k, auto& sums) {
        simd::bf16_pairs wp[RN];
#pragma GCC unroll 8
        for (std::size_t r = 0; r < RN; ++r) wp[r] = simd::load_pairs(w + r * ldn + k);
#pragma GCC unroll 8
        for (std::size_t m = 0; m < MB; ++m) {
            const simd::bf16_pairs xp = simd::load_pairs(x + m * ldx + k);
#pragma GCC unroll 8
            for (std::size_t r = 0; r < RN; ++r) sums[m][r] = simd::dot_pairs(sums[m][r], xp, wp[r]);
        }
    };
    std::size_t k = 0;
    if constexpr (split == 2)
        for (; k + 2 * P <= KV; k += 2 * P) {
            step(k, acc);
            step(k + P, second);
        }
    for (; k < KV; k += P) step(k, acc);
    if constexpr (split == 2)
        for (std::size_t m = 0; m < MB; ++m)
            for (std::size_t r = 0; r < RN; ++r) acc[m][r] += second[m][r];
#else
    static_assert(sizeof(B) == 0, "attend internal: pair_row_dots needs AVX-512 BF16");
    (void)x, (void)ldx, (void)w, (void)ldn, (void)acc;
#endif
}

// How a register tile of dot products reads x and the weight rows: as they are (a 16-bit weight
// widened in order), bf16 weights widened into even and odd lanes against x split the same way
// (even_odd_rows), or bf16 x and weights as pair products (pair_matvec).
enum class dots { plain, even_odd, pairs };

// y[m][r * q] = sum over k of x[m][k] * w[r * ldn + k], for m < MB and r < RN: one register
// tile of dot products, lanes along k, the tail of K added in scalars. even_odd: against x split
// at xs. Later: with each weight vector, request the line Later bytes further on in its row (0:
// none; matvec_tiling::later).
template <class B, std::size_t MB, std::size_t RN, std::size_t K, dots Kind = dots::plain, std::size_t Later = 0, class X, class F,
          class T>
inline void dot_tile(const X* x, std::size_t ldx, const T* w, std::size_t ldn, F* y, std::size_t ldy, std::size_t q,
                     const F* xs = nullptr) noexcept {
    constexpr std::size_t W = simd::lanes<B>, KW = Kind == dots::plain ? W : 2 * W, KV = K / KW * KW;
    B acc[MB][RN];
    for (std::size_t m = 0; m < MB; ++m)
        for (std::size_t r = 0; r < RN; ++r) acc[m][r] = B(F(0));
    if constexpr (Kind == dots::even_odd) {
        even_odd_dots<B, MB, RN, K, KV, Later>(xs, w, ldn, acc);
    } else if constexpr (Kind == dots::pairs) {
        pair_row_dots<B, MB, RN, KV>(x, ldx, w, ldn, acc);
    } else {
        for (std::size_t k = 0; k < KV; k += W) {
            B wv[RN];
#pragma GCC unroll 8
            for (std::size_t r = 0; r < RN; ++r) {
                if constexpr (Later > 0) __builtin_prefetch(w + r * ldn + k + Later / sizeof(T), 0, 3);
                wv[r] = simd::load<B>(w + r * ldn + k);
            }
#pragma GCC unroll 8
            for (std::size_t m = 0; m < MB; ++m) {
                const B xv = B::load_unaligned(x + m * ldx + k);
#pragma GCC unroll 8
                for (std::size_t r = 0; r < RN; ++r) acc[m][r] = simd::fma(xv, wv[r], acc[m][r]);
            }
        }
    }
    for (std::size_t m = 0; m < MB; ++m) {
        F s[RN];
        simd::reduce_add_each(acc[m], s);
        for (std::size_t r = 0; r < RN; ++r) {
            for (std::size_t k = KV; k < K; ++k) s[r] += simd::load<F>(x + m * ldx + k) * simd::load<F>(w + r * ldn + k);
            y[m * ldy + r * q] = s[r];
        }
    }
}

// RN output columns for all M rows of x, MB rows at a time (the weight rows stay in L1/L2
// between the row blocks).
template <class B, std::size_t M, std::size_t MB, std::size_t RN, std::size_t K, dots Kind = dots::plain, std::size_t Later = 0,
          std::size_t M0 = 0, class X, class F, class T>
inline void dot_columns(const X* x, std::size_t ldx, const T* w, std::size_t ldn, F* y, std::size_t ldy, std::size_t q,
                        const F* xs = nullptr) noexcept {
    if constexpr (M0 < M) {
        constexpr std::size_t rows = std::min(MB, M - M0);
        dot_tile<B, rows, RN, K, Kind, Later>(x + M0 * ldx, ldx, w, ldn, y + M0 * ldy, ldy, q,
                                              Kind == dots::even_odd ? xs + M0 * K : xs);
        dot_columns<B, M, MB, RN, K, Kind, Later, M0 + rows>(x, ldx, w, ldn, y, ldy, q, xs);
    }
}

// rows_n panel: y[m][c] = sum over k of x[m][k] * w[c * ldn + k]. A register tile takes rows
// ncols / RN apart, so that even short rows (adjacent in memory) are read as RN streams.
template <class B, std::size_t M, std::size_t MB, std::size_t RN, std::size_t K, dots Kind = dots::plain, std::size_t Later = 0,
          class X, class F, class T>
void dot_panel(const X* x, std::size_t ldx, const T* w, std::size_t ldn, std::size_t ncols, F* y, std::size_t ldy,
               const F* xs = nullptr) {
    const std::size_t q = ncols / RN;
    for (std::size_t c = 0; c < q; ++c) dot_columns<B, M, MB, RN, K, Kind, Later>(x, ldx, w + c * ldn, q * ldn, y + c, ldy, q, xs);
    for (std::size_t c = q * RN; c < ncols; ++c) dot_columns<B, M, MB, 1, K, Kind, Later>(x, ldx, w + c * ldn, ldn, y + c, ldy, 1, xs);
}

// The same with each register tile on RN adjacent rows: one forward stream (a short block of
// keys in the decode nest).
template <class B, std::size_t M, std::size_t MB, std::size_t RN, std::size_t K, class F, class T>
void dot_rows(const F* x, std::size_t ldx, const T* w, std::size_t ldn, std::size_t ncols, F* y, std::size_t ldy) {
    std::size_t c = 0;
    for (; c + RN <= ncols; c += RN) dot_columns<B, M, MB, RN, K>(x, ldx, w + c * ldn, ldn, y + c, ldy, 1);
    for (; c < ncols; ++c) dot_columns<B, M, MB, 1, K>(x, ldx, w + c * ldn, ldn, y + c, ldy, 1);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Whether bf16 pair products beat widening to float FMAs on this core (simd::pair_products: the
// program's choice, else measured per vendor): on Zen 5 the prefill pair nest ran 1.69x the float
// nest; on an Intel Xeon (Sapphire Rapids class) vdpbf16ps gave half the FMA's products a second,
// the prefill float nest on widened K and V ran 1.35x the pair nest, decode with float Q beat
// the pair stages, and bf16 x against a bf16 W (K, N) in L2 ran 1.33x as long as x widened
// (docs/performance.md). The prefill nest asks it once per call, decode once per work item
// (decode_keys), the matvec of bf16 x against a bf16 W (K, N) once per panel.
inline bool pair_products_pay() noexcept {
    switch (simd::pair_products()) {
        case simd::choice::always: return true;
        case simd::choice::never: return false;
        default: return !intel_core();
    }
}

// Whether rows_k panels are whole rows with their sums on the heap (grouped rows of x, float
// products; see matvec()).
template <class G, weight_layout WL, bool Pairs>
inline constexpr bool wide_panels = WL == weight_layout::rows_k && !Pairs && G::grouped && config::heap_allowed;

// The sums of one panel (Size elements, 64-byte aligned): on the stack, or on the heap for the
// wide panels of grouped rows, starting 17 lines past a page boundary: sums at a page's start
// share their addresses' low 12 bits with the rows of a page-aligned weight (a huge page), and
// each store of sums then held up the next loads of weight rows (Zen 3, 16 x 4096^2: 1.46x the
// time; the allocator had put them 64 bytes past one).
template <class F, std::size_t Size, bool Heap>
struct panel_sums {
    alignas(64) F storage[Size];
    F* data() noexcept { return storage; }
};
template <class F, std::size_t Size>
struct panel_sums<F, Size, true> {
    static constexpr std::size_t page = 4096, offset = 17 * 64;
    std::unique_ptr<F[]> storage = std::make_unique_for_overwrite<F[]>(Size + (page + offset) / sizeof(F));
    F* data() noexcept {
        const std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(storage.get()) + page - 1) / page * page + offset;
        return std::assume_aligned<64>(reinterpret_cast<F*>(at));
    }
};

// Runs the matvec plan on `mm` (A a memory leaf, read in place; B a weight in either layout);
// for each finished panel calls finish(p, panel, ld, rows, ncols) as the contraction does.
template <class Arch, class S, class F, class A, class Bop, class Finish>
void matvec(const matmul_node<A, Bop>& mm, Finish&& finish) {
    using MM = matmul_node<A, Bop>;
    constexpr std::size_t R = S::rank, M = MM::M, K = MM::K, N = MM::N;
    using G = matvec_tiling<F, Arch, M, N, typename Bop::value_type>;
    using B = typename G::B;
    constexpr std::size_t W = G::W;
    constexpr weight_layout wl = weight_layout_of<Bop, F>;
    constexpr bool pairs = pair_matvec<Arch, A, Bop, F>;
    // Rows of x in groups (axpy_groups) read the weight in panels of whole rows, their sums on
    // the heap where it is allowed: each step's rows then stream whole, where panels of 16 KiB of
    // sums read them in short runs (16 x 4096^2: 6.2-7.0 against 8.7-11.4 ms, Intel Xeon VM).
    constexpr bool wide = wide_panels<G, wl, pairs>;
    constexpr std::size_t NP = wide ? G::NPW : G::NP, batches = S::size / (M * N);
    static_assert(wl != weight_layout::none && in_place<A, typename A::value_type, 0>, "attend internal: matvec: operands not in place");
    constexpr std::size_t ldx = A::layout::template strides_at<R>[R - 2];
    constexpr std::size_t ldw = Bop::layout::template strides_at<R>[wl == weight_layout::rows_k ? R - 2 : R - 1];
    // Threads pay from 64 Ki multiply-adds (a 256 KiB weight: 288 x 288 ran 6.6 -> 4.3 µs on two
    // Zen 1 cores, waking them costs ~1 µs).
    constexpr bool worth = batches * M * N * K >= (std::size_t{1} << 16);
    static_assert(pairs || std::is_same_v<typename A::value_type, F>, "attend internal: matvec: x not in the compute type");
    constexpr bool even_odd = !pairs && wl == weight_layout::rows_n && even_odd_rows<B, F, typename Bop::value_type, M, K>;
    // Panels of at most NP columns, at least one per thread when it is worth it; every column's
    // sum is formed in the same order whatever the split, so results do not depend on it.
    // The sums' row length: pair products of rows (K, N) store 32 columns at a time.
    constexpr std::size_t LD = pairs && wl == weight_layout::rows_k ? (NP + 31) / 32 * 32 : NP;
    const std::size_t want = worth ? (worker_count() + batches - 1) / batches : 1;
    const std::size_t panels = std::max((N + NP - 1) / NP, std::min(want, (N + W - 1) / W));
    const std::size_t width = std::min(NP, (N + panels * W - 1) / (panels * W) * W);
    parallel_for(batches * panels, worth, [&](std::size_t item) {
        nd_pos<R> p = batch_position<S>(item / panels);
        const std::size_t j0 = item % panels * width;
        if (j0 >= N) return;
        const std::size_t ncols = std::min(width, N - j0);
        panel_sums<F, M * LD, wide> sums;
        F* const y = sums.data();
        const auto* x = matrix_at(mm.a, p, 0, 0).first;  // F, or bf16 for pairs
        const auto* w = matrix_at(mm.b, p, 0, j0).first;  // F, or 16-bit storage widened as it streams
        constexpr std::size_t bytes = G::weight_bytes(K);
        // rows_k with float x (or bf16 x widened, where pair products do not pay)
        [[maybe_unused]] auto float_rows_k = [&](const auto* xf, std::size_t ldxf) {  // (generic: instantiated only where called)
            auto rows = [&] {
                if constexpr (G::grouped) axpy_group_panel<B, M, K, G::GU, G::MG, G::GV>(xf, ldxf, w, ldw, ncols, y, LD);
                else with_weight_requests<G::rows_ahead(bytes), G::row_lead(bytes)>([&]<std::size_t Ahead, std::size_t Lead>() {
                    axpy_panel<B, M, K, G::rows_per_step(bytes), G::chunk_vectors(bytes), Ahead, Lead>(xf, ldxf, w, ldw, ncols, y, LD);
                });
            };
            if constexpr (G::sums_in_registers(bytes)) axpy_columns<B, M, G::NV, K>(xf, ldxf, w, ldw, ncols, y, LD);
            else if constexpr (constexpr std::size_t V = G::whole_row_vectors(bytes); V > 0) {
                if (ncols == N) axpy_whole_rows<B, M, V>(xf, ldxf, w, ldw, K, ncols, y, LD);
                else rows();  // (a panel of the columns, for a thread)
            } else if constexpr (G::blocks_on_intel(bytes)) {
                if (intel_core()) axpy_columns<B, M, G::NV, K>(xf, ldxf, w, ldw, ncols, y, LD);
                else rows();
            } else rows();
        };
        if constexpr (pairs && wl == weight_layout::rows_n)
            dot_panel<B, M, G::MB, G::RN, K, dots::pairs>(x, ldx, w, ldw, ncols, y, NP);
        else if constexpr (pairs && wl == weight_layout::rows_k) {
#if defined(__AVX512F__) && defined(__AVX512BF16__)
            auto pair_rows_k = [&] {
                if constexpr (G::pair_sums_in_registers(bytes)) pair_axpy_columns<B, M, G::pair_chunks, K>(x, ldx, w, ldw, ncols, y, LD);
                else with_weight_requests<G::rows_ahead(bytes), 0>([&]<std::size_t Ahead, std::size_t>() { pair_axpy_panel<B, M, K, G::pair_rows_per_step(bytes), Ahead>(x, ldx, w, ldw, ncols, y, LD); });
            };
            if constexpr (M * K * sizeof(F) <= config::stack_budget || config::heap_allowed) {
                if (!pair_products_pay()) {  // x widened exactly, the float-x kernels
                    panel_sums<F, M * K, (M * K * sizeof(F) > config::stack_budget)> wide_x;
                    F* const xf = wide_x.data();
                    for (std::size_t m = 0; m < M; ++m) widen_rows<1, K>(x + m * ldx, K, 1, xf + m * K);
                    float_rows_k(xf, K);
                } else pair_rows_k();
            } else pair_rows_k();
#endif
        } else if constexpr (wl == weight_layout::rows_k) {
            float_rows_k(x, ldx);
        }
        else if constexpr (even_odd) {
            alignas(64) F xs[M * K];  // each row of x as its K/2 even elements, then K/2 odd
            for (std::size_t m = 0; m < M; ++m) simd::split_even_odd(x + m * ldx, K / 2, xs + m * K, xs + m * K + K / 2);
            with_line_requests<G::even_odd_later(bytes)>([&]<std::size_t Later>() {
                dot_panel<B, M, G::MB, G::RN, K, dots::even_odd, Later>(x, ldx, w, ldw, ncols, y, NP, +xs);
            });
        } else dot_panel<B, M, G::MB, G::RN, K, dots::plain, G::later(bytes)>(x, ldx, w, ldw, ncols, y, NP);
        p.idx[R - 2] = 0;
        p.idx[R - 1] = j0;
        finish(p, y, LD, M, ncols);
    });
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
