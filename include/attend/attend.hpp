// attend/attend.hpp — the whole library: shapes, tensors, expressions, evaluation.
//
//   shape.hpp, check.hpp      shapes as types, their algebra, every compile-time diagnostic
//   tensor.hpp                tensor (owning) and tensor_ref (view)
//   expr/                     lazy expression nodes: leaves, elementwise map, index generators,
//                             reductions and softmax, matmul, views
//   eval/                     the planner and its loop nests (elementwise, reduction, contraction),
//                             and the assignment entry points
//   simd.hpp                  the thin layer over xsimd
#pragma once

#include "check.hpp"
#include "config.hpp"
#include "eval/assign.hpp"
#include "eval/attention.hpp"
#include "eval/bounds.hpp"
#include "eval/contract.hpp"
#include "eval/elementwise.hpp"
#include "eval/explain.hpp"
#include "eval/lower.hpp"
#include "eval/parallel.hpp"
#include "eval/read.hpp"
#include "eval/reduce.hpp"
#include "expr/attention.hpp"
#include "expr/core.hpp"
#include "expr/index.hpp"
#include "expr/leaf.hpp"
#include "expr/map.hpp"
#include "expr/matmul.hpp"
#include "expr/reduce.hpp"
#include "expr/types.hpp"
#include "expr/view.hpp"
#include "shape.hpp"
#include "simd.hpp"
#include "tensor.hpp"
