// The llama2 example's model and tokenizer against tools/llama2_ref.py (NumPy, float64) on random
// checkpoints it writes: logits at each of 32 steps, the tokenizer's encodings, and bad files.
// Run as `attend_llama2_tests -- <data directory>`.
#define BOOST_TEST_MODULE llama2
#ifdef ATTEND_BOOST_TEST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>
#else
#include <boost/test/unit_test.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "llama2/model.hpp"
#include "llama2/sampler.hpp"
#include "llama2/tokenizer.hpp"

namespace {

std::string data_dir() {
    auto& suite = boost::unit_test::framework::master_test_suite();
    BOOST_TEST_REQUIRE(suite.argc >= 2, "usage: attend_llama2_tests -- <data directory>");
    return suite.argv[suite.argc - 1];
}

std::vector<std::byte> read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    BOOST_TEST_REQUIRE(f.good(), "cannot read " << path);
    std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::byte> b(c.size());
    std::copy(c.begin(), c.end(), reinterpret_cast<char*>(b.data()));
    return b;
}

template <class T>
std::vector<T> read_array(const std::string& path) {
    const auto b = read(path);
    std::vector<T> v(b.size() / sizeof(T));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = attend::nn::detail::decode<T>(b.data() + k * sizeof(T));
    return v;
}

// Runs the checkpoint `name` over the reference's 32 tokens, weights and cache held as T; each
// step's logits must lie within `tol` of the reference (NAME.logits, or NAME.bf16.logits for bf16)
// relative to that step's largest logit, and pick the same token.
template <class C, class T = float>
void check_logits(const std::string& name, double tol = 1e-4) {
    const std::string dir = data_dir();
    const auto file = read(dir + "/" + name + ".bin");
    llama2::header h;
    BOOST_TEST_REQUIRE(llama2::parse_header(file, h).empty());
    BOOST_TEST_REQUIRE(h.is<C>(), name << " has " << h.text());
    auto m = std::make_unique<llama2::model<C, T>>();
    const std::string e = m->load(file, h.shared_classifier);
    BOOST_TEST_REQUIRE(e.empty(), e);
    const auto tokens = read_array<std::int32_t>(dir + "/" + name + ".tokens");
    const auto want = read_array<double>(dir + "/" + name + (std::is_same_v<T, float> ? ".logits" : ".bf16.logits"));
    BOOST_TEST_REQUIRE(want.size() == tokens.size() * C::vocab);
    double worst = 0;
    for (std::size_t p = 0; p < tokens.size(); ++p) {
        const float* got = m->forward(tokens[p], static_cast<int>(p));
        const double* ref = want.data() + p * C::vocab;
        double scale = 0, err = 0;
        for (std::size_t v = 0; v < C::vocab; ++v) {
            scale = std::max(scale, std::abs(ref[v]));
            err = std::max(err, std::abs(double(got[v]) - ref[v]));
        }
        worst = std::max(worst, err / scale);
        BOOST_TEST(err <= tol * scale, name << " step " << p << ": max error " << err << " at scale " << scale);
        BOOST_TEST(std::max_element(got, got + C::vocab) - got == std::max_element(ref, ref + C::vocab) - ref);
    }
    BOOST_TEST_MESSAGE(name << ": largest relative logit error " << worst);
}

// run.c's merge loop as it is written: rescan every adjacent pair after each merge, take the
// highest score above -1e10, the first among equals. The reference for llama2::merge_pairs.
std::vector<int> merge_like_run_c(const llama2::tokenizer& t, std::vector<int> tokens) {
    for (;;) {
        float best = -1e10f;
        int best_id = -1;
        std::size_t best_at = 0;
        for (std::size_t k = 0; k + 1 < tokens.size(); ++k) {
            const int id = llama2::lookup(t, t.pieces[std::size_t(tokens[k])] + t.pieces[std::size_t(tokens[k + 1])]);
            if (id >= 0 && t.scores[std::size_t(id)] > best) best = t.scores[std::size_t(id)], best_id = id, best_at = k;
        }
        if (best_id < 0) return tokens;
        tokens[best_at] = best_id;
        tokens.erase(tokens.begin() + std::ptrdiff_t(best_at) + 1);
    }
}

