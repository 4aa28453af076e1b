// runc.c again, compiled as C++ by the benchmark's compiler (runc.c itself is built by the C
// compiler, as llama2.c's Makefile builds run.c): the same loop under both, in namespace runc_cxx.
// The C headers come first, so that runc.c's own includes of them add nothing to the namespace.
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

namespace runc_cxx {
#include "runc.c"
}  // namespace runc_cxx
