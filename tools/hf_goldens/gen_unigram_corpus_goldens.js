// HF's id streams of the shared corpus with the Unigram tokenizers of make_unigram_tokenizer.py
// (OUTDIR/unigram/tokenizer.json, trained on that corpus, and OUTDIR/unigram_byte_fallback/
// tokenizer.json): every line encoded alone without special tokens, per file the token count and the
// sha256 of the ids (little-endian int32), as gen_wordpiece_corpus_goldens.js does for WordPiece.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_unigram_corpus_goldens.js tests/data/hf ../shared/assets/corpus
//
// Writes OUTDIR/unigram_corpus.json. Deterministic.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { idStream } = require('./patch.js');

const [outDir, corpus] = process.argv.slice(2);
if (!outDir || !corpus) {
  console.error('usage: node gen_unigram_corpus_goldens.js OUTDIR CORPUS_DIR');
  process.exit(2);
}
const FILES = ['fiction.txt', 'nonfiction.txt', 'drama-poetry.txt'];
const TOKENIZERS = ['unigram', 'unigram_byte_fallback'];

async function main() {
  const goldens = {};
  for (const name of TOKENIZERS) {
    const tok = Tokenizer.fromFile(path.join(outDir, name, 'tokenizer.json'));
    const streams = {};
    for (const f of FILES) streams[f] = await idStream(tok, path.join(corpus, f));
    goldens[name] = streams;
  }
  fs.writeFileSync(path.join(outDir, 'unigram_corpus.json'), JSON.stringify(goldens, null, 1) + '\n');
  console.log(JSON.stringify(goldens));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
