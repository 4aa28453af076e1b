// attend/expr/index.hpp — index-generated leaves: values computed from the position, no storage.
//
// `iota<Axis, D...>()` is the index along Axis at each position of shape (D...); comparisons of
// iotas write masks (causal, sliding window) and arithmetic on them writes biases (ALiBi), and
// because they are leaves of the tree, later plans can see their structure.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../check.hpp"
#include "core.hpp"
#include "map.hpp"

namespace attend {

template <std::size_t Axis, class S>
struct iota_leaf : leaf_node {
    using kind = kind::iota;
    using value_type = std::int64_t;
    using shape_type = S;
    static constexpr std::size_t axis = Axis;
    static constexpr bool weak = false;
    static constexpr int precision = 0;
};

template <std::size_t Axis, std::size_t... D>
constexpr auto iota() {
    static_assert(check::axis_in_range<op::iota, Axis, shape<D...>>::ok, "attend: iota: Axis must be an axis of the shape");
    static_assert(check::extents_positive<D...>::ok, "attend: iota: every extent must be at least 1");
    return iota_leaf<Axis, shape<D...>>{};
}

// True where key j lies after query i (j > i): the positions a causal model must ignore.
template <std::size_t NQ, std::size_t NK>
constexpr auto causal_mask() {
    return iota<1, NQ, NK>() > iota<0, NQ, NK>();
}

}  // namespace attend
