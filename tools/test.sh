#!/usr/bin/env bash
# The test command: installs what is needed, builds, runs every CTest suite, then a short smoke
# run of each libFuzzer target, and on x86-64 the 64-bit ARM build's tests under emulation. Run as
# root on Debian 12 with ../shared beside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --test
cmake -S . -B build
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
bash tools/fuzz.sh "${ROBERTA_FUZZ_SECONDS:-10}"
# On x86-64: the 64-bit ARM build, its tests under qemu-aarch64 (ROBERTA_ARM64=0 skips them).
if [ "$(uname -m)" = x86_64 ] && [ "${ROBERTA_ARM64:-1}" != 0 ]; then bash tools/arm64_test.sh; fi
