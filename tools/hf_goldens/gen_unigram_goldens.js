// Golden encodings of HF's Rust tokenizer (npm `tokenizers`) for the SentencePiece Unigram
// tokenizers that make_unigram_tokenizer.py writes: OUTDIR/unigram/tokenizer.json (XLM-RoBERTa-style:
// Precompiled nmt_nfkc normalizer, Metaspace, Unigram, TemplateProcessing) and
// OUTDIR/unigram_byte_fallback/tokenizer.json (Unigram with byte_fallback, no Precompiled, the
// Llama/Moshi converters' decoder); and variants of them by `patch`, as gen_wordpiece_goldens.js
// makes them. Also what the Precompiled normalizer of unigram/tokenizer.json does with every code
// point and with some strings of several.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_unigram_goldens.js tests/data/hf
//
// Deterministic; reads OUTDIR/unigram{,_byte_fallback}/tokenizer.json, writes OUTDIR/unigram.jsonl,
// OUTDIR/unigram_decode.jsonl, OUTDIR/precompiled_nmt_nfkc_maps.txt and
// OUTDIR/precompiled_strings.jsonl.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer, precompiled } = require('tokenizers');
const { patched, setTruncation, encodingFields } = require('./patch.js');

const [outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node gen_unigram_goldens.js OUTDIR');
  process.exit(2);
}
const BASES = Object.fromEntries(['unigram', 'unigram_byte_fallback'].map((name) =>
  [name, JSON.parse(fs.readFileSync(path.join(outDir, name, 'tokenizer.json'), 'utf8'))]));

const metaspace = (extra) => ({ type: 'Metaspace', replacement: '\u2581', ...extra });
const addedToken = (id, content, extra = {}) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: true, special: false, ...extra });
const NEXT = BASES.unigram.model.vocab.length;  // 2002: the first id after <mask>
const ADDED = [['<extra>'], ['[Keep]', { normalized: false, rstrip: true }], ['Naïve', { lstrip: true }],
  ['ｆｕｌｌ'], ['New York']].map(([content, extra], k) => ['/added_tokens/-', addedToken(NEXT + k, content, extra)]);
const EMPTY = { type: 'Sequence', normalizers: [] };

