#!/usr/bin/env bash
# The test command: installs what is needed, builds, runs every CTest suite, then a short smoke
# run of each libFuzzer target. Run as root on Debian 12 with ../shared beside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --test
cmake -S . -B build
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
bash tools/fuzz.sh "${ROBERTA_FUZZ_SECONDS:-10}"