// A tokenizer held in memory: pieces and their scores.
llama2::tokenizer make_tokenizer(std::vector<std::string> pieces, std::vector<float> scores) {
    llama2::tokenizer t;
    t.pieces = std::move(pieces);
    t.scores = std::move(scores);
    for (std::size_t i = 0; i < t.pieces.size(); ++i) {
        t.ids.emplace(t.pieces[i], int(i));
        t.max_token_length = std::max(t.max_token_length, int(t.pieces[i].size()));
    }
    return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(stories15M_logits) { check_logits<llama2::stories15M>("stories15M"); }

BOOST_AUTO_TEST_CASE(grouped_query_logits_with_own_classifier) { check_logits<llama2::gqa512>("gqa"); }

// Weights and KV cache in bf16 (the binary's -w bf16) against the reference with the same
// roundings. The cache rows are rounded from float here and from float64 there: a value within
// float32's error of a bf16 rounding boundary rounds apart by one bf16 step (2^-8), which the
// tolerance of 1e-3 allows for; the float model above stays within 1e-4.
BOOST_AUTO_TEST_CASE(bf16_weights_and_cache_logits) {
    check_logits<llama2::stories15M, attend::bf16>("stories15M", 1e-3);
    check_logits<llama2::gqa512, attend::bf16>("gqa", 1e-3);
}

// Every case of tokenizer_cases.txt: a line of hex bytes, a line of token ids.
BOOST_AUTO_TEST_CASE(tokenizer_encodes_as_run_c) {
    const std::string dir = data_dir();
    llama2::tokenizer tok;
    const std::string e = llama2::load_tokenizer(tok, (dir + "/tokenizer.bin").c_str(), 32000);
    BOOST_TEST_REQUIRE(e.empty(), e);
    std::ifstream cases(dir + "/tokenizer_cases.txt");
    std::string hex, ids, last_text;
    std::vector<int> last_want;
    int n = 0;
    while (std::getline(cases, hex) && std::getline(cases, ids)) {
        std::string text;
        for (std::size_t k = 0; k + 1 < hex.size(); k += 2) text += static_cast<char>(std::stoi(hex.substr(k, 2), nullptr, 16));
        std::vector<int> want;
        std::istringstream in(ids);
        for (int id; in >> id;) want.push_back(id);
        const std::vector<int> got = llama2::encode(tok, text, true, false);
        BOOST_TEST(got == want, "encoding of \"" << text << "\"");
        // Decoding gives the text back: after BOS, the dummy-prefix space is dropped.
        std::string back;
        for (std::size_t k = 1; k < got.size(); ++k) back += llama2::decode(tok, got[k - 1], got[k]);
        BOOST_TEST(back == text, "round trip of \"" << text << "\"");
        last_text = text, last_want = want;
        ++n;
    }
    BOOST_TEST(n >= 10);
    // A moved tokenizer keeps working (its views point into strings the vector still holds); a
    // copy would point into the original's, so it does not compile.
    static_assert(!std::is_copy_constructible_v<llama2::tokenizer> && !std::is_copy_assignable_v<llama2::tokenizer>);
    llama2::tokenizer moved = std::move(tok);
    tok = llama2::tokenizer{};
    BOOST_TEST(llama2::encode(moved, last_text, true, false) == last_want);
}

// The heap-ordered merge (O(n log n)) takes run.c's merges in run.c's order: against run.c's
// loop on random texts over a vocabulary full of equal scores (where the leftmost pair must win),
// scores at and below run.c's floor of -1e10, NaN scores and an empty piece.
BOOST_AUTO_TEST_CASE(merges_in_run_c_order) {
    std::vector<std::string> pieces{"<unk>", "<s>", "</s>"};
    std::vector<float> scores{0, 0, 0};
    const std::string letters = "abcd ";
    for (char c : letters) pieces.push_back(std::string(1, c)), scores.push_back(-1e6f);
    std::mt19937 rng(5);
    const float levels[] = {-1, -2, -3, -1e10f, -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -2.5f};
    auto random_text = [&](std::size_t n) {
        std::string s;
        for (std::size_t k = 0; k < n; ++k) s += letters[rng() % letters.size()];
        return s;
    };
    while (pieces.size() < 200) {  // pieces of 2 to 6 letters, scores from a few levels: many ties
        const std::string p = random_text(2 + rng() % 5);
        if (std::find(pieces.begin(), pieces.end(), p) != pieces.end()) continue;
        pieces.push_back(p);
        scores.push_back(levels[rng() % std::size(levels)]);
    }
    pieces.push_back(""), scores.push_back(-0.5f);  // an empty piece merges into its neighbour
    const llama2::tokenizer t = make_tokenizer(pieces, scores);
    int merged = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const std::string text = random_text(1 + rng() % 120);
        std::vector<int> singles{1};
        for (char c : text) singles.push_back(llama2::lookup(t, std::string(1, c)));
        if (trial % 7 == 0) singles.insert(singles.begin() + 1 + std::ptrdiff_t(rng() % text.size()), int(pieces.size() - 1));
        const std::vector<int> want = merge_like_run_c(t, singles);
        std::vector<int> got = singles;
        llama2::merge_pairs(t, got);
        BOOST_TEST(got == want, "merges of \"" << text << "\"");
        merged += int(singles.size() - want.size());
    }
    BOOST_TEST(merged > 1000);  // the texts did merge, many times
}

