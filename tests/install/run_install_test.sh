#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds tests/install against it with CMake
# (find_package) and with pkg-config, and checks both programs tokenize "Hello world!"; checks the
# installed `roberta` holds no path of the source tree and finds its installed demo model; builds
# the README's C++ example (examples/cpp) the same way and runs it on the installed demo model.
# Usage: run_install_test.sh BUILD_DIR WORK_DIR TOKENIZER_DIR [SANITIZERS]
# SANITIZERS: the build's -fsanitize list, if any; the consumers must link the same runtimes.
set -euo pipefail
build=$1 work=$2 tok=$3
sanitize=${4:+-fsanitize=$4}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
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

# The program: no absolute path of this source tree inside (debug info aside, which a Debug build
# adds; sanitizers record source file names, so the check is skipped with them) ...
roberta="$work/prefix/bin/roberta"
if [ -z "$sanitize" ]; then
  objcopy --strip-debug "$roberta" "$work/roberta-stripped"
  n=$(grep -c -F "$src" "$work/roberta-stripped" || true)
  [ "$n" = 0 ] || { echo "bin/roberta holds the source path $src ($n times)"; exit 1; }
fi
# ... and, run from elsewhere without --model or ROBERTA_MODEL, it uses share/roberta/models/demo.
[ -f "$work/prefix/share/roberta/models/demo/model.safetensors" ] || { echo "the demo model is not installed"; exit 1; }
info=$(cd / && env -u ROBERTA_MODEL "$roberta" info)
grep -q "^model folder *$work/prefix/share/roberta/models/demo\$" <<< "$info" || { echo "roberta info: $info"; exit 1; }
answer=$(cd / && env -u ROBERTA_MODEL "$roberta" fill-mask --json "a <mask> b")
/usr/bin/python3 -c 'import json, sys; a = json.loads(sys.argv[1]); assert len(a) == 5 and "token_str" in a[0], a' "$answer" \
  || { echo "installed roberta fill-mask printed '$answer'"; exit 1; }

# examples/cpp: the cosine matrix of three normalized embeddings (the values themselves are tested
# against sentence-transformers in the engine's tests): 3 x 3, symmetric, 1 on the diagonal.
cmake -S "$src/examples/cpp" -B "$work/examples" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_FLAGS="$sanitize" > /dev/null
cmake --build "$work/examples" > /dev/null
cosines=$("$work/examples/embed" "$work/prefix/share/roberta/models/demo")
/usr/bin/python3 -c '
import sys
m = [[float(x) for x in line.split()] for line in sys.argv[1].splitlines()]
assert len(m) == 3 and all(len(r) == 3 for r in m), m
assert all(abs(m[i][i] - 1) < 1e-3 for i in range(3)), m
assert all(m[i][j] == m[j][i] and -1 < m[i][j] < 1 for i in range(3) for j in range(3) if i != j), m
' "$cosines" || { echo "examples/cpp/embed printed '$cosines'"; exit 1; }
echo "installed package works with find_package and pkg-config; bin/roberta finds share/roberta/models/demo; examples/cpp runs"
