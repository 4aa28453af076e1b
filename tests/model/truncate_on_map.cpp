// Test shim, loaded with LD_PRELOAD: right after the program maps the file that
// ATTEND_TRUNCATE_ON_MAP names, cuts that file to half its size, as another process could while
// the program reads it (tests/CMakeLists.txt: llama2.truncated_while_mapped).
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>

namespace {
using mmap_fn = void* (*)(void*, size_t, int, int, int, off_t);

void* map_then_truncate(const char* name, void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
    const auto real = reinterpret_cast<mmap_fn>(dlsym(RTLD_NEXT, name));
    void* p = real(addr, length, prot, flags, fd, offset);
    const char* target = std::getenv("ATTEND_TRUNCATE_ON_MAP");
    struct stat mapped {}, named {};
    if (p != MAP_FAILED && fd >= 0 && target != nullptr && ::fstat(fd, &mapped) == 0 && ::stat(target, &named) == 0 &&
        mapped.st_dev == named.st_dev && mapped.st_ino == named.st_ino)
        if (::truncate(target, mapped.st_size / 2) != 0) std::abort();
    return p;
}
}  // namespace

extern "C" void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
    return map_then_truncate("mmap", addr, length, prot, flags, fd, offset);
}
extern "C" void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
    return map_then_truncate("mmap64", addr, length, prot, flags, fd, offset);
}
