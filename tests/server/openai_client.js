// node openai_client.js BASE_URL TEXTS_FILE REFERENCE_JSONL: the OpenAI client against our server (npm_client_test.sh).
const fs = require('fs');
const OpenAI = require('openai');
const [baseURL, textsFile, refFile] = process.argv.slice(2);
const texts = fs.readFileSync(textsFile, 'utf8').split('\n').filter((l) => l.length > 0);
const reference = fs.readFileSync(refFile, 'utf8').split('\n').filter((l) => l.length > 0).map(JSON.parse);
let failed = 0;
const check = (ok, what) => { console.log((ok ? 'ok    ' : 'FAIL  ') + what); if (!ok) failed++; };
const maxDiff = (a, b) => a.length !== b.length ? Infinity : Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i])));

(async () => {
  const client = new OpenAI({ baseURL, apiKey: 'test-key', maxRetries: 0 });
  // The client's defaults: it asks for base64 and decodes it to floats itself.
  const res = await client.embeddings.create({ model: 'tiny-test', input: texts });
  check(res.object === 'list' && res.model === 'tiny-test', `object ${res.object}, model ${res.model}`);
  check(res.data.length === texts.length && res.data.every((d, i) => d.index === i && d.object === 'embedding'),
        `${res.data.length} embeddings in order`);
  const worst = Math.max(...res.data.map((d, i) => maxDiff(d.embedding, reference[i])));
  check(worst <= 1e-5, `default (base64) = roberta embed --normalize: max |diff| ${worst}`);
  check(res.usage.prompt_tokens > 0 && res.usage.total_tokens === res.usage.prompt_tokens,
        `usage ${JSON.stringify(res.usage)}`);
  const one = await client.embeddings.create({ model: 'tiny-test', input: texts[0], encoding_format: 'float' });
  check(maxDiff(one.data[0].embedding, reference[0]) <= 1e-5, 'encoding_format float, one string');
  const cut = await client.embeddings.create({ model: 'tiny-test', input: texts[1], dimensions: 8 });
  const norm = Math.hypot(...cut.data[0].embedding);
  check(cut.data[0].embedding.length === 8 && Math.abs(norm - 1) < 1e-5, `dimensions 8: length 8, norm ${norm}`);
  try {
    await client.embeddings.create({ model: 'tiny-test', input: Array(100).fill('x') });
    check(false, 'more than --max-client-batch-size inputs must fail');
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 413 && typeof e.error?.message === 'string',
          `too many inputs: APIError ${e.status} "${e.error?.message}"`);
  }
  try {
    await new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 }).embeddings.create({ model: 'x', input: 'x' });
    check(false, 'a wrong key must fail');
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError && e.status === 401, `wrong key: ${e.constructor.name} ${e.status}`);
  }
  console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
