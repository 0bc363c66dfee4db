// Embeddings from `roberta serve` with OpenAI's official client (npm install openai).
// Usage: node openai_client.js [URL]   (default http://127.0.0.1:8080)
const OpenAI = require('openai');

const url = process.argv[2] || 'http://127.0.0.1:8080';
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' });  // --api-key KEY on the server to require one

(async () => {
  const res = await client.embeddings.create({ model: 'demo', input: ['The cat sat on the mat.', 'A dog slept.'] });
  console.log(res.data.length, 'embeddings of', res.data[0].embedding.length, 'values; usage', res.usage);
})().catch((e) => { console.error(e.message); process.exit(1); });
