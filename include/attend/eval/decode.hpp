// attend/eval/decode.hpp — the attention plan's nest for a few queries (NQ up to 15: the query
// heads of a GQA group folded into the query axis, or a few new tokens; also the last few
// queries the prefill nest's tiles leave) over a long key-value cache. One work item takes a run
// of a batch index's queries (all of them, in decode) against a range of keys, so each K and V
// row is read once; lanes run along the head dimension:
//   scores:  S = Q K_tile^T, W keys at a time, each K row read whole and in order;
//   tree:    the score tree on S with lanes along the keys, its row maxima;
//   softmax: per query a running max and sum (the prefill nest's exp2 units);
//   P V:     O = alpha O + P V_tile, V rows read whole and in order, in place (16-bit widened);
//            with 16 registers three rows at a time from the tile's thirds, the outputs in L1.
// One or two queries run every stage per W-key block with the outputs in registers
// (decode_stream; one query goes by blocks of keys, the next block's K rows beside this block's
// V rows, from DRAM on Zen 5 and Intel cores: decode_key_blocks; elsewhere, over a float cache,
// key by key when its live keys fill the L3: decode_per_key; with 16 registers on AMD cores
// before Zen 5 it takes the tile stages over the tile's quarters: quarter_runs);
// more run the stages tile by tile, in groups of queries (with bf16 Q and K where the OS grants
// AMX tiles, the scores on tiles: amx_decode_scores).
// Key tiles the score tree's masks rule out (j >= len, causal, j >= lens) are never touched. When
// there are fewer batch indices than threads, the keys split into chunks whose partial results
// merge by their log-sum-exp (flash-decoding).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

#include "attention_amx.hpp"
#include "bounds.hpp"
#include "contract.hpp"
#include "machine.hpp"
#include "matvec.hpp"
#include "parallel.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

template <class F, class Arch, std::size_t NQ, std::size_t D, std::size_t DV>
struct decode_tiling {
    using B = simd::batch<F, Arch>;
    static constexpr std::size_t W = simd::lanes<B>, regs = simd::vector_registers<Arch>;
    // From 16 queries the prefill nest fills its query lanes and was faster (Zen 1, 4 x 16 heads
    // over 8000 keys: 11.5 against 14.5 ms; at 8 queries decode 8.3-13.6, prefill 12.4-13.3).
    static constexpr std::size_t max_queries = 15;
    // Keys per tile: fewer, longer passes over K and V per tile were faster (Zen 1, 8 x 4 heads,
    // len 8000: 13.5 ms at 64 keys, 10.2 at 128, 10.0 at 256 and 512).
    static constexpr std::size_t BN = 256;
    // Tiles whose keys are not whole W-key blocks (a short last tile) score by dot_panel:
    // MB queries x RK keys of dot products, plus RK key vectors and one query vector.
    static constexpr std::size_t MB = std::min<std::size_t>(NQ, 4);
    // (a power of two: the lanes of RK accumulators are summed by one transposing tree)
    static constexpr std::size_t RK = std::bit_floor(std::clamp<std::size_t>((regs - 4) / (MB + 1), 1, 8));
    // Value widths not a whole number of vectors take decode_pv: MQ queries x NVd vectors of
    // output columns, plus NVd value vectors and a broadcast;
    // few queries take more columns, so that enough independent sums hide the FMA latency.
    static constexpr std::size_t MQ = std::min<std::size_t>(NQ, regs >= 32 ? 8 : 4);
    // (a divisor of DV's vectors, so that no one-vector tail blocks remain)
    static constexpr std::size_t NVd = [] {
        const std::size_t vectors = std::max<std::size_t>(1, DV / W);
        std::size_t n = std::clamp<std::size_t>((regs - 4) / (MQ + 1), 1, 8);
        while (vectors % n != 0) --n;
        return n;
    }();
    static constexpr std::size_t max_chunks = 8;  // split-KV parts per batch index
    // One or two queries whose outputs fit in registers take the stream (decode_stream): every
    // stage over W keys at a time, K and V rows read alternately in W-row blocks.
    static constexpr bool stream = DV % W == 0 && NQ * (DV / W) <= 16 && NQ <= 2;
    // Keys ahead whose K and V rows the stream requests into L1 as it reads each V row, when the
    // cache streams from DRAM on Zen 5 or an Intel core (32 x 1 heads over a bf16 cache of 4000
    // keys, bench/decode, 3 rounds: Zen 5 clang++ 1950 / 2383 / 2154 -> 1496 / 1697 / 1455 µs,
    // g++ level; an Intel Xeon VM, g++, 4436-6400 -> 2706-2831; docs/performance.md). Not on
    // earlier AMD cores: on Zen 4 requests made a bf16 cache 1.7x slower (2026-11-27).
    static constexpr std::size_t stream_ahead = 32;
    // Keys per tile for one query over a float cache that may stream from DRAM (decode_by_key) in
    // g++ builds (decode_tile_keys): each tile one call of decode_key_blocks or decode_per_key.
    static constexpr std::size_t run_BN = 2048;
};

// Bytes per element of an operand as stored (memory), or as computed (an expression).
template <class X, class F>
inline constexpr std::size_t element_bytes = [] {
    if constexpr (is_memory_leaf<X>) return sizeof(typename X::value_type);
    else return sizeof(F);
}();

// A work item's running state for NQ queries: unnormalised outputs (NQ x DV), and per query the
// running max in exp2-eighths units and the running sum.
template <class F, std::size_t NQ, std::size_t DV>
struct decode_state {
    static constexpr std::size_t floats = NQ * (DV + 2);  // the memory one state spans
    F* o;
    F* m;
    F* l;
    static decode_state over(F* mem) noexcept { return {mem, mem + NQ * DV, mem + NQ * (DV + 1)}; }
    void clear() const noexcept {
        std::fill(o, o + NQ * DV, F(0));
        std::fill(m, m + NQ, -std::numeric_limits<F>::infinity());
        std::fill(l, l + NQ, F(0));
    }
};

// Rows r .. of a matrix operand (element (r, c) at p[r * ld + c]): in place when it is memory of
// the compute type with contiguous columns, else packed into `pack` through its expression
// (rows_in_place: the pointer and row stride of memory of any element type).
template <bool Transposed, class X, std::size_t R>
inline auto rows_in_place(const X& x, nd_pos<R> p, std::size_t r0) noexcept {
    constexpr std::size_t row_axis = Transposed ? R - 1 : R - 2, col_axis = Transposed ? R - 2 : R - 1;
    p.idx[row_axis] = r0;
    p.idx[col_axis] = 0;
    return std::pair{x.data() + X::layout::offset(p.idx), X::layout::template strides_at<R>[row_axis]};
}
// Packed, only the first n rows are read (the rest are zeros: rows past a cache's length):
// 16-bit memory widened a vector at a time (widen_rows), anything else element by element
// through its expression.
template <std::size_t Rows, std::size_t C, bool Transposed, class F, class X, std::size_t R>
inline std::pair<const F*, std::size_t> contiguous_rows(const X& x, nd_pos<R> p, std::size_t r0, F* pack, std::size_t n = Rows) noexcept {
    constexpr std::size_t row_axis = Transposed ? R - 1 : R - 2, col_axis = Transposed ? R - 2 : R - 1;
    if constexpr (in_place<X, F, Transposed ? 1 : 0>) {
        return rows_in_place<Transposed>(x, p, r0);
    } else if constexpr (streamed<X, F, Transposed ? 1 : 0>) {
        const auto [src, ld] = rows_in_place<Transposed>(x, p, r0);
        widen_rows<Rows, C>(src, ld, n, pack);
        return {pack, C};
    } else {
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < C; ++c) {
                p.idx[row_axis] = r0 + r;
                p.idx[col_axis] = c;
                pack[r * C + c] = r < n ? read<F>(x, p) : F(0);
            }
        return {pack, C};
    }
}

// The W rows of D elements from k (ldk apart) of a key block the masks cut: its first n rows
// copied into `pad`, zeros after, so that rows past a cache's length are never read (their
// scores are masked whatever they are).
template <std::size_t W, std::size_t D, class T>
inline const T* cut_block(const T* k, std::size_t ldk, std::size_t n, T* pad) noexcept {
    for (std::size_t r = 0; r < W; ++r)
        if (r < n) std::copy(k + r * ldk, k + r * ldk + D, pad + r * D);
        else std::fill(pad + r * D, pad + (r + 1) * D, T{});
    return pad;
}

// The score tree on S (NQ x KB, rows BN apart) with lanes along the keys, for the NQ queries from
// pos's query index on; the row maxima to mx.
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, class F, class Tree, std::size_t Rs>
inline void decode_tree(const Tree& t, nd_pos<Rs> pos, std::size_t j0, F* st, F* mx) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    const std::size_t i0 = pos.idx[Rs - 2];
    for (std::size_t i = 0; i < NQ; ++i) {
        pos.idx[Rs - 2] = i0 + i;
        B mv(-std::numeric_limits<F>::infinity());
        F ms = -std::numeric_limits<F>::infinity();
        std::size_t j = 0;
        for (; j + W <= KB; j += W) {
            pos.idx[Rs - 1] = j0 + j;
            const B s = read<B>(t, pos);
            s.store_aligned(st + i * BN + j);
            mv = simd::running_max(mv, s);
        }
        for (; j < KB; ++j) {
            pos.idx[Rs - 1] = j0 + j;
            st[i * BN + j] = read<F>(t, pos);
            ms = simd::maximum(ms, st[i * BN + j]);
        }
        mx[i] = simd::maximum(ms, simd::reduce_max(mv));
    }
}

// The online softmax keeps its running maximum m8 in units of 8 log2(e), rounded: every term of a
// tile carries 2^(that rounding / 8), which cancels until it leaves F's range, past |m8| of
// 2^(digits + 9) (scores near 7e8 in float, 8e17 in double). A tile whose largest finite score
// lies beyond stops the program (softmax() handles such values; its product with 8 log2(e) may
// even overflow); a running maximum below -7e8 counts as -inf: its terms exp(s - max) are 0 next
// to any larger score, and a row of nothing else gives zeros, as a fully masked row
// (docs/numerics.md). A padding mask of -1e9 or -FLT_MAX therefore works as -inf does.
template <class F>
inline constexpr F shift_limit = [] {
    F x = 1;
    for (int e = 0; e < std::numeric_limits<F>::digits + 9; ++e) x *= 2;
    return x;
}();
// mx8: the tile's largest score that is not +inf, times log2e_x8.
template <class F>
inline void check_tile_max(F mx8) noexcept {
    if (mx8 > shift_limit<F>)
        check::stop("attention", "a score beyond what the online softmax's shift can hold (a score > 7e8 in float, 8e17 in double)");
}
// The new running maximum (units of 8 log2(e)), -inf below -shift_limit; of a value, and of each
// lane of a bundle (a NaN lane stays NaN, as simd::maximum gives it).
template <class F>
inline F running_max8(F m8, F mx8) noexcept {
    const F mn = std::max(m8, mx8);
    return mn < -shift_limit<F> ? -std::numeric_limits<F>::infinity() : mn;
}
template <class B>
inline B running_max8_lanes(const B& m8, const B& mx8) noexcept {
    using F = simd::value_t<B>;
    const B mn = simd::maximum(m8, mx8);
    return simd::select<B>(mn < B(-shift_limit<F>), B(-std::numeric_limits<F>::infinity()), mn);
}
// One step of the online softmax in vector lanes (the prefill nest's and the decode streams'):
// the running maximum m moves to cover mx8; `shift` becomes the shift the new probabilities take
// (0 while m is -inf); gives alpha, the factor that rescales what came before (0 while m was -inf).
template <class B>
__attribute__((always_inline)) inline B advance_max(B& m, const B& mx8, B& shift) noexcept {
    using F = simd::value_t<B>;
    const B mn = running_max8_lanes(m, mx8);
    shift = simd::select<B>(mn == B(-std::numeric_limits<F>::infinity()), B(F(0)), mn);
    const B alpha = simd::exp2_eighths(m - shift);
    m = mn;
    return alpha;
}

