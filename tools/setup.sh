#!/usr/bin/env bash
# Installs the Debian packages the project needs (run as root).
#   bash tools/setup.sh          what building the library and the `roberta` program needs
#   bash tools/setup.sh --python that, plus what the Python package roberta_cpp needs (pybind11,
#                                setuptools, wheel, NumPy, the Python headers)
#   bash tools/setup.sh --test   all of that, plus what the test suite needs (GoogleTest, Google
#                                Benchmark, PyTorch for the reference scripts, clang for the fuzz
#                                targets, rsvg-convert to render plots, pytest, Dask's distributed
#                                and venv for the Python package's tests, curl and node/npm for the
#                                server tests' clients)
#   bash tools/setup.sh --arm64  on x86-64: what cross-building for 64-bit ARM and running its tests
#                                under emulation needs (tools/arm64_test.sh)
set -euo pipefail
# libcpp-httplib-dev: the HTTP layer of `roberta serve` (cpp-httplib, as llama.cpp's server uses)
# libdnnl-dev: oneDNN's matmul for the matrix products (faster than ours; AMX where the CPU has it).
# Not on ARM, where it has not been measured (docs/arm64.md).
packages=(cmake g++ make pkg-config libopenblas-dev nlohmann-json3-dev libcpp-httplib-dev)
if [ "$(dpkg --print-architecture)" = amd64 ]; then packages+=(libdnnl-dev); fi
python=(python3-dev python3-pybind11 python3-setuptools python3-wheel python3-numpy)
case "${1:-}" in
  "") ;;
  --python) packages+=("${python[@]}") ;;
  --test)
    packages+=("${python[@]}" libgtest-dev libbenchmark-dev python3-torch python3-regex
               clang libclang-rt-14-dev librsvg2-bin python3-pytest python3-distributed python3-venv curl)
    # node and npm (the server tests' OpenAI client): Debian's, unless a Node.js with its own npm
    # (e.g. NodeSource's, which conflicts with Debian's npm package) is installed already.
    command -v node > /dev/null && command -v npm > /dev/null || packages+=(nodejs npm) ;;
  --arm64)
    # the :arm64 libraries beside the machine's own (Debian's multiarch), the cross compiler and
    # qemu-user; nlohmann-json is headers only, the same for both
    dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64; apt-get update -qq; }
    packages+=(crossbuild-essential-arm64 qemu-user python3-torch libopenblas-dev:arm64 libgtest-dev:arm64
               libcpp-httplib-dev:arm64) ;;
  *)
    echo "usage: bash tools/setup.sh [--python|--test|--arm64]" >&2
    exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
