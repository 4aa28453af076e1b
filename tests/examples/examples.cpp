// Runs every example and checks the numbers it prints against a reference computed here, in
// double precision, from the inputs the example printed (so the example's constants are not
// copied, and the reference shares no code with attend).
#define BOOST_TEST_MODULE attend_examples
#ifdef ATTEND_BOOST_TEST_HEADER_ONLY
#include <boost/test/included/unit_test.hpp>
#else
#include <boost/test/unit_test.hpp>
#endif
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct array {
    std::vector<std::size_t> shape;
    std::vector<double> v;
    double operator()(std::size_t i, std::size_t j) const { return v[i * shape.back() + j]; }
};
using printed = std::map<std::string, array>;

// Runs examples/<name> and parses its `name (extents): values` lines.
printed run(const std::string& name, std::string* text = nullptr) {
    const std::string cmd = std::string(ATTEND_EXAMPLES_DIR) + "/" + name;
    std::FILE* p = popen(cmd.c_str(), "r");
    BOOST_REQUIRE_MESSAGE(p != nullptr, "cannot run " << cmd);
    std::string out;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    BOOST_REQUIRE_EQUAL(pclose(p), 0);
    if (text) *text = out;
    printed r;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        const auto open = line.find(" ("), close = line.find("):");
        if (open == std::string::npos || close == std::string::npos) continue;
        array a;
        std::istringstream dims(line.substr(open + 2, close - open - 2));
        for (std::string d; std::getline(dims, d, ',');) a.shape.push_back(std::stoul(d));
        std::istringstream values(line.substr(close + 2));
        for (double x; values >> x;) a.v.push_back(x);
        r[line.substr(0, open)] = a;
    }
    return r;
}

using matrix = std::vector<std::vector<double>>;
matrix mat(const array& a) {
    const std::size_t c = a.shape.back(), n = a.v.size() / c;
    matrix m(n, std::vector<double>(c));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < c; ++j) m[i][j] = a.v[i * c + j];
    return m;
}
matrix mul(const matrix& a, const matrix& b) {
    matrix r(a.size(), std::vector<double>(b[0].size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t k = 0; k < b.size(); ++k)
            for (std::size_t j = 0; j < b[0].size(); ++j) r[i][j] += a[i][k] * b[k][j];
    return r;
}
matrix transpose(const matrix& a) {
    matrix r(a[0].size(), std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < a[0].size(); ++j) r[j][i] = a[i][j];
    return r;
}
matrix softmax_rows(matrix s) {  // -inf entries are ignored keys
    for (auto& row : s) {
        double m = -INFINITY, z = 0;
        for (double x : row) m = std::max(m, x);
        for (double& x : row) z += (x = std::exp(x - m));
        for (double& x : row) x /= z;
    }
    return s;
}
matrix scale(matrix a, double s) {
    for (auto& row : a)
        for (double& x : row) x *= s;
    return a;
}
void expect(const array& got, const matrix& want, double tol = 1e-5) {
    std::size_t n = 0;
    for (const auto& row : want)
        for (double w : row) {
            BOOST_TEST(std::abs(got.v[n] - w) <= tol * (1 + std::abs(w)), "element " << n << ": " << got.v[n] << " vs " << w);
            ++n;
        }
    BOOST_TEST(n == got.v.size());
}
matrix attention(const matrix& q, const matrix& k, const matrix& v, const std::vector<std::vector<bool>>& ignore = {}) {
    matrix s = scale(mul(q, transpose(k)), 1 / std::sqrt(double(q[0].size())));
    for (std::size_t i = 0; i < ignore.size(); ++i)
        for (std::size_t j = 0; j < ignore[i].size(); ++j)
            if (ignore[i][j]) s[i][j] = -INFINITY;
    return mul(softmax_rows(s), v);
}
std::vector<std::vector<bool>> causal(std::size_t n) {
    std::vector<std::vector<bool>> m(n, std::vector<bool>(n));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) m[i][j] = true;
    return m;
}
matrix rows(const array& a, std::size_t first, std::size_t count) {  // rows of a flattened batch
    matrix m = mat(a);
    return matrix(m.begin() + first, m.begin() + first + count);
}

}  // namespace

BOOST_AUTO_TEST_CASE(seed000_masked_attention) {
    auto p = run("seed000_masked_attention");
    std::vector<std::vector<bool>> ignore;
    for (const auto& row : mat(p["mask"])) {
        ignore.emplace_back();
        for (double x : row) ignore.back().push_back(x != 0);
    }
    expect(p["output"], attention(mat(p["Q"]), mat(p["K"]), mat(p["V"]), ignore));
    // Rows of weights sum to one and ignored keys get none.
    const matrix w = mat(p["weights"]);
    for (std::size_t i = 0; i < w.size(); ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < w[i].size(); ++j) {
            sum += w[i][j];
            if (ignore[i][j]) BOOST_TEST(w[i][j] == 0.0);
        }
        BOOST_TEST(std::abs(sum - 1) < 1e-6);
    }
}