// name: [base, patch, texts] (texts: 'all' = TEXTS and PAIRS, each truncated as TRUNC says; 'short'
// = SHORT untruncated, for variants that only change how the file is read)
const VARIANTS = {
  base: ['unigram', [], 'all'],
  // the published xlm-roberta-base file's Metaspace (before prepend_scheme and split): "always", split
  metaspace_legacy: ['unigram', [['/pre_tokenizer', metaspace({ add_prefix_space: true })],
    ['/decoder', metaspace({ add_prefix_space: true })]], 'all'],
  // add_prefix_space false needs prepend_scheme "never" beside it (HF refuses it alone)
  metaspace_legacy_false: ['unigram', [['/pre_tokenizer', metaspace({ add_prefix_space: false })],
    ['/decoder', metaspace({ add_prefix_space: false })]], 'short'],
  metaspace_legacy_false_never: ['unigram', [['/pre_tokenizer', metaspace({ add_prefix_space: false,
    prepend_scheme: 'never' })], ['/decoder', metaspace({ add_prefix_space: false, prepend_scheme: 'never' })]], 'short'],
  prepend_first: ['unigram', [['/pre_tokenizer/prepend_scheme', 'first'], ['/decoder/prepend_scheme', 'first']], 'all'],
  prepend_never: ['unigram', [['/pre_tokenizer/prepend_scheme', 'never'], ['/decoder/prepend_scheme', 'never']], 'all'],
  no_split: ['unigram', [['/pre_tokenizer/split', false]], 'all'],
  // transformers' non-legacy Llama / Moshi pre-tokenizer
  no_split_first: ['unigram', [['/pre_tokenizer/split', false], ['/pre_tokenizer/prepend_scheme', 'first'],
    ['/decoder/prepend_scheme', 'first']], 'all'],
  no_normalizer: ['unigram', [['/normalizer', null]], 'all'],
  // the Sequence with Precompiled alone: Strip and Replace emptied (a patch cannot remove them; the
  // generator checks that HF gives the same as Sequence [Precompiled] and as a bare Precompiled)
  precompiled_only: ['unigram', [['/normalizer/normalizers/1', EMPTY], ['/normalizer/normalizers/2', EMPTY]], 'all'],
  // the layout of transformers 4.0's SpmConverter (late 2020, when xlm-roberta-base's tokenizer.json
  // was made): Precompiled alone (here as in precompiled_only), WhitespaceSplit before a Metaspace
  // with add_prefix_space and str_rep
  xlmr_2020_layout: ['unigram', [['/normalizer/normalizers/1', EMPTY], ['/normalizer/normalizers/2', EMPTY],
    ['/pre_tokenizer', { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' },
      metaspace({ str_rep: '\u2581', add_prefix_space: true })] }],
    ['/decoder', metaspace({ str_rep: '\u2581', add_prefix_space: true })]], 'all'],
  no_post_processor: ['unigram', [['/post_processor', null]], 'all'],
  no_decoder: ['unigram', [['/decoder', null]], 'short'],
  // non-special added tokens: normalized (matched by their normalized content in the normalized
  // text) and not; with lstrip, with rstrip; one with a space inside
  added_tokens: ['unigram', ADDED, 'all'],
  unk_id_null: ['unigram', [['/model/unk_id', null]], 'all'],
  // Unigram with byte_fallback: unknown characters (fused into one run) become their UTF-8 bytes
  byte_fallback: ['unigram_byte_fallback', [], 'all'],
  // the decoder a plain SpmConverter with handle_byte_fallback would write: <0xNN> pieces stay as they are
  byte_fallback_metaspace_decoder: ['unigram_byte_fallback', [['/decoder', BASES.unigram.decoder]], 'all'],
  // transformers' MoshiConverter (a Unigram with byte fallback): Replace " " -> "▁", Metaspace
  // "first" without split
  byte_fallback_moshi: ['unigram_byte_fallback', [['/normalizer', { type: 'Sequence', normalizers: [
    { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] }],
  ['/pre_tokenizer', metaspace({ prepend_scheme: 'first', split: false })]], 'all'],
  byte_fallback_off: ['unigram_byte_fallback', [['/model/byte_fallback', false]], 'all'],
  byte_fallback_unk_id_null: ['unigram_byte_fallback', [['/model/unk_id', null]], 'all'],
};

const CORPUS_LINES = [  // lines of the shared corpus (fiction 100, 3780, 4233; nonfiction 53)
  'talking again. “Dinah’ll miss me very much to-night, I should think!”',
  'similar thing at Tübingen, and laid considerable stress on the',
  'of old Phœnician decorations as I passed through, and it struck me that',
  '_Frederick Douglass_, the writer of the following Narrative. He was a'];
