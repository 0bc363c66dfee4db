#!/usr/bin/env bash
# Models named by Hugging Face Hub id and found in a local cache, checked against Hugging Face's own
# reading of the cache (npm @huggingface/hub's scanCacheDir, installed here into WORK_DIR).
# Usage: hub_cache_test.sh ROBERTA_BINARY PYTHON_PACKAGE_DIR SECOND_MODEL_DIR WORK_DIR
set -euo pipefail
binary=$1 pythonpath=$2 second=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm > /dev/null || ! command -v node > /dev/null; then
  echo "SKIP: npm/node not installed; the hub cache test did not run"
  exit 77
fi
mkdir -p "$work" && work=$(cd "$work" && pwd)
if [ ! -f "$work/node_modules/@huggingface/hub/package.json" ]; then
  (cd "$work" && { [ -f package.json ] || echo '{"private": true}' > package.json; } &&
   timeout 300 npm install --no-audit --no-fund --silent "@huggingface/hub@^2") || {
    echo "SKIP: npm install @huggingface/hub failed (no registry?); the hub cache test did not run"
    exit 77
  }
fi
echo "@huggingface/hub $(node -p "require('$work/node_modules/@huggingface/hub/package.json').version")"
NODE_PATH="$work/node_modules" PYTHONPATH="$pythonpath" exec /usr/bin/python3 "$here/hub_cache_test.py" \
  "$binary" "$here/../../models/demo" "$second" "$work"