BOOST_AUTO_TEST_CASE(seed001_soft_and_hard) {
    auto p = run("seed001_soft_and_hard");
    const matrix q = mat(p["q"]), k = mat(p["keys"]), v = mat(p["values"]);
    const matrix dot = mul(q, transpose(k));
    expect(p["soft"], mul(softmax_rows(dot), v));
    std::size_t best = 0;
    for (std::size_t j = 1; j < k.size(); ++j)
        if (dot[0][j] > dot[0][best]) best = j;
    expect(p["hard"], matrix{v[best]});
    matrix nd(1, std::vector<double>(k.size()));
    for (std::size_t j = 0; j < k.size(); ++j)
        for (std::size_t d = 0; d < q[0].size(); ++d) nd[0][j] -= (q[0][d] - k[j][d]) * (q[0][d] - k[j][d]);
    expect(p["neg_dist"], nd);
    expect(p["soft_dist"], mul(softmax_rows(nd), v));
}

BOOST_AUTO_TEST_CASE(seed002_four_steps_and_additive) {
    auto p = run("seed002_four_steps");
    const matrix x = mat(p["X"]), q = mul(x, mat(p["W_Q"])), k = mul(x, mat(p["W_K"])), v = mul(x, mat(p["W_V"]));
    expect(p["output"], attention(q, k, v));
    const matrix qa = mul(q, mat(p["W_1"])), ka = mul(k, mat(p["W_2"])), va = mat(p["v_a"]);
    matrix add(q.size(), std::vector<double>(k.size()));
    for (std::size_t i = 0; i < q.size(); ++i)
        for (std::size_t j = 0; j < k.size(); ++j)
            for (std::size_t a = 0; a < qa[0].size(); ++a) add[i][j] += va[0][a] * std::tanh(qa[i][a] + ka[j][a]);
    expect(p["additive_scores"], add);
    expect(p["additive_output"], mul(softmax_rows(add), v));
}

BOOST_AUTO_TEST_CASE(seed003_causal_self_attention) {
    auto p = run("seed003_causal_self_attention");
    const array& x = p["x"];
    const std::size_t B = x.shape[0], T = x.shape[1];
    matrix want;
    for (std::size_t b = 0; b < B; ++b) {
        const matrix xb = rows(x, b * T, T);
        const matrix o = attention(mul(xb, mat(p["W_Q"])), mul(xb, mat(p["W_K"])), mul(xb, mat(p["W_V"])), causal(T));
        want.insert(want.end(), o.begin(), o.end());
    }
    expect(p["output"], want);
}

BOOST_AUTO_TEST_CASE(seed004_rgbd_pixels) {
    auto p = run("seed004_rgbd_pixels");
    const matrix x = mat(p["X"]);
    const matrix w = mul(x, transpose(x));
    expect(p["w"], w);
    expect(p["y_raw"], mul(w, x));
    expect(p["y_soft"], mul(softmax_rows(scale(w, 0.5)), x));
    expect(p["y_qkv"], attention(mul(x, mat(p["W_Q"])), mul(x, mat(p["W_K"])), mul(x, mat(p["W_V"]))));
    // Two heads of width 2: attention on column halves, concatenated, then W_O.
    const matrix q = mul(x, mat(p["W_Q2"])), k = mul(x, mat(p["W_K2"])), v = mul(x, mat(p["W_V2"]));
    matrix concat(x.size(), std::vector<double>(4));
    for (std::size_t h = 0; h < 2; ++h) {
        auto cols = [&](const matrix& m) {
            matrix r(m.size(), std::vector<double>(2));
            for (std::size_t i = 0; i < m.size(); ++i) r[i] = {m[i][2 * h], m[i][2 * h + 1]};
            return r;
        };
        const matrix o = attention(cols(q), cols(k), cols(v));
        for (std::size_t i = 0; i < o.size(); ++i) concat[i][2 * h] = o[i][0], concat[i][2 * h + 1] = o[i][1];
    }
    expect(p["y_heads"], mul(concat, mat(p["W_O"])));
}

BOOST_AUTO_TEST_CASE(custom_variant_is_fused_and_right) {
    std::string text;
    auto p = run("custom_variant", &text);
    BOOST_TEST(text.find("plan: attention (online softmax") != std::string::npos, text);
    BOOST_TEST(text.find("index masks: key tiles they rule out are skipped") != std::string::npos, text);
    const array &q = p["q"], &k = p["k"], &v = p["v"], &slope = p["slope"];
    const std::size_t H = q.shape[0], T = q.shape[1], D = q.shape[2], W = 4;
    matrix want;
    for (std::size_t h = 0; h < H; ++h) {
        const matrix qh = rows(q, h * T, T), kh = rows(k, h * T, T), vh = rows(v, h * T, T);
        matrix s = scale(mul(qh, transpose(kh)), 1 / std::sqrt(double(D)));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j)
                s[i][j] = (j > i || j + W <= i) ? -INFINITY : 5 * std::tanh((s[i][j] - slope.v[h] * (double(i) - double(j))) / 5);
        const matrix o = mul(softmax_rows(s), vh);
        want.insert(want.end(), o.begin(), o.end());
    }
    expect(p["output"], want);
}

BOOST_AUTO_TEST_CASE(embedded_static_model) {
    auto p = run("embedded");
    const matrix x = mat(p["x"]);
    expect(p["output"], attention(mul(x, mat(p["W_Q"])), mul(x, mat(p["W_K"])), mul(x, mat(p["W_V"])), causal(x.size())));
}
