#!/usr/bin/env node
// Golden answers of Hugging Face's Encoding alignment queries (token_to_sequence, token_to_word,
// token_to_chars, word_to_tokens, word_to_chars, char_to_token, char_to_word, n_sequences), for
// tests/tokenizer_test.cpp and python/tests/test_tokenizer.py.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_alignment_goldens.js tests/data/hf ../shared/assets
//
// Writes OUTDIR/alignment.jsonl: {"a", "b"|null, "add_special_tokens", "padding": null |
// {"direction", "length"}, "truncation": null | {"max_length", "direction"}} plus `ids` (to check the
// encoding is HF's) and the answers, null for HF's None: token_to_sequence / token_to_word /
// token_to_chars for every token index 0..len+1, char_to_token / char_to_word for every char
// position 0..len(text)+1 of sequences 0, 1 and 2, word_to_tokens / word_to_chars for words
// 0..max+2 of sequences 0, 1 and 2 (a sequence the encoding lacks spans all its tokens in HF).
'use strict';

const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const [outDir, assets] = process.argv.slice(2);
if (!outDir || !assets) {
  console.error('usage: node gen_alignment_goldens.js OUTDIR ASSETS');
  process.exit(2);
}
const tok = Tokenizer.fromFile(path.join(assets, 'roberta-base-tokenizer/tokenizer.json'));

const CASES = [
  ['Hello world', null],
  ['The café in Zürich is <mask>.', null],
  ['  two  spaces and a tab\there', null],
  ['', null],
  ['Where do I live?', 'My name is Wolfgang and I live in Berlin.'],
  ['', 'Only the second text.'],
  ['Only the first text.', ''],
  ['👨‍👩‍👧 emoji', 'naïve'],
];
const SETTINGS = [
  { add_special_tokens: true, padding: null, truncation: null },
  { add_special_tokens: false, padding: null, truncation: null },
  { add_special_tokens: true, padding: { direction: 'left', length: 20 }, truncation: null },
  { add_special_tokens: true, padding: { direction: 'right', length: 20 }, truncation: null },
  { add_special_tokens: true, padding: null, truncation: { max_length: 7, direction: 'right' } },
  { add_special_tokens: true, padding: null, truncation: { max_length: 7, direction: 'left' } },
];

const orNull = (x) => (x === undefined ? null : x);

async function main() {
  const lines = [];
  for (const [a, b] of CASES) {
    for (const s of SETTINGS) {
      if (s.padding) {
        tok.setPadding({ direction: s.padding.direction, maxLength: s.padding.length, padId: 1, padToken: '<pad>' });
      } else {
        tok.disablePadding();
      }
      if (s.truncation) tok.setTruncation(s.truncation.max_length, { direction: s.truncation.direction });
      else tok.disableTruncation();
      let e;
      try {
        e = await tok.encode(a, b, { addSpecialTokens: s.add_special_tokens });
      } catch (err) {
        continue;  // (a truncation the pair cannot take)
      }
      const n = e.getLength();
      const words = e.getWordIds().filter((w) => w !== null && w !== undefined);
      const maxWord = words.length ? Math.max(...words) : -1;
      const chars = Math.max([...a].length, b === null ? 0 : [...b].length);
      const r = { a, b, ...s, ids: e.getIds(), n_sequences: e.getNSequences() };
      r.token_to_sequence = [];
      r.token_to_word = [];
      r.token_to_chars = [];
      for (let t = 0; t <= n + 1; t++) {
        r.token_to_sequence.push(orNull(e.tokenToSequence(t)));
        r.token_to_word.push(orNull(e.tokenToWord(t)));
        r.token_to_chars.push(orNull(e.tokenToChars(t)));
      }
      r.char_to_token = {};
      r.char_to_word = {};
      r.word_to_tokens = {};
      r.word_to_chars = {};
      for (const seq of [0, 1, 2]) {
        r.char_to_token[seq] = [];
        r.char_to_word[seq] = [];
        for (let p = 0; p <= chars + 1; p++) {
          r.char_to_token[seq].push(orNull(e.charToToken(p, seq)));
          r.char_to_word[seq].push(orNull(e.charToWord(p, seq)));
        }
        r.word_to_tokens[seq] = [];
        r.word_to_chars[seq] = [];
        for (let w = 0; w <= maxWord + 2; w++) {
          r.word_to_tokens[seq].push(orNull(e.wordToTokens(w, seq)));
          r.word_to_chars[seq].push(orNull(e.wordToChars(w, seq)));
        }
      }
      lines.push(JSON.stringify(r));
    }
  }
  tok.disablePadding();
  tok.disableTruncation();
  fs.writeFileSync(path.join(outDir, 'alignment.jsonl'), lines.join('\n') + '\n');
  console.log(`alignment.jsonl: ${lines.length} records`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
