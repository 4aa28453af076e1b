// examples/llama2/sampler.hpp — run.c's sampling: greedy at temperature 0, else softmax of the
// logits / temperature and a draw from all of it or from its top-p nucleus, with run.c's
// xorshift generator, so that a seed reproduces run.c's choices.
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace llama2 {

struct sampler {
    int vocab;
    float temperature, topp;
    unsigned long long state;                      // the generator's state (the seed)
    std::vector<std::pair<float, int>> candidates;  // top-p work space
};

inline unsigned random_u32(unsigned long long& state) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return static_cast<unsigned>((state * 0x2545F4914F6CDD1Dull) >> 32);
}

inline float random_f32(unsigned long long& state) { return static_cast<float>(random_u32(state) >> 8) / 16777216.0f; }

inline int argmax(const float* p, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (p[i] > p[best]) best = i;
    return best;
}

inline void softmax(float* x, int n) {
    float max = x[0];
    for (int i = 1; i < n; ++i) max = std::max(max, x[i]);
    float sum = 0;
    for (int i = 0; i < n; ++i) sum += x[i] = std::exp(x[i] - max);
    for (int i = 0; i < n; ++i) x[i] /= sum;
}

// The first index whose cumulative probability exceeds coin (the last on rounding).
inline int sample_all(const float* p, int n, float coin) {
    float cdf = 0;
    for (int i = 0; i < n; ++i) {
        cdf += p[i];
        if (coin < cdf) return i;
    }
    return n - 1;
}

// Top-p: the most probable tokens whose probabilities first sum past topp, then a draw among them.
// Tokens below (1 - topp) / (n - 1) cannot be in the nucleus and are dropped before sorting; the
// sort is stable (as glibc's qsort, a merge sort, is for run.c). When that drops every token (a
// flat distribution and a tiny topp, or NaN probabilities from NaN weights), all are candidates:
// run.c then reads an empty array.
inline int sample_topp(const float* p, int n, float topp, std::vector<std::pair<float, int>>& c, float coin) {
    c.clear();
    const float cutoff = (1.0f - topp) / static_cast<float>(n - 1);
    for (int i = 0; i < n; ++i)
        if (p[i] >= cutoff) c.emplace_back(p[i], i);
    if (c.empty())
        for (int i = 0; i < n; ++i) c.emplace_back(p[i], i);
    std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    float cumulative = 0;
    std::size_t last = c.size() - 1;
    for (std::size_t i = 0; i < c.size(); ++i) {
        cumulative += c[i].first;
        if (cumulative > topp) {
            last = i;
            break;
        }
    }
    const float r = coin * cumulative;
    float cdf = 0;
    for (std::size_t i = 0; i <= last; ++i) {
        cdf += c[i].first;
        if (r < cdf) return c[i].second;
    }
    return c[last].second;
}

// The next token from `logits` (overwritten with probabilities unless greedy). A temperature so
// small that a scaled logit overflows (1e-38) samples as the limit does: greedily (run.c's softmax
// gave NaN there, and it picked the last token or read before its array).
inline int sample(sampler& s, float* logits) {
    if (s.temperature == 0.0f) return argmax(logits, s.vocab);
    for (int i = 0; i < s.vocab; ++i)
        if (std::isfinite(logits[i]) && !std::isfinite(logits[i] / s.temperature)) return argmax(logits, s.vocab);
    for (int i = 0; i < s.vocab; ++i) logits[i] /= s.temperature;
    softmax(logits, s.vocab);
    const float coin = random_f32(s.state);
    if (s.topp <= 0 || s.topp >= 1) return sample_all(logits, s.vocab, coin);
    return sample_topp(logits, s.vocab, s.topp, s.candidates, coin);
}

}  // namespace llama2
