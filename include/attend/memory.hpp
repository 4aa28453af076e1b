// attend/memory.hpp — storage for large objects: `make_huge<T>()` places a tensor, a model's
// weights or a KV cache on memory that the OS may back with 2 MiB pages.
//
// `huge_allocator<T>` does the same for containers.
//
// A decode step or a one-token matvec streams tens of megabytes a call. With 4 KiB pages each
// 4 KiB costs a page walk, and in a VM a walk is nested and its cost swings with the host's load
// (docs/performance.md, "huge pages").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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

// Objects of at least a huge page: on pages aligned to one (the start staggered: next_stagger),
// the size rounded up to whole pages, and advised for transparent huge pages (Linux, where the
// kernel's mode is `madvise` or `always`); smaller ones: aligned to a cache line.
inline std::size_t huge_alignment(std::size_t bytes, std::size_t align) noexcept {
    const std::size_t a = bytes >= huge_page_bytes ? huge_page_bytes : std::size_t{64};
    return a > align ? a : align;
}

// Where in its first page an object of a huge page or more starts: successive ones 4 KiB + 192 B
// further in (16 offsets in turn), so that two caches or weights read side by side (a layer's K
// and V) do not fall on the same cache sets row for row. Zen 5, 8 x 4 heads over a float cache of
// 8000 keys, K and V each on its own pages: 0.83-0.95x the time of both at a page's start
// (docs/performance.md, 2026-12-02 afternoon).
inline constexpr std::size_t stagger_bytes = 4096 + 192, staggers = 16;
// Whether huge_allocate(bytes, align) staggers the start (then it lies in the first huge page).
inline bool staggered(std::size_t bytes, std::size_t align) noexcept {
    return huge_alignment(bytes, align) == huge_page_bytes && align <= 64;
}
inline std::size_t next_stagger() noexcept {
    static std::atomic<std::size_t> count{0};
    return count.fetch_add(1, std::memory_order_relaxed) % staggers * stagger_bytes;
}

// `bytes` of memory as above (huge-page memory staggered), never null: out of memory throws
// std::bad_alloc, or without exceptions stops the program with a message. Free with huge_free.
inline void* huge_allocate(std::size_t bytes, std::size_t align = 64) {
    const std::size_t a = huge_alignment(bytes, align);
    const std::size_t skip = staggered(bytes, align) ? next_stagger() : 0;
    const bool fits = bytes <= std::size_t(-1) - a - skip;  // (else rounding up would wrap)
    const std::size_t rounded = bytes == 0 ? a : (bytes + skip + a - 1) / a * a;
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
    return static_cast<char*>(p) + skip;
}
// Frees what huge_allocate(bytes, align) gave.
inline void huge_free(void* p, std::size_t bytes, std::size_t align = 64) noexcept {
    if (p != nullptr && staggered(bytes, align))
        p = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{huge_page_bytes - 1});
    std::free(p);
}

template <class T>
struct huge_delete {
    void operator()(T* p) const noexcept {
        p->~T();
        huge_free(p, sizeof(T), alignof(T));
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
    auto free_memory = [](void* p) noexcept { memory_detail::huge_free(p, sizeof(T), alignof(T)); };  // (if T's constructor throws)
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
    void deallocate(T* p, std::size_t n) noexcept { memory_detail::huge_free(p, n * sizeof(T), alignof(T)); }
    template <class U>
    bool operator==(const huge_allocator<U>&) const noexcept { return true; }
};

}  // namespace attend
