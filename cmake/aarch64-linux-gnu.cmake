# Cross-compiling for 64-bit ARM Linux on an x86-64 Debian machine, with Debian's
# crossbuild-essential-arm64 and the :arm64 packages (libopenblas-dev:arm64, libgtest-dev:arm64,
# libcpp-httplib-dev:arm64; tools/setup.sh --arm64 installs them):
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# Programs and tests run through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so CTest runs them as
# on an ARM machine; QEMU_CPU picks the emulated CPU (max, neoverse-n1, cortex-a72, ...).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Headers are shared between architectures in Debian (/usr/include); libraries and CMake package
# files of ARM live under /usr/lib/aarch64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
