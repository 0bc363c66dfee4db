#!/usr/bin/env bash
# A real client library from npm, installed here into a scratch folder of the build tree, against
# `roberta serve`, with `roberta embed` as the reference:
#   openai: the official OpenAI client (npm `openai`): /v1/embeddings with the client's defaults
#           (base64) and float, equal to `roberta embed --normalize` within 1e-5 (openai_client.js);
#   hf:     Hugging Face's own client (npm `@huggingface/inference`) with the server as its Inference
#           Endpoint URL, as TEI is used there: feature extraction and sentence similarity (hf_client.js).
# Usage: npm_client_test.sh openai|hf ROBERTA_BINARY MODEL_DIR TEXTS_FILE WORK_DIR
set -euo pipefail
client=$1 binary=$2 model=$3 texts=$4 work=$5
case $client in
  openai) package=openai spec=openai@^6 ;;
  hf) package=@huggingface/inference spec=@huggingface/inference@^4 ;;
  *) echo "unknown client $client (openai or hf)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm > /dev/null || ! command -v node > /dev/null; then
  echo "SKIP: npm/node not installed; the $package client test did not run"
  exit 77  # (CTest's SKIP_RETURN_CODE: shown as skipped, not passed)
fi
mkdir -p "$work" && work=$(cd "$work" && pwd)
if [ ! -f "$work/node_modules/$package/package.json" ]; then
  (cd "$work" && [ -f package.json ] || echo '{"private": true}' > package.json
   timeout 300 npm install --no-audit --no-fund --silent "$spec") || {
    echo "SKIP: npm install $spec failed (no registry?); the $package client test did not run"
    exit 77
  }
fi
echo "$package $(node -p "require('$work/node_modules/$package/package.json').version")"
grep -v '^$' "$texts" | "$binary" embed --dtype fp32 --model "$model" --normalize > "$work/reference.jsonl"
NODE_PATH="$work/node_modules" exec /usr/bin/python3 "$here/npm_client_run.py" "$client" "$binary" "$model" "$texts" "$work"
