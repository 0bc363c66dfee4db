#!/usr/bin/env bash
# Runs the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# concurrency tests (thread pool, oneDNN products from two threads, the GEMM split and its RowsDone,
# attention) and the server's tests (in-process and the `roberta serve` program under real
# clients, faults and load) under ThreadSanitizer, each in its own build folder, with 5 s per phase
# of the serve_load test.
# Usage: bash tools/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(asan tsan)
for kind in "${kinds[@]}"; do
  case $kind in
    asan)
      cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROBERTA_SANITIZE=address,undefined \
        -DROBERTA_SERVE_LOAD_SECONDS=5 > /dev/null
      cmake --build build-asan -j2
      # The CLI fixtures and parity models are made by Python; the C++ side is what is checked.
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
      ctest --test-dir build-asan --output-on-failure -j2 -E 'embed_bounded_memory|Model.MemoryReturns|gemm_.*_engine'
      # ASan keeps up to 256 MB of freed blocks in quarantine, which the memory-bound test would
      # count as growth; it (and the engine suites that include it, gemm_*_engine) runs without the
      # quarantine (LeakSanitizer still checks for leaks).
      ASAN_OPTIONS=$ASAN_OPTIONS:quarantine_size_mb=0 ctest --test-dir build-asan --output-on-failure -R 'embed_bounded_memory|Model.MemoryReturns|gemm_.*_engine'
      ;;
    tsan)
      cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROBERTA_SANITIZE=thread \
        -DROBERTA_SERVE_LOAD_SECONDS=5 > /dev/null
      cmake --build build-tsan -j2 --target concurrency_tests engine_tests roberta_cli server_tests
      # tests/server/tsan.supp: accesses made inside Debian's uninstrumented libcpp-httplib.so.
      TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/server/tsan.supp" ctest --test-dir build-tsan --output-on-failure \
        -R 'make_cli_fixtures|make_serve_model|Concurrency|ThreadPool|OneDnnGemm|BlockSplit|PackedGemm\.RowsDone|Attention|Batcher|Api\.|Metrics\.|Server\.|serve_'
      ;;
    *) echo "unknown kind $kind (asan or tsan)"; exit 2 ;;
  esac
done
echo "sanitizer runs passed"
