#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 20)
# from the committed seeds in tests/fuzz/corpus. Findings are written to build-fuzz/findings/TARGET/.
# Usage: bash tools/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] &&
  targets=(fuzz_tokenizer fuzz_tokenizer_files fuzz_safetensors fuzz_config fuzz_npy fuzz_pipelines)
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DROBERTA_FUZZ=ON -DROBERTA_BUILD_TESTS=OFF > /dev/null
cmake --build build-fuzz -j2 --target "${targets[@]}" > /dev/null
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$t"/* "$work"/
  echo "== $t: ${seconds}s"
  # this run's findings only: a fresh folder for the files the fuzzer writes
  findings_dir=build-fuzz/findings/$t
  rm -rf "$findings_dir" && mkdir -p "$findings_dir"
  status=0
  build-fuzz/tests/fuzz/"$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$findings_dir/" "$work" > "$work.log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added)|ERROR|SUMMARY|check failed' "$work.log" || true
  rm -rf "$work" "$work.log"
  # A finding: the fuzzer's non-zero exit, or any file it wrote (crash-, leak-, timeout-, oom-, slow-unit-).
  shopt -s nullglob
  findings=("$findings_dir"/*)
  shopt -u nullglob
  if ((status != 0 || ${#findings[@]} > 0)); then echo "finding in $t (exit status $status): ${findings[*]}"; exit 1; fi
done
echo "fuzzing passed"