// Online softmax of each query's row: P in place of S, the new maxima and sums, and the factor
// alpha that rescales what the rows held before.
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t DV, class F>
inline void decode_softmax(F* st, const F* mx, const decode_state<F, NQ, DV>& s, F* alpha) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    constexpr F L8 = simd::log2e_x8<F>, ninf = -std::numeric_limits<F>::infinity();
    for (std::size_t i = 0; i < NQ; ++i) {
        if (mx[i] != -ninf) check_tile_max(mx[i] * L8);
        const F mn = running_max8(s.m[i], mx[i] * L8);
        const F shift = mn == ninf ? F(0) : mn;
        alpha[i] = s.m[i] == ninf ? F(0) : std::exp2((s.m[i] - shift) / 8);
        s.m[i] = mn;
        const B sh(shift);
        B sum(F(0));
        F* row = st + i * BN;
        std::size_t j = 0;
        for (; j + W <= KB; j += W) {
            const B p = simd::exp_shifted(B::load_aligned(row + j), sh);
            p.store_aligned(row + j);
            sum = sum + p;
        }
        F tail = 0;
        for (; j < KB; ++j) {
            row[j] = row[j] == ninf ? F(0) : std::exp2((row[j] * L8 - shift) / 8);
            tail += row[j];
        }
        s.l[i] = s.l[i] * alpha[i] + simd::reduce_add(sum) + tail;
    }
}

// Whether clang++ compiles this (it schedules some loops differently enough to change a choice).
#if defined(__clang__)
inline constexpr bool compiled_by_clang = true;
#else
inline constexpr bool compiled_by_clang = false;
#endif
// Queries per group whose rows of Width values (queries, or outputs) fill 16 vector registers,
// leaving room for 4 accumulators each.
template <class B, std::size_t Width>
inline constexpr std::size_t query_group = [] {
    const std::size_t v = std::max<std::size_t>(Width / simd::lanes<B>, 1);
    return std::max<std::size_t>(1, std::min(16 / v, 24 / (v + 4)));
}();
// How many such groups NQ queries make (a stage's passes over a tile).
template <class B, std::size_t Width, std::size_t NQ>
inline constexpr std::size_t query_groups = (NQ + query_group<B, Width> - 1) / query_group<B, Width>;
// Queries per pass of the scores stage: query_group, or four when the rows are too long for
// that many queries to stay in registers (key rows of more than 4 vectors, read in order: the
// queries are read from L1 against each key vector held in a register, so a tile's K rows come
// from memory once for four queries instead of once for two and again from L2). With the column
// parts below, on Zen 5 over a float cache of 8000 keys, d 128: 8 x 4 heads 0.88-0.93x the time
// with g++, 0.96-0.98x with clang++; 8 x 8 heads 0.75x with either; in L3 level. Keys read as
// even and odd elements (Split, a bf16 cache) take four a pass with g++ (Zen 5, 8 x 4 heads over
// 8000 keys, bench/decode: 979-999 -> 943-962 µs; a harness ran clang++'s 1.15-1.18x slower),
// and with clang++ on Intel cores only (split_fours).
// bf16 queries (pair products, Q) keep query_group.
// With 16 registers (AVX2), float and bf16 rows take up to four queries a pass as well, two keys
// at a time (simd::key_pair_rows), where one query a pass spilled its row and re-read K from L2
// (bf16 rows as even and odd elements, Zen 3, 8 x 4 heads over 8000 keys: g++ 3367 -> 2074 µs,
// clang++ 3294 -> 2218; over 1000 keys in L3, g++ 361 -> 240).
// SplitFours: whether keys read as even and odd elements take four queries a pass (split_fours).
template <class B, std::size_t Width, std::size_t NQ, bool Split, class Q, bool SplitFours = !compiled_by_clang>
inline constexpr bool four_queries_a_pass = simd::vector_registers<> >= 32
                                                ? (!Split || SplitFours) && !std::is_same_v<std::remove_cv_t<Q>, bf16>
                                                : std::is_same_v<std::remove_cv_t<Q>, float>;
template <class B, std::size_t Width, std::size_t NQ, bool Split, class Q, bool SplitFours = !compiled_by_clang>
inline constexpr std::size_t score_group = four_queries_a_pass<B, Width, NQ, Split, Q, SplitFours> && Width / simd::lanes<B> > 4 &&
                                                   NQ > query_group<B, Width>
                                               ? std::min<std::size_t>(NQ, 4)
                                               : query_group<B, Width>;
template <class B, std::size_t Width, std::size_t NQ, bool Split, class Q, bool SplitFours = !compiled_by_clang>
inline constexpr std::size_t score_groups =
    (NQ + score_group<B, Width, NQ, Split, Q, SplitFours> - 1) / score_group<B, Width, NQ, Split, Q, SplitFours>;
// Whether keys read as even and odd elements take four queries a pass: always in g++ builds; in
// clang++ builds on Intel cores (a run-time choice; an Intel Xeon VM, 8 x 4 heads over a bf16
// cache of 8000 keys, decode_bf16_paired, 4 rounds: bf16 / float 0.59-0.60 -> 0.53).
inline bool split_fours() noexcept { return !compiled_by_clang || intel_core(); }
// Column parts of the 32-register P V stage's passes: every query at once over a part of the
// output columns (two vectors or more) whose sums fill 16 registers, when that takes no more
// passes than query groups. Each V line then comes from memory once for all queries (Zen 5, 8 x 4
// heads over a bf16 cache of 8000 keys: 0.86-0.95x the time with either compiler); with three
// queries (12 sums) it was slower than groups of 2 and 1. 0: groups. (16 registers take
// decode_pv_streams.)
template <class B, std::size_t DV, std::size_t NQ>
inline constexpr std::size_t pv_column_parts = [] {
    constexpr std::size_t NV = DV / simd::lanes<B>;
    if (NV == 0 || NQ <= query_group<B, DV> || NQ * NV % 16 != 0) return std::size_t{0};
    const std::size_t parts = std::max<std::size_t>(NQ * NV / 16, 1);
    return NV % parts == 0 && parts <= NV / 2 && parts <= query_groups<B, DV, NQ> ? parts : std::size_t{0};
}();
// The P V stage's passes over a tile (each requests its share of the next tile's V rows).
template <class B, std::size_t DV, std::size_t NQ>
inline constexpr std::size_t pv_passes = pv_column_parts<B, DV, NQ> > 0 ? pv_column_parts<B, DV, NQ> : query_groups<B, DV, NQ>;

// Rows a stage requests while it computes (software prefetch, a line at a time), so that a cache
// streaming from DRAM keeps the memory busy through every stage; no_rows_ahead when the cache fits
// in L3 (the stage then has no branch for it: one cost 7 % in L3). Into L1 (which also fills L2)
// on AMD cores: Zen 5, float 8 x 4 heads over 8000 keys, 0.78-0.91x the time of requests into L2
// with either compiler (docs/performance.md, 2026-11-28, noon). Into L2 on Intel cores, where the
// L1's few fill buffers held the requests back (rows_into_l2).
template <class T, std::size_t Parts = 1, bool IntoL2 = false>
struct rows_ahead {
    const T* p;
    std::size_t ld;
    // Call f requests part f % Parts of row f / Parts (Parts calls cover a row).
    template <std::size_t Cols>
    __attribute__((always_inline)) void request(std::size_t f) const noexcept {
        constexpr std::size_t lines = (Cols * sizeof(T) + 63) / 64, per = (lines + Parts - 1) / Parts;
        const char* row = reinterpret_cast<const char*>(p + f / Parts * ld);
        const std::size_t l0 = f % Parts * per;
        for (std::size_t l = 0; l < per; ++l)
            if (lines % Parts == 0 || l0 + l < lines) __builtin_prefetch(row + (l0 + l) * 64, 0, IntoL2 ? 2 : 3);
    }
};
struct no_rows_ahead {
    template <std::size_t Cols>
    void request(std::size_t) const noexcept {}
};
// A stage requesting nothing whose rows are read as streams the hardware prefetchers follow
// (decode_scores' quarters in the runs: quarter_runs, from DRAM or a bf16 cache in L3).
struct unrequested_streams {
    template <std::size_t Cols>
    void request(std::size_t) const noexcept {}
};
// Whether the tile stages' requests go to L2 (on Intel cores: an Intel Xeon VM, float 8 x 4 heads
// over 8000 keys, bench/decode, 3 rounds alternating binaries: 1.31-1.35x the read -> 1.22-1.26x,
// and with the scores' requests 32 rows ahead, scores_lead, 1.17-1.21x; docs/performance.md).
inline bool rows_into_l2() noexcept { return intel_core(); }
// Rows past a tile's first that its scores stage requests from: the next tile's first (KB) while
// its rows go to L1, or when it reads each row more than once (groups of queries, AMX tiles);
// else 32 (16 KiB of float rows), a steady distance ahead of the rows it reads in order.
template <std::size_t KB, std::size_t Groups, bool Amx>
inline std::size_t scores_lead() noexcept {
    return Groups == 1 && !Amx && simd::vector_registers<> >= 32 && rows_into_l2() ? std::min<std::size_t>(32, KB) : KB;
}
// stage(rows_ahead of x's rows r0 ..) when `want` and x is memory read in place, else
// stage(no_rows_ahead); with May false, only the latter is compiled.
template <bool Transposed, class F, bool May, std::size_t Parts = 1, class X, std::size_t R, class Stage>
__attribute__((always_inline)) inline void with_rows_ahead(const X& x, nd_pos<R> p, std::size_t r0, bool want, Stage&& stage) {
    if constexpr (May && streamed<X, F, Transposed ? 1 : 0>) {
        if (want) {
            const auto [ptr, ld] = rows_in_place<Transposed>(x, p, r0);
            if (rows_into_l2()) return stage(rows_ahead<typename X::value_type, Parts, true>{ptr, ld});
            return stage(rows_ahead<typename X::value_type, Parts>{ptr, ld});
        }
    }
    stage(no_rows_ahead{});
}

// Keys ahead of the one being read whose rows the 16-register scores ask for when the cache is in
// L3 (and so requests nothing from DRAM): the key pairs their whole rows (8 x 4 heads over 1000
// keys, Zen 3: 430 -> 237 µs with the two stages' 16-register shapes; docs/performance.md).
inline constexpr std::size_t rows_in_l3_ahead = 16;

// Whether the scores stage unrolls a block's rows (sums in registers) also while it requests
// rows ahead from DRAM: on Intel cores, where it was faster (an Intel Xeon VM, 8 x 4 heads over a
// float cache of 8000 keys, bench/decode: g++ 2852-2863 -> 2719-2733 µs, clang++ 2750-2777 ->
// 2684-2739); and on Zen 5 in clang++ builds (decode_paired<8, 4> from DRAM, six rounds
// alternating binaries: 1.85-2.05x the read -> 1.59-1.80x; g++ level, 1.57-1.92 against
// 1.57-1.73, so g++ keeps the loop, which had unrolled 1.2x slower on 2026-11-28); other cores
// unmeasured. A 16-bit cache unrolls on Zen 5 with g++ too (8 x 4 heads over a bf16 cache of 8000
// keys, decode_bf16_paired, three rounds alternating binaries: 1606-1796 -> 1393-1440 µs, 2.18-2.36x
// -> 1.95-2.04x its read, while the float cache went 1.71-1.76x -> 1.89-1.93x its read; both
// steps in one process: 0.84-0.86x the time; docs/performance.md, 2026-12-07 evening).
template <class T>
inline bool scores_unrolled() noexcept {
    return intel_core() || (amd_zen5_or_later() && (compiled_by_clang || sizeof(T) == 2));
}

// The width of a query row as the scores read it (bf16 queries: pairs).
template <std::size_t D, class Q>
inline constexpr std::size_t query_width = std::is_same_v<Q, bf16> ? D / 2 : D;

