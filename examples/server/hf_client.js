// `roberta serve` as a Hugging Face Inference Endpoint, with Hugging Face's own client
// (npm install @huggingface/inference). Usage: node hf_client.js [URL] [TASK]
// TASK: feature-extraction (default; an embedding model) or text-classification (a classifier).
const { InferenceClient } = require('@huggingface/inference');

const url = process.argv[2] || 'http://127.0.0.1:8080';
const task = process.argv[3] || 'feature-extraction';
const endpoint = new InferenceClient('unused').endpoint(url);  // the server's root URL

(async () => {
  if (task === 'feature-extraction') {
    const rows = await endpoint.featureExtraction({ inputs: ['The cat sat on the mat.', 'A dog slept.'] });
    console.log(rows.length, 'embeddings of', rows[0].length, 'values');
  } else if (task === 'text-classification') {
    const labels = await endpoint.textClassification({ inputs: 'I loved this film.' });
    console.log(labels.map((l) => `${l.label} ${l.score.toFixed(4)}`).join(', '));
  } else {
    throw new Error(`unknown task ${task}`);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
