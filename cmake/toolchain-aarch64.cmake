# Cross build for aarch64 (NEON) with Debian's g++-aarch64-linux-gnu (tools/deps.sh installs it
# and qemu-user). ctest runs the test programs through qemu-aarch64, with the aarch64 C and C++
# runtime libraries from /usr/aarch64-linux-gnu. Boost and xsimd: see ATTEND_HOST_HEADERS in
# CMakeLists.txt (the aarch64 preset sets it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# g++ notes at every call that passes an empty-base class that its AArch64 parameter passing
# changed in GCC 10.1 (-Wpsabi); it concerns linking with code built by older compilers only.
set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)
