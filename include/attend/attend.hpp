// attend/attend.hpp — the whole library: shapes, tensors, expressions, evaluation.
//
//   shape.hpp, check.hpp      shapes as types, their algebra, every compile-time diagnostic
//   tensor.hpp                tensor (owning) and tensor_ref (view)
//   expr/                     lazy expression nodes: leaves, elementwise map, index generators
//   eval/                     loop nests that evaluate a tree, and the assignment entry points
//   simd.hpp                  the thin layer over xsimd
#pragma once

#include "check.hpp"
#include "config.hpp"
#include "eval/assign.hpp"
#include "eval/elementwise.hpp"
#include "eval/read.hpp"
#include "expr/core.hpp"
#include "expr/index.hpp"
#include "expr/leaf.hpp"
#include "expr/map.hpp"
#include "expr/types.hpp"
#include "shape.hpp"
#include "simd.hpp"
#include "tensor.hpp"
