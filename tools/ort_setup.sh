# shellcheck shell=bash disable=SC2154
# Sourced by tools/bench_compare.sh and tools/accuracy_compare.sh (bash, set -euo pipefail, run from
# the repository's root) with $model, $scratch, $shared and $py set: makes ONNX Runtime's two models
# of the folder, the plain torch.nn export that its fusions apply to (../shared/bench/export_plain_onnx.py)
# and its dynamic int8 quantization of it, per channel (../shared/bench/quantize_int8.py), in
# $onnx/plain.onnx and $onnx/plain-int8.onnx; installs onnxruntime-node into $scratch/ort (a scratch
# folder, never a project dependency) and exports NODE_PATH for it.
"$py" -c "import onnx" 2> /dev/null || { apt-get update -qq && apt-get install -y -qq python3-onnx > /dev/null; }
# the ONNX exports of this model folder (by its path), made again when its files are newer
onnx=$scratch/onnx-$(realpath "$model" | md5sum | cut -c1-12)
mkdir -p "$onnx"
# (find -L: a Hugging Face cache snapshot's files are links; each export written whole, then renamed)
[ -f "$onnx/plain.onnx" ] && [ -z "$(find -L "$model" -maxdepth 1 -type f -newer "$onnx/plain.onnx")" ] || {
  rm -f "$onnx/plain-int8.onnx"
  "$py" "$shared/export_plain_onnx.py" --model "$model" --out "$onnx/partial.onnx" > /dev/null
  mv "$onnx/partial.onnx" "$onnx/plain.onnx"
}
[ -f "$onnx/plain-int8.onnx" ] || {
  "$py" "$shared/quantize_int8.py" "$onnx/plain.onnx" "$onnx/partial-int8.onnx" --per-channel > /dev/null
  mv "$onnx/partial-int8.onnx" "$onnx/plain-int8.onnx"
}
[ -d "$scratch/ort/node_modules/onnxruntime-node" ] ||
  npm install --prefix "$scratch/ort" --ignore-scripts --no-audit --no-fund onnxruntime-node > /dev/null 2>&1
export NODE_PATH="$scratch/ort/node_modules"