// f.template operator()<G>() for each group G of a stage's query groups, in order.
template <std::size_t Groups, class Fn>
__attribute__((always_inline)) inline void each_group(Fn&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (f.template operator()<I>(), ...); }(std::make_index_sequence<Groups>{});
}

// decode_scores for the first `keys` keys (whole blocks) of a tile the masks cut at `live` (once a
// step, out of line: inlined beside the whole-tile loop it slowed that loop with clang++): the key
// rows from `live` on are never read, the block holding `live` is scored from a copy of its live
// rows (cut_block), the blocks after it score 0 (the tree masks them).
template <class B, std::size_t NQ, std::size_t BN, std::size_t D, bool Split, class F, class Q, class T>
__attribute__((noinline)) void decode_scores_cut(const Q* q, const T* k, std::size_t ldk, F* st, std::size_t live, std::size_t keys) noexcept {
    constexpr std::size_t W = simd::lanes<B>, QG = score_group<B, query_width<D, Q>, NQ, Split, Q>;
    constexpr std::size_t groups = score_groups<B, query_width<D, Q>, NQ, Split, Q>;
    alignas(64) std::remove_cv_t<T> pad[W * D];
    for (std::size_t jb = 0; jb < keys; jb += W) {
        B sc[NQ];
        if (jb >= live) {
            for (std::size_t i = 0; i < NQ; ++i) B(F(0)).store_aligned(st + i * BN + jb);
            continue;
        }
        const bool cut = jb + W > live;
        const T* rows = cut ? cut_block<W, D>(k + jb * ldk, ldk, live - jb, pad) : k + jb * ldk;
        const std::size_t ld = cut ? D : ldk;
        each_group<groups>([&]<std::size_t G>() __attribute__((always_inline)) {
            constexpr std::size_t n = std::min(QG, NQ - G * QG);
            simd::dot_block<n, D, Split, true, rows_in_l3_ahead>(q + G * QG * D, rows, ld, *reinterpret_cast<B(*)[n]>(sc + G * QG));
        });
        for (std::size_t i = 0; i < NQ; ++i) sc[i].store_aligned(st + i * BN + jb);
    }
}

// Scores of keys [0, 4 H) (H whole blocks of W keys) by simd::dot_key_quarters: four keys at a
// time, one from each quarter.
template <class B, std::size_t NQ, std::size_t BN, std::size_t D, bool Split, class F, class Q, class T>
__attribute__((always_inline)) inline void score_quarters(const Q* q, const T* k, std::size_t ldk, F* st, std::size_t H) noexcept {
    for (std::size_t jb = 0; jb < H; jb += simd::lanes<B>) {
        B s4[4][NQ];
        simd::dot_key_quarters<NQ, D, Split>(q, k + jb * ldk, ldk, H, s4);
        for (std::size_t t = 0; t < 4; ++t)
            for (std::size_t i = 0; i < NQ; ++i) s4[t][i].store_aligned(st + i * BN + jb + t * H);
    }
}
// A tile of KB keys the masks cut at `live`, in the quarters' stage: its whole groups of 4 W live
// keys by quarters too, the rest block by block (one query over a bf16 cache of 500 keys in L3,
// whose second tile holds 244: the cut tile had cost 1.4x a whole one's time a key). Out of line,
// as decode_scores_cut.
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t D, bool Split, class F, class Q, class T>
__attribute__((noinline)) void decode_quarters_cut(const Q* q, const T* k, std::size_t ldk, F* st, std::size_t live) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    const std::size_t H = live / (4 * W) * W;
    score_quarters<B, NQ, BN, D, Split>(q, k, ldk, st, H);
    decode_scores_cut<B, NQ, BN, D, Split>(q, k + 4 * H * ldk, ldk, st + 4 * H, live - 4 * H, KB - 4 * H);
}

// S = Q K_tile^T, W keys at a time, each key row read whole and in order for each group of
// queries (score_group: held in registers, or four read from L1 against a key vector held in a
// register; the next group finds the rows in L1/L2). Zen 5 streamed K from DRAM at half the speed
// when rows were interleaved or each K vector's load was folded into four FMAs. The groups
// request the next tile's K rows, each its share (k_next: rows_ahead with a part per group).
// Split: bf16 key rows read as their even and odd elements, q split the same way
// (simd::split_keys; 8 x 4 heads over a bf16 cache of 8000 keys on Zen 5: 0.91-1.05 -> 0.82-0.85
// ms with either compiler; the one- and two-query stream keeps widening in order, clang++ ran it
// 1.6x slower split). Q of bf16 (decode_pairs): pair dot products, half the registers a query.
// A tile the masks cut at `live` goes to decode_scores_cut (or decode_quarters_cut). Unroll: a
// block's rows unrolled with their sums in registers (simd::dot_block) also while requesting rows
// ahead (scores_unrolled).
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t D, std::size_t DV, bool Split, bool Unroll,
          bool SplitFours = !compiled_by_clang, class F, class Q, class T, class Ahead>
inline void decode_scores(const Q* q, const T* k, std::size_t ldk, F* st, Ahead k_next, std::size_t live) noexcept {
    constexpr std::size_t W = simd::lanes<B>, QG = score_group<B, query_width<D, Q>, NQ, Split, Q, SplitFours>;
    constexpr std::size_t groups = score_groups<B, query_width<D, Q>, NQ, Split, Q, SplitFours>;
    constexpr bool cached = std::is_same_v<Ahead, no_rows_ahead>;  // (no requests: the cache is in L3, or the last tile)
    constexpr std::size_t last_rows = NQ - (groups - 1) * QG;
    if constexpr (!cached && KB % (4 * W) == 0 && simd::key_quarter_rows<B, Q, T, NQ, D>) {
        // From DRAM (or unrequested_streams), one or two queries with 16 registers: four keys at a
        // time, one from each quarter of the tile (score_quarters; a cut tile decode_quarters_cut),
        // four ascending streams and no requests (one query, Zen 3: the stage alone 3.12 -> 2.20 ms
        // over 32 x 4000 keys; with requests of the next tile the whole step 1.09x slower). Split:
        // bf16 rows as even and odd elements (two queries over a bf16 cache, 8 x 2 heads over 8000
        // keys: level with the key pairs from either half, 16 rounds of a noisy hour).
        if (live < KB) return decode_quarters_cut<B, NQ, KB, BN, D, Split>(q, k, ldk, st, live);
        return score_quarters<B, NQ, BN, D, Split>(q, k, ldk, st, KB / 4);
    }
    if (live < KB) return decode_scores_cut<B, NQ, BN, D, Split>(q, k, ldk, st, live, KB);
    if constexpr (!cached && KB % (2 * W) == 0 && simd::key_pair_rows<B, Q, T, QG, D> && simd::key_pair_rows<B, Q, T, last_rows, D>) {
        // From DRAM with 16 registers: each pair of keys one from either half of the tile
        // (simd::dot_key_halves), two ascending streams the prefetchers follow
        for (std::size_t jb = 0; jb < KB / 2; jb += W) {
            B sa[NQ], sb[NQ];
            each_group<groups>([&]<std::size_t G>() __attribute__((always_inline)) {
                constexpr std::size_t rows = std::min(QG, NQ - G * QG);
                auto request = [&](std::size_t r) __attribute__((always_inline)) {
                    k_next.template request<D>(G * KB + jb + r % W + r / W * (KB / 2));
                };
                simd::dot_key_halves<rows, D>(q + G * QG * D, k + jb * ldk, k + (jb + KB / 2) * ldk, ldk,
                                              *reinterpret_cast<B(*)[rows]>(sa + G * QG), *reinterpret_cast<B(*)[rows]>(sb + G * QG), request);
            });
            for (std::size_t i = 0; i < NQ; ++i) sa[i].store_aligned(st + i * BN + jb), sb[i].store_aligned(st + i * BN + jb + KB / 2);
        }
        return;
    }
    for (std::size_t jb = 0; jb < KB; jb += W) {  // (a constant trip count: a bound read at run time was slower from DRAM)
        B sc[NQ];
        each_group<groups>([&]<std::size_t G>() __attribute__((always_inline)) {
            constexpr std::size_t rows = std::min(QG, NQ - G * QG);
            auto request = [&](std::size_t r) __attribute__((always_inline)) { k_next.template request<D>(G * KB + jb + r); };
            simd::dot_block<rows, D, Split, cached || Unroll, cached ? rows_in_l3_ahead : 0>(q + G * QG * D, k + jb * ldk, ldk,
                                                                                              *reinterpret_cast<B(*)[rows]>(sc + G * QG), request);
        });
        for (std::size_t i = 0; i < NQ; ++i) sc[i].store_aligned(st + i * BN + jb);
    }
}

// O = alpha O + P V_tile with 16 registers: queries in groups of up to four (pv_group_queries),
// each group over keys j, H + j and 2H + j at once (H a third of the live keys: pv_streams), whole
// V rows, three ascending streams the hardware prefetchers follow; the group's outputs stay in
// L1, each vector loaded, updated by the three keys and stored. It replaced column parts with
// their sums in registers, which read a line a row and left V to software requests (Zen 3, 8 x 4
// heads over 8000 keys: 0.73x the time with g++, 0.76x with clang++; over 1000 in L3 0.89x and
// 0.85x; docs/performance.md). Only the first `live` keys take part (a tile the masks cut: the rows past
// them may hold anything, and 0 x NaN is NaN).
inline constexpr std::size_t pv_streams = 3;
inline constexpr std::size_t pv_group_queries = 4;
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t DV, class F, class T>
inline void decode_pv_streams(const F* pt, const T* v, std::size_t ldv, const F* alpha, F* o, std::size_t live) noexcept {
    constexpr std::size_t W = simd::lanes<B>, NV = DV / W, S = pv_streams;
    // Queries i0 .. i0 + R; Whole: the tile's KB keys as a constant trip count (a bound read at
    // run time was 4-5 % slower from DRAM in the stage this replaced)
    auto group = [&]<std::size_t R, bool Whole>(std::size_t i0) {
        F* const out = o + i0 * DV;  // (locals, not the captures: g++ reloaded them after every store)
        const F* const pr = pt + i0 * BN;
        const std::size_t n = Whole ? KB : live, ld = ldv, H = n / S;
        for (std::size_t i = 0; i < R; ++i)
            for (std::size_t c = 0; c < NV; ++c) (B::load_unaligned(out + i * DV + c * W) * B(alpha[i0 + i])).store_unaligned(out + i * DV + c * W);
        // Keys j, j + step, .. (K of them) into the outputs
        auto keys = [&]<std::size_t K>(std::size_t j, std::size_t step) __attribute__((always_inline)) {
            B p[K][R];
            for (std::size_t k = 0; k < K; ++k)
                for (std::size_t i = 0; i < R; ++i) p[k][i] = B(pr[i * BN + j + k * step]);
            for (std::size_t c = 0; c < NV; ++c) {
                B x[K];
                for (std::size_t k = 0; k < K; ++k) x[k] = simd::load<B>(v + (j + k * step) * ld + c * W);
                for (std::size_t i = 0; i < R; ++i) {
                    F* const oi = out + i * DV + c * W;
                    B t = simd::fma(p[0][i], x[0], B::load_unaligned(oi));
                    for (std::size_t k = 1; k < K; ++k) t = simd::fma(p[k][i], x[k], t);
                    t.store_unaligned(oi);
                }
            }
        };
        for (std::size_t j = 0; j < H; ++j) keys.template operator()<S>(j, H);
        for (std::size_t j = S * H; j < n; ++j) keys.template operator()<1>(j, 0);
    };
    constexpr std::size_t groups = (NQ + pv_group_queries - 1) / pv_group_queries, R0 = NQ / groups, extra = NQ % groups;
    auto all = [&]<bool Whole>() {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (group.template operator()<R0 + (I < extra), Whole>(I * R0 + std::min(I, extra)), ...);
        }(std::make_index_sequence<groups>{});
    };
    if (live == KB) all.template operator()<true>();
    else all.template operator()<false>();
}

