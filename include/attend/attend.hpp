// attend/attend.hpp — the whole library: shapes, tensors, expressions, evaluation.
//
//   shape.hpp, check.hpp      shapes as types, their algebra, every diagnostic
//   layout.hpp                extents + strides -> offsets, for leaves, kernels and outputs
//   tensor.hpp                tensor (owning) and tensor_ref (view)
//   memory.hpp                make_huge: large tensors, weights and caches on huge-page memory
//   expr/                     lazy expression nodes: node.hpp says what a node kind is; leaves,
//                             elementwise map, index generators, reductions and softmax, matmul, views
//   eval/                     plan.hpp (the planner), alias.hpp (in place or not), the loop nests
//                             (elementwise, reduction, contraction, attention), assignment entry points
//   half.hpp                  the 16-bit storage types bf16 and f16, scalar conversions
//   simd.hpp, simd_half.hpp   the thin layer over xsimd; whole-vector 16-bit conversions
//   simd_amx.hpp              AMX tiles for bf16 products, where the target and the OS allow them
#pragma once

#include "check.hpp"
#include "config.hpp"
#include "layout.hpp"
#include "memory.hpp"
#include "eval/alias.hpp"
#include "eval/assign.hpp"
#include "eval/attention.hpp"
#include "eval/bounds.hpp"
#include "eval/contract.hpp"
#include "eval/elementwise.hpp"
#include "eval/explain.hpp"
#include "eval/lower.hpp"
#include "eval/parallel.hpp"
#include "eval/plan.hpp"
#include "eval/read.hpp"
#include "eval/reduce.hpp"
#include "expr/attention.hpp"
#include "expr/core.hpp"
#include "expr/index.hpp"
#include "expr/leaf.hpp"
#include "expr/map.hpp"
#include "expr/matmul.hpp"
#include "expr/node.hpp"
#include "expr/reduce.hpp"
#include "expr/slice.hpp"
#include "expr/types.hpp"
#include "expr/view.hpp"
#include "half.hpp"
#include "shape.hpp"
#include "simd.hpp"
#include "simd_half.hpp"
#include "simd_amx.hpp"
#include "tensor.hpp"
