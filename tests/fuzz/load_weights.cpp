// libFuzzer target for weight loading: any byte string given to nn::load either loads exactly
// (the model then saves back to the same bytes) or is refused with the model untouched — never a
// crash, never a partial write. Built with clang -fsanitize=fuzzer,address,undefined.
#include <attend/nn.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {
struct layer {
    BOOST_HANA_DEFINE_STRUCT(layer, (attend::tensor<float, 3, 5>, w), (attend::tensor<float, 5>, b));
};
struct model {
    BOOST_HANA_DEFINE_STRUCT(model, (layer, first), (attend::tensor<double, 2, 2>, mix), (attend::tensor<int, 3>, ids),
                             (layer, second));
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static auto m = std::make_unique<model>();
    std::vector<std::byte> before(attend::nn::byte_size<model>()), after(before.size());
    attend::nn::save(*m, before);
    const auto bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size);
    const bool validate = size > 0 && (data[0] & 1);
    const auto r = attend::nn::load(*m, bytes, validate ? attend::nn::validation::finite : attend::nn::validation::none);
    attend::nn::save(*m, after);
    if (r) {
        // Loaded: exactly the input, byte for byte.
        if (size != after.size() || std::memcmp(after.data(), data, size) != 0) std::abort();
    } else {
        // Refused: untouched, with a message.
        if (after != before || r.message.empty()) std::abort();
    }
    return 0;
}
