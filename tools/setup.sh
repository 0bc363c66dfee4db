#!/usr/bin/env bash
# Installs the Debian packages the project needs (run as root).
#   bash tools/setup.sh          what building the library and the `roberta` program needs
#   bash tools/setup.sh --test   that, plus what the test suite needs (GoogleTest, Google
#                                Benchmark, PyTorch and NumPy for the reference scripts, clang for
#                                the fuzz targets, rsvg-convert to render plots, curl and
#                                node/npm for the server tests' clients)
set -euo pipefail
# libcpp-httplib-dev: the HTTP layer of `roberta serve` (cpp-httplib, as llama.cpp's server uses)
packages=(cmake g++ make pkg-config libopenblas-dev nlohmann-json3-dev libcpp-httplib-dev)
if [ "${1:-}" = "--test" ]; then
  packages+=(libgtest-dev libbenchmark-dev python3-torch python3-numpy python3-regex
             clang libclang-rt-14-dev librsvg2-bin curl nodejs npm)
elif [ -n "${1:-}" ]; then
  echo "usage: bash tools/setup.sh [--test]" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