// O = alpha O + P V_tile with 32 registers for groups of queries whose outputs fill 16 registers,
// each V row read whole and in order (a memory stream the prefetcher follows; the next group
// finds it in L2), or for all queries over column parts (pv_column_parts: each pass reads its part
// of every row, in order). The passes request the next tile's V rows, each its share. Only the
// first `live` keys take part (as in decode_pv_streams).
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t DV, std::size_t D, class F, class T, class Ahead>
inline void decode_pv_rows(const F* pt, const T* v, std::size_t ldv, const F* alpha, F* o, Ahead v_next, std::size_t live) noexcept {
    constexpr std::size_t W = simd::lanes<B>, NV = DV / W, QG = query_group<B, DV>;
    // (Whole: the tile's KB keys as a constant trip count, which a bound read at run time made
    // 4-5 % slower from DRAM)
    // Queries i0 .. i0 + Rows over output columns c0 .. c0 + Cols vectors; `share`: the pass's
    // number among the tile's passes (its share of the next tile's V rows to request).
    auto pass = [&]<std::size_t Rows, std::size_t Cols, bool Whole>(std::size_t i0, std::size_t c0, std::size_t share) {
        // (locals, not the captures: g++ reloaded them after every key). When the cache is in L3
        // (no requests), V held in registers for the rows' FMAs, not loaded again for each: 8 x 4
        // heads over 1000 keys, g++ 131.6 -> 119 µs; from DRAM untested beyond a level probe.
        const std::size_t n = Whole ? KB : live, ld = ldv;
        const T* vr = v + c0;
        const F* pr = pt + i0 * BN;
        const Ahead ahead = v_next;
        constexpr bool hold = Rows > 1 && std::is_same_v<Ahead, no_rows_ahead>;
        B acc[Rows][Cols];
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < Cols; ++c) acc[r][c] = B::load_unaligned(o + (i0 + r) * DV + c0 + c * W) * B(alpha[i0 + r]);
        for (std::size_t j = 0; j < n; ++j) {
            B vv[Cols];
            for (std::size_t c = 0; c < Cols; ++c) {
                vv[c] = simd::load<B>(vr + j * ld + c * W);
                if constexpr (hold) vv[c] = simd::held(vv[c]);
            }
            for (std::size_t r = 0; r < Rows; ++r) {
                const B pj(pr[r * BN + j]);
                for (std::size_t c = 0; c < Cols; ++c) acc[r][c] = simd::fma(pj, vv[c], acc[r][c]);
            }
            simd::keep_memory_order();  // V row by row (clang interleaved them)
            ahead.template request<DV>(share * KB + j);
        }
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < Cols; ++c) acc[r][c].store_unaligned(o + (i0 + r) * DV + c0 + c * W);
    };
    auto groups = [&]<bool Whole>() {
        if constexpr (constexpr std::size_t P = pv_column_parts<B, DV, NQ>; P > 0) {
            for (std::size_t p = 0; p < P; ++p) pass.template operator()<NQ, NV / P, Whole>(0, p * (NV / P) * W, p);
        } else {
            std::size_t i0 = 0;
            for (; i0 + QG <= NQ; i0 += QG) pass.template operator()<QG, NV, Whole>(i0, 0, i0 / QG);
            if constexpr (NQ % QG != 0) pass.template operator()<NQ % QG, NV, Whole>(i0, 0, i0 / QG);
        }
    };
    if (live == KB) groups.template operator()<true>();
    else groups.template operator()<false>();
}

// P (NQ rows of KB, BN apart) rounded to bf16 for the pair products. (A function template, so
// that a double nest, which never calls it, does not check it either: clang++ did.)
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, class F>
inline void round_p_pairs(const F* st, bf16* pp) noexcept {
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t j = 0; j < KB; j += simd::lanes<B>) simd::round_for_pairs(st + i * BN + j, pp + i * BN + j);
}

// O = alpha O + P V_tile as pair dot products along the keys (decode_pairs): P rounded to bf16
// (pp, rows BN apart), two V rows interleaved in registers (simd::unpack_rows) against each
// query's two probabilities; the sums run in the unpacked lane order through the tile
// (simd::to_unpacked, store_unpacked). As decode_pv_rows, the groups request the next tile's V
// rows, each its share, and only the first `live` keys take part.
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t DV, class F, class Ahead>
inline void decode_pv_pairs(const bf16* pp, const bf16* v, std::size_t ldv, const F* alpha, F* o, Ahead v_next,
                            std::size_t live) noexcept {
#if defined(__AVX512F__) && defined(__AVX512BF16__)
    constexpr std::size_t W = simd::lanes<B>, NV = DV / W, QG = query_group<B, DV>;
    static_assert(W == 16 && DV % 32 == 0 && KB % 2 == 0);
    auto group = [&]<std::size_t Rows, bool Whole>(std::size_t i0) {  // (Whole: as in decode_pv_rows)
        const std::size_t n = Whole ? KB : live;
        B acc[Rows][NV];
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NV; c += 2) {
                const B a(alpha[i0 + r]), n0 = B::load_unaligned(o + (i0 + r) * DV + c * W) * a;
                simd::to_unpacked(n0, B::load_unaligned(o + (i0 + r) * DV + (c + 1) * W) * a, acc[r][c].data, acc[r][c + 1].data);
            }
        std::size_t j = 0;
        for (; j + 2 <= n; j += 2) {
            simd::bf16_pairs vp[NV];
            for (std::size_t c = 0; c < NV; c += 2) simd::unpack_rows(v + j * ldv + c * W, v + (j + 1) * ldv + c * W, vp[c], vp[c + 1]);
            for (std::size_t r = 0; r < Rows; ++r) {
                const simd::bf16_pairs pj = simd::broadcast_pair(pp + (i0 + r) * BN + j);
                for (std::size_t c = 0; c < NV; ++c) acc[r][c] = simd::dot_pairs(acc[r][c], pj, vp[c]);
            }
            simd::keep_memory_order();  // V two rows at a time (clang interleaved them)
            v_next.template request<DV>(i0 / QG * KB + j);
            v_next.template request<DV>(i0 / QG * KB + j + 1);
        }
        if (!Whole && j < n) {  // an odd last live key, paired with zeros
            simd::bf16_pairs vp[NV];
            for (std::size_t c = 0; c < NV; c += 2) simd::unpack_rows(v + j * ldv + c * W, nullptr, 2 * W, vp[c], vp[c + 1]);
            for (std::size_t r = 0; r < Rows; ++r) {
                const simd::bf16_pairs pj = simd::broadcast_pair(pp + (i0 + r) * BN + j);
                for (std::size_t c = 0; c < NV; ++c) acc[r][c] = simd::dot_pairs(acc[r][c], pj, vp[c]);
            }
        }
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NV; c += 2) simd::store_unpacked(o + (i0 + r) * DV + c * W, acc[r][c], acc[r][c + 1]);
    };
    // (the same as decode_pv_rows': a shared helper measured 0.8 % slower in the float path, g++
    // inlining it differently, as on 2026-11-26 afternoon)
    auto groups = [&]<bool Whole>() {
        std::size_t i0 = 0;
        for (; i0 + QG <= NQ; i0 += QG) group.template operator()<QG, Whole>(i0);
        if constexpr (NQ % QG != 0) group.template operator()<NQ % QG, Whole>(i0);
    };
    if (live == KB) groups.template operator()<true>();
    else groups.template operator()<false>();
#else
    static_assert(sizeof(B) == 0, "attend internal: decode_pv_pairs needs AVX-512 BF16");
    (void)pp, (void)v, (void)ldv, (void)alpha, (void)o, (void)v_next, (void)live;
#endif
}

// O = alpha O + P V_tile over the tile's first `live` keys only, for a tile the masks cut where
// decode_pv would run (value rows or tiles not whole vectors): the rows past them take no part
// whatever they hold (0 x NaN is NaN). Once per step; four sums a vector, so that the FMAs'
// latency does not bound it.
template <class B, std::size_t NQ, std::size_t BN, std::size_t DV, class F>
inline void decode_pv_live(const F* pt, const F* v, std::size_t ldv, const F* alpha, F* o, std::size_t live) noexcept {
    constexpr std::size_t W = simd::lanes<B>, DVV = DV / W * W;
    for (std::size_t i = 0; i < NQ; ++i) {
        const F* p = pt + i * BN;
        for (std::size_t c = 0; c < DVV; c += W) {
            B acc[4] = {B::load_unaligned(o + i * DV + c) * B(alpha[i]), B(F(0)), B(F(0)), B(F(0))};
            std::size_t j = 0;
            for (; j + 4 <= live; j += 4)
                for (std::size_t u = 0; u < 4; ++u) acc[u] = simd::fma(B(p[j + u]), B::load_unaligned(v + (j + u) * ldv + c), acc[u]);
            for (; j < live; ++j) acc[0] = simd::fma(B(p[j]), B::load_unaligned(v + j * ldv + c), acc[0]);
            ((acc[0] + acc[1]) + (acc[2] + acc[3])).store_unaligned(o + i * DV + c);
        }
        for (std::size_t c = DVV; c < DV; ++c) {
            F acc = o[i * DV + c] * alpha[i];
            for (std::size_t j = 0; j < live; ++j) acc += p[j] * v[j * ldv + c];
            o[i * DV + c] = acc;
        }
    }
}

// O = alpha O + P V_tile: MQ queries x NVd vectors of output columns per register tile, over KS
// keys at a time, so that a few whole V rows are read at once (a whole tile column block by
// column block left the loads waiting on memory: 2.3x slower), the KS keys from KS streams
// across the tile; the columns past the last whole vector in scalars.
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t DV, std::size_t MQ, std::size_t NVd, class F>
inline void decode_pv(const F* pt, const F* v, std::size_t ldv, const F* alpha, F* o) noexcept {
    constexpr std::size_t W = simd::lanes<B>, DVV = DV / W * W, KS = 8;
    auto block = [&]<std::size_t Rows, std::size_t NV, std::size_t Keys>(std::size_t i0, std::size_t c0, std::size_t j0, std::size_t S) {
        B acc[Rows][NV];
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NV; ++c) {
                const B prev = B::load_unaligned(o + (i0 + r) * DV + c0 + c * W);
                acc[r][c] = j0 == 0 ? prev * B(alpha[i0 + r]) : prev;
            }
        micro_kernel<B, Rows, NV, Keys>(pt + i0 * BN + j0, BN, S, v + j0 * ldv + c0, S * ldv, Keys, acc);
        for (std::size_t r = 0; r < Rows; ++r)
            for (std::size_t c = 0; c < NV; ++c) acc[r][c].store_unaligned(o + (i0 + r) * DV + c0 + c * W);
    };
    auto keys = [&]<std::size_t Keys>(std::size_t j0, std::size_t S) {
        auto columns = [&]<std::size_t NV>(std::size_t c0) {
            std::size_t i0 = 0;
            for (; i0 + MQ <= NQ; i0 += MQ) block.template operator()<MQ, NV, Keys>(i0, c0, j0, S);
            if constexpr (NQ % MQ != 0) block.template operator()<NQ % MQ, NV, Keys>(i0, c0, j0, S);
        };
        std::size_t c0 = 0;
        for (; c0 + NVd * W <= DVV; c0 += NVd * W) columns.template operator()<NVd>(c0);
        for (; c0 < DVV; c0 += W) columns.template operator()<1>(c0);
    };
    if constexpr (KB % KS == 0 && KB >= 8 * KS) {
        // Each group of KS keys from KS places KB / KS apart: as many streams of V rows from
        // memory (one stream read at half the bandwidth of several; 8 x 4 heads at len 8000:
        // 2.45 -> 2.2 ms on Zen 5, asking for rows ahead no longer paid).
        for (std::size_t j0 = 0; j0 < KB / KS; ++j0) keys.template operator()<KS>(j0, KB / KS);
    } else {
        std::size_t j0 = 0;
        for (; j0 + KS <= KB; j0 += KS) keys.template operator()<KS>(j0, 1);
        if constexpr (KB % KS != 0) keys.template operator()<KB % KS>(j0, 1);
    }
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t c = DVV; c < DV; ++c) {
            F acc = o[i * DV + c] * alpha[i];
            for (std::size_t j = 0; j < KB; ++j) acc += pt[i * BN + j] * v[j * ldv + c];
            o[i * DV + c] = acc;
        }
}

