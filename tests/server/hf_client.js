// node hf_client.js EMBED_URL SIMILARITY_URL CLASSIFY_URL TEXTS_FILE REFERENCE_JSONL CLASSIFY_JSONL:
// Hugging Face's client (@huggingface/inference) with our servers as its Inference Endpoints
// (npm_client_test.sh).
const fs = require('fs');
const { InferenceClient, InferenceClientProviderApiError } = require('@huggingface/inference');
const [embedURL, similarityURL, classifyURL, textsFile, refFile, classifyFile] = process.argv.slice(2);
const texts = fs.readFileSync(textsFile, 'utf8').split('\n').filter((l) => l.length > 0);
const jsonLines = (file) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0).map(JSON.parse);
const reference = jsonLines(refFile);
const labels = jsonLines(classifyFile);  // roberta classify --all --json: every label, best first
let failed = 0;
const check = (ok, what) => { console.log((ok ? 'ok    ' : 'FAIL  ') + what); if (!ok) failed++; };
const maxDiff = (a, b) => a.length !== b.length ? Infinity : Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i])));
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);  // the reference rows are normalised

(async () => {
  const hf = new InferenceClient('test-key');
  const out = await hf.endpoint(embedURL).featureExtraction({ inputs: texts });
  check(out.length === texts.length && Math.max(...out.map((row, i) => maxDiff(row, reference[i]))) <= 1e-5,
        `featureExtraction of ${texts.length} texts = roberta embed --normalize`);
  const one = await hf.endpoint(embedURL).featureExtraction({ inputs: texts[0] });
  check(one.length === 1 && maxDiff(one[0], reference[0]) <= 1e-5, 'featureExtraction of one text');
  const sims = await hf.endpoint(similarityURL).sentenceSimilarity({
    inputs: { source_sentence: texts[0], sentences: texts.slice(1) } });
  const want = reference.slice(1).map((r) => dot(reference[0], r));
  check(sims.length === want.length && maxDiff(sims, want) <= 1e-5,
        `sentenceSimilarity = cosines of roberta embed rows: ${sims.slice(0, 3)} / ${want.slice(0, 3)}`);
  const sameLabels = (got, want) => got.length === want.length &&
      got.every((g, i) => g.label === want[i].label && Math.abs(g.score - want[i].score) <= 1e-5);
  const classes = await hf.endpoint(classifyURL).textClassification({ inputs: texts[0] });
  check(sameLabels(classes, labels[0]), `textClassification = roberta classify --all: ${JSON.stringify(classes)}`);
  const best = await hf.endpoint(classifyURL).textClassification({ inputs: texts[1], parameters: { top_k: 1 } });
  check(sameLabels(best, labels[1].slice(0, 1)), `textClassification top_k 1: ${JSON.stringify(best)}`);
  try {
    await new InferenceClient('wrong').endpoint(embedURL).featureExtraction({ inputs: 'x' });
    check(false, 'a wrong key must fail');
  } catch (e) {
    check(e instanceof InferenceClientProviderApiError && e.httpResponse?.status === 401,
          `wrong key: ${e.constructor.name} ${e.httpResponse?.status}`);
  }
  try {
    await hf.endpoint(similarityURL).sentenceSimilarity({ inputs: { source_sentence: 'a', sentences: [] } });
    check(false, 'no sentences must fail');
  } catch (e) {
    check(e.httpResponse?.status === 400 && /cannot be empty/.test(e.message), `no sentences: ${e.message}`);
  }
  console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
