// ONNX Runtime (npm onnxruntime-node) last hidden states of prepared inputs, for
// tools/accuracy_compare.sh:
//   node ort_hidden.js MODEL.onnx THREADS INPUTS.jsonl OUT.f32
// Each line of INPUTS.jsonl holds {"ids": [...]}; each sequence runs on its own (batch 1, no
// padding) and its (length x hidden) float32 values are appended to OUT.f32, little-endian.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

(async () => {
  const [modelPath, threads, inputsPath, outPath] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const out = fs.openSync(outPath, 'w');
  const lines = fs.readFileSync(inputsPath, 'utf8').split('\n').filter((l) => l.trim());
  for (const [n, line] of lines.entries()) {
    const ids = JSON.parse(line).ids;
    if (!Array.isArray(ids) || ids.length === 0)
      throw new Error(`${inputsPath}:${n + 1}: "ids" is not a non-empty list`);
    const L = ids.length;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, L]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(L).fill(1n), [1, L]),
    };
    const result = await session.run(feeds);
    const hidden = result[session.outputNames[0]].data;
    fs.writeSync(out, Buffer.from(hidden.buffer, hidden.byteOffset, hidden.byteLength));
  }
  fs.closeSync(out);
})().catch((e) => { console.error(e); process.exit(1); });