const TEXTS = ['The quick brown fox jumps over the lazy dog.', 'Hello world', 'HELLO WORLD',
  'Don’t stop — “quoted” and ‘single’ words… 1234567890 3.14 1,000', ...CORPUS_LINES,
  'The café costs €5 — naïve résumé', '!!! ??? ... --- ((x)) [y] {z}',
  // spaces: multiple, leading, trailing, only; tabs and line breaks
  '  leading spaces', 'trailing spaces   ', 'a  b   c    d', '   ', ' ', '', '\t', '\n', '\r\n',
  'tab\there\nnew\r\nline', 'a\t\tb \t c\n\nd', ' \n x', 'x\u00a0\u00a0y a\u00a0b\u3000c\u2028d\u2003e',
  '\u3000x\u3000', 'ｈｅｌｌｏ\u3000ｗｏｒｌｄ',
  // NFKC
  'ＡＢｃ１ ﬁne ① ™ ½ Ⅻ \u212b ǅ ㍿ ＜mask＞', 'Ⅷ ⅷ ㈱ ㌀ … ‥ ﷺ x', '𝐀𝐁𝐂 𝟏𝟐 K \u212a \u2126',
  // combining sequences, graphemes of 6 bytes or more
  'e\u0301 ｅ\u0301 a\u0301\u0316 A\u030a é', 'e\u0301\u0302\u0303 ｅ\u0301\u0302 ﬁ\u0301 ①\u0301 \u0301x  \u0301',
  '\u1100\u1161\u11a8 \u1100\u1161 한\u11a8 한국어',
  // scripts the vocabulary does not cover
  '日本語の文章 中文 東京', 'カタカナ ひらがな ｶﾀｶﾅ ｶﾞｷﾞ ﾊﾟ', '😀 👍🏽 👨\u200d👩\u200d👧\u200d👦 🇯🇵 🏳\ufe0f\u200d🌈',
  'مرحبا بالعالم שלום עולם', 'नमस्ते क्षत्रिय สวัสดีครับ',
  // control, zero-width and format characters
  'a\u0000b\u0001c\u007fd\u0085e', '\u0001abc ab\u0001 \u0001\u0002', 'a\u200bb\u200dc\ufeffd \u200b \ufeffHi',
  'co\u00adoperate', '\u0000',
  // unknown pieces: alone and in runs (fused into one token)
  '𠀀', '𠀀𠀁𠀂 x𠀀y 𠀀 𠀁', '😀', '😀😀 x😀', '\u0378\ue000', 'x\u0378y',
  // added tokens in the text
  '<mask>', 'Hello <mask>!', 'Hello   <mask>', 'Hello\t<mask> x', 'x<mask>y <mask><mask>', '\u3000<mask>',
  '<s> </s> <pad> <unk>', '<s>x</s>', '< mask> <MASK>',
  // quote pairs (Albert's and XLNet's converters replace them; this one does not), the meta symbol
  "''quoted'' and ``this``", '▁', '▁▁x ▁y', 'x▁y',
  // long words
  'supercalifragilisticexpialidocious', 'pneumonoultramicroscopicsilicovolcanoconiosis',
  'abc'.repeat(30),
  // the added tokens of added_tokens, as written and as normalized
  'a<extra>b <EXTRA> [Keep] [keep]x Naïve  Naïve New York ｆｕｌｌ full', 'x [Keep]   y  Nai\u0308ve<extra>New  York'];
const PAIRS = [['Hello world', 'How are you?'], ['', 'only B'], ['日本語', 'x y'],
  ['The quick brown fox', 'jumps over the lazy dog'], ['  spaced  ', '<mask> b']];
const SHORT = ['Hello world', '  a  b ', '', ' ', 'x <mask> y', '𠀀𠀁 x', 'ＡＢｃ１ ﬁ', 'e\u0301 ｅ\u0301',
  '\u0001abc', '▁x ▁▁y', 'Hello, “World”!', 'The café — naïve'];
const TRUNC = [null, { max_length: 6, direction: 'right' }, { max_length: 5, direction: 'left' },
  { max_length: 7, direction: 'right', strategy: 'only_first' }];

const errorText = (err) => String(err.message || err);

async function encodeRecord(tok, head, a, b, special, trunc) {
  setTruncation(tok, trunc);
  const record = { ...head, a, b, add_special_tokens: special,
    truncation: trunc && { strategy: 'longest_first', ...trunc } };
  let e;
  try {
    e = await tok.encode(a, b, { addSpecialTokens: special });
  } catch (err) {
    return { ...record, error: errorText(err) };
  }
  Object.assign(record, encodingFields(e));
  if (!trunc) {
    record.decoded = await tok.decode(e.getIds(), false);
    record.decoded_skip_special = await tok.decode(e.getIds(), true);
  }
  return record;
}

