// Golden encodings of HF's Rust tokenizer (npm `tokenizers`) for variants of the roberta-base
// tokenizer.json that real checkpoints use: add_prefix_space on (RobertaTokenizerFast(
// add_prefix_space=True), as NER models save it), in the pre-tokenizer only, a ByteLevel or no
// post-processor; with and without truncation (left and right). Each record carries the edits that
// make its variant (`patch`: JSON pointers and values), so a test applies the same edits.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_variant_goldens.js tests/data/hf ../shared/assets
//
// Deterministic; writes OUTDIR/variants.jsonl.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { patched, setTruncation } = require('./patch.js');

const [outDir, assets] = process.argv.slice(2);
if (!outDir || !assets) {
  console.error('usage: node gen_variant_goldens.js OUTDIR ASSETS');
  process.exit(2);
}
const base = JSON.parse(fs.readFileSync(path.join(assets, 'roberta-base-tokenizer', 'tokenizer.json'), 'utf8'));

const VARIANTS = {
  aps: [['/pre_tokenizer/add_prefix_space', true], ['/post_processor/add_prefix_space', true]],
  aps_pre_only: [['/pre_tokenizer/add_prefix_space', true]],
  pp_bytelevel: [['/post_processor',
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }]],
  pp_none: [['/post_processor', null]],
  plain: [],
  // a token added as transformers adds the entries of added_tokens.json (not special, normalized)
  added_new: [['/added_tokens/-', { id: 50265, content: '<new_tok>', single_word: false, lstrip: false, rstrip: false,
    normalized: true, special: false }]],
  // an added token the vocabulary already has (as 'the'), declared with another id: HF matches it as
  // an added token (splitting 'then') under the vocabulary's id
  added_in_vocab: [['/added_tokens/-', { id: 50265, content: 'the', single_word: false, lstrip: false, rstrip: false,
    normalized: true, special: false }]],
  // single_word: a match counts only between non-word characters (Rust regex's \w)
  single_word: [['/added_tokens/-', { id: 50265, content: 'kitty', single_word: true, lstrip: false, rstrip: false,
    normalized: true, special: false }]],
};
const SINGLE_WORD_TEXTS = ['kitty', 'a kitty b', 'kitty\u00b2', '\u00b2kitty', 'kitty\u00bd', 'kitty\u200d', '\u200dkitty',
  'kitty\u203f', 'kitty_', '_kitty', '\u24b6kitty', 'kitty\u216b', 'kitty\u0661', 'kitty\u0301', 'x kitty. kitty!'];

const TEXTS = ['hello world foo', 'hi<mask>\nyo', '<s>!!!', '\n', 'a b c d e f', 'é café  naïve', ' lead', '\u3000x y',
  'x <mask> y  ', 'don\'t  stop', '日本語 text', 'end ', 'a<new_tok>b <new_tok> c',
  // letters and digits of Unicode 15 and 16 (HF's tables are 16.0): one word, as the pre-tokenizer sees them
  'x\u{1E030}y abc \u{10D4A}\u{10D4B} \u{11F04}z \u{10D40}\u{10D41}', 'then the other'];