// Decoding and printing as run.c does, malformed pieces included: a piece its
// sscanf("<0x%02hhX>") reads is that byte ("<0x4G>" is 4, "<0x41>z" is "A"), others print as they
// are, up to a NUL byte in them (printf's "%s"), and a lone unprintable byte prints nothing.
BOOST_AUTO_TEST_CASE(decodes_and_prints_as_run_c) {
    const std::vector<std::string> pieces{"<unk>", "<s>", "</s>", "<0x41>", "<0x4G>", "<0x41>z", "<0x4>", "<0x>", "<0xZZ>",
                                          " hi", std::string("a\0b", 3), "<0x0A>", "<0x07>", "<0x00>", "<0x61>"};
    const llama2::tokenizer t = make_tokenizer(pieces, std::vector<float>(pieces.size(), 0.0f));
    const std::vector<std::pair<int, std::string>> decoded{
        {3, "A"}, {4, "\x04"}, {5, "A"}, {6, "\x04"}, {7, "<0x>"}, {8, "<0xZZ>"}, {9, " hi"}, {11, "\n"}, {13, std::string(1, '\0')}, {14, "a"}};
    for (const auto& [id, want] : decoded) BOOST_TEST(std::string(llama2::decode(t, 0, id)) == want, "piece " << id);
    BOOST_TEST(std::string(llama2::decode(t, 1, 9)) == "hi");  // the leading space dropped after BOS
    BOOST_TEST(llama2::decode(t, 0, int(pieces.size())).empty());
    char* buf = nullptr;
    std::size_t len = 0;
    std::FILE* out = open_memstream(&buf, &len);
    BOOST_REQUIRE(out != nullptr);
    for (int id : {3, 4, 9, 10, 11, 12, 13, 7, 14}) llama2::safe_print(llama2::decode(t, 0, id), out);
    std::fclose(out);
    BOOST_TEST(std::string(buf, len) == "A hia\n<0x>a");
    std::free(buf);
}

// Top-p sampling where the cutoff drops every token (a flat distribution and a tiny top-p; NaN
// probabilities from NaN weights) draws among all of them instead of reading an empty array.
BOOST_AUTO_TEST_CASE(top_p_with_every_token_below_the_cutoff) {
    std::vector<std::pair<float, int>> c;
    std::vector<float> flat(100, 0.01f), nan(100, std::numeric_limits<float>::quiet_NaN());
    for (float coin : {0.0f, 0.5f, 0.999f}) {
        const int t = llama2::sample_topp(flat.data(), 100, 1e-5f, c, coin);
        BOOST_TEST((t >= 0 && t < 100), "token " << t);
        const int u = llama2::sample_topp(nan.data(), 100, 0.9f, c, coin);
        BOOST_TEST((u >= 0 && u < 100), "token " << u);
    }
    std::vector<float> peaked(100, 0.001f);
    peaked[42] = 0.901f;
    BOOST_TEST(llama2::sample_topp(peaked.data(), 100, 1e-5f, c, 0.7f) == 42);
}

// Bad checkpoints are refused with a message, before anything runs.
BOOST_AUTO_TEST_CASE(bad_checkpoints_are_refused) {
    const std::string dir = data_dir();
    auto m = std::make_unique<llama2::model<llama2::stories15M>>();
    llama2::header h;
    const auto good = read(dir + "/stories15M.bin");
    BOOST_TEST(llama2::parse_header(good, h).empty());
    auto cut = good;
    cut.resize(good.size() - 4);
    BOOST_TEST(m->load(cut, true).find("is truncated") != std::string::npos);
    auto longer = good;
    longer.resize(good.size() + 4);
    BOOST_TEST(m->load(longer, true).find("is longer than its config") != std::string::npos);
    BOOST_TEST(m->load(good, false).find("is truncated") != std::string::npos);  // an own classifier is missing
    BOOST_TEST(llama2::parse_header(read(dir + "/bad_header.bin"), h).find("too short") != std::string::npos);
    BOOST_TEST(llama2::parse_header(read(dir + "/bad_negative.bin"), h).find("invalid header") != std::string::npos);
    BOOST_TEST(llama2::parse_header(read(dir + "/bad_config.bin"), h).empty());
    BOOST_TEST(!h.is<llama2::stories15M>());
}
