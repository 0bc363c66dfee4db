#!/usr/bin/env node
// Golden encodings of the documents of the late-chunking tests (tests/parity/run_late_chunking_parity.sh,
// tools/late_chunking_reference.py) by Hugging Face's Rust tokenizer.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_late_chunking_goldens.js tests/data/hf ../shared/assets
//
// Writes OUTDIR/late_chunking.jsonl: one record {"name", "text", "ids", "offsets"} per document
// (encode(text) with special tokens, no truncation; offsets in code points as the binding gives
// them, [0,0] for <s> and </s>), then {"name": "prompt", "prompt", "ids"} (encode(prompt) with
// special tokens). Two documents are taken from the shared corpus by fixed line ranges (the lines
// joined with \n as in the file: hard wraps and blank lines kept, no final \n).
'use strict';

const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const [outDir, assets] = process.argv.slice(2);
if (!outDir || !assets) {
  console.error('usage: node gen_late_chunking_goldens.js OUTDIR ASSETS');
  process.exit(2);
}
const tok = Tokenizer.fromFile(path.join(assets, 'roberta-base-tokenizer/tokenizer.json'));

// Lines first..last (1-based, inclusive) of a corpus file.
function corpusLines(file, first, last) {
  const lines = fs.readFileSync(path.join(assets, 'corpus', file), 'utf8').split('\n');
  if (last > lines.length) throw new Error(`${file} has ${lines.length} lines`);
  return lines.slice(first - 1, last).join('\n');
}

const DOCS = [
  // On Liberty (J. S. Mill), chapter V: the heading "CHAPTER V." / "APPLICATIONS.", two blank
  // lines, then three whole paragraphs (~600 tokens).
  ['nonfiction', corpusLines('nonfiction.txt', 110433, 110480)],
  // The Wonderful Wizard of Oz, chapter XXIII: dialogue with curly quotes, sentences ending in ?”
  // and !, a paragraph ending in ":" before a blank line (~370 tokens).
  ['fiction', corpusLines('fiction.txt', 29312, 29340)],
  ['short', 'The quick brown fox jumps over the lazy dog.'],
  // Emoji with ZWJ, CJK (its full stop 。 is no sentence end), accented letters, double spaces, a
  // tab, "Mr. Smith", "3.14", "…", "?!", "...", a sentence ending in ?” and a line without terminal
  // punctuation before a blank line; no final punctuation.
  ['unicode', 'Mr. Smith paid 3.14 euros for a café au lait in Zürich.  Then he waited…\tNobody came.\n' +
    '“Is this 👩‍💻 really you?” she asked. Wait... what?! 👨‍👩‍👧 waved back.\n' +
    'A heading without punctuation\n\n' +
    '東京は今日も晴れです。大阪も。 The naïve señor said “¡Olé!” and left  without a word'],
  ['no_punct', 'this text has no sentence terminator at all\njust words, commas and one line break and 3,14 ' +
    'as a number but never a full stop'],
  ['empty', ''],
];
const PROMPT = 'search_document: ';

async function main() {
  const lines = [];
  for (const [name, text] of DOCS) {
    const e = await tok.encode(text, null, { addSpecialTokens: true });
    lines.push(JSON.stringify({ name, text, ids: e.getIds(), offsets: e.getOffsets() }));
    console.log(`${name}: ${[...text].length} code points, ${e.getLength()} tokens`);
  }
  const p = await tok.encode(PROMPT, null, { addSpecialTokens: true });
  lines.push(JSON.stringify({ name: 'prompt', prompt: PROMPT, ids: p.getIds() }));
  fs.writeFileSync(path.join(outDir, 'late_chunking.jsonl'), lines.join('\n') + '\n');
  console.log(`late_chunking.jsonl: ${lines.length} records`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
