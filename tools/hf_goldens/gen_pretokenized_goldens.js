#!/usr/bin/env node
// Golden encodings of pre-tokenized inputs (lists of words: tokenizers' is_pretokenized=True,
// transformers' is_split_into_words=True) by Hugging Face's Rust tokenizer, for tests/tokenizer_test.cpp.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_pretokenized_goldens.js tests/data/hf ../shared/assets
//
// Writes OUTDIR/pretokenized.jsonl: {"variant", "patch", "words", "pair_words"|null,
// "add_special_tokens", "truncation"|null, "error"|null} plus ids, tokens, offsets, type_ids,
// special_tokens_mask, attention_mask, sequence_ids (-1 for none), word_ids (-1 for none).
// How the node binding is made to encode word lists: pretokenized.js.
'use strict';

const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { patched } = require('./patch.js');
const { encodeWords } = require('./pretokenized.js');

const [outDir, assets] = process.argv.slice(2);
if (!outDir || !assets) {
  console.error('usage: node gen_pretokenized_goldens.js OUTDIR ASSETS');
  process.exit(2);
}
const base = JSON.parse(fs.readFileSync(path.join(assets, 'roberta-base-tokenizer/tokenizer.json'), 'utf8'));

const VARIANTS = {
  // roberta-base as published (add_prefix_space false)
  plain: [],
  // what transformers' RobertaTokenizerFast(add_prefix_space=True) builds, the setting its
  // is_split_into_words needs
  aps: [['/pre_tokenizer/add_prefix_space', true], ['/post_processor/add_prefix_space', true]],
  // the prefix space in the pre-tokenizer only: trim_offsets then trims it off each word's start
  aps_pre_only: [['/pre_tokenizer/add_prefix_space', true]],
};

const WORDS = [
  ['Hello', 'world'],
  ['Angela', 'Merkel', 'visited', 'New', 'York', '.'],
  ["don't", 'stop', 'believing!'],
  ['café', 'naïve', '日本語', 'Ünïcödé'],
  ['New', '', 'York'],
  [''],
  [],
  [' York', 'a b', 'x ', '  two'],
  ['<mask>'],
  ['The', 'capital', 'is', '<mask>', '.'],
  ['a<mask>b', '<s>', '</s>x'],
  ['\n', 'tab\there', '\u00a0nbsp'],
  ['👍🏽', '😀', '👨‍👩‍👧'],
  ['123456', '3.14', '1,000'],
  ['Supercalifragilisticexpialidocious', 'antidisestablishmentarianism'],
  ['<|endoftext|>', 'ĠHello'],
];
const PAIRS = [
  [['Hello', 'world'], ['How', 'are', 'you', '?']],
  [['Who', 'is', 'she', '?'], ['Angela', 'Merkel', 'visited', 'New', 'York', 'in', 'July', '.']],
  [[], ['only', 'second']],
];
const LONG = ['Angela', 'Merkel', 'visited', 'New', 'York', 'in', 'July', 'and', 'met', 'Supercalifragilistic',
  'people', '.'];
const TRUNCATIONS = [
  { max_length: 6, strategy: 'LongestFirst', direction: 'Right' },
  { max_length: 6, strategy: 'LongestFirst', direction: 'Left' },
  { max_length: 9, strategy: 'LongestFirst', direction: 'Right' },
];
// a word longer than max_length: HF pre-cuts it to whole pieces first, which decides longest_first
const LONG_WORD_PAIRS = [
  [['a a a a a a a a a a a a a a a a a a a a'], new Array(15).fill('x')],
  [['Supercalifragilistic expialidocious antidisestablishmentarianism floccinaucinihilipilification'],
    ['short', 'words', 'here', 'and', 'there', 'and', 'more', 'of', 'them', 'too']],
  [['one', 'two'], ['<mask> <mask> <mask> <mask> <mask> <mask> <mask> <mask> <mask> <mask> <mask> <mask> b c d e']],
];
const LONG_WORD_TRUNCATIONS = [
  { max_length: 11, strategy: 'LongestFirst', direction: 'Right' },
  { max_length: 11, strategy: 'LongestFirst', direction: 'Left' },
  { max_length: 12, strategy: 'OnlySecond', direction: 'Right' },
  { max_length: 10, strategy: 'OnlyFirst', direction: 'Right' },
];
const PAIR_TRUNCATIONS = [
  { max_length: 10, strategy: 'LongestFirst', direction: 'Right' },
  { max_length: 10, strategy: 'OnlySecond', direction: 'Right' },
  { max_length: 10, strategy: 'OnlyFirst', direction: 'Left' },
];

function fields(e, wordIds) {
  return {
    ids: e.getIds(),
    tokens: e.getTokens(),
    offsets: e.getOffsets(),
    type_ids: e.getTypeIds(),
    special_tokens_mask: e.getSpecialTokensMask(),
    attention_mask: e.getAttentionMask(),
    sequence_ids: e.getSequenceIds().map((s) => (s === null || s === undefined ? -1 : s)),
    word_ids: wordIds,
  };
}

async function main() {
  const lines = [];
  for (const [variant, patch] of Object.entries(VARIANTS)) {
    const doc = patched(base, patch);
    const tok = Tokenizer.fromString(JSON.stringify(doc));
    const rawDoc = JSON.parse(JSON.stringify(doc));
    rawDoc.post_processor = null;
    const raw = Tokenizer.fromString(JSON.stringify(rawDoc));
    const cases = [];
    for (const w of WORDS) for (const special of [true, false]) cases.push([w, null, special, null]);
    for (const [a, b] of PAIRS) for (const special of [true, false]) cases.push([a, b, special, null]);
    for (const t of TRUNCATIONS) cases.push([LONG, null, true, t]);
    for (const t of PAIR_TRUNCATIONS) cases.push([PAIRS[1][0], PAIRS[1][1], true, t]);
    for (const [a, b] of LONG_WORD_PAIRS) for (const t of LONG_WORD_TRUNCATIONS) cases.push([a, b, true, t]);
    cases.push([['a a a a a a a a a a a a a a a a a a a a', 'b'], null, true, TRUNCATIONS[1]]);
    for (const [words, pairWords, special, truncation] of cases) {
      const record = {
        variant, patch, words, pair_words: pairWords, add_special_tokens: special,
        truncation: truncation && {
          max_length: truncation.max_length,
          strategy: truncation.strategy.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase(),
          direction: truncation.direction.toLowerCase(),
        },
        error: null,
      };
      try {
        const [{ encoding, word_ids }] = await encodeWords(tok, raw, doc, words, pairWords, special, truncation);
        Object.assign(record, fields(encoding, word_ids));
      } catch (e) {
        record.error = String(e && e.message ? e.message : e);
      }
      lines.push(JSON.stringify(record));
    }
  }
  fs.writeFileSync(path.join(outDir, 'pretokenized.jsonl'), lines.join('\n') + '\n');
  console.log(`pretokenized.jsonl: ${lines.length} records`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
