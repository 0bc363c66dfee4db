#!/usr/bin/env bash
# Installs every Debian package that building, testing and the Python helpers need (run as root).
set -euo pipefail
packages=(cmake g++ make pkg-config libopenblas-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev
          python3-torch python3-numpy python3-regex
          librsvg2-bin  # rsvg-convert: the CLI test renders `roberta compare --plot` to PNG
          clang libclang-rt-14-dev)  # clang: the libFuzzer targets
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