// Hand-made id lists for the decoders: the Metaspace decoder (a "▁" of the first token is dropped,
// whatever that token is), ByteFallback (bytes that are valid UTF-8 together, and not), specials.
// A token is a vocabulary string, or a number (an id; 99999 is outside the vocabulary).
const DECODE_LISTS = {
  meta_alone: ['▁'], meta_twice: ['▁', '▁'], meta_then_x: ['▁', 'x'], meta_between: ['▁the', '▁', '▁the'],
  no_meta_first: ['s', '▁the'], specials_around: ['<s>', '▁the', '</s>'], specials_meta: ['<s>', '▁', '</s>'],
  pair_like: ['<s>', '▁the', '</s>', '</s>', '▁and', '</s>'], mask_inside: ['▁the', '<mask>', '▁the', '<mask>'],
  mask_alone: ['<mask>'], unk_around: ['<unk>', '▁the', '<unk>'], pads: ['<pad>', '<pad>'],
  out_of_vocab: [99999], out_of_vocab_inside: ['▁the', 99999, '▁and'],
  bytes_valid: ['<0xE6>', '<0x97>', '<0xA5>'], bytes_in_words: ['▁the', '<0xE6>', '<0x97>', '<0xA5>', '▁the'],
  bytes_cut: ['<0xE6>', '<0x97>'], bytes_ascii_then_invalid: ['<0x61>', '<0xFF>'], byte_ff: ['<0xFF>'],
  bytes_emoji: ['<0xF0>', '<0x9F>', '<0x98>', '<0x80>'], byte_space_first: ['<0x20>', '▁the'],
  bytes_of_meta: ['<0xE2>', '<0x96>', '<0x81>', 'x'], bytes_specials: ['<s>', '<0x41>', '</s>'],
  bytes_split_by_special: ['<0xC3>', '<s>', '<0xA9>'], meta_then_byte: ['▁', '<0x41>'],
  newline_byte: ['<0x0A>', '▁the'], bytes_then_unk: ['<0xE6>', '<unk>', '<0x97>', '<0xA5>'],
};
const DECODE_VARIANTS = ['base', 'metaspace_legacy', 'prepend_first', 'prepend_never', 'no_decoder', 'byte_fallback',
  'byte_fallback_metaspace_decoder'];

// What the Precompiled normalizer makes of each code point alone: "cp cps" (hex), "cp -" when it
// removes it; only the code points it changes.
function precompiledMaps(normalizer) {
  const hex = (s) => Array.from(s, (c) => c.codePointAt(0).toString(16)).join(' ');
  const out = [];
  for (let cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const s = String.fromCodePoint(cp);
    const t = normalizer.normalizeString(s);
    if (t !== s) out.push(`${cp.toString(16)} ${t === '' ? '-' : hex(t)}`);
  }
  return out.join('\n') + '\n';
}

// Strings of several code points through the same normalizer: graphemes (looked up whole when
// shorter than 6 bytes, else code point by code point), CR LF, removals and expansions.
const STRINGS = ['e\u0301', 'ｅ\u0301', 'a\u0301\u0316', 'A\u030a', 'e\u0301\u0302', 'e\u0301\u0302\u0303',
  'ｅ\u0301\u0302', 'ﬁ\u0301', '①\u0301', '\u0301', '\u0301\u0301', ' \u0301', 'x\u0301y\u0301',
  'ｶﾞ', 'ｶ\uff9e', 'ﾊﾟ', 'ｶﾀｶﾅ', '\u1100\u1161', '\u1100\u1161\u11a8', '한\u11a8', '\u1100\u1161\u11a8\u11a8',
  '\r\n', '\r\n\r\n', 'a\r\nb', '\r', '\n\r', 'a\tb\nc', 'x\u0085y', 'x\u2028y',
  '\u0001', '\u0001abc', 'a\u0001b', 'ab\u0001', '\u0001\u0002ab', 'a\u0001\u0002', '™\u001eg', 'a\u200bb', '\ufeffab',
  'a\u200db', 'co\u00adop', 'ﷺ', 'xﷺy', '㍿', '™x', '½', 'ǅ', '…', 'Ⅻ', 'ＡＢｃ１', '＜mask＞', '\u212b', '\u212a',
  'a\u00a0\u00a0b', '\u3000x', '👨\u200d👩\u200d👧', '🇯🇵', '👍🏽', 'क्ष', 'नमस्ते', 'สวัสดี', '𝐀𝐁', '①②', 'ｈｅｌｌｏ'];

