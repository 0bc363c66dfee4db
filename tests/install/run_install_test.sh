#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds tests/install against it with CMake
# (find_package) and with pkg-config, and checks both programs tokenize "Hello world!".
# Usage: run_install_test.sh BUILD_DIR WORK_DIR TOKENIZER_DIR [SANITIZERS]
# SANITIZERS: the build's -fsanitize list, if any; the consumers must link the same runtimes.
set -euo pipefail
build=$1 work=$2 tok=$3
sanitize=${4:+-fsanitize=$4}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S "$here" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_FLAGS="$sanitize" > /dev/null
cmake --build "$work/consumer" > /dev/null
want="0 31414 232 328 2 "
got=$("$work/consumer/consumer" "$tok" "Hello world!")
[ "$got" = "$want" ] || { echo "cmake consumer printed '$got', expected '$want'"; exit 1; }
pc_dir=$(dirname "$(find "$work/prefix" -name roberta.pc)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs --static roberta)
c++ -std=c++20 $sanitize "$here/consumer.cpp" -o "$work/consumer-pc" $flags
got=$("$work/consumer-pc" "$tok" "Hello world!")
[ "$got" = "$want" ] || { echo "pkg-config consumer printed '$got', expected '$want'"; exit 1; }
echo "installed package works with find_package and pkg-config"
