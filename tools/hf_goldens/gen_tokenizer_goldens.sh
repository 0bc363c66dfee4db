#!/usr/bin/env bash
# Regenerates the Hugging Face tokenizer golden files (JSONL) for the tokenizer tests.
#
#   bash tools/hf_goldens/gen_tokenizer_goldens.sh OUTDIR      (e.g. tests/data/hf)
#
# Installs the npm package `tokenizers` (HF's Rust tokenizer, node binding) into a scratch folder
# outside the repo if it is not there yet: $HF_TOKENIZERS_DIR, default
# ${TMPDIR:-/tmp}/roberta-hf-tokenizers. The project never depends on it at run time.
# ROBERTA_ASSETS overrides where the shared assets are (default: ../shared/assets beside the repo).
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: bash $0 OUTDIR" >&2
  exit 2
fi
out=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/hf_tokenizers_env.sh"
exec node "$here/gen_tokenizer_goldens.js" "$out" "${ROBERTA_ASSETS:-$here/../../../shared/assets}"
