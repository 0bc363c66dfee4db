#!/usr/bin/env node
// Writes golden JSONL files made with Hugging Face's Rust tokenizer (npm `tokenizers`, node
// binding) for the roberta-base tokenizer. Run it through gen_tokenizer_goldens.sh, which installs
// the npm package into a scratch folder outside the repo and sets NODE_PATH.
//
//   node gen_tokenizer_goldens.js OUTDIR [ASSETS_DIR]
//
// ASSETS_DIR defaults to $ROBERTA_ASSETS, else /work/shared/assets. It must hold
// roberta-base-tokenizer/tokenizer.json, tokenizer-cases.txt, tokenizer-cases-extra.jsonl and
// tokenizer-cases.expected.jsonl. The output is deterministic: running it twice gives identical
// files. See README.md beside this file for what each file holds.
'use strict';

const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node gen_tokenizer_goldens.js OUTDIR [ASSETS_DIR]');
  process.exit(2);
}
const assets = process.argv[3] || process.env.ROBERTA_ASSETS || '/work/shared/assets';
const tokenizerJson = path.join(assets, 'roberta-base-tokenizer', 'tokenizer.json');
fs.mkdirSync(outDir, { recursive: true });

const HF_VERSION = require('tokenizers/package.json').version;

// ---------------------------------------------------------------------------------------------
// Inputs