// All stages over W keys at a time for NQ queries whose outputs stay in registers: scores of
// the block, the score tree on them, the online softmax, and P V into the outputs; kb keys (a
// multiple of W up to BN: KB, or a run of a tile's live eighths), of which the first `live` take
// part in P V (the rest are masked; their V rows may hold anything). Where the
// tile-at-a-time stages read K and then V in 128 KiB runs (one memory stream at a time), this
// reads both, W rows each in turn. (From DRAM one query goes key by key: decode_per_key.)
// Ahead > 0: after each V row, the K and V rows Ahead keys on are requested (never past row
// `rows - 1` of k and v, the cache's last).
template <class B, std::size_t NQ, std::size_t KB, std::size_t BN, std::size_t D, std::size_t DV, std::size_t Ahead, class F, class TK,
          class TV, class Tree, std::size_t Rs>
__attribute__((always_inline)) inline void decode_stream(const F* q, const TK* k, std::size_t ldk, const TV* v, std::size_t ldv,
                                                         const Tree& t, nd_pos<Rs> pos, std::size_t j0, F* st,
                                                         const decode_state<F, NQ, DV>& s, std::size_t kb, std::size_t live,
                                                         std::size_t rows = 0) noexcept {
    constexpr std::size_t W = simd::lanes<B>, NV = DV / W;
    constexpr F L8 = simd::log2e_x8<F>, ninf = -std::numeric_limits<F>::infinity();
    static_assert(KB % W == 0);
    // Blocks from `live` on take no part and are not visited; the rows of the block holding
    // `live` past it are never read (cut_block)
    const std::size_t kb_live = std::min(kb, (live + W - 1) / W * W);
    if (kb_live == 0) return;
    alignas(64) std::remove_cv_t<TK> pad[W * D];
    B next[NQ];
    auto score = [&](std::size_t jb) __attribute__((always_inline)) {
        if (jb + W <= live) simd::dot_block<NQ, D>(q, k + jb * ldk, ldk, next);
        else simd::dot_block<NQ, D>(q, cut_block<W, D>(k + jb * ldk, ldk, live - jb, pad), D, next);
    };
    B o[NQ][NV], m[NQ], l[NQ];  // m and l in every lane
    for (std::size_t i = 0; i < NQ; ++i) {
        m[i] = B(s.m[i]), l[i] = B(s.l[i]);
        for (std::size_t c = 0; c < NV; ++c) o[i][c] = B::load_unaligned(s.o + i * DV + c * W);
    }
    const std::size_t i0 = pos.idx[Rs - 2];  // the first query's index
    score(0);
    for (std::size_t jb = 0; jb < kb_live; jb += W) {
        B sc[NQ], p[NQ];
        for (std::size_t i = 0; i < NQ; ++i) sc[i] = next[i];
        for (std::size_t i = 0; i < NQ; ++i) {
            sc[i].store_aligned(st + i * BN + jb);  // one store, read back whole by the tree
            pos.idx[Rs - 2] = i0 + i;
            pos.idx[Rs - 1] = j0 + jb;
            const B sv = read<B>(t, pos);
            // The softmax in vector registers only: its chain is short, so that the next block's
            // loads issue while it runs. A NaN score does not move the maximum.
            const B mx = simd::max_across(simd::running_max(B(ninf), sv));  // (every lane holds it)
            if (mx.get(0) != -ninf) check_tile_max(mx.get(0) * L8);
            B shift;
            const B alpha = advance_max(m[i], mx * B(L8), shift);
            p[i] = simd::exp_shifted(sv, shift);
            l[i] = simd::fma(l[i], alpha, simd::sum_across(p[i]));
            for (std::size_t c = 0; c < NV; ++c) o[i][c] = o[i][c] * alpha;
        }
        const bool more = jb + W < kb_live;
        if (jb + W > live) {  // keys past `live` take no part (a tile the masks cut): the last block
            alignas(64) F pa[NQ][W];
            for (std::size_t i = 0; i < NQ; ++i) p[i].store_aligned(pa[i]);
            for (std::size_t j = jb; j < live; ++j)
                for (std::size_t i = 0; i < NQ; ++i)
                    for (std::size_t c = 0; c < NV; ++c) o[i][c] = simd::fma(B(pa[i][j - jb]), simd::load<B>(v + j * ldv + c * W), o[i][c]);
            continue;
        }
        // P V for key jb + j, the probabilities broadcast from registers
        auto pv_row = [&](std::size_t j) __attribute__((always_inline)) {
            B vv[NV];
            for (std::size_t c = 0; c < NV; ++c) vv[c] = simd::load<B>(v + (jb + j) * ldv + c * W);
            for (std::size_t i = 0; i < NQ; ++i) {
                const B pj = simd::lane_broadcast(p[i], j);
                for (std::size_t c = 0; c < NV; ++c) o[i][c] = simd::fma(pj, vv[c], o[i][c]);
            }
            simd::keep_memory_order();  // V row by row (clang interleaved them)
            if constexpr (Ahead > 0) {
                const std::size_t r = std::min(jb + j + Ahead, rows - 1);
                rows_ahead<TK>{k, ldk}.template request<D>(r), rows_ahead<TV>{v, ldv}.template request<DV>(r);
            }
        };
        for (std::size_t j = 0; j < W; ++j) pv_row(j);
        if (more) score(jb + W);
    }
    for (std::size_t i = 0; i < NQ; ++i) {
        s.m[i] = m[i].get(0), s.l[i] = l[i].get(0);
        for (std::size_t c = 0; c < NV; ++c) o[i][c].store_unaligned(s.o + i * DV + c * W);
    }
}

// A key row's dot product with one query held in registers (QV vectors; the row widened as read),
// in two chains of FMAs, summed across lanes.
template <class B, std::size_t QV, class T>
__attribute__((always_inline)) inline simd::value_t<B> row_dot(const B (&qr)[QV], const T* row) noexcept {
    constexpr std::size_t W = simd::lanes<B>;
    B a0(simd::value_t<B>(0)), a1(simd::value_t<B>(0));
    for (std::size_t d = 0; d + 1 < QV; d += 2)
        a0 = simd::fma(qr[d], simd::load<B>(row + d * W), a0), a1 = simd::fma(qr[d + 1], simd::load<B>(row + (d + 1) * W), a1);
    if constexpr (QV % 2 != 0) a0 = simd::fma(qr[QV - 1], simd::load<B>(row + (QV - 1) * W), a0);
    return simd::reduce_add(a0 + a1);
}

// One query's online softmax in registers, for the loops that take keys one or one block at a
// time (decode_per_key, decode_key_blocks): q, the outputs O, l, the running maximum m and the
// shift the probabilities take (units of 8 log2(e)), the largest finite score seen. A local of
// the loop, reached through no pointer (xsimd's stores may alias anything that is).
template <class B, std::size_t QV, std::size_t NV>
struct one_query {
    using F = simd::value_t<B>;
    static constexpr std::size_t W = simd::lanes<B>;
    static constexpr F L8 = simd::log2e_x8<F>, ninf = -std::numeric_limits<F>::infinity();
    B qr[QV], o[NV], l, shift;
    F m, largest = ninf;
    __attribute__((always_inline)) one_query(const F* q, const decode_state<F, 1, NV * W>& s) noexcept
        : l(s.l[0]), shift(s.m[0] == ninf ? F(0) : s.m[0]), m(s.m[0]) {
        for (std::size_t d = 0; d < QV; ++d) qr[d] = B::load_unaligned(q + d * W);
        for (std::size_t c = 0; c < NV; ++c) o[c] = B::load_unaligned(s.o + c * W);
    }
    // A score x (or a block's largest) above the maximum, or NaN, moves it (a NaN to -inf: it
    // moves nothing) and rescales O and l: rarely taken, so a key costs no multiplies of O.
    __attribute__((always_inline)) void see(F x) noexcept {
        if (!(x * L8 <= m)) [[unlikely]] {
            if (x != -ninf) largest = std::max(largest, x * L8);  // (checked at the end: no call in the loop)
            B mv(m);
            const B alpha = advance_max(mv, B(x == x ? x * L8 : ninf), shift);
            for (std::size_t c = 0; c < NV; ++c) o[c] = o[c] * alpha;
            l = l * alpha;
            m = mv.get(0);
        }
    }
    __attribute__((always_inline)) void store(const decode_state<F, 1, NV * W>& s) const noexcept {
        check_tile_max(largest);
        s.m[0] = m, s.l[0] = l.get(0);
        for (std::size_t c = 0; c < NV; ++c) o[c].store_unaligned(s.o + c * W);
    }
};

// One query over a cache in place when its live keys fill the L3 (not on Zen 5, which takes
// decode_key_blocks; and the keys past its last whole block): key by key, as llama.cpp's loop
// reads it — K row j, its score, the score tree at key j alone, then V row j — so that K and V stream side
// by side with nothing between them (the W-key stream reads K a block ahead of V and stops for
// the block's softmax: 1.05-1.2x slower from DRAM, 1.5-1.7x faster in cache; docs/performance.md,
// 2026-11-27 night). The online softmax runs in vector lanes, every lane holding l and the
// probability: no call to a scalar exp. The outputs are rescaled only when the maximum moves (a
// branch rarely taken), so a key costs one exponential: with the rescale every key, the loop was
// 1.35-1.4x slower than a plain per-key loop from DRAM on Zen 5 (2026-12-07). Keys the tree masks
// (-inf) take no part; only the first n keys are read. Halves: the keys of [0, h) and [h, n) in
// turn (per_key_halves), K and V read as four ascending streams, not two.
template <class B, std::size_t D, std::size_t DV, class F, class TK, class TV, class Tree, std::size_t Rs>
__attribute__((always_inline)) inline void decode_per_key(const F* q, const TK* k, std::size_t ldk, const TV* v, std::size_t ldv,
                                                          const Tree& t, nd_pos<Rs> pos, std::size_t j0, F* st,
                                                          const decode_state<F, 1, DV>& s, std::size_t n, bool halves) noexcept {
    constexpr std::size_t W = simd::lanes<B>, QV = D / W, NV = DV / W;
    static_assert(D % W == 0 && DV % W == 0);
    one_query<B, QV, NV> a(q, s);
    auto key = [&](std::size_t j) __attribute__((always_inline)) {
        st[j] = row_dot(a.qr, k + j * ldk);  // read back by the tree
        pos.idx[Rs - 1] = j0 + j;
        const F sv = read<F>(t, pos);
        if (sv == -std::numeric_limits<F>::infinity()) return;
        a.see(sv);
        const B p = simd::exp_shifted(B(sv), a.shift);
        a.l = a.l + p;
        for (std::size_t c = 0; c < NV; ++c) a.o[c] = simd::fma(p, simd::load<B>(v + j * ldv + c * W), a.o[c]);
    };
    if (!halves)
        for (std::size_t j = 0; j < n; ++j) key(j);
    else
        for (std::size_t x = 0, h = (n + 1) / 2; x < h; ++x) {
            key(x);
            if (h + x < n) key(h + x);
        }
    a.store(s);
}

