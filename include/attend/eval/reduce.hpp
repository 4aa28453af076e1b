// attend/eval/reduce.hpp — loop nests for reductions along an axis and for softmax.
//
// Along the last axis the SIMD lanes run along the reduced axis (then one horizontal step per
// row); along any other axis the lanes run along the last axis and the reduced axis is an outer
// loop, so every load stays contiguous. Operands are lowered first (lower.hpp), then read lane
// bundles like the elementwise loop does.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

#include "lower.hpp"

namespace attend {
inline namespace ATTEND_ARCH_NAMESPACE {
namespace detail {

// Calls f(p, base) for every row of a shape whose last axis is the innermost loop, with p the
// n-d position of the row's first element (axis `Skip` held at 0) and base its row-major offset
// in the shape where axis Skip has extent 1 (the reduction's output).
template <class S, std::size_t Skip, class F>
inline void for_each_row(F&& f) {
    constexpr std::size_t R = S::rank;
    constexpr auto out_ext = keep_one<S, Skip>(S::extents);
    using out_layout = row_major<shapes::shape_of<out_ext>>;
    std::size_t rows = 1;
    for (std::size_t k = 0; k + 1 < R; ++k) rows *= out_ext[k];
    nd_pos<R> p{};
    for (std::size_t r = 0; r < rows; ++r) {
        f(p, out_layout::offset(p.idx));  // p's last axis (and axis Skip) at 0
        for (std::size_t k = R - 1; k-- > 0;) {
            if (++p.idx[k] < out_ext[k]) break;
            p.idx[k] = 0;
        }
    }
}

// Folds lane bundles at 0, W, 2W, ... < N / W * W with `combine`, over four independent
// accumulators so the loop runs at throughput, not at the latency of one dependency chain.
// `lanes(j)` yields the bundle at j (and may do other work there, such as a store).
template <class B, std::size_t N, class Lanes, class Combine>
inline B fold_row(const B& init, Lanes&& lanes, Combine&& combine) {
    constexpr std::size_t W = simd::lanes<B>, NV = N / W * W;
    B acc[4] = {init, init, init, init};
    std::size_t j = 0;
    for (; j + 4 * W <= NV; j += 4 * W)
        for (std::size_t u = 0; u < 4; ++u) acc[u] = combine(acc[u], lanes(j + u * W));
    for (; j < NV; j += W) acc[0] = combine(acc[0], lanes(j));
    return combine(combine(acc[0], acc[1]), combine(acc[2], acc[3]));
}

template <class Op>
struct reducer;

// The identity of max: -inf, or an integer type's least value.
template <class F>
inline constexpr F lowest = std::numeric_limits<F>::has_infinity ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::lowest();

template <>
struct reducer<op::sum> {
    template <class B>
    static B identity() { return simd::splat<B>(0); }
    template <class B>
    static B combine(const B& acc, const B& v) { return apply(op::add{}, acc, v); }
    template <class B>
    static simd::value_t<B> horizontal(const B& acc) { return simd::reduce_add(acc); }
};

template <>
struct reducer<op::max> {
    template <class B>
    static B identity() { return simd::splat<B>(lowest<simd::value_t<B>>); }
    template <class B>
    static B combine(const B& acc, const B& v) { return simd::maximum(acc, v); }
    template <class B>
    static simd::value_t<B> horizontal(const B& acc) { return simd::reduce_max(acc); }
};

// argmax keeps (value, index) pairs; a later index wins only with a strictly greater value or
// as the first NaN, so the first index of the maximum survives.
template <class B>
struct arg_best {
    B value = simd::splat<B>(lowest<simd::value_t<B>>);
    B index = simd::splat<B>(0);
    bool any = false;
    void take(const B& v, const B& i) {
        if (!any) {
            value = v, index = i, any = true;
            return;
        }
        const auto better = v > value || (simd::is_nan(v) && !simd::is_nan(value));
        value = simd::select<B>(better, v, value);
        index = simd::select<B>(better, i, index);
    }
};

// argmax of one row along the last axis (lanes along the row): the first index of the maximum.
template <class B, std::size_t n, class Arg, std::size_t R>
inline simd::value_t<B> argmax_row(const Arg& arg, nd_pos<R> p) {
    using F = simd::value_t<B>;
    constexpr std::size_t W = simd::lanes<B>, NV = simd::is_batch<B> ? n / W * W : 0;  // (scalar: a tree of integers)
    arg_best<B> vec;
    for (std::size_t j = 0; j < NV; j += W) {
        p.idx[R - 1] = j;
        vec.take(read<B>(arg, p), simd::lane_index<B>(j));
    }
    arg_best<F> best;
    if constexpr (NV > 0) {
        alignas(64) F v[W], i[W];
        vec.value.store_aligned(v);
        vec.index.store_aligned(i);
        for (std::size_t l = 0; l < W; ++l) {  // ties: the smaller index
            const bool tie = v[l] == best.value || (v[l] != v[l] && best.value != best.value);
            if (best.any && tie && i[l] < best.index) best.index = i[l];
            else best.take(v[l], i[l]);
        }
    }
    for (std::size_t j = NV; j < n; ++j) {
        p.idx[R - 1] = j;
        best.take(read<F>(arg, p), F(j));
    }
    return best.index;
}

// sum or max of one row along the last axis (lanes along the row, one horizontal step).
template <class Op, class B, std::size_t n, class Arg, std::size_t R>
inline simd::value_t<B> reduce_row(const Arg& arg, nd_pos<R> p) {
    using F = simd::value_t<B>;
    constexpr std::size_t NV = n / simd::lanes<B> * simd::lanes<B>;
    const B acc = fold_row<B, n>(
        reducer<Op>::template identity<B>(),
        [&](std::size_t j) {
            p.idx[R - 1] = j;
            return read<B>(arg, p);
        },
        [](const B& a, const B& b) { return reducer<Op>::combine(a, b); });
    F s = reducer<Op>::horizontal(acc);
    for (std::size_t j = NV; j < n; ++j) {
        p.idx[R - 1] = j;
        s = reducer<Op>::combine(s, read<F>(arg, p));
    }
    return s;
}

// The reduction of the lanes at column j along axis Axis (an outer loop), stored at `to`.
template <class Op, class V, std::size_t Axis, std::size_t n, class Arg, std::size_t R, class T>
inline void reduce_column(const Arg& arg, nd_pos<R> p, T* to) {
    if constexpr (std::is_same_v<Op, op::argmax>) {
        arg_best<V> best;
        for (std::size_t k = 0; k < n; ++k) {
            p.idx[Axis] = k;
            best.take(read<V>(arg, p), simd::splat<V>(k));
        }
        simd::store(to, best.index);
    } else {
        V acc = reducer<Op>::template identity<V>();
        for (std::size_t k = 0; k < n; ++k) {
            p.idx[Axis] = k;
            acc = reducer<Op>::combine(acc, read<V>(arg, p));
        }
        simd::store(to, acc);
    }
}

// A reduction computes in its operand tree's type for a result of type T (explain reports it).
template <class Arg, class T>
using reduce_compute_t = tree_compute_t<Arg, T>;

// Along the last axis the lanes run along the reduced axis; along any other they run along
// the last axis and the reduced axis is an outer loop.
template <class Arch, class T, class Op, std::size_t Axis, class A>
void evaluate_node(T* out, const reduce_node<Op, Axis, A>& node) {
    using S = typename A::shape_type;
    lower<Arch>(node.arg, [&](const auto& arg) {
        using F = reduce_compute_t<std::remove_cvref_t<decltype(arg)>, T>;
        using B = tree_bundle_t<std::remove_cvref_t<decltype(arg)>, T, Arch>;
        constexpr std::size_t W = simd::lanes<B>, R = S::rank, n = S::extents[Axis];
        if constexpr (Axis == R - 1) {
            for_each_row<S, Axis>([&](nd_pos<R> p, std::size_t base) {
                if constexpr (std::is_same_v<Op, op::argmax>) out[base] = static_cast<T>(argmax_row<B, n>(arg, p));
                else out[base] = simd::to_element<T>(reduce_row<Op, B, n>(arg, p));
            });
        } else {
            constexpr std::size_t inner = S::extents[R - 1], NV = inner / W * W;
            for_each_row<S, Axis>([&](nd_pos<R> p, std::size_t base) {
                for (std::size_t j = 0; j < NV; j += W) {
                    p.idx[R - 1] = j;
                    reduce_column<Op, B, Axis, n>(arg, p, out + base + j);
                }
                for (std::size_t j = NV; j < inner; ++j) {
                    p.idx[R - 1] = j;
                    reduce_column<Op, F, Axis, n>(arg, p, out + base + j);
                }
            });
        }
    });
}

// softmax along Axis: max, then exp(x - max) written out while summing, then one scale. A slice
// of all -inf has max -inf: it is shifted by 0 instead, every exp is 0, and the scale is 0.
// exp(x - max) is taken as 2^(t/8) with t = fma(x, 8 log2(e), -8 log2(e) max), as in the
// attention nest (simd::exp_shifted): the shift is part of the fma and the exponential is
// 5 operations on the FMA pipes instead of 10.
template <class V>
inline V softmax_shift(const V& m) {  // the shift in units of 8 log2(e), 0 for an all -inf slice
    using F = simd::value_t<V>;
    return simd::select<V>(m == V(-std::numeric_limits<F>::infinity()), V(0), m * V(simd::log2e_x8<F>));
}
// exp(x - m) for a slice whose maximum is m (lanes: a slice each). The shift m * 8 log2(e) rounds
// to a float, and every term of the slice carries 2^(that rounding / 8), which cancels in the sum
// until it leaves float's range: beyond a rounding of 32 (|m| past ~2e9 in float) a slice takes
// exp(x - m) instead (simd::exp), so that softmax([1e10, 7.5e9]) is [1, 0], not [0, 0].
template <class V>
struct softmax_exp {
    V m, shift;
    bool exact;
    explicit softmax_exp(const V& mx) : shift(softmax_shift(mx)) {
        using F = simd::value_t<V>;
        m = simd::select<V>(mx == V(-std::numeric_limits<F>::infinity()), V(0), mx);
        if constexpr (simd::is_batch<V>) {
            const V off = simd::fma(m, V(simd::log2e_x8<F>), -shift);  // the shift's rounding, exactly
            exact = xsimd::any(off > V(32) || off < V(-32));
        } else {
            const F off = std::fma(m, simd::log2e_x8<F>, -shift);
            exact = off > 32 || off < -32;
        }
    }
    template <class X>
    X operator()(const X& x) const {
        return exact ? simd::exp(x - X(m)) : simd::exp_shifted(x, X(shift));
    }
};

template <class V>
inline V softmax_scale(const V& s) {  // 1 / sum, 0 for an all -inf slice
    return simd::select<V>(s == V(0), V(0), V(1) / s);
}

// One row along the last axis (lanes along the row), written to `row`.
template <class B, std::size_t n, class Arg, std::size_t R, class T>
inline void softmax_row(const Arg& arg, nd_pos<R> p, T* row) {
    using F = simd::value_t<B>;
    constexpr std::size_t W = simd::lanes<B>, NV = n / W * W;
    auto lanes = [&](std::size_t j) {
        p.idx[R - 1] = j;
        return read<B>(arg, p);
    };
    const B mv = fold_row<B, n>(simd::splat<B>(-std::numeric_limits<F>::infinity()), lanes,
                                [](const B& a, const B& b) { return simd::maximum(a, b); });
    F m = simd::reduce_max(mv);
    for (std::size_t j = NV; j < n; ++j) {
        p.idx[R - 1] = j;
        m = simd::maximum(m, read<F>(arg, p));
    }
    const softmax_exp<F> ex(m);
    const B sv = fold_row<B, n>(
        simd::splat<B>(0),
        [&](std::size_t j) {
            const B e = ex(lanes(j));
            simd::store(row + j, e);
            return e;
        },
        [](const B& a, const B& b) { return a + b; });
    F s = simd::reduce_add(sv);
    for (std::size_t j = NV; j < n; ++j) {
        p.idx[R - 1] = j;
        const F e = ex(read<F>(arg, p));
        row[j] = static_cast<T>(e);
        s += e;
    }
    const F scale = softmax_scale(s);
    for (std::size_t j = 0; j < NV; j += W) simd::store(row + j, simd::load<B>(row + j) * B(scale));
    for (std::size_t j = NV; j < n; ++j) row[j] = static_cast<T>(row[j] * scale);
}

// The lanes at p along axis Axis (an outer loop, `stride` apart in the output from `first`).
template <class V, std::size_t Axis, std::size_t n, std::size_t stride, class Arg, std::size_t R, class T>
inline void softmax_column(const Arg& arg, nd_pos<R> p, T* first) {
    using F = simd::value_t<V>;
    V m = simd::splat<V>(-std::numeric_limits<F>::infinity());
    for (std::size_t k = 0; k < n; ++k) {
        p.idx[Axis] = k;
        m = simd::maximum(m, read<V>(arg, p));
    }
    const softmax_exp<V> ex(m);
    V s = simd::splat<V>(0);
    for (std::size_t k = 0; k < n; ++k) {
        p.idx[Axis] = k;
        const V e = ex(read<V>(arg, p));
        simd::store(first + k * stride, e);
        s = s + e;
    }
    const V scale = softmax_scale(s);
    for (std::size_t k = 0; k < n; ++k) simd::store(first + k * stride, simd::load<V>(first + k * stride) * scale);
}

template <class Arch, class T, std::size_t Axis, class A>
void evaluate_node(T* out, const softmax_node<Axis, A>& node) {
    using S = typename A::shape_type;
    if constexpr (!is_elementwise<A>) {
        // Scores that need a plan of their own (a contraction and its epilogue, say) are computed
        // straight into the output, and softmax runs over them in place.
        run_plan<Arch, S>(out, node.arg);
        evaluate_node<Arch>(out, softmax_node<Axis, memory_leaf<T, S>>{{}, {{}, out}});
        return;
    }
    lower<Arch>(node.arg, [&](const auto& arg) {
        using F = compute_t<std::remove_cvref_t<decltype(arg)>, T>;
        using B = simd::batch<F, Arch>;
        constexpr std::size_t W = simd::lanes<B>, R = S::rank, n = S::extents[Axis];
        constexpr auto st = row_major<S>::strides;
        if constexpr (Axis == R - 1) {
            for_each_row<S, Axis>([&](nd_pos<R> p, std::size_t base) { softmax_row<B, n>(arg, p, out + base * n); });
        } else {
            constexpr std::size_t inner = S::extents[R - 1], NV = inner / W * W;
            for_each_row<S, Axis>([&](nd_pos<R> p, std::size_t) {
                T* const first = out + row_major<S>::offset(p.idx);  // p has axis Axis at 0
                for (std::size_t j = 0; j < NV; j += W) {
                    p.idx[R - 1] = j;
                    softmax_column<B, Axis, n, st[Axis]>(arg, p, first + j);
                }
                for (std::size_t j = NV; j < inner; ++j) {
                    p.idx[R - 1] = j;
                    softmax_column<F, Axis, n, st[Axis]>(arg, p, first + j);
                }
            });
        }
    });
}

}  // namespace detail
}  // namespace ATTEND_ARCH_NAMESPACE
}  // namespace attend