async function precompiledStrings(charsmapB64) {
  const normalizer = { type: 'Precompiled', precompiled_charsmap: charsmapB64 };
  // no pre-tokenizer; a BPE without vocabulary nor merges: every normalized character is a token of
  // its own, whose offsets are HF's alignment of that character to the text
  const tok = Tokenizer.fromString(JSON.stringify({ version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer, pre_tokenizer: null, post_processor: null, decoder: null,
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, vocab: { '<unk>': 0 }, merges: [] } }));
  const n = tok.getNormalizer();
  const lines = [];
  for (const text of STRINGS) {
    const normalized = n.normalizeString(text);
    const e = await tok.encode(text, null, { addSpecialTokens: false });
    const offsets = e.getOffsets();
    if (offsets.length !== Array.from(normalized).length) throw new Error('not one token per character: ' + text);
    lines.push(JSON.stringify({ text, normalized, offsets }));
  }
  return lines.join('\n') + '\n';
}

async function main() {
  const lines = [];
  const tokenizers = {};
  for (const [name, [baseName, patch, set]] of Object.entries(VARIANTS)) {
    const head = { variant: name, base: baseName, patch };
    let tok;
    try {
      tok = Tokenizer.fromString(JSON.stringify(patched(BASES[baseName], patch)));
    } catch (err) {  // a file HF refuses to load: one record
      lines.push(JSON.stringify({ ...head, a: null, b: null, error: errorText(err), stage: 'load' }));
      continue;
    }
    tokenizers[name] = tok;
    const inputs = set === 'all' ? [...TEXTS.map((t) => [t, null]), ...PAIRS] : SHORT.map((t) => [t, null]);
    for (const [a, b] of inputs)
      for (const special of [true, false])
        for (const trunc of set === 'all' ? TRUNC : [null])
          lines.push(JSON.stringify(await encodeRecord(tok, head, a, b, special, trunc)));
  }
  // the Sequence [Precompiled] and a bare Precompiled give what precompiled_only gives
  const charsmap = BASES.unigram.normalizer.normalizers[0];
  setTruncation(tokenizers.precompiled_only, null);
  for (const normalizer of [{ type: 'Sequence', normalizers: [charsmap] }, charsmap]) {
    const tok = Tokenizer.fromString(JSON.stringify({ ...BASES.unigram, normalizer }));
    for (const [a, b] of [...TEXTS.map((t) => [t, null]), ...PAIRS]) {
      const [x, y] = [await tok.encode(a, b), await tokenizers.precompiled_only.encode(a, b)];
      if (JSON.stringify([x.getIds(), x.getOffsets()]) !== JSON.stringify([y.getIds(), y.getOffsets()]))
        throw new Error('precompiled_only differs from ' + JSON.stringify(normalizer).slice(0, 40) + ' for ' + a);
    }
  }
  fs.writeFileSync(path.join(outDir, 'unigram.jsonl'), lines.join('\n') + '\n');

  const decodes = [];
  for (const name of DECODE_VARIANTS) {
    const [baseName, patch] = VARIANTS[name];
    const tok = tokenizers[name];
    for (const [list, tokens] of Object.entries(DECODE_LISTS)) {
      const ids = tokens.map((t) => (typeof t === 'number' ? t : tok.tokenToId(t)));
      if (ids.includes(null) || ids.includes(undefined)) continue;  // a piece this vocabulary lacks
      for (const skip of [false, true])
        decodes.push(JSON.stringify({ variant: name, base: baseName, patch, source: 'hand:' + list, ids,
          skip_special_tokens: skip, text: await tok.decode(ids, skip) }));
    }
  }
  fs.writeFileSync(path.join(outDir, 'unigram_decode.jsonl'), decodes.join('\n') + '\n');

  const bytes = Array.from(Buffer.from(charsmap.precompiled_charsmap, 'base64'));
  fs.writeFileSync(path.join(outDir, 'precompiled_nmt_nfkc_maps.txt'), precompiledMaps(precompiled(bytes)));
  fs.writeFileSync(path.join(outDir, 'precompiled_strings.jsonl'), await precompiledStrings(charsmap.precompiled_charsmap));
  console.log(`wrote ${lines.length} records, ${decodes.length} decode records, ${STRINGS.length} strings`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