// One query over a cache of F in place from DRAM in blocks of W keys: while V rows of block b
// are read into the outputs, K rows of block b + 1 are read beside them, each K row's score
// summed across lanes at once (into st, read back whole by the score tree); then the block's
// online softmax in vector lanes, one exponential for W keys. The outputs are rescaled only when
// the maximum moves. Keys past the last whole block go key by key (decode_per_key). Only the
// first n keys are read.
template <class B, std::size_t D, std::size_t DV, class F, class TK, class TV, class Tree, std::size_t Rs>
__attribute__((always_inline)) inline void decode_key_blocks(const F* q, const TK* k, std::size_t ldk, const TV* v, std::size_t ldv,
                                                             const Tree& t, nd_pos<Rs> pos, std::size_t j0, F* st,
                                                             const decode_state<F, 1, DV>& s, std::size_t n) noexcept {
    constexpr std::size_t W = simd::lanes<B>, QV = D / W, NV = DV / W;
    static_assert(D % W == 0 && DV % W == 0);
    const std::size_t nb = n / W * W;  // keys in whole blocks
    if (nb > 0) {
        one_query<B, QV, NV> a(q, s);
        auto score = [&](std::size_t j) __attribute__((always_inline)) { st[j] = row_dot(a.qr, k + j * ldk); };
        for (std::size_t j = 0; j < W; ++j) score(j);
        alignas(64) F pa[W];
        for (std::size_t jb = 0; jb < nb; jb += W) {
            pos.idx[Rs - 1] = j0 + jb;
            const B sv = read<B>(t, pos);
            a.see(simd::max_across(simd::running_max(B(-std::numeric_limits<F>::infinity()), sv)).get(0));  // (NaN scores move nothing)
            const B p = simd::exp_shifted(sv, a.shift);
            a.l = a.l + simd::sum_across(p);
            p.store_aligned(pa);
            const bool more = jb + W < nb;
            for (std::size_t j = 0; j < W; ++j) {
                if (more) score(jb + W + j);
                const B pj(pa[j]);
                for (std::size_t c = 0; c < NV; ++c) a.o[c] = simd::fma(pj, simd::load<B>(v + (jb + j) * ldv + c * W), a.o[c]);
            }
        }
        a.store(s);
    }
    if (nb < n) decode_per_key<B, D, DV>(q, k + nb * ldk, ldk, v + nb * ldv, ldv, t, pos, j0 + nb, st + nb, s, n - nb, false);
}

// Bytes of the K and V cache a decode plan reads: K^T and V as given (memory as stored, an
// expression as F; an operand broadcast over batch indices once). Its stages request rows ahead
// when that is at least the L3's size (decode_from_dram); no L3 is taken to be under 1 MiB, so
// plans over smaller caches (a test's, a small model's) compile no requesting stages
// (decode_may_ahead: nor key by key).
template <class F, class Kt, class Vl>
inline constexpr std::size_t decode_cache_bytes = Kt::shape_type::size * element_bytes<Kt, F> + Vl::shape_type::size * element_bytes<Vl, F>;
inline constexpr std::size_t smallest_l3_bytes = std::size_t{1} << 20;
template <class F, class Kt, class Vl>
inline constexpr bool decode_may_ahead = decode_cache_bytes<F, Kt, Vl> >= smallest_l3_bytes;

// Whether a work item of NQ queries may go key by key (decode_per_key) when the live keys fill
// the L3: one query over a cache of F in place that may be that large, both head dimensions
// whole vectors.
template <class G, class F, class Kt, class Vl, std::size_t NQ, std::size_t D>
inline constexpr bool decode_by_key = G::stream && NQ == 1 && D % G::W == 0 && in_place<Kt, F, 1> && in_place<Vl, F, 0> &&
                                      decode_may_ahead<F, Kt, Vl>;

// bf16 Q (memory or an expression of bf16), K and V (memory, rows in place) on a target with
// AVX-512 BF16: the tile stages take both products as pair dot products at twice the FMA's
// rate, P rounded to bf16 before P V, as the prefill nest does (docs/numerics.md). The one- and
// two-query stream keeps float products: it reads at the speed of memory already.
template <class G, class F, class Ql, class Kt, class Vl, std::size_t D, std::size_t DV>
inline constexpr bool decode_pairs = simd::pair_rows<typename G::B, D> && simd::pair_rows<typename G::B, DV> && !G::stream &&
                                     std::is_same_v<F, float> && std::is_same_v<typename Ql::value_type, bf16> &&
                                     in_place<Kt, bf16, 1> && in_place<Vl, bf16, 0>;

// bf16 Q (memory or an expression of bf16) and K (memory, rows in place) with a float compute
// type on a target with AMX-BF16: the tile stages take the scores on tiles (amx_decode_scores;
// when the OS grants them, decode_keys), exact products as the float stages'. Head dimensions
// of whole 32-element parts, up to four (the tiles 4-7); whole 32-key steps of a tile.
template <class G, class F, class Ql, class Kt, std::size_t NQ, std::size_t D>
inline constexpr bool decode_amx = simd::has_amx_bf16 && !G::stream && G::W == 16 && std::is_same_v<F, float> &&
                                   std::is_same_v<typename Ql::value_type, bf16> && in_place<Kt, bf16, 1> && D % 32 == 0 && D / 32 <= 4 &&
                                   NQ <= 16;

// A cache of at least the L3's size (at most 32 MiB: request_ahead_bytes) streams at about
// DRAM's rate: then the tile stages request their next rows (in Zen 5's L3 the requests only
// cost; docs/performance.md, 2026-11-28 "evening" and 2026-11-29 "Intel"). Asked once per call.
template <class F, class Kt, class Vl>
inline bool decode_from_dram(const Kt&, const Vl&) noexcept {
    return decode_cache_bytes<F, Kt, Vl> >= request_ahead_bytes();
}

// Keys per tile of the decode nest: run_BN for one query over a cache of F in place that may
// stream from DRAM in a g++ build (by blocks of keys, or key by key), else BN (a larger tile would
// pack more rows of an expression on the stack; clang++'s stream over such tiles read 32 x 1
// heads at 1.22-1.39x the read, over tiles of 256 at 1.09-1.25x, 6 rounds; its key blocks over
// tiles of 2048 ran 0.95-0.975x the time on Zen 5, its stream over them 1.1x on the cores
// that take the stream).
inline constexpr bool long_key_tiles_built = !compiled_by_clang;
template <class G, class F, class Kt, class Vl, std::size_t NQ, std::size_t D>
inline constexpr std::size_t decode_tile_keys = decode_by_key<G, F, Kt, Vl, NQ, D> && long_key_tiles_built ? G::run_BN : G::BN;

// Whether one query over a cache streaming from DRAM (decode_blocks_of_keys) reads K and V in
// blocks of W keys (decode_key_blocks) whatever the length: on Zen 5 and Intel cores. On Zen 5 a
// float cache ran within a few per cent of a plain blocked loop and ahead of a plain per-key loop
// (32 x 1 heads over 4000 keys, bench/decode's decode_paired, 8 rounds alternating binaries,
// g++: 0.90-0.99x the per-key loop's time where key by key took 1.02-1.12x, 1.07-1.19x the read
// against 1.23-1.43x; clang++ 0.78-0.83x against 0.76-0.87x); a bf16 cache 0.87x (g++) and 0.90-0.91x (clang++) the
// time of the stream requesting rows ahead (harness; docs/performance.md, 2026-12-07, noon). On
// an Intel Xeon VM (bench/decode, 3 rounds alternating builds) against g++'s tile stages over
// tiles of 2048 keys without requests and clang++'s stream requesting rows ahead: a float cache
// 0.89-0.90x the per-key loop's time where those took 0.95-0.96x (g++), 1.10-1.18x where they
// took 1.12-1.27x (clang++); a bf16 cache 0.98-1.02x its read where they took 1.14-1.24x (both).
inline bool key_blocks_from_dram() noexcept { return amd_zen5_or_later() || intel_core(); }

// Whether one query may go by blocks of keys from DRAM (decode_key_blocks): a cache that may be
// that large, K and V rows in place (F, or 16-bit widened as read), both head dimensions whole
// vectors.
template <class G, class F, class Kt, class Vl, std::size_t NQ, std::size_t D, std::size_t DV>
inline constexpr bool decode_blocks_of_keys = G::stream && NQ == 1 && D % G::W == 0 && DV % G::W == 0 && decode_may_ahead<F, Kt, Vl> &&
                                              streamed<Kt, F, 1> && streamed<Vl, F, 0>;

// Whether one query key by key (decode_per_key) takes a tile's halves in turn: on AMD cores
// before Zen 5 and unknown ones, where a tile's K and V read as four streams, not two, kept the
// memory busier (Zen 3, 32 x 1 heads over 4000 keys, harness: g++ 6.29 -> 5.62 ms, clang++ 6.13
// -> 5.75; four quarters: 6.10 and 5.79). Zen 5 and Intel cores are unmeasured: they keep the order.
inline bool per_key_halves() noexcept { return !amd_zen5_or_later() && !intel_core(); }

// Whether one query over a cache with 16 registers (decode_quarters) takes the tile stages
// without requests, from DRAM, or in L3 over tiles of 256 keys, its scores over the tile's quarters (simd::dot_key_quarters) and P V
// over its thirds (decode_pv_streams): seven streams the prefetchers follow, where key by key or
// the stream read four or two. On the cores that take per_key_halves (Zen 3, 32 x 1 heads over
// 4000 keys, harness: a float cache g++ 5583 -> 4520 µs over tiles of 2048 keys, clang++ 5747 ->
// 4796 over 256, either tile size within the noise with either compiler; a bf16 cache over tiles
// of 256, from DRAM and in L3, against the stream: docs/performance.md, 2026-12-01 morning).
inline bool quarter_runs() noexcept { return per_key_halves(); }

// Whether one query (G::stream) over a cache of 1 MiB or more may take quarter_runs: float K and
// V in place (decode_by_key), or 16-bit rows in place (bf16 ones the scores read as even and odd
// elements: quarters_split in decode_key_tiles; f16 ones widened in order).
template <class G, class F, class Kt, class Vl, std::size_t NQ, std::size_t D>
inline constexpr bool decode_quarters = [] {
    using B = typename G::B;
    if constexpr (decode_by_key<G, F, Kt, Vl, NQ, D>) return simd::key_quarter_rows<B, F, F, 1, D>;
    else if constexpr (G::stream && NQ == 1 && decode_may_ahead<F, Kt, Vl> && streamed<Kt, F, 1> && streamed<Vl, F, 0> &&
                       D % G::W == 0)
        return simd::key_quarter_rows<B, F, std::remove_cv_t<typename Kt::value_type>, 1, D>;
    else return false;
}();

// Whether one query over a cache of F in place (decode_by_key) goes key by key or by blocks of
// keys: when the cache streams from DRAM (`ahead`) on Zen 5 and Intel cores (in blocks:
// key_blocks_from_dram), or elsewhere when the keys the masks leave fill the L3 — when the tree's scores
// in `b` (one batch index's query) reach into the tile holding key `fill`, taking the live keys
// to be a prefix (a length mask's; other masks only make it a guess, which picks a plan, not a
// result). Each batch index decides from its own masks, so that its result does not depend on
// another's (one decision over all of them made a head's rounding depend on the other heads'
// lengths: found by review).
template <class F, class Kt, class Vl, std::size_t NK, std::size_t BN, class Tree, std::size_t Rs>
bool decode_goes_by_key(const Tree& tree, box<Rs> b, bool ahead) {
    if (ahead && key_blocks_from_dram()) return true;
    const std::size_t fill = l3_bytes() / (decode_cache_bytes<F, Kt, Vl> / NK);  // (the bytes of a key over every batch index)
    if (!ahead || fill >= NK) return false;
    b.lo[Rs - 1] = fill / BN * BN;
    b.hi[Rs - 1] = std::min(NK, b.lo[Rs - 1] + BN) - 1;
    return bounds(tree, b).hi != -inf;
}

