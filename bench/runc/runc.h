/* The run.c-style baseline of bench/llama2.cpp behind a small C interface. runc.c is C, built by
   the C compiler as llama2.c's Makefile builds run.c's `runfast` (gcc -Ofast; here also
   -march=native), and the same source again as C++ by the benchmark's own compiler (runc_cxx.cpp,
   namespace runc_cxx). No include guard: the declarations are read once per namespace. */

struct runc_model; /* declared apart, so that it belongs to the namespace it is read in */
typedef struct runc_model runc_model;

/* A model over llama2.c checkpoint weights (the floats after the 7-int header, not copied), or
   null when out of memory. vocab_size < 0: the classifier has its own weights, as in the file's
   header. */
runc_model* runc_make(int dim, int hidden_dim, int n_layers, int n_heads, int n_kv_heads, int vocab_size, int seq_len,
                      const float* weights);
void runc_free(runc_model* m);

/* The logits for `token` at position `pos`. */
const float* runc_forward(runc_model* m, int token, int pos);

/* The compiler that built this copy, e.g. "gcc 12.2.0". */
const char* runc_compiler(void);
