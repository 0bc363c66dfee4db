#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 20)
# from the committed seeds in tests/fuzz/corpus. New findings are written as crash-* files.
# Usage: bash tools/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_tokenizer fuzz_tokenizer_files fuzz_safetensors fuzz_config fuzz_npy)
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DROBERTA_FUZZ=ON -DROBERTA_BUILD_TESTS=OFF > /dev/null
cmake --build build-fuzz -j2 --target "${targets[@]}" > /dev/null
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$t"/* "$work"/
  echo "== $t: ${seconds}s"
  build-fuzz/tests/fuzz/"$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 "$work" 2>&1 |
    grep -E '^(stat::number_of_executed_units|stat::new_units_added)|ERROR|SUMMARY' || true
  rm -rf "$work"
  if ls crash-* leak-* timeout-* oom-* > /dev/null 2>&1; then echo "finding in $t"; exit 1; fi
done
echo "fuzzing passed"