// One work item: the NQ queries i0 .. i0+NQ of batch index `batch` (every query, or the prefill
// nest's last few) against keys [jb, je) (whole tiles but the last), into the running state `s`;
// `ahead`: decode_from_dram's answer.
// Pairs: the tile stages on pair products (decode_pairs holds and they pay: decode_keys).
// Amx: the tile stages' scores on AMX tiles (decode_amx holds and the OS grants them).
template <class Arch, class S, class F, bool Pairs, bool Amx, class Sc, class Ql, class Kt, class Vl, std::size_t NQ, std::size_t DV>
void decode_key_tiles(const Sc& sc, const Ql& q, const Kt& kt, const Vl& v, std::size_t batch, std::size_t i0, std::size_t jb,
                      std::size_t je, const decode_state<F, NQ, DV>& s, bool ahead) {
    using Ss = typename Sc::shape_type;
    using MM = std::remove_cvref_t<decltype(find_matmul(sc))>;
    constexpr std::size_t R = S::rank, Rs = Ss::rank, D = MM::K;
    using G = decode_tiling<F, Arch, NQ, D, DV>;
    using B = typename G::B;
    constexpr std::size_t BN = decode_tile_keys<G, F, Kt, Vl, NQ, D>, NK = MM::N;
    constexpr bool may_ahead = decode_may_ahead<F, Kt, Vl>;
    nd_pos<R> ob = batch_position<S>(batch);
    nd_pos<Rs> sp{};  // the batch index at the score tree's rank (it broadcasts), the first query
    for (std::size_t k = 0; k + 2 < Rs; ++k) sp.idx[k] = ob.idx[k + R - Rs];
    box<Rs> tile_box{sp.idx, sp.idx};
    tile_box.lo[Rs - 2] = i0;
    tile_box.hi[Rs - 2] = i0 + NQ - 1;

    alignas(64) F qbuf[NQ * D];
    alignas(64) F st[NQ * BN];
    // Rows a tile packs as F (contiguous_rows): none for F memory; for 16-bit memory (read where it
    // lies in tiles of whole W-key blocks) only those of a last tile of NK % BN keys that is not;
    // else every tile's (so a bf16 cache keeps the stack frame small).
    static_assert(BN % G::W == 0 && BN / 8 % G::W == 0, "attend internal: decode tiles of whole blocks");
    constexpr std::size_t tail_rows = NK % BN % G::W != 0 ? NK % BN : 0;
    constexpr std::size_t k_rows = in_place<Kt, F, 1> ? 0 : streamed<Kt, F, 1> ? tail_rows : BN;
    constexpr std::size_t v_rows = in_place<Vl, F, 0> ? 0 : streamed<Vl, F, 0> && DV % G::W == 0 ? tail_rows : BN;
    alignas(64) F kpack[std::max<std::size_t>(k_rows * D, 1)];
    alignas(64) F vpack[std::max<std::size_t>(v_rows * DV, 1)];
    F mx[NQ], alpha[NQ];
    for (std::size_t i = 0; i < NQ; ++i)
        for (std::size_t d = 0; d < D; ++d) {
            sp.idx[Rs - 2] = i0 + i;
            sp.idx[Rs - 1] = d;
            qbuf[i * D + d] = read<F>(q, nd_pos<Rs>{sp.idx});
        }
    sp.idx[Rs - 2] = i0;
    // bf16 Q, K and V: the tile stages on pair dot products (decode_pairs), Q and each tile's P
    // as bf16. Else they read bf16 key rows in place as even and odd elements, against the
    // queries split the same way (decode_scores).
    constexpr bool pairs = Pairs;
    static_assert(!pairs || decode_pairs<G, F, Ql, Kt, Vl, D, DV>);
    constexpr bool split = [] {
        if constexpr (streamed<Kt, F, 1> && !G::stream && !pairs) return simd::split_keys<B, typename Kt::value_type, D>;
        else return false;
    }();
    // One query's bf16 rows in quarter_runs read as even and odd elements too (Zen 3, 32 x 1 heads,
    // harness, 16 rounds: over 500 keys in L3 g++ 402 -> 305 µs, clang++ 358 -> 336; over 4000
    // keys from DRAM g++ 4496 -> 3467, clang++ level)
    constexpr bool quarters_split = [] {
        if constexpr (decode_quarters<G, F, Kt, Vl, NQ, D>) return simd::split_keys<B, typename Kt::value_type, D>;  // (bf16 rows only)
        else return false;
    }();
    alignas(64) F qsplit[split || quarters_split ? NQ * D : 1];
    if constexpr (split || quarters_split)
        for (std::size_t i = 0; i < NQ; ++i) simd::split_even_odd(qbuf + i * D, D / 2, qsplit + i * D, qsplit + i * D + D / 2);
    alignas(64) bf16 qpairs[pairs ? NQ * D : 1];
    alignas(64) bf16 ppairs[pairs ? NQ * BN : 1];
    if constexpr (pairs)
        for (std::size_t x = 0; x < NQ * D; ++x) qpairs[x] = bf16(qbuf[x]);  // exact: Q is bf16
    // AMX: the queries as pair tiles, and the tiles configured while this item runs
    static_assert(!Amx || decode_amx<G, F, Ql, Kt, NQ, D>);
    alignas(64) bf16 qtiles[Amx ? D * 16 : 1];
    [[maybe_unused]] std::conditional_t<Amx, simd::amx_tiles, simd::no_tiles> tiles;
    if constexpr (Amx) amx_query_pairs<NQ, D>(qbuf, qtiles);
    const auto* qrows = [&] {
        if constexpr (pairs) return +qpairs;
        else if constexpr (split) return +qsplit;
        else return +qbuf;
    }();
    using Qrow = std::remove_cvref_t<decltype(*qrows)>;
    // The score tree over a tile whose scores the cursor locates in st.
    auto tree_at = [&](const tile_cursor<F>& cursor) { return with_tile(sc, tile_leaf<F, Ss, false>{{}, &cursor}); };
    using Tree = decltype(tree_at(std::declval<const tile_cursor<F>&>()));
    constexpr bool may_by_key = decode_by_key<G, F, Kt, Vl, NQ, D>;
    [[maybe_unused]] const bool by_key = [&] {
        const tile_cursor<F> cursor{st, BN, i0, 0};  // (bounds read no scores)
        if constexpr (may_by_key) return decode_goes_by_key<F, Kt, Vl, NK, BN>(tree_at(cursor), tile_box, ahead);
        else return false;
    }();
    // The tile stages, requesting nothing (with 16 registers the quarters: quarter_runs, from DRAM
    // and in L3 as well over tiles of 256 keys: 32 x 1 heads over 500 keys, Zen 3, harness, a bf16
    // cache g++ 376 -> 282 µs, clang++ 341 -> 267, over 17 keys 23 -> 19; a float cache, clang++,
    // 471 -> 383, over 17 keys level. g++ builds' tiles of 2048 keys over a float cache took 28 µs
    // over 17 keys, the stream 22: those keep the stream in L3)
    constexpr bool quarters = decode_quarters<G, F, Kt, Vl, NQ, D>;
    const bool runs = quarters && quarter_runs() && (ahead || BN == G::BN);
    [[maybe_unused]] const bool halves = may_by_key && per_key_halves();
    // Keys [j0, j0 + KB) through the stages; the stream (K and V in place) takes kb keys instead.
    // Only the first `live` take part in P V (live < kb: a tile the masks cut).
    auto visit = [&]<std::size_t KB>(std::size_t j0, const auto& t, std::size_t kb, std::size_t live) {
        // K and V rows where they lie when whole blocks of W keys stream from memory (16-bit
        // storage widened as it loads), else packed as floats through their expressions
        auto rows = [&]<bool Transposed, std::size_t C, bool Stream>(const auto& x, const auto& at, F* pack) {
            if constexpr (Stream) return rows_in_place<Transposed>(x, at, j0);
            else return contiguous_rows<KB, C, Transposed, F>(x, at, j0, pack, live);
        };
        constexpr bool blocks = KB % G::W == 0, v_blocks = blocks && DV % G::W == 0;
        const auto [k, ldk] = rows.template operator()<true, D, blocks && streamed<Kt, F, 1>>(kt, sp, kpack);
        if constexpr (G::stream && blocks)
            if (!runs) {
                const auto [vr, ldv] = rows.template operator()<false, DV, streamed<Vl, F, 0>>(v, ob, vpack);
                if constexpr (decode_blocks_of_keys<G, F, Kt, Vl, NQ, D, DV>)
                    if (ahead && key_blocks_from_dram()) return decode_key_blocks<B, D, DV>(qbuf, k, ldk, vr, ldv, t, sp, j0, st, s, std::min(kb, live));
                if constexpr (may_by_key)
                    if (by_key) return decode_per_key<B, D, DV>(qbuf, k, ldk, vr, ldv, t, sp, j0, st, s, std::min(kb, live), halves);
                if constexpr (may_ahead && streamed<Kt, F, 1> && streamed<Vl, F, 0>)
                    if (ahead && (amd_zen5_or_later() || intel_core()))
                        return decode_stream<B, NQ, KB, BN, D, DV, G::stream_ahead>(qbuf, k, ldk, vr, ldv, t, sp, j0, st, s, kb, live, NK - j0);
                return decode_stream<B, NQ, KB, BN, D, DV, 0>(qbuf, k, ldk, vr, ldv, t, sp, j0, st, s, kb, live);
            }
        // Every stage requests its share of the next tile's rows, so that the memory streams
        // through the tile's arithmetic and the stages read cache (docs/performance.md, 2026-11-26)
        const bool next_whole = ahead && !runs && KB == BN && j0 + KB + BN <= NK;
        // The scores stage, its groups of queries as SplitFours makes them
        auto scores = [&, k = k, ldk = ldk]<bool SplitFours>() {
            constexpr std::size_t k_groups = score_groups<B, query_width<D, Qrow>, NQ, split, Qrow, SplitFours>;
            with_rows_ahead<true, F, may_ahead, k_groups>(kt, sp, j0 + scores_lead<KB, k_groups, Amx>(), next_whole, [&](auto k_next) {
                if constexpr (Amx && KB % 32 == 0)
                    if (live == KB)
                        return amx_decode_scores<NQ, D, KB, BN, k_groups>(
                            k, ldk, qtiles, st, [&](std::size_t f) __attribute__((always_inline)) { k_next.template request<D>(f); });
                if constexpr (simd::vector_registers<> >= 32 && !std::is_same_v<decltype(k_next), no_rows_ahead>)
                    if (scores_unrolled<std::remove_cvref_t<decltype(*k)>>())
                        return decode_scores<B, NQ, KB, BN, D, DV, split, true, SplitFours>(qrows, k, ldk, st, k_next, live);
                if constexpr (quarters)
                    if (runs)
                        return decode_scores<B, NQ, KB, BN, D, DV, split || quarters_split, false, SplitFours>(
                            quarters_split ? +qsplit : qrows, k, ldk, st, unrequested_streams{}, live);
                decode_scores<B, NQ, KB, BN, D, DV, split, false, SplitFours>(qrows, k, ldk, st, k_next, live);
            });
        };
        if constexpr (blocks) {
            if constexpr (split && compiled_by_clang && simd::vector_registers<> >= 32) {
                if (split_fours()) scores.template operator()<true>();
                else scores.template operator()<false>();
            } else
                scores.template operator()<!compiled_by_clang>();
        } else {
            dot_panel<B, NQ, G::MB, G::RK, D>(qbuf, D, k, ldk, live, st, BN);  // rows past `live` never read
            for (std::size_t i = 0; i < NQ; ++i) std::fill(st + i * BN + live, st + i * BN + KB, F(0));
        }
        decode_tree<B, NQ, KB, BN>(t, sp, j0, st, mx);
        decode_softmax<B, NQ, KB, BN, DV>(st, mx, s, alpha);
        const auto [vr, ldv] = rows.template operator()<false, DV, v_blocks && streamed<Vl, F, 0>>(v, ob, vpack);
        if constexpr (v_blocks && pairs) {
            round_p_pairs<B, NQ, KB, BN>(st, ppairs);
            with_rows_ahead<false, F, may_ahead, query_groups<B, DV, NQ>>(v, ob, j0 + KB, next_whole, [&, vr = vr, ldv = ldv](auto v_next) {
                decode_pv_pairs<B, NQ, KB, BN, DV>(ppairs, vr, ldv, alpha, s.o, v_next, live);
            });
        }
        else if constexpr (v_blocks && simd::vector_registers<> < 32)
            decode_pv_streams<B, NQ, KB, BN, DV>(st, vr, ldv, alpha, s.o, live);
        else if constexpr (v_blocks)
            with_rows_ahead<false, F, may_ahead, pv_passes<B, DV, NQ>>(v, ob, j0 + KB, next_whole, [&, vr = vr, ldv = ldv](auto v_next) {
                decode_pv_rows<B, NQ, KB, BN, DV, D>(st, vr, ldv, alpha, s.o, v_next, live);
            });
        else if (live < KB) decode_pv_live<B, NQ, BN, DV>(st, vr, ldv, alpha, s.o, live);
        else decode_pv<B, NQ, KB, BN, DV, G::MQ, G::NVd>(st, vr, ldv, alpha, s.o);
    };
    // Keys [j0, j0 + KB) as a tile whose tree reads its scores from st; Strip: without the
    // index masks (the caller found they rule nothing out there).
    auto run_tile = [&]<std::size_t KB, bool Strip>(std::size_t j0, std::size_t kb = KB, std::size_t live = KB) {
        const tile_cursor<F> cursor{st, BN, i0, j0};
        const Tree tree = tree_at(cursor);
        if constexpr (Strip) visit.template operator()<KB>(j0, without_index_masks(tree), kb, kb);
        else visit.template operator()<KB>(j0, tree, kb, std::min(kb, live));
    };
    // The stream reads K and V in place for any number of whole blocks: a run of live eighths is
    // one call (each call loads and stores the running state).
    const bool fold = G::stream && streamed<Kt, F, 1> && streamed<Vl, F, 0> && !runs;
    auto key_tile = [&]<std::size_t KB>(std::size_t j0) {
        tile_box.lo[Rs - 1] = j0;
        tile_box.hi[Rs - 1] = j0 + KB - 1;
        const tile_cursor<F> cursor{st, BN, i0, j0};
        const Tree tree = tree_at(cursor);  // for bounds only: they read no scores
        if (bounds(tree, tile_box).hi == -inf) return;  // every score -inf: nothing to add
        if constexpr (has_index_where<Tree>())
            if (index_conditions_never(tree, tile_box)) return run_tile.template operator()<KB, true>(j0);
        if constexpr (has_where<Tree>()) {  // (masks over tensors too: a length a head)
            if constexpr (KB == BN) {
                // A partly masked tile (the cache's last, a causal chunk's diagonal): when the
                // masks rule out two of its eighths or more, the others run as tiles of their own,
                // one instantiation for every length (docs/performance.md, "night").
                constexpr std::size_t E = KB / 8;
                unsigned live = 0;  // bit e: eighth e holds a score the masks leave
                box<Rs> part = tile_box;
                for (std::size_t e = 0; e < 8; ++e) {
                    part.lo[Rs - 1] = j0 + e * E;
                    part.hi[Rs - 1] = j0 + e * E + E - 1;
                    if (bounds(tree, part).hi != -inf) live |= 1u << e;
                }
                if (live == 0) return;
                // Keys from `end` on take no part: it lies in the last live eighth (the eighths
                // past it hold -inf only), searched alone (6 bounds for 256 keys, not 9).
                part.lo[Rs - 1] = j0 + (std::bit_width(live) - 1) * E;
                part.hi[Rs - 1] = part.lo[Rs - 1] + E - 1;
                const std::size_t end = live_end(tree, part);
                // In the quarter runs, when the live eighths are a prefix (a length's cut), from
                // three on one tile cut at `end`: its whole groups of 32 keys score by quarters (32 x
                // 1 heads over a bf16 cache of 512 keys in L3, g++, 420 keys 182 -> 172 µs, 384 161
                // -> 156, 300 level). Other masks keep their ruled-out eighths unread.
                const bool cut_prefix = quarters && runs && (live & (live + 1)) == 0;
                if (std::popcount(live) <= (cut_prefix ? 2 : fold ? 7 : 6)) {  // eighths as tiles: ~1.3x an eighth's work each
                    for (std::size_t e = 0; e < 8;) {
                        const std::size_t n = fold ? std::countr_one(live >> e) : live >> e & 1u;
                        if (n > 0) run_tile.template operator()<E, false>(j0 + e * E, n * E, end - (j0 + e * E));
                        e += std::max<std::size_t>(n, 1);
                    }
                    return;
                }
                return run_tile.template operator()<KB, false>(j0, KB, end - j0);
            }
            const std::size_t end = live_end(tree, tile_box);  // keys from here on take no part
            return run_tile.template operator()<KB, false>(j0, KB, end - j0);
        }
        run_tile.template operator()<KB, false>(j0);
    };
    std::size_t j0 = jb;
    for (; j0 + BN <= je; j0 += BN) key_tile.template operator()<BN>(j0);
    if constexpr (NK % BN != 0)
        if (j0 < je) key_tile.template operator()<NK % BN>(j0);
}

