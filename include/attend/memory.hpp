// attend/memory.hpp — storage for large objects: `make_huge<T>()` places a tensor, a model's
// weights or a KV cache on memory that the OS may back with 2 MiB pages.
//
// `huge_allocator<T>` does the same for containers.
//
// A decode step or a one-token matvec streams tens of megabytes a call. With 4 KiB pages each
// 4 KiB costs a page walk, and in a VM a walk is nested and its cost swings with the host's load
// (docs/performance.md, "huge pages").
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "check.hpp"

namespace attend {

namespace memory_detail {  // (not `detail`: that one is per target, in config.hpp's inline namespace)
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// Objects of at least a huge page: aligned to one, the size rounded up to whole pages, and
// advised for transparent huge pages (Linux, where the kernel's mode is `madvise` or `always`);
// smaller ones: aligned to a cache line.
inline std::size_t huge_alignment(std::size_t bytes, std::size_t align) noexcept {
    const std::size_t a = bytes >= huge_page_bytes ? huge_page_bytes : std::size_t{64};
    return a > align ? a : align;
}

// `bytes` of memory as above, never null: out of memory throws std::bad_alloc, or without
// exceptions stops the program with a message. Free with std::free.
inline void* huge_allocate(std::size_t bytes, std::size_t align = 64) {
    const std::size_t a = huge_alignment(bytes, align);
    const bool fits = bytes <= std::size_t(-1) - a;  // (else rounding up would wrap)
    const std::size_t rounded = bytes == 0 ? a : (bytes + a - 1) / a * a;
    void* p = fits ? std::aligned_alloc(a, rounded) : nullptr;
    if (p == nullptr) {
#if defined(__cpp_exceptions)
        throw std::bad_alloc();
#else
        check::stop("make_huge", "out of memory");
#endif
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (a == huge_page_bytes) (void)madvise(p, rounded, MADV_HUGEPAGE);  // (a hint: refused is fine)
#endif
    return p;
}

template <class T>
struct huge_delete {
    void operator()(T* p) const noexcept {
        p->~T();
        std::free(p);
    }
};
}  // namespace memory_detail

// A T on huge-page memory (see above), constructed from `args` (none: value-initialised, so a
// tensor's elements are zeros), owned by the returned pointer.
template <class T>
using huge_ptr = std::unique_ptr<T, memory_detail::huge_delete<T>>;

template <class T, class... Args>
huge_ptr<T> make_huge(Args&&... args) {
    static_assert(!std::is_array_v<T>, "attend: make_huge: T must be an object type, such as a tensor");
    auto free_memory = [](void* p) noexcept { std::free(p); };  // (if T's constructor throws)
    std::unique_ptr<void, decltype(free_memory)> memory(memory_detail::huge_allocate(sizeof(T), alignof(T)), free_memory);
    T* t = ::new (memory.get()) T(std::forward<Args>(args)...);
    memory.release();
    return huge_ptr<T>(t);
}

// The same memory for containers of run-time size (`std::vector<float, huge_allocator<float>>`).
template <class T>
struct huge_allocator {
    using value_type = T;
    huge_allocator() = default;
    template <class U>
    huge_allocator(const huge_allocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(memory_detail::huge_allocate(n * sizeof(T), alignof(T))); }
    void deallocate(T* p, std::size_t) noexcept { std::free(p); }
    template <class U>
    bool operator==(const huge_allocator<U>&) const noexcept { return true; }
};

}  // namespace attend
