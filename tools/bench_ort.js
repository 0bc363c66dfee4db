// ONNX Runtime (npm onnxruntime-node) timing of one workload, for tools/bench_compare.sh.
//   node bench_ort.js MODEL.onnx THREADS RUNS LENGTHS_JSON
// Pads the batch to its longest sequence (as ORT users do), warms up once, times RUNS runs and
// prints {"median_ms", "min_ms", "max_ms", "all_ms"}.
'use strict';
const ort = require('onnxruntime-node');

(async () => {
  const [modelPath, threads, runs, lengthsJson] = process.argv.slice(2);
  const lengths = JSON.parse(lengthsJson);
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const B = lengths.length, L = Math.max(...lengths);
  const ids = new BigInt64Array(B * L).fill(1n), mask = new BigInt64Array(B * L);
  let seed = 1;
  for (let b = 0; b < B; b++)
    for (let l = 0; l < lengths[b]; l++) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      ids[b * L + l] = l === 0 ? 0n : l === lengths[b] - 1 ? 2n : BigInt(4 + (seed % 50000));
      mask[b * L + l] = 1n;
    }
  const feeds = { input_ids: new ort.Tensor('int64', ids, [B, L]), attention_mask: new ort.Tensor('int64', mask, [B, L]) };
  await session.run(feeds);
  const ms = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const s = [...ms].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  console.log(JSON.stringify({ median_ms: median, min_ms: s[0], max_ms: s[s.length - 1], all_ms: ms }));
})().catch((e) => { console.error(e); process.exit(1); });
