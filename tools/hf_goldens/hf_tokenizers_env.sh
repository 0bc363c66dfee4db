# Sourced by the scripts that run Hugging Face's tokenizer: installs the npm package `tokenizers`
# (HF's Rust tokenizer, node binding) into a scratch folder outside the repo if it is not there
# yet ($HF_TOKENIZERS_DIR, default ${TMPDIR:-/tmp}/roberta-hf-tokenizers) and sets NODE_PATH.
# The project never depends on it at run time.
hf_tokenizers_version=0.23.2
hf_tokenizers_dir=${HF_TOKENIZERS_DIR:-${TMPDIR:-/tmp}/roberta-hf-tokenizers}
installed=$(node -p "try{require('$hf_tokenizers_dir/node_modules/tokenizers/package.json').version}catch(e){''}" 2>/dev/null || true)
if [[ "$installed" != "$hf_tokenizers_version" ]]; then
  echo "installing tokenizers@$hf_tokenizers_version into $hf_tokenizers_dir" >&2
  mkdir -p "$hf_tokenizers_dir"
  npm install --prefix "$hf_tokenizers_dir" --no-save --no-audit --no-fund "tokenizers@$hf_tokenizers_version" >&2
fi
export NODE_PATH="$hf_tokenizers_dir/node_modules${NODE_PATH:+:$NODE_PATH}"
