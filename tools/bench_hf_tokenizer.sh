#!/usr/bin/env bash
# Benchmarks Hugging Face's Rust tokenizer (npm `tokenizers`, node binding) on the corpus: the
# reference figures for roberta.cpp's tokenizer benchmark. Arguments go to bench_hf_tokenizer.js:
#
#   bash tools/bench_hf_tokenizer.sh [--corpus DIR] [--modes b1,batch_nopar,batch_rayon1,batch_multi]
#                                    [--chunk N] [--files fiction.txt,...]
#
# Installs the npm package into a scratch folder outside the repo if it is not there yet:
# $HF_TOKENIZERS_DIR, default ${TMPDIR:-/tmp}/roberta-hf-tokenizers. The last line of stdout is a
# JSON object with all figures.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/hf_goldens/hf_tokenizers_env.sh"
exec node "$here/bench_hf_tokenizer.js" "$@"
