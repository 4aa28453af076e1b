// examples/llama2/model.hpp — a llama2.c checkpoint as an attend model. The file's header picks
// one of the compiled configs; the weights are read, in llama2.c's order, into heap storage whose
// shapes come from that config; forward() runs one token through attend expressions.
//
// The checkpoint (llama2.c's legacy format): 7 int32 (dim, hidden_dim, n_layers, n_heads,
// n_kv_heads, vocab_size, seq_len), then float32 weights, layer-stacked per kind, projections
// (out, in); two RoPE tables llama2.c skips; the classifier's own weights only when vocab_size is
// negative (otherwise it is the token embedding).
#pragma once

#include <attend/nn.hpp>
#include <boost/hana/at_key.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/keys.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace llama2 {

template <int Dim, int Hidden, int Layers, int Heads, int KVHeads, int Vocab, int SeqLen>
struct config {
    static constexpr std::size_t dim = Dim, hidden = Hidden, layers = Layers, heads = Heads, kv_heads = KVHeads,
                                 vocab = Vocab, seq_len = SeqLen;
    using layer = attend::nn::decoder_config<Dim, Hidden, Heads, KVHeads, SeqLen>;
    static constexpr std::size_t head = layer::head, kv_dim = layer::kv_dim;
    static constexpr int header[7] = {Dim, Hidden, Layers, Heads, KVHeads, Vocab, SeqLen};
};

// The configs of the TinyStories checkpoints published for llama2.c, and one with grouped queries.
using stories15M = config<288, 768, 6, 6, 6, 32000, 256>;
using stories42M = config<512, 1376, 8, 8, 8, 32000, 1024>;
using stories110M = config<768, 2048, 12, 12, 12, 32000, 1024>;
using gqa512 = config<512, 1376, 4, 8, 2, 32000, 512>;

// The weights in the file's order (after the header), stacked over layers, held as T (float, or
// bf16/f16 rounded from the file's floats at load).
template <class C, class T = float>
struct weights {
    static constexpr std::size_t V = C::vocab, D = C::dim, L = C::layers, KV = C::kv_dim, F = C::hidden;
    BOOST_HANA_DEFINE_STRUCT(weights,
                             (attend::tensor<T, V, D>, token_embedding),
                             (attend::tensor<T, L, D>, rms_att),
                             (attend::tensor<T, L, D, D>, wq),
                             (attend::tensor<T, L, KV, D>, wk),
                             (attend::tensor<T, L, KV, D>, wv),
                             (attend::tensor<T, L, D, D>, wo),
                             (attend::tensor<T, L, D>, rms_ffn),
                             (attend::tensor<T, L, F, D>, w1),
                             (attend::tensor<T, L, D, F>, w2),
                             (attend::tensor<T, L, F, D>, w3),
                             (attend::tensor<T, D>, rms_final));
};

// The classifier's own weights (files with a negative vocab_size).
template <class C, class T = float>
struct classifier {
    BOOST_HANA_DEFINE_STRUCT(classifier, (attend::tensor<T, C::vocab, C::dim>, wcls));
};

// Reads float weights from a checkpoint's bytes into `w`, rounding each to T when T is 16-bit
// (through a float copy that lives only while it loads); "" or what is wrong (a NaN or infinite
// weight too: it would only ever generate <unk>).
template <class Struct, class Float>
std::string load_as(Struct& w, std::span<const std::byte> bytes) {
    if constexpr (std::is_same_v<Struct, Float>) {
        auto r = attend::nn::load(w, bytes, attend::nn::validation::finite);
        return r ? std::string() : r.message;
    } else {
        auto f = std::make_unique<Float>();
        if (auto r = attend::nn::load(*f, bytes, attend::nn::validation::finite); !r) return r.message;
        boost::hana::for_each(boost::hana::keys(*f), [&](auto key) {
            auto& to = boost::hana::at_key(w, key);
            to = attend::cast<typename std::remove_cvref_t<decltype(to)>::value_type>(boost::hana::at_key(*f, key));
        });
        return {};
    }
}

// What a checkpoint's header says.
struct header {
    int dim = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, vocab = 0, seq_len = 0;
    bool shared_classifier = true;

    std::string text() const {
        return "(dim " + std::to_string(dim) + ", hidden " + std::to_string(hidden) + ", layers " + std::to_string(layers) +
               ", heads " + std::to_string(heads) + ", kv heads " + std::to_string(kv_heads) + ", vocab " + std::to_string(vocab) +
               ", seq_len " + std::to_string(seq_len) + ")";
    }
    template <class C>
    bool is() const {
        const int h[7] = {dim, hidden, layers, heads, kv_heads, vocab, seq_len};
        return std::memcmp(h, C::header, sizeof h) == 0;
    }
};

inline constexpr std::size_t header_bytes = 7 * sizeof(std::int32_t);

