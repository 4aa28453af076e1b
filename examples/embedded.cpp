// attend: no-exceptions
// An embedded-style build: compiled with -fno-exceptions -fno-rtti, weights in const memory read
// through views, all storage static, nothing allocated.
#include <attend/attend.hpp>
#include <cstdio>

namespace {
// "Flash": constant tables the program only reads.
constexpr float gain_table[8] = {1.0f, 0.5f, 0.25f, 2.0f, 1.5f, 0.75f, 1.25f, 1.0f};
constexpr float bias_table[8] = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f, 0.7f, -0.8f};
attend::tensor<float, 4, 8> activations;  // static storage
}  // namespace

int main() {
    const attend::tensor_ref<const float, 8> gain(gain_table);
    const attend::tensor_ref<const float, 8> bias(bias_table);
    activations = attend::iota<1, 4, 8>() * 0.25f - attend::iota<0, 4, 8>();
    activations = attend::maximum(activations * gain + bias, 0.0f);  // a ReLU layer, in place
    float checksum = 0;
    for (std::size_t k = 0; k < activations.size; ++k) checksum += activations.data()[k];
    std::printf("embedded: relu(x * gain + bias) checksum = %.4f\n", double(checksum));
    return 0;
}