// Writes O / l (zeros where every key was masked) to the output rows, and the log-sum-exp.
template <std::size_t NQ, std::size_t DV, class F, class T, class U>
void decode_finish(const decode_state<F, NQ, DV>& s, T* out, U* lse) noexcept {
    for (std::size_t i = 0; i < NQ; ++i) {
        const F inv = s.l[i] == F(0) ? F(0) : F(1) / s.l[i];
        for (std::size_t c = 0; c < DV; ++c) out[i * DV + c] = static_cast<T>(s.o[i * DV + c] * inv);
        if (lse != nullptr) lse[i] = static_cast<U>(s.m[i] / simd::log2e_x8<F> + std::log(s.l[i]));
    }
}

// Merges the chunks' states into the first (each scaled to the common maximum).
template <std::size_t NQ, std::size_t DV, class F>
void decode_merge(const decode_state<F, NQ, DV>* parts, std::size_t chunks) noexcept {
    const decode_state<F, NQ, DV>& s = parts[0];
    for (std::size_t i = 0; i < NQ; ++i) {
        F m = s.m[i];
        for (std::size_t c = 1; c < chunks; ++c) m = std::max(m, parts[c].m[i]);
        if (m == -std::numeric_limits<F>::infinity()) continue;  // every part empty
        auto scale = [&](F mc) { return mc == -std::numeric_limits<F>::infinity() ? F(0) : std::exp2((mc - m) / 8); };
        const F a0 = scale(s.m[i]);
        for (std::size_t d = 0; d < DV; ++d) s.o[i * DV + d] *= a0;
        s.l[i] *= a0;
        for (std::size_t c = 1; c < chunks; ++c) {
            const F a = scale(parts[c].m[i]);
            for (std::size_t d = 0; d < DV; ++d) s.o[i * DV + d] += a * parts[c].o[i * DV + d];
            s.l[i] += a * parts[c].l[i];
        }
        s.m[i] = m;
    }
}

// decode_key_tiles with the tile stages' scores on AMX tiles where they may, else on pair
// products where those may and pay.
template <class Arch, class S, class F, class Sc, class Ql, class Kt, class Vl, std::size_t NQ, std::size_t DV>
void decode_keys(const Sc& sc, const Ql& q, const Kt& kt, const Vl& v, std::size_t batch, std::size_t i0, std::size_t jb,
                 std::size_t je, const decode_state<F, NQ, DV>& s, bool ahead) {
    using MM = std::remove_cvref_t<decltype(find_matmul(sc))>;
    using G = decode_tiling<F, Arch, NQ, MM::K, DV>;
    if constexpr (decode_amx<G, F, Ql, Kt, NQ, MM::K>)
        if (simd::use_amx()) return decode_key_tiles<Arch, S, F, false, true>(sc, q, kt, v, batch, i0, jb, je, s, ahead);
    if constexpr (decode_pairs<G, F, Ql, Kt, Vl, MM::K, DV>)
        if (pair_products_pay()) return decode_key_tiles<Arch, S, F, true, false>(sc, q, kt, v, batch, i0, jb, je, s, ahead);
    decode_key_tiles<Arch, S, F, false, false>(sc, q, kt, v, batch, i0, jb, je, s, ahead);
}

// One work item: the NQ queries i0 .. i0+NQ of batch index `batch` against every key, written
// to their output rows and log-sum-exp entries.
// `ahead`: decode_from_dram's answer.
template <class Arch, class S, class F, std::size_t NQ, class Sc, class Ql, class Kt, class Vl, class T, class U>
void decode_queries(const Sc& sc, const Ql& q, const Kt& kt, const Vl& v, T* out, U* lse, std::size_t batch, std::size_t i0, bool ahead) {
    using MM = std::remove_cvref_t<decltype(find_matmul(sc))>;
    constexpr std::size_t DV = S::extents[S::rank - 1];
    using State = decode_state<F, NQ, DV>;
    alignas(64) F mem[State::floats];
    const State s = State::over(mem);
    s.clear();
    decode_keys<Arch, S, F>(sc, q, kt, v, batch, i0, 0, MM::N, s, ahead);
    const std::size_t row = batch * MM::M + i0;  // the first query's row of the output
    decode_finish(s, out + row * DV, lse ? lse + row : lse);
}

template <class Arch, class S, class T, class F, class Sc, class Ql, class Kt, class Vl, class U>
void evaluate_decode(const Sc& sc, const Ql& q, const Kt& kt, const Vl& v, T* out, U* lse) {
    using MM = std::remove_cvref_t<decltype(find_matmul(sc))>;
    constexpr std::size_t NQ = MM::M, D = MM::K, NK = MM::N, DV = S::extents[S::rank - 1];
    using G = decode_tiling<F, Arch, NQ, D, DV>;
    using State = decode_state<F, NQ, DV>;
    constexpr std::size_t batches = S::size / (NQ * DV), per_part = State::floats, BN = decode_tile_keys<G, F, Kt, Vl, NQ, D>;
    // Heads run on all threads from 64 Ki multiply-adds over the capacity (a loop on the team costs
    // under 1 µs: stories15M's six heads of 48 at 2 threads, 55 -> 45 µs a token).
    constexpr bool worth = batches * NQ * NK * (D + DV) >= (std::size_t{1} << 16);
    // Chunks of keys per batch index: only when there are fewer batch indices than threads, and
    // only as many as the stack budget holds parts for.
    constexpr std::size_t most = std::min(G::max_chunks, config::stack_budget / (batches * per_part * sizeof(F)));
    const std::size_t workers = worth ? worker_count() : 1;
    const std::size_t chunks = std::clamp<std::size_t>((workers + batches - 1) / batches, 1, std::max<std::size_t>(most, 1));
    const std::size_t tiles = (NK + BN - 1) / BN, span = (tiles + chunks - 1) / chunks * BN;
    const bool ahead = decode_from_dram<F>(kt, v);
    if (chunks == 1) {
        parallel_for(batches, worth, [&](std::size_t b) { decode_queries<Arch, S, F, NQ>(sc, q, kt, v, out, lse, b, 0, ahead); });
        return;
    }
    if constexpr (most > 1) {
        alignas(64) F mem[batches * most * per_part];
        parallel_for(batches * chunks, true, [&](std::size_t item) {
            const State s = State::over(mem + item * per_part);
            s.clear();
            const std::size_t c = item % chunks;
            decode_keys<Arch, S, F>(sc, q, kt, v, item / chunks, 0, std::min(NK, c * span), std::min(NK, (c + 1) * span), s, ahead);
        });
        for (std::size_t b = 0; b < batches; ++b) {
            State parts[G::max_chunks];
            for (std::size_t c = 0; c < chunks; ++c) parts[c] = State::over(mem + (b * chunks + c) * per_part);
            decode_merge(parts, chunks);
            decode_finish(parts[0], out + b * NQ * DV, lse ? lse + b * NQ : lse);
        }
    }
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
