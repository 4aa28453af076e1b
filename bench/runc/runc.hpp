// The run.c-style baseline of bench/llama2.cpp behind a small interface, so that its translation
// unit (runc.cpp) is built as run.c's `runfast` target builds run.c (-Ofast -march=native).
#pragma once

#include <memory>

namespace runc {

struct model;

// A model over llama2.c checkpoint weights (the floats after the 7-int header, not copied).
// vocab_size < 0: the classifier has its own weights, as in the file's header.
std::shared_ptr<model> make(int dim, int hidden_dim, int n_layers, int n_heads, int n_kv_heads, int vocab_size, int seq_len,
                            const float* weights);

// The logits for `token` at position `pos`.
const float* forward(model& m, int token, int pos);

}  // namespace runc