const PAIRS = [['hello world foo', 'bar baz'], ['a b c', '\n d e'], ['<s>x', 'y</s> z'], ['é é é', ' q']];
const TRUNC = [null, { max_length: 3, direction: 'left' }, { max_length: 5, direction: 'left' },
  { max_length: 6, direction: 'left', strategy: 'only_first' }, { max_length: 4, direction: 'right' }];

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'roberta-variants-'));
  const lines = [];
  for (const [name, patch] of Object.entries(VARIANTS)) {
    const file = path.join(tmp, name + '.json');
    fs.writeFileSync(file, JSON.stringify(patched(base, patch)));
    const tok = Tokenizer.fromFile(file);
    const inputs = name === 'single_word' ? SINGLE_WORD_TEXTS.map((t) => [t, null])
      : [...TEXTS.map((t) => [t, null]), ...PAIRS];
    for (const [a, b] of inputs)
      for (const special of [true, false])
        for (const trunc of TRUNC) {
          setTruncation(tok, trunc);
          let fields;
          try {
            const e = await tok.encode(a, b, { addSpecialTokens: special });
            fields = {
              ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(), type_ids: e.getTypeIds(),
              special_tokens_mask: e.getSpecialTokensMask(),
              sequence_ids: e.getSequenceIds().map((s) => (s === null || s === undefined ? -1 : s)),
              word_ids: e.getWordIds().map((w) => (w === null || w === undefined ? -1 : w)),
            };
          } catch (err) {
            continue;  // max_length below the special tokens: HF 0.23 and we differ by design (README)
          }
          // HF 0.23 keeps tokens when max_length cannot hold RobertaProcessing's specials; we refuse.
          const below = special && name !== 'pp_bytelevel' && name !== 'pp_none' ?
            trunc !== null && trunc.max_length < (b === null ? 2 : 4) : false;
          lines.push(JSON.stringify({ variant: name, patch, a, b, add_special_tokens: special,
            truncation: trunc && { strategy: 'longest_first', ...trunc }, below_special_count: below, ...fields }));
        }
  }
  // Windows of a long text (token classification's stride) and of a long context (QA's doc_stride),
  // as transformers asks for them: return_overflowing_tokens, each window post-processed on its own
  // (tokenizers >= 0.23.1 drop overflowing windows of a truncating encode, huggingface/tokenizers
  // #2091, so the text is tokenized whole without post-processor, cut by Encoding.truncate and
  // post-processed, as pipeline_tokenizer.js does).
  for (const name of ['aps', 'plain']) {
    const patch = VARIANTS[name];
    const spec = patched(base, patch);
    const tok = Tokenizer.fromString(JSON.stringify(spec));
    const raw = Tokenizer.fromString(JSON.stringify({ ...spec, post_processor: null }));
    const cases = [
      { a: 'The quick brown fox jumps over the lazy dog near the river bank today', b: null, max_length: 8, stride: 2 },
      { a: 'Where does he live?', b: 'He lives in Berlin and works in Paris most days of the week',
        max_length: 14, stride: 3 },
    ];
    for (const c of cases) {
      const A = await raw.encode(c.a, null, { addSpecialTokens: false });
      const B = c.b === null ? null : await raw.encode(c.b, null, { addSpecialTokens: false });
      const target = B === null ? A : B;
      const keep = c.max_length - (B === null ? 2 : 4) - (B === null ? 0 : A.getLength());
      target.truncate(keep, c.stride, 'right');
      const merged = tok.postProcess(A, B, true);
      const windows = [merged, ...merged.getOverflowing()].map((e) => ({
        ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(),
        sequence_ids: e.getSequenceIds().map((x) => (x === null || x === undefined ? -1 : x)),
      }));
      lines.push(JSON.stringify({ variant: name, patch, windows_of: c, windows }));
    }
  }
  // tokenizer.json's own truncation and padding sections, which Tokenizer.fromFile applies to encode
  // and encodeBatch (for the Python Tokenizer.from_file, python/tests/test_tokenizer.py).
  const FILE_SETTINGS = {
    file_fixed: [['/truncation', { direction: 'Right', max_length: 6, strategy: 'LongestFirst', stride: 0 }],
      ['/padding', { strategy: { Fixed: 9 }, direction: 'Left', pad_to_multiple_of: null, pad_id: 1, pad_type_id: 0,
        pad_token: '<pad>' }]],
    file_batch: [['/truncation', { direction: 'Left', max_length: 5, strategy: 'LongestFirst', stride: 0 }],
      ['/padding', { strategy: 'BatchLongest', direction: 'Right', pad_to_multiple_of: 4, pad_id: 1, pad_type_id: 0,
        pad_token: '<pad>' }]],
  };
  for (const [name, patch] of Object.entries(FILE_SETTINGS)) {
    const tok = Tokenizer.fromString(JSON.stringify(patched(base, patch)));
    // (the node binding's encodeBatch takes single texts only)
    const inputs = TEXTS.slice(0, 8).map((t) => [t, null]);
    const fields = (e) => ({ ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(),
      attention_mask: e.getAttentionMask(), special_tokens_mask: e.getSpecialTokensMask() });
    const single = [];
    for (const [a, b] of inputs) single.push(fields(await tok.encode(a, b)));
    const batch = (await tok.encodeBatch(inputs.map(([a]) => a))).map(fields);
    lines.push(JSON.stringify({ variant: name, patch, file_settings: inputs, encode: single, encode_batch: batch }));
  }
  fs.rmSync(tmp, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'variants.jsonl'), lines.join('\n') + '\n');
  console.log(`variants.jsonl: ${lines.length} records`);
}
main();
