#!/usr/bin/env node
// Hugging Face's Rust tokenizer (npm `tokenizers`, node binding) as a small JSON-lines server for
// gen_pipeline_goldens.py: one request per stdin line, one answer per stdout line, in order.
//
//   node pipeline_tokenizer.js path/to/tokenizer.json
//
// Requests ({"op": ...}):
//   encode         {a, b|null, add_special_tokens, truncation: null | {max_length, strategy, stride}}
//                  HF's own encode (tokenizers as installed: 0.23.x), main encoding + its overflowing.
//   windows        {a, b|null, max_length, strategy, stride}
//                  The overflow windows of tokenizers <= 0.22.2 (and of the pending fix of
//                  huggingface/tokenizers#2091): the texts are tokenized whole by a copy of the
//                  tokenizer without post-processor, HF's Encoding.truncate(len, stride) cuts the
//                  windows, and HF's postProcess adds the special tokens and joins the overflowing
//                  parts, exactly as Tokenizer::post_process does after encode_single_sequence.
//                  `direct_same` tells whether the installed version's encode gives the same windows.
//   encode_words   {words, add_special_tokens, truncation: null | {max_length, strategy, stride}, overflow}
//                  a pre-tokenized input (transformers' is_split_into_words=True), as pretokenized.js
//                  composes it from HF's functions; with `overflow`, the overflowing windows too.
//   decode_tokens  {tokens}  convert_tokens_to_string as transformers' TokenizersBackend does it: the
//                  decoder of the loaded tokenizer.json (`backend_tokenizer.decoder.decode(tokens)`:
//                  ByteLevel for roberta-base, WordPiece, Metaspace for the Unigram file), or the
//                  tokens joined by spaces when it has none
//   id_to_token    {ids}
// strategy: "LongestFirst" | "OnlyFirst" | "OnlySecond". Errors come back as {"error": message}.
'use strict';

const fs = require('fs');
const readline = require('readline');
const { Tokenizer } = require('tokenizers');
const { encodeWords } = require('./pretokenized.js');

const tokenizerJson = process.argv[2];
if (!tokenizerJson) {
  console.error('usage: node pipeline_tokenizer.js TOKENIZER_JSON');
  process.exit(2);
}
const tok = Tokenizer.fromFile(tokenizerJson);
const spec = JSON.parse(fs.readFileSync(tokenizerJson, 'utf8'));
const rawSpec = JSON.parse(fs.readFileSync(tokenizerJson, 'utf8'));
rawSpec.post_processor = null;
const raw = Tokenizer.fromString(JSON.stringify(rawSpec));  // normalizer, pre-tokenizer and model only

function fields(e) {
  const wordIds = e.getWordIds().map((w) => (w === null || w === undefined ? -1 : w));
  const seqIds = e.getSequenceIds().map((s) => (s === null || s === undefined ? -1 : s));
  // word_to_chars of every word of every sequence, as Encoding.word_to_chars(word, seq) answers.
  const wordToChars = {};
  for (const seq of [0, 1]) {
    const table = {};
    for (let i = 0; i < wordIds.length; i++) {
      if (seqIds[i] !== seq || wordIds[i] < 0) continue;
      const w = wordIds[i];
      if (w in table) continue;
      const span = e.wordToChars(w, seq);
      table[w] = span === null || span === undefined ? null : span;
    }
    wordToChars[seq] = table;
  }
  return {
    ids: e.getIds(),
    tokens: e.getTokens(),
    offsets: e.getOffsets(),
    type_ids: e.getTypeIds(),
    special_tokens_mask: e.getSpecialTokensMask(),
    attention_mask: e.getAttentionMask(),
    sequence_ids: seqIds,
    word_ids: wordIds,
    word_to_chars: wordToChars,
  };
}

function withOverflow(e) {
  return [e].concat(e.getOverflowing()).map(fields);
}

