// examples/llama2/tokenizer.hpp — llama2.c's tokenizer: its tokenizer.bin, byte-pair encoding by
// merge scores with byte fallback, and decoding with run.c's printing rules.
#pragma once

#include <sys/stat.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llama2 {

struct tokenizer {
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::unordered_map<std::string_view, int> ids;  // views into `pieces`
    int max_token_length = 0;
    // Movable (the vector keeps its strings where they are), not copyable: a copy's views would
    // point into the original's strings.
    tokenizer() = default;
    tokenizer(tokenizer&&) = default;
    tokenizer& operator=(tokenizer&&) = default;
    tokenizer(const tokenizer&) = delete;
    tokenizer& operator=(const tokenizer&) = delete;
};

// Reads a tokenizer.bin of `vocab` tokens: int32 max_token_length, then per token float32 score,
// int32 length, the piece's bytes (little-endian). "" or what is wrong with the file.
inline std::string load_tokenizer(tokenizer& t, const char* path, int vocab) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) return std::string("cannot open tokenizer ") + path + ": " + std::strerror(errno);
    struct stat st {};
    if (::fstat(::fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {  // (a directory opens, then fails to read)
        std::fclose(f);
        return std::string("tokenizer ") + path + " is not a readable regular file";
    }
    auto fail = [&](const std::string& what) {
        std::fclose(f);
        return std::string("tokenizer ") + path + ": " + what;
    };
    auto read_i32 = [&](std::int32_t& v) { return std::fread(&v, 4, 1, f) == 1; };
    std::int32_t max_len = 0;
    if (!read_i32(max_len)) return fail("too short for a header");
    if (max_len <= 0 || max_len > (1 << 20)) return fail("invalid maximum token length " + std::to_string(max_len));
    tokenizer out;
    out.max_token_length = max_len;
    out.pieces.reserve(std::size_t(vocab));
    for (int i = 0; i < vocab; ++i) {
        float score = 0;
        std::int32_t len = 0;
        if (std::fread(&score, 4, 1, f) != 1 || !read_i32(len)) return fail("truncated at token " + std::to_string(i));
        if (len < 0 || len > max_len)
            return fail("token " + std::to_string(i) + " has the invalid length " + std::to_string(len) +
                        " (the maximum is " + std::to_string(max_len) + ")");
        std::string piece(std::size_t(len), '\0');
        if (len > 0 && std::fread(piece.data(), 1, piece.size(), f) != piece.size())
            return fail("truncated in token " + std::to_string(i));
        out.pieces.push_back(std::move(piece));
        out.scores.push_back(score);
    }
    // run.c reads the model's vocabulary and ignores the rest: here the rest is a wrong file.
    if (const long at = std::ftell(f); std::fgetc(f) != EOF)
        return fail("continues past the model's " + std::to_string(vocab) + " tokens (" +
                    std::to_string(static_cast<long long>(st.st_size) - at) + " bytes more)");
    std::fclose(f);
    t = std::move(out);
    for (int i = 0; i < vocab; ++i) t.ids.emplace(t.pieces[std::size_t(i)], i);  // views into t's own strings
    return {};
}

inline int lookup(const tokenizer& t, std::string_view piece) {
    const auto it = t.ids.find(piece);
    return it == t.ids.end() ? -1 : it->second;
}

// Merges adjacent tokens in run.c's order — the pair whose merged piece scores highest (above
// run.c's floor of -1e10), the leftmost among equal scores — until no pair merges. Tokens sit in
// a linked list and candidate pairs in a heap keyed by (score, left position); an entry whose
// tokens have since changed is skipped when it surfaces. O(n log n), where run.c rescans all
// pairs after every merge (O(n^2); docs/performance.md has the times).
inline void merge_pairs(const tokenizer& t, std::vector<int>& tokens) {
    const std::size_t n = tokens.size(), none = n;
    std::vector<std::size_t> next(n), prev(n);
    for (std::size_t k = 0; k < n; ++k) next[k] = k + 1, prev[k] = k == 0 ? none : k - 1;
    struct candidate {
        float score;
        std::size_t left, right;
        int a, b, merged;  // the tokens the merge was found for, and their merge
        bool operator<(const candidate& o) const {  // heap top: highest score, then leftmost
            return score < o.score || (score == o.score && left > o.left);
        }
    };
    std::priority_queue<candidate> heap;
    std::string pair;
    auto offer = [&](std::size_t left, std::size_t right) {
        if (left == none || right == none) return;
        pair = t.pieces[std::size_t(tokens[left])];
        pair += t.pieces[std::size_t(tokens[right])];
        const int id = lookup(t, pair);
        if (id >= 0 && t.scores[std::size_t(id)] > -1e10f)  // run.c's first best score; NaN never wins
            heap.push({t.scores[std::size_t(id)], left, right, tokens[left], tokens[right], id});
    };
    for (std::size_t k = 0; k + 1 < n; ++k) offer(k, k + 1);
    std::vector<bool> gone(n, false);
    while (!heap.empty()) {
        const candidate c = heap.top();
        heap.pop();
        if (gone[c.left] || next[c.left] != c.right || tokens[c.left] != c.a || tokens[c.right] != c.b)
            continue;  // stale: a side merged since
        tokens[c.left] = c.merged;
        gone[c.right] = true;
        next[c.left] = next[c.right];
        if (next[c.left] != none) prev[next[c.left]] = c.left;
        offer(prev[c.left], c.left);
        offer(c.left, next[c.left]);
    }
    std::size_t kept = 0;
    for (std::size_t k = 0; k < n; ++k)
        if (!gone[k]) tokens[kept++] = tokens[k];
    tokens.resize(kept);
}

// run.c's encoding: BOS (1) if asked; a dummy-prefix space for non-empty text; each UTF-8 code
// point as its token, else its bytes as byte tokens (byte + 3); then merges of adjacent tokens,
// the best score first (the leftmost among equals), until none applies (merge_pairs); EOS (2)
// if asked.
inline std::vector<int> encode(const tokenizer& t, std::string_view text, bool bos, bool eos) {
    std::vector<int> tokens;
    if (bos) tokens.push_back(1);
    if (!text.empty()) {
        const int space = lookup(t, " ");
        if (space >= 0) tokens.push_back(space);
    }
    for (std::size_t i = 0; i < text.size();) {
        std::size_t n = 1;  // a lead byte and at most three continuation bytes
        while (i + n < text.size() && n < 4 && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
        const int id = lookup(t, text.substr(i, n));
        if (id >= 0) {
            tokens.push_back(id);
        } else {
            for (std::size_t k = 0; k < n; ++k) tokens.push_back(static_cast<unsigned char>(text[i + k]) + 3);
        }
        i += n;
    }
    merge_pairs(t, tokens);
    if (eos) tokens.push_back(2);
    return tokens;
}

// The text of `token` after `prev`: a piece's leading space is dropped after BOS, and a piece
// that run.c's `sscanf(piece, "<0x%02hhX>", ...)` reads stands for that byte — the same call, so
// malformed pieces decode as there ("<0x4G>" is the byte 4, "<0x41>z" is "A"). An id outside the
// vocabulary gives "".
inline std::string_view decode(const tokenizer& t, int prev, int token) {
    static const std::array<char, 256> bytes = [] {
        std::array<char, 256> b{};
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i);
        return b;
    }();
    if (token < 0 || std::size_t(token) >= t.pieces.size()) return {};
    std::string_view piece = t.pieces[std::size_t(token)];
    if (prev == 1 && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    unsigned char value = 0;  // (the piece is a suffix of a std::string: NUL-terminated)
    if (std::sscanf(piece.data(), "<0x%02hhX>", &value) == 1) return {bytes.data() + value, 1};
    return piece;
}

// run.c's safe_printf: the piece as a C string (up to a NUL byte in it), nothing when that is
// empty or a lone byte that is neither printable nor white space (control bytes from byte tokens).
inline void safe_print(std::string_view piece, std::FILE* out) {
    piece = piece.substr(0, piece.find('\0'));
    if (piece.empty()) return;
    if (piece.size() == 1) {
        const unsigned char c = static_cast<unsigned char>(piece[0]);
        if (!(std::isprint(c) || std::isspace(c))) return;
    }
    std::fwrite(piece.data(), 1, piece.size(), out);
}

}  // namespace llama2
