// Attention as a soft dictionary lookup: one query against n key-value pairs. Soft attention
// averages the values weighted by softmax(similarity); hard attention returns the value of the
// most similar key. The similarity can be any expression; here the dot product and the negative
// squared Euclidean distance -|q - k|^2.
#include <attend/attend.hpp>

#include "show.hpp"

int main() {
    using attend::tensor;
    constexpr std::size_t n = 4, d = 3;
    const tensor<float, 1, d> q{0.5f, 1.0f, -0.5f};
    const tensor<float, n, d> keys{1, 0, 0,  0, 1, 0,  0.5f, 1, -1,  -1, -1, 1};
    const tensor<float, n, 2> values{10, 0,  0, 10,  5, 5,  -10, -10};

    // Dot-product similarity: soft attention.
    const tensor<float, 1, n> dot = attend::matmul(q, attend::transpose(keys));
    const tensor<float, 1, 2> soft = attend::matmul(attend::softmax(dot), values);
    // Hard attention: a one-hot weight row at the most similar key.
    const auto one_hot = attend::cast<float>(attend::iota<1, 1, n>() == attend::argmax(dot));
    const tensor<float, 1, 2> hard = attend::matmul(one_hot, values);
    // Another similarity: -|q - k|^2 for every key, (1, d) against (n, d) broadcasting to (n, d).
    const auto diff = q - keys;
    const tensor<float, 1, n> neg_dist = attend::reshape<1, n>(-attend::sum(diff * diff));
    const tensor<float, 1, 2> soft_dist = attend::matmul(attend::softmax(neg_dist), values);

    show("q", q);
    show("keys", keys);
    show("values", values);
    show("dot", dot);
    show("soft", soft);
    show("hard", hard);
    show("neg_dist", neg_dist);
    show("soft_dist", soft_dist);
}
