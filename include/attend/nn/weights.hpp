// attend/nn/weights.hpp — weights as plain structs, reflected with Boost.Hana: load from and save
// to a flat little-endian buffer or file, count parameters, print a summary — no per-model code.
//
//   struct block {
//       BOOST_HANA_DEFINE_STRUCT(block, (attend::tensor<float, 64, 64>, w_q), (attend::tensor<float, 64, 64>, w_k));
//   };
//
// Members are tensors, views, or nested reflected structs, stored in declaration order, each
// tensor row-major. Loading checks everything before it writes anything: a buffer or file of the
// wrong size, a short read, or (when asked) a non-finite value returns an error and leaves the
// model untouched.
#pragma once

#include <bit>
#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../tensor.hpp"

namespace attend::nn {

enum class status { ok, too_short, too_long, non_finite, cannot_open, read_failed, write_failed, invalid_bool };

// The outcome of a load or save: `if (auto r = nn::load(model, bytes); !r) puts(r.message.c_str());`
struct result {
    nn::status status = status::ok;
    std::string message;
    explicit operator bool() const noexcept { return status == status::ok; }
};

enum class validation { none, finite };

namespace detail {
template <class M>
inline constexpr bool is_weight = is_tensor<M> || is_tensor_ref<M>;

template <class W>
inline constexpr bool is_model = boost::hana::Struct<W>::value;

template <class W, class F>
constexpr void for_each_member_type(F&& f) {
    boost::hana::for_each(boost::hana::accessors<W>(), [&](auto pair) {
        using M = std::remove_cvref_t<decltype(boost::hana::second(pair)(std::declval<W&>()))>;
        f(static_cast<M*>(nullptr));
    });
}

// f(name, tensor) for every weight, nested structs flattened as "outer.inner", in storage order.
template <class W, class F>
void for_each_weight(W& w, F&& f, const std::string& prefix = "") {
    using U = std::remove_const_t<W>;
    static_assert(is_model<U>, "attend::nn: a weights type must be reflected with BOOST_HANA_DEFINE_STRUCT or BOOST_HANA_ADAPT_STRUCT");
    boost::hana::for_each(boost::hana::accessors<U>(), [&](auto pair) {
        const std::string name = prefix + boost::hana::to<const char*>(boost::hana::first(pair));
        auto& member = boost::hana::second(pair)(w);
        using M = std::remove_cvref_t<decltype(member)>;
        if constexpr (is_model<M>) {
            for_each_weight(member, f, name + ".");
        } else {
            static_assert(is_weight<M>, "attend::nn: every member of a weights struct is a tensor, a tensor_ref or a reflected struct");
            f(name, member);
        }
    });
}

// Little-endian element encoding, whatever the host's byte order.
template <class T>
T decode(const std::byte* p) noexcept {
    std::byte b[sizeof(T)];
    std::memcpy(b, p, sizeof(T));
    if constexpr (std::endian::native == std::endian::big)
        for (std::size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(b[k], b[sizeof(T) - 1 - k]);
    T v;
    std::memcpy(&v, b, sizeof(T));
    return v;
}
template <class T>
void encode(std::byte* p, T v) noexcept {
    std::memcpy(p, &v, sizeof(T));
    if constexpr (std::endian::native == std::endian::big)
        for (std::size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(p[k], p[sizeof(T) - 1 - k]);
}

template <class M>
std::string extents_text() {
    std::string s = "(";
    for (std::size_t k = 0; k < M::rank; ++k) s += (k ? ", " : "") + std::to_string(M::shape_type::extents[k]);
    return s + ")";
}
}  // namespace detail

// Number of scalar parameters of a weights type (all tensors, nested structs included).
template <class W>
constexpr std::size_t parameter_count() {
    std::size_t n = 0;
    detail::for_each_member_type<W>([&]<class M>(M*) {
        if constexpr (detail::is_model<M>) n += parameter_count<M>();
        else n += M::size;
    });
    return n;
}

// Bytes of the flat little-endian encoding.
template <class W>
constexpr std::size_t byte_size() {
    std::size_t n = 0;
    detail::for_each_member_type<W>([&]<class M>(M*) {
        if constexpr (detail::is_model<M>) n += byte_size<M>();
        else n += M::size * sizeof(typename M::value_type);
    });
    return n;
}

// Loads every weight from `bytes` (exactly byte_size<W>() of them). On any error nothing is written.
template <class W>
result load(W& model, std::span<const std::byte> bytes, validation check = validation::none) {
    constexpr std::size_t need = byte_size<W>();
    if (bytes.size() != need)
        return {bytes.size() < need ? status::too_short : status::too_long,
                "attend::nn::load: " + std::to_string(bytes.size()) + " bytes given, the model has " + std::to_string(need)};
    {  // a bool is the byte 0 or 1 (another byte read as bool is undefined), whatever the validation
        result bad;
        std::size_t at = 0;
        detail::for_each_weight(model, [&](const std::string& name, auto& t) {
            using T = typename std::remove_cvref_t<decltype(t)>::value_type;
            for (std::size_t k = 0; k < t.size; ++k, at += sizeof(T))
                if constexpr (std::is_same_v<std::remove_cv_t<T>, bool>)
                    if (bad && std::to_integer<unsigned>(bytes[at]) > 1)
                        bad = {status::invalid_bool, "attend::nn::load: " + name + "[" + std::to_string(k) + "] is the byte " +
                                                         std::to_string(std::to_integer<unsigned>(bytes[at])) + ", not a bool (0 or 1)"};
        });
        if (!bad) return bad;
    }
    if (check == validation::finite) {
        result bad;
        std::size_t at = 0;
        detail::for_each_weight(model, [&](const std::string& name, auto& t) {
            using T = typename std::remove_cvref_t<decltype(t)>::value_type;
            for (std::size_t k = 0; k < t.size; ++k, at += sizeof(T))
                if constexpr (std::is_floating_point_v<T> || is_half<T>)  // (16-bit values tested as float)
                    if (bad && !std::isfinite(static_cast<std::conditional_t<is_half<T>, float, T>>(detail::decode<T>(bytes.data() + at))))
                        bad = {status::non_finite, "attend::nn::load: " + name + "[" + std::to_string(k) + "] is not finite"};
        });
        if (!bad) return bad;
    }
    std::size_t at = 0;
    detail::for_each_weight(model, [&](const std::string& name, auto& t) {
        using Tensor = std::remove_cvref_t<decltype(t)>;
        using T = typename Tensor::value_type;
        static_assert(!std::is_const_v<std::remove_pointer_t<decltype(t.data())>>,
                      "attend::nn::load: cannot load into a view of const weights");
        (void)name;
        for (std::size_t k = 0; k < t.size; ++k, at += sizeof(T)) t.data()[k] = detail::decode<T>(bytes.data() + at);
    });
    return {};
}

// Writes every weight to `bytes` (at least byte_size<W>() of them).
template <class W>
result save(const W& model, std::span<std::byte> bytes) {
    constexpr std::size_t need = byte_size<W>();
    if (bytes.size() < need)
        return {status::too_short, "attend::nn::save: " + std::to_string(bytes.size()) + " bytes given, the model needs " + std::to_string(need)};
    std::size_t at = 0;
    detail::for_each_weight(model, [&](const std::string&, const auto& t) {
        using T = typename std::remove_cvref_t<decltype(t)>::value_type;
        for (std::size_t k = 0; k < t.size; ++k, at += sizeof(T)) detail::encode<T>(bytes.data() + at, t.data()[k]);
    });
    return {};
}

// Loads from a file of exactly byte_size<W>() bytes; the file is read whole before the model is
// touched.
template <class W>
result load_file(W& model, const char* path, validation check = validation::none) {
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) return {status::cannot_open, std::string("attend::nn::load_file: cannot open ") + path + ": " + std::strerror(errno)};
    constexpr std::size_t need = byte_size<W>();
    std::vector<std::byte> bytes(need + 1);  // one more: a longer file is detected, not truncated
    const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), f);
    const int error = errno;
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) return {status::read_failed, std::string("attend::nn::load_file: reading ") + path + " failed: " + std::strerror(error)};
    if (got < need)
        return {status::too_short, std::string("attend::nn::load_file: ") + path + " is truncated: " + std::to_string(got) +
                                       " bytes, the model has " + std::to_string(need)};
    if (got > need)
        return {status::too_long, std::string("attend::nn::load_file: ") + path + " is longer than the model's " + std::to_string(need) + " bytes"};
    return load(model, std::span<const std::byte>(bytes.data(), need), check);
}

template <class W>
result save_file(const W& model, const char* path) {
    std::vector<std::byte> bytes(byte_size<W>());
    save(model, bytes);
    std::FILE* f = std::fopen(path, "wb");
    if (f == nullptr) return {status::cannot_open, std::string("attend::nn::save_file: cannot open ") + path + ": " + std::strerror(errno)};
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) return {status::write_failed, std::string("attend::nn::save_file: writing ") + path + " failed"};
    return {};
}

// One line per weight (name, shape, parameters) and the total.
template <class W>
std::string summary(const W& model) {
    std::string s;
    detail::for_each_weight(model, [&](const std::string& name, const auto& t) {
        using M = std::remove_cvref_t<decltype(t)>;
        s += name + " " + detail::extents_text<M>() + " " + std::to_string(M::size) + "\n";
    });
    return s + "total " + std::to_string(parameter_count<std::remove_const_t<W>>()) + " parameters, " +
           std::to_string(byte_size<std::remove_const_t<W>>()) + " bytes\n";
}

}  // namespace attend::nn
