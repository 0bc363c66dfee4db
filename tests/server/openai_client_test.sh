#!/usr/bin/env bash
# The official OpenAI client library (npm `openai`, installed here into a scratch folder of the
# build tree) against `roberta serve`: /v1/embeddings with the client's defaults (base64), and
# float, equal to `roberta embed --normalize` within 1e-5.
# Usage: openai_client_test.sh ROBERTA_BINARY MODEL_DIR TEXTS_FILE WORK_DIR
set -euo pipefail
binary=$1 model=$2 texts=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm > /dev/null || ! command -v node > /dev/null; then
  echo "SKIP: npm/node not installed; the OpenAI client test did not run"
  exit 0
fi
mkdir -p "$work" && work=$(cd "$work" && pwd)
if [ ! -f "$work/node_modules/openai/package.json" ]; then
  (cd "$work" && [ -f package.json ] || echo '{"private": true}' > package.json
   timeout 300 npm install --no-audit --no-fund --silent openai@^6) || {
    echo "SKIP: npm install openai failed (no registry?); the OpenAI client test did not run"
    exit 0
  }
fi
echo "openai $(node -p "require('$work/node_modules/openai/package.json').version")"
grep -v '^$' "$texts" | "$binary" embed --dtype fp32 --model "$model" --normalize > "$work/reference.jsonl"
NODE_PATH="$work/node_modules" exec /usr/bin/python3 "$here/openai_client_run.py" "$binary" "$model" "$texts" "$work"