// Reads the header from the first bytes of a file; "" or what is wrong with it.
inline std::string parse_header(std::span<const std::byte> bytes, header& h) {
    if (bytes.size() < header_bytes)
        return "is " + std::to_string(bytes.size()) + " bytes long, too short for a llama2.c header (28 bytes)";
    int v[7];
    for (std::size_t k = 0; k < 7; ++k) v[k] = attend::nn::detail::decode<std::int32_t>(bytes.data() + 4 * k);
    h = {v[0], v[1], v[2], v[3], v[4], v[5] < 0 && v[5] != INT32_MIN ? -v[5] : v[5], v[6], v[5] > 0};
    const bool positive = v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0 && v[4] > 0 && v[6] > 0;
    if (!positive || v[5] == 0 || v[5] == INT32_MIN) return "has an invalid header " + h.text();
    return {};
}

// The bytes a checkpoint of config C has.
template <class C>
constexpr std::size_t file_bytes(bool shared_classifier) {
    std::size_t floats = attend::nn::parameter_count<weights<C>>() + C::seq_len * C::head;  // + both RoPE tables
    if (!shared_classifier) floats += C::vocab * C::dim;
    return header_bytes + floats * sizeof(float);
}

// A model of config C: weights, KV cache and the work space of a step, all on the heap; weights
// and cache held as T (float, bf16 or f16), every step computed in float.
template <class C, class T = float>
class model {
public:
    using layer_config = typename C::layer;

    // Reads the weights from a whole checkpoint file's bytes; "" or what is wrong.
    std::string load(std::span<const std::byte> file, bool shared_classifier) {
        if (file.size() != file_bytes<C>(shared_classifier))
            return std::string(file.size() < file_bytes<C>(shared_classifier) ? "is truncated: " : "is longer than its config: ") +
                   std::to_string(file.size()) + " bytes, the config needs " + std::to_string(file_bytes<C>(shared_classifier));
        w_ = std::make_unique<weights<C, T>>();
        std::size_t at = header_bytes;
        if (auto e = load_as<weights<C, T>, weights<C>>(*w_, file.subspan(at, attend::nn::byte_size<weights<C>>())); !e.empty()) return e;
        at += attend::nn::byte_size<weights<C>>() + C::seq_len * C::head * sizeof(float);
        cls_ = &w_->token_embedding;
        if (!shared_classifier) {
            own_ = std::make_unique<classifier<C, T>>();
            if (auto e = load_as<classifier<C, T>, classifier<C>>(*own_, file.subspan(at)); !e.empty()) return e;
            cls_ = &own_->wcls;
        }
        bind_layers();
        cache_ = std::make_unique<attend::nn::kv_cache<layer_config, T>[]>(C::layers);
        state_ = std::make_unique<state>();
        return {};
    }

    // Logits (vocab floats) for `token` at position `pos` (< seq_len), after the tokens before it.
    const float* forward(int token, int pos) {
        state& s = *state_;
        s.token(0) = token;
        s.x = attend::nn::embedding(w_->token_embedding, s.token);
        for (std::size_t l = 0; l < C::layers; ++l)
            attend::nn::decoder_step(s.x, layers_[l], cache_[l], static_cast<std::size_t>(pos), s.scratch);
        s.logits = attend::matmul(attend::nn::rms_norm(s.x, w_->rms_final), attend::transpose(*cls_));
        return s.logits.data();
    }

private:
    struct state {
        attend::tensor<std::int32_t, 1> token;
        attend::tensor<float, 1, C::dim> x;
        attend::nn::decoder_scratch<layer_config> scratch;
        attend::tensor<float, 1, C::vocab> logits;
    };

    // Layer l of a layer-stacked weight, as a view.
    template <std::size_t L, std::size_t... D>
    static attend::tensor_ref<const T, D...> at(const attend::tensor<T, L, D...>& t, std::size_t l) {
        return attend::tensor_ref<const T, D...>(t.data() + l * (D * ...));
    }

    void bind_layers() {
        layers_.clear();
        for (std::size_t l = 0; l < C::layers; ++l)
            layers_.push_back({at(w_->rms_att, l), at(w_->wq, l), at(w_->wk, l), at(w_->wv, l), at(w_->wo, l),
                               at(w_->rms_ffn, l), at(w_->w1, l), at(w_->w2, l), at(w_->w3, l)});
    }

    std::unique_ptr<weights<C, T>> w_;
    std::unique_ptr<classifier<C, T>> own_;
    const attend::tensor<T, C::vocab, C::dim>* cls_ = nullptr;
    std::vector<attend::nn::decoder_weights<layer_config, const T>> layers_;
    std::unique_ptr<attend::nn::kv_cache<layer_config, T>[]> cache_;
    std::unique_ptr<state> state_;
};

}  // namespace llama2