async function encodeDirect(a, b, addSpecial, truncation) {
  if (truncation) {
    tok.setTruncation(truncation.max_length, {
      strategy: truncation.strategy || 'LongestFirst',
      stride: truncation.stride || 0,
    });
  } else {
    tok.disableTruncation();
  }
  try {
    return await tok.encode(a, b === null || b === undefined ? null : b, { addSpecialTokens: addSpecial });
  } finally {
    tok.disableTruncation();
  }
}

// Rust's truncate_encodings for the strategies the pipelines use, on whole encodings.
async function windows(req) {
  const pair = req.b !== null && req.b !== undefined;
  const A = await raw.encode(req.a, null, { addSpecialTokens: false });
  const B = pair ? await raw.encode(req.b, null, { addSpecialTokens: false }) : null;
  // The special tokens the post-processor adds (Rust's added_tokens(is_pair)): 2 and 4 for the
  // tokenizers whose pairs are windowed here (roberta-base's RobertaProcessing, the Unigram file's
  // TemplateProcessing `<s> $A </s> </s> $B </s>`); the WordPiece file's windows are of single texts.
  const budget = req.max_length - (pair ? 4 : 2);
  const total = A.getLength() + (pair ? B.getLength() : 0);
  const stride = req.stride || 0;
  if (total > budget) {
    const toRemove = total - budget;
    let target;
    if (!pair) target = A;
    else if (req.strategy === 'OnlySecond') target = B;
    else if (req.strategy === 'OnlyFirst') target = A;
    else throw new Error('windows: only single texts, only_first and only_second are modelled');
    const len = target.getLength();
    if (len <= toRemove) throw new Error('Truncation error: Sequence to truncate too short to respect the provided max_length');
    const keep = len - toRemove;
    // Rust asserts this and aborts the process; report it instead.
    if (stride >= keep) throw new Error(`stride must be strictly less than max_len=${keep}`);
    target.truncate(keep, stride, 'right');
  }
  const merged = tok.postProcess(A, B, true);
  const out = withOverflow(merged);
  let directSame = null;
  try {
    const d = await encodeDirect(req.a, pair ? req.b : null, true,
      { max_length: req.max_length, strategy: req.strategy || 'LongestFirst', stride });
    directSame = JSON.stringify(withOverflow(d)) === JSON.stringify(out);
  } catch (e) {
    directSame = false;
  }
  return { encodings: out, direct_same: directSame };
}

async function handle(req) {
  switch (req.op) {
    case 'encode': {
      const e = await encodeDirect(req.a, req.b, req.add_special_tokens !== false, req.truncation || null);
      return { encodings: withOverflow(e) };
    }
    case 'windows':
      return windows(req);
    case 'encode_words': {
      const truncation = req.truncation ? { ...req.truncation, overflow: !!req.overflow } : null;
      const parts = await encodeWords(tok, raw, spec, req.words, null, req.add_special_tokens !== false, truncation);
      // (no word_to_chars: the binding's word ids of a merged encoding are not the words')
      const encodings = parts.map(({ encoding, word_ids }) => ({ ...fields(encoding), word_ids }));
      encodings.forEach((e) => delete e.word_to_chars);
      return { encodings };
    }
    case 'decode_tokens': {
      const decoder = tok.getDecoder();
      return { text: decoder ? decoder.decode(req.tokens) : req.tokens.join(' ') };
    }
    case 'id_to_token':
      return { tokens: req.ids.map((id) => tok.idToToken(id)) };
    default:
      throw new Error(`unknown op ${req.op}`);
  }
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
const queue = [];
let busy = false;
async function drain() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const line = queue.shift();
    let answer;
    try {
      answer = await handle(JSON.parse(line));
    } catch (e) {
      answer = { error: String(e && e.message ? e.message : e) };
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
  busy = false;
}
rl.on('line', (line) => {
  if (!line.trim()) return;
  queue.push(line);
  drain();
});