function readCases() {
  const txt = fs.readFileSync(path.join(assets, 'tokenizer-cases.txt'), 'utf8').split('\n');
  if (txt.length && txt[txt.length - 1] === '') txt.pop();
  const extra = fs
    .readFileSync(path.join(assets, 'tokenizer-cases-extra.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.length)
    .map((l) => JSON.parse(l));
  return { txt, extra, all: txt.concat(extra) };
}

function readExpected() {
  return fs
    .readFileSync(path.join(assets, 'tokenizer-cases.expected.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.length)
    .map((l) => JSON.parse(l));
}

// ---------------------------------------------------------------------------------------------
// Helpers

function freshTokenizer() {
  // A new instance per file so that truncation / padding settings never leak between sections.
  return Tokenizer.fromFile(tokenizerJson);
}

// HF gives null sequence ids for special and padding tokens; we write -1 (the C++ convention).
function encodingFields(e) {
  return {
    ids: e.getIds(),
    tokens: e.getTokens(),
    offsets: e.getOffsets(),
    type_ids: e.getTypeIds(),
    special_tokens_mask: e.getSpecialTokensMask(),
    attention_mask: e.getAttentionMask(),
    sequence_ids: e.getSequenceIds().map((s) => (s === null || s === undefined ? -1 : s)),
  };
}

function batchFields(encs) {
  const keys = ['ids', 'tokens', 'offsets', 'type_ids', 'special_tokens_mask', 'attention_mask',
    'sequence_ids'];
  const f = encs.map(encodingFields);
  const out = {};
  for (const k of keys) out[k] = f.map((x) => x[k]);
  return out;
}

class JsonlWriter {
  constructor(name) {
    this.name = name;
    this.file = path.join(outDir, name);
    this.lines = [];
  }
  push(rec) {
    this.lines.push(JSON.stringify(rec));
  }
  close() {
    fs.writeFileSync(this.file, this.lines.length ? this.lines.join('\n') + '\n' : '');
    console.log(`${this.name}: ${this.lines.length} records`);
    return this.lines.length;
  }
}

function eq(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

const counts = {};

// ---------------------------------------------------------------------------------------------
// pairs.jsonl

async function genPairs(cases) {
  const tok = freshTokenizer();
  const w = new JsonlWriter('pairs.jsonl');
  const C = cases.all;
  const find = (s) => {
    const i = C.indexOf(s);
    if (i < 0) throw new Error(`case not found: ${JSON.stringify(s)}`);
    return C[i];
  };
  const longOnes = C.slice(cases.txt.length - 40, cases.txt.length); // corpus sentences
  const hand = [
    ['', ''],
    ['', 'Hello world!'],
    ['Hello world!', ''],
    ['Hello world!', 'Hello world!'],
    [find('<mask>'), find('<mask>')],
    [find('The capital of France is <mask>.'), find('Paris is the <mask> of France.')],
    [find('<mask> <mask>'), find('text<mask>text')],
    [find('<s> already has special tokens </s>'), find('<pad><unk>')],
    [find('<s>'), find('</s>')],
    [' <mask>', '<mask> '],
    [find(' leading space'), find('trailing space ')],
    [find('   '), find('\t')],
    ['\n', '\n\n'],
    [find('I love this! 😀'), find('Family: 👨‍👩‍👧‍👦')],
    [find('日本語のテキストです。'), find('한국어 텍스트: 안녕하세요, 세계!')],
    [find('non\u00a0breaking\u00a0space'), find('ideographic\u3000space')],
    [find('Cafe\u0301 with combining acute'), find('Caf\u00e9 with precomposed \u00e9')],
    [find('<|endoftext|>'), find('madeupword0000')],
    [longOnes[0], longOnes[1]],
    [longOnes[2], ''],
    ['', longOnes[3]],
    [longOnes[4], find('<mask>')],
    [C[C.length - 1], C[C.length - 2]], // the long repeats of the extra cases
    [find('<mask>\n<mask>'), find('The capital of France is\n<mask>.')],
  ];
  const pairs = hand.slice();
  // Fill up with a deterministic spread over all 351 cases.
  for (let k = 0; pairs.length < 64; k++) {
    pairs.push([C[(k * 37 + 5) % C.length], C[(k * 53 + 11) % C.length]]);
  }
  for (const [a, b] of pairs) {
    const e = await tok.encode(a, b);
    w.push({ a, b, ...encodingFields(e) });
  }
  counts.pairs = w.close();
}

// ---------------------------------------------------------------------------------------------
// truncation.jsonl
//
// Besides recording what HF does, this checks every record against a plain re-implementation
// of the truncation rules (`modelTruncation`) so that README.md can state them with confidence.

const N_SPECIAL = { single: 2, pair: 4 }; // RobertaProcessing: <s> A </s> and <s> A </s></s> B </s>

// The "classic" HF truncation of two raw (no special tokens) encodings, on arrays of token
// indices. Returns {keepA, keepB} (lengths) or throws the HF error message.
function classicTruncate(lenA, lenB, maxLen, strategy, hasPair) {
  if (maxLen === 0) return { keepA: 0, keepB: hasPair ? 0 : null };
  const total = lenA + (hasPair ? lenB : 0);
  if (total <= maxLen) return { keepA: lenA, keepB: hasPair ? lenB : null };
  const toRemove = total - maxLen;
  if (strategy === 'LongestFirst') {
    if (!hasPair) return { keepA: total - toRemove, keepB: null };
    let n1 = lenA, n2 = lenB, swap = false;
    if (n1 > n2) { swap = true; [n1, n2] = [n2, n1]; }
    if (n1 > maxLen) n2 = n1; else n2 = Math.max(n1, maxLen - n1);
    if (n1 + n2 > maxLen) { n1 = Math.floor(maxLen / 2); n2 = n1 + (maxLen % 2); }
    if (swap) [n1, n2] = [n2, n1];
    return { keepA: Math.min(n1, lenA), keepB: Math.min(n2, lenB) };
  }
  if (strategy === 'OnlySecond' && !hasPair) throw new Error('Truncation error: Second sequence not provided');
  const targetLen = strategy === 'OnlyFirst' ? lenA : lenB;
  if (targetLen > toRemove) {
    return strategy === 'OnlyFirst'
      ? { keepA: targetLen - toRemove, keepB: hasPair ? lenB : null }
      : { keepA: lenA, keepB: targetLen - toRemove };
  }
  throw new Error('Truncation error: Sequence to truncate too short to respect the provided max_length');
}

// HF 0.23 also truncates while tokenizing ("early truncation"): the first sequence (unless the
// strategy is only_second) and the second sequence (always) are cut to their first (right
// truncation) or last (left truncation) pre-tokenizer words: walking word by word from the kept
// side and counting every token, it stops after the first ordinary word (not an added token such
// as <s> or <mask> found in the text) at which the count reaches max(max_length, 1).
// With max_length >= the number of special tokens this pre-cut never changes the final ids (the
// later truncation cuts at least as much); when max_length is smaller, `max_length - n_special`
// underflows (usize) to a huge limit and this pre-cut is all the truncation there is.
const ADDED_IDS = new Set([0, 1, 2, 3, 50264]);
function wordPrecut(raw, maxLen, direction) {
  const limit = Math.max(maxLen, 1);
  const n = raw.ids.length;
  const at = (k) => (direction === 'right' ? k : n - 1 - k); // k-th token from the kept side
  let k = 0;
  while (k < n) {
    const w = raw.words[at(k)];
    const added = ADDED_IDS.has(raw.ids[at(k)]);
    while (k < n && raw.words[at(k)] === w) k++;
    if (!added && k >= limit) break;
  }
  return k;
}

function keepSlice(arr, keep, direction) {
  return direction === 'right' ? arr.slice(0, keep) : arr.slice(arr.length - keep);
}

// Predicts HF's ids from the untruncated, special-token-free encodings of A and B. With
// precut=false it is the plain ("classic") algorithm alone, without HF's early word pre-cut.
function modelTruncation(rawA, rawB, maxLen, strategy, direction, addSpecial, precut = true) {
  const hasPair = rawB !== null;
  const cutA = precut && strategy !== 'OnlySecond', cutB = precut;
  let idsA = cutA ? keepSlice(rawA.ids, wordPrecut(rawA, maxLen, direction), direction) : rawA.ids;
  let idsB = !hasPair ? null
    : cutB ? keepSlice(rawB.ids, wordPrecut(rawB, maxLen, direction), direction) : rawB.ids;
  const nSpecial = addSpecial ? (hasPair ? N_SPECIAL.pair : N_SPECIAL.single) : 0;
  if (maxLen >= nSpecial) {
    const { keepA, keepB } = classicTruncate(idsA.length, hasPair ? idsB.length : 0,
      maxLen - nSpecial, strategy, hasPair);
    idsA = keepSlice(idsA, keepA, direction);
    if (hasPair) idsB = keepSlice(idsB, keepB, direction);
  } // else: usize underflow, no truncation after the word pre-cut
  if (!addSpecial) return hasPair ? idsA.concat(idsB) : idsA;
  return hasPair ? [0, ...idsA, 2, 2, ...idsB, 2] : [0, ...idsA, 2];
}

async function genTruncation(cases) {
  const tok = freshTokenizer();
  const raw = freshTokenizer(); // no truncation, no special tokens: input of the model check
  const w = new JsonlWriter('truncation.jsonl');
  const C = cases.all;
  const longOnes = C.slice(cases.txt.length - 40, cases.txt.length);
  const singles = [
    '',
    'Hello world!',
    'The quick brown fox jumps over the lazy dog.',
    'Supercalifragilisticexpialidocious is a word.',
    'The capital of France is <mask>.',
    '<s> already has special tokens </s>',
    'I love this! 😀 Family: 👨‍👩‍👧‍👦',
    '日本語のテキストです。',
    'one two three four five six seven eight nine ten eleven twelve',
    'a b <mask> c d <mask> e',
    '<mask> <mask> a <s> b',
    longOnes[0],
  ];
  const TWENTY = 'one two three four five six seven eight nine ten eleven twelve thirteen ' +
    'fourteen fifteen sixteen seventeen eighteen nineteen twenty';
  const pairs = [
    ['Hello world!', 'How are you?'],
    ['', 'How are you?'],
    ['Hello world!', ''],
    ['', ''],
    ['one two three four five six seven eight nine ten eleven twelve', 'a b'],
    ['a b', 'one two three four five six seven eight nine ten eleven twelve'],
    ['Supercalifragilisticexpialidocious is a word.', 'x y z'],
    ['The capital of France is <mask>.', 'Paris is the <mask> of France.'],
    [longOnes[1], longOnes[2]],
    [longOnes[3], 'Short.'],
    ['Short.', longOnes[4]],
    ['I love this! 😀', '日本語のテキストです。'],
    ['a b <mask> c d <mask> e', 'x <mask> y z <mask>'],
    ['<mask> <mask> a <s> b', '<mask>'],
    // the longer sequence (in tokens) becomes the shorter one after HF's word pre-cut
    [TWENTY, 'Supercalifragilisticexpialidocious and more'],
    ['Supercalifragilisticexpialidocious and more', TWENTY],
  ];
  const maxLens = [0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32];
  const strategies = ['LongestFirst', 'OnlyFirst', 'OnlySecond'];
  const rawCache = new Map();
  const rawEnc = async (t) => {
    if (!rawCache.has(t)) {
      const e = await raw.encode(t, null, { addSpecialTokens: false });
      rawCache.set(t, { ids: e.getIds(), words: e.getWordIds() });
    }
    return rawCache.get(t);
  };
  const snake = { LongestFirst: 'longest_first', OnlyFirst: 'only_first', OnlySecond: 'only_second' };
  let checked = 0, mismatches = 0, classicOk = 0, classicChecked = 0;
  const classicExceptions = [];
  const inputs = singles.map((a) => [a, null]).concat(pairs);
  const configs = [];
  for (const direction of ['right', 'left']) {
    for (const addSpecial of [true, false]) {
      if (direction === 'left' && !addSpecial) continue;
      for (const ml of maxLens) for (const strategy of strategies) configs.push({ direction, addSpecial, ml, strategy });
    }
  }
  for (const { direction, addSpecial, ml, strategy } of configs) {
    tok.setTruncation(ml, { strategy, direction });
    for (const [a, b] of inputs) {
      const nSpecial = addSpecial ? (b === null ? N_SPECIAL.single : N_SPECIAL.pair) : 0;
      const rec = {
        a, b, max_length: ml, strategy: snake[strategy], direction,
        add_special_tokens: addSpecial,
        // true where max_length < the number of special tokens added: HF's result there comes
        // from an unsigned underflow and is not a meaningful truncation (see README.md)
        below_special_count: ml < nSpecial,
        error: null,
      };
      let hfIds = null, hfErr = null;
      try {
        const e = await tok.encode(a, b, { addSpecialTokens: addSpecial });
        Object.assign(rec, encodingFields(e));
        hfIds = e.getIds();
      } catch (err) {
        hfErr = String(err.message || err);
        rec.error = hfErr;
      }
      // Model check
      let mIds = null, mErr = null;
      try {
        mIds = modelTruncation(await rawEnc(a), b === null ? null : await rawEnc(b), ml, strategy, direction, addSpecial);
      } catch (err) {
        mErr = err.message;
      }
      checked++;
      // Does the plain algorithm (no pre-cut) give the same? Only meaningful when max_length
      // leaves room for the special tokens.
      let classicSame = false;
      if (!rec.below_special_count) {
        let cIds = null, cErr = null;
        try {
          cIds = modelTruncation(await rawEnc(a), b === null ? null : await rawEnc(b), ml, strategy,
            direction, addSpecial, false);
        } catch (err) {
          cErr = err.message;
        }
        classicSame = eq(hfIds, cIds) && hfErr === cErr;
        classicChecked++;
        if (classicSame) classicOk++;
        else classicExceptions.push({ a, b, ml, strategy, direction, addSpecial, hfErr, cErr });
      }
      rec.matches_classic_algorithm = classicSame;
      if (!(eq(hfIds, mIds) && hfErr === mErr)) {
        mismatches++;
        if (mismatches <= 5) console.error('model mismatch:', JSON.stringify({ rec, mIds, mErr }).slice(0, 600));
        if (process.env.MISMATCH_LOG) fs.appendFileSync(process.env.MISMATCH_LOG, JSON.stringify({ rec, mIds, mErr }) + '\n');
      }
      w.push(rec);
    }
  }
  console.log(`truncation model check: ${checked - mismatches}/${checked} records match the documented algorithm`);
  console.log(`truncation classic check: ${classicOk}/${classicChecked} records with max_length >= #special ` +
    'match the plain algorithm without the word pre-cut; exceptions:');
  for (const x of classicExceptions) console.log('  ' + JSON.stringify(x));
  counts.truncation = w.close();
  counts.truncationModelMismatches = mismatches;
}

// ---------------------------------------------------------------------------------------------
// padding.jsonl

async function genPadding(cases) {
  const w = new JsonlWriter('padding.jsonl');
  const C = cases.all;
  const longOnes = C.slice(cases.txt.length - 40, cases.txt.length);
  const singleBatches = [
    ['Hello world!'],
    ['Hello world!', 'The quick brown fox jumps over the lazy dog.'],
    ['', 'a', 'The capital of France is <mask>.'],
    ['I love this! 😀', '日本語のテキストです。', 'Hello', '<pad><unk>', ' leading space'],
    [longOnes[5], 'Short one.', longOnes[6]],
    ['', ''],
  ];
  const pairBatches = [
    [['Hello world!', 'How are you?']],
    [['Hello world!', 'How are you?'], ['', ''], ['The capital of France is <mask>.', 'Paris.']],
    [['a', 'b'], [longOnes[7], 'Short.'], ['I love this! 😀', '']],
  ];
  const settings = [];
  for (const direction of ['right', 'left']) {
    settings.push({ direction, max_length: null, pad_to_multiple_of: null, truncation: null });
    settings.push({ direction, max_length: 16, pad_to_multiple_of: null, truncation: null });
    settings.push({ direction, max_length: 40, pad_to_multiple_of: null, truncation: null });
    settings.push({ direction, max_length: null, pad_to_multiple_of: 8, truncation: null });
    settings.push({ direction, max_length: 20, pad_to_multiple_of: 8, truncation: null });
    settings.push({ direction, max_length: 16, pad_to_multiple_of: null, truncation: 16 });
  }
  const padOpts = (s, maxLength) => {
    const o = { padId: 1, padTypeId: 0, padToken: '<pad>', direction: s.direction };
    if (maxLength !== null) o.maxLength = maxLength;
    if (s.pad_to_multiple_of !== null) o.padToMultipleOf = s.pad_to_multiple_of;
    return o;
  };
  for (const s of settings) {
    const tok = freshTokenizer();
    if (s.truncation !== null) tok.setTruncation(s.truncation, { strategy: 'LongestFirst' });
    for (const batch of singleBatches) {
      tok.setPadding(padOpts(s, s.max_length));
      const encs = await tok.encodeBatch(batch);
      w.push({
        texts: batch, pairs: null, padding: s.max_length === null ? 'longest' : 'fixed', ...s,
        pad_id: 1, pad_token: '<pad>', method: 'encodeBatch', ...batchFields(encs),
      });
    }
    // The node binding's encodeBatch takes only single strings. For pairs, the batch-longest
    // length is computed from unpadded encodings and each pair is encoded with a fixed padding
    // length (what Rust's pad_encodings does for a batch: max length, then pad each).
    for (const batch of pairBatches) {
      tok.disablePadding();
      let target = s.max_length;
      if (target === null) {
        target = 0;
        for (const [a, b] of batch) target = Math.max(target, (await tok.encode(a, b)).getLength());
      }
      tok.setPadding(padOpts(s, target));
      const encs = [];
      for (const [a, b] of batch) encs.push(await tok.encode(a, b));
      w.push({
        texts: null, pairs: batch, padding: s.max_length === null ? 'longest' : 'fixed', ...s,
        pad_id: 1, pad_token: '<pad>', method: 'encode per pair, fixed length = batch longest',
        ...batchFields(encs),
      });
    }
  }
  counts.padding = w.close();
}

// ---------------------------------------------------------------------------------------------
// decode.jsonl

// GPT-2's bytes_to_unicode: byte -> printable char of the byte-level alphabet.
function bytesToUnicode() {
  const bs = [];
  for (let i = 33; i <= 126; i++) bs.push(i);
  for (let i = 161; i <= 172; i++) bs.push(i);
  for (let i = 174; i <= 255; i++) bs.push(i);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  }
  const m = new Map();
  bs.forEach((b, i) => m.set(b, String.fromCodePoint(cs[i])));
  return m;
}

async function genDecode(cases) {
  const tok = freshTokenizer();
  const w = new JsonlWriter('decode.jsonl');
  const expected = readExpected();
  const b2u = bytesToUnicode();
  const byteTok = (...bytes) => {
    const s = bytes.map((b) => b2u.get(b)).join('');
    const id = tok.tokenToId(s);
    if (id === null || id === undefined) throw new Error(`no vocab entry for bytes ${bytes}`);
    return id;
  };
  const idOf = (t) => {
    const id = tok.tokenToId(t);
    if (id === null || id === undefined) throw new Error(`no vocab entry ${t}`);
    return id;
  };
  const noSpecial = async (t) => (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
  const withSpecial = async (t) => (await tok.encode(t)).getIds();

  const lists = [];
  for (const r of expected) lists.push({ ids: r.ids, source: `case:${r.source}:${r.index}` });

  const hello = idOf('Hello'), world = idOf('Ġworld'), mask = 50264;
  const hand = [
    ['empty', []],
    // split multi-byte UTF-8 (😀 = F0 9F 98 80, é = C3 A9, 。= E3 80 82)
    ['emoji first byte only', [byteTok(0xf0)]],
    ['emoji first three bytes (one BPE token)', [byteTok(0xf0, 0x9f, 0x98)]],
    ['emoji first three bytes then Hello', [byteTok(0xf0, 0x9f, 0x98), hello]],
    ['emoji last byte only', [byteTok(0x80)]],
    ['two lone continuation bytes', [byteTok(0x80), byteTok(0x80)]],
    ['emoji bytes as four single-byte tokens', [byteTok(0xf0), byteTok(0x9f), byteTok(0x98), byteTok(0x80)]],
    ['emoji missing its second byte', [byteTok(0xf0), byteTok(0x98), byteTok(0x80)]],
    ['e-acute lead byte only', [byteTok(0xc3)]],
    ['e-acute lead byte then a', [byteTok(0xc3), idOf('a')]],
    ['e-acute as two byte tokens', [byteTok(0xc3), byteTok(0xa9)]],
    ['e-acute reversed', [byteTok(0xa9), byteTok(0xc3)]],
    ['ideographic full stop missing last byte, then Hello', [byteTok(0xe3), byteTok(0x80), hello]],
    ['byte FF', [byteTok(0xff)]],
    ['byte FE FF', [byteTok(0xfe), byteTok(0xff)]],
    ['overlong C0 80', [byteTok(0xc0), byteTok(0x80)]],
    ['overlong E0 80 80', [byteTok(0xe0), byteTok(0x80), byteTok(0x80)]],
    ['surrogate ED A0 80', [byteTok(0xed), byteTok(0xa0), byteTok(0x80)]],
    ['above U+10FFFF: F4 90 80 80', [byteTok(0xf4), byteTok(0x90), byteTok(0x80), byteTok(0x80)]],
    ['F5 80', [byteTok(0xf5), byteTok(0x80)]],
    ['NUL byte', [byteTok(0x00)]],
    ['split emoji between specials', [0, byteTok(0xf0, 0x9f, 0x98), 2, byteTok(0x80)]],
    ['emoji split by mask', [byteTok(0xf0, 0x9f, 0x98), mask, byteTok(0x80)]],
    // special tokens
    ['mask alone', [mask]],
    ['pad alone', [1]],
    ['unk alone', [3]],
    ['bos eos', [0, 2]],
    ['repeated specials', [0, 0, 1, 1, 2, 2, 3, 3, mask, mask]],
    ['pad padding after text', [0, hello, world, 2, 1, 1, 1]],
    ['Hello <mask> world', [hello, mask, world]],
    ['<s> Hello <mask> world </s>', [0, hello, mask, world, 2]],
    ['pair-shaped', [0, hello, 2, 2, world, 2]],
    ['<unk> inside text', [hello, 3, world]],
    ['mask at start', [mask, world]],
    ['mask at end', [hello, mask]],
    // ids that are not in the vocabulary (HF drops them silently)
    ['id 50265 (one past the vocab)', [hello, 50265, world]],
    ['id 99999', [99999]],
    // clean_up_tokenization_spaces check: Python's cleanup would turn " ." into "." etc.
    ['cleanup check 1', await noSpecial("Hello , world . I do n't know ! Is it ? 'm 's 've 're")],
    ['cleanup check 2', await withSpecial('a , b . c ! d ? e')],
    ['spaces runs', await noSpecial('a   b\t\tc\n\n d')],
    ['leading space tokens', await noSpecial(' leading and trailing ')],
    ['mask with space in text', await withSpecial('a <mask> b')],
    ['mask with NBSP in text', await withSpecial('a\u00a0<mask> b')],
    ['mask with newline in text', await withSpecial('a\n<mask>\nb')],
  ];
  for (const [name, ids] of hand) lists.push({ ids, source: `hand:${name}` });

  for (const { ids, source } of lists) {
    for (const skip of [false, true]) {
      const text = await tok.decode(ids, skip);
      w.push({ ids, skip_special_tokens: skip, text, source });
    }
  }
  counts.decode = w.close();
  counts.decodeCases = expected.length;

  // Findings printed for README.md
  const cu = await tok.decode(await noSpecial('Hello , world .'), false);
  console.log(`decode cleanup check: decode(encode("Hello , world .")) = ${JSON.stringify(cu)}` +
    ` -> clean_up_tokenization_spaces ${cu === 'Hello , world .' ? 'NOT applied' : 'APPLIED'}`);
}

// ---------------------------------------------------------------------------------------------
// added_tokens.jsonl

async function genAddedTokens() {
  const tok = freshTokenizer();
  const w = new JsonlWriter('added_tokens.jsonl');
  // Whitespace before <mask>: Rust char::is_whitespace (Unicode White_Space) decides what the
  // lstrip of <mask> swallows. The list mixes White_Space and look-alikes that are not.
  const ws = [
    ['space', ' '], ['two spaces', '  '], ['tab', '\t'], ['newline', '\n'], ['CR', '\r'],
    ['CRLF', '\r\n'], ['VT', '\u000b'], ['FF', '\u000c'], ['NEL U+0085', '\u0085'],
    ['NBSP U+00A0', '\u00a0'], ['OGHAM SPACE U+1680', '\u1680'], ['EN QUAD U+2000', '\u2000'],
    ['EM SPACE U+2003', '\u2003'], ['THIN SPACE U+2009', '\u2009'], ['HAIR SPACE U+200A', '\u200a'],
    ['LINE SEP U+2028', '\u2028'], ['PARA SEP U+2029', '\u2029'], ['NNBSP U+202F', '\u202f'],
    ['MMSP U+205F', '\u205f'], ['IDEOGRAPHIC SPACE U+3000', '\u3000'],
    ['space+NBSP+tab', ' \u00a0\t'],
    // not White_Space:
    ['ZWSP U+200B', '\u200b'], ['BOM U+FEFF', '\ufeff'], ['MVS U+180E', '\u180e'],
    ['WORD JOINER U+2060', '\u2060'], ['unit sep U+001F', '\u001f'], ['file sep U+001C', '\u001c'],
  ];
  const texts = [
    ['a <mask>', 'space before'],
    ['a\t<mask>', 'tab before'],
    ['a\n<mask>', 'newline before'],
    ['a  <mask>b', 'two spaces before, letter after'],
    ['a <mask> b', 'spaces both sides'],
    ['a <mask>  b', 'two spaces after (rstrip is false)'],
    ['<mask><mask>', 'adjacent masks'],
    ['<mask> <mask>', 'masks with a space'],
    ['<mask>  <mask>', 'masks with two spaces'],
    ['<mask>\n\n<mask>', 'masks with two newlines'],
    ['<mask>', 'mask alone'],
    ['<mask>a', 'mask at start'],
    ['a<mask>', 'mask at end, no space'],
    ['a <mask>', 'mask at end'],
    [' <mask>', 'leading space then mask'],
    ['   <mask>', 'leading spaces then mask'],
    ['<mask> ', 'mask then trailing space'],
    ['<mask>\n', 'mask then newline'],
    ['<s>x</s>', 'bos/eos around x'],
    ['<s> x </s>', 'bos/eos with spaces'],
    ['<s><s></s></s>', 'nested-looking specials'],
    [' <s>', 'space before <s> (no lstrip)'],
    ['x <pad> y <unk> z', 'pad and unk in text'],
    ['< mask>', 'broken mask 1'],
    ['<mask >', 'broken mask 2'],
    ['<MASK>', 'upper-case mask'],
    ['<mask', 'unterminated'],
    ['mask>', 'no opening'],
    ['<<mask>>', 'mask inside angle brackets'],
    ['<maskk>', 'mask with extra letter'],
    ['x<mask>y<mask>z', 'masks between letters'],
    ['😀<mask>😀', 'masks between emoji'],
    ['é <mask> é', 'accents around mask'],
    ['The capital of France is <mask>.', 'sentence'],
    ['<|endoftext|>', 'not an added token'],
  ];
  for (const [name, s] of ws) {
    texts.push([`a${s}<mask>`, `${name} before <mask>`]);
    texts.push([`${s}<mask>`, `${name} at start before <mask>`]);
    texts.push([`<mask>${s}b`, `${name} after <mask>`]);
  }
  for (const [text, note] of texts) {
    for (const addSpecial of [true, false]) {
      const e = await tok.encode(text, null, { addSpecialTokens: addSpecial });
      w.push({ text, note, add_special_tokens: addSpecial, ...encodingFields(e) });
    }
  }
  counts.added_tokens = w.close();
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const cases = readCases();
  console.log(`HF tokenizers (npm) ${HF_VERSION}; ${cases.all.length} cases from ${assets}`);
  await genPairs(cases);
  await genTruncation(cases);
  await genPadding(cases);
  await genDecode(cases);
  await genAddedTokens();
  // The node binding returns only code-point offsets (encode_char_offsets); there is no option
  // for byte offsets, so no byte-offset golden file is written.
  console.log('byte offsets: not available from the node binding (no option); none written');
  fs.writeFileSync(path.join(outDir, 'MANIFEST.json'), JSON.stringify({
    generator: 'tools/hf_goldens/gen_tokenizer_goldens.js',
    hf_tokenizers_npm: HF_VERSION,
    tokenizer_json: 'roberta-base-tokenizer/tokenizer.json',
    offsets: 'Unicode code points (HF encode_char_offsets); no byte offsets',
    counts,
  }, null, 2) + '\n');
  if (counts.truncationModelMismatches) {
    console.error('WARNING: truncation records that the documented algorithm does not predict: ' +
      counts.truncationModelMismatches);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
