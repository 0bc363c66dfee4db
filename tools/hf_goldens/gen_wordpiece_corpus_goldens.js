// An uncased BERT-style WordPiece tokenizer trained on the shared corpus by HF's own trainer, and
// HF's id streams of the whole corpus with it: every line encoded alone without special tokens,
// per file the token count and the sha256 of the ids (little-endian int32), as corpus/SOURCES.md
// gives them for roberta-base. Once with the tokenizer as trained (BertNormalizer lowercase, so
// strip_accents too) and once with lowercase false (cased: the same vocabulary, more [UNK]).
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_wordpiece_corpus_goldens.js tests/data/hf ../shared/assets/corpus
//
// Writes OUTDIR/wordpiece_corpus/tokenizer.json (only if it is not there: the trainer orders
// equally frequent pieces differently from run to run, so the committed file is kept and the
// goldens are computed from it) and OUTDIR/wordpiece_corpus.json. The training is HF's WordPiece
// trainer with its defaults (30,000 tokens); the special tokens, which the trainer the node binding
// gives does not know, are put first and the learned tokens after them.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { idStream } = require('./patch.js');

const [outDir, corpus] = process.argv.slice(2);
if (!outDir || !corpus) {
  console.error('usage: node gen_wordpiece_corpus_goldens.js OUTDIR CORPUS_DIR');
  process.exit(2);
}
const FILES = ['fiction.txt', 'nonfiction.txt', 'drama-poetry.txt'];
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];

function spec(vocab, lowercase) {
  return { version: '1.0', truncation: null, padding: null,
    added_tokens: SPECIALS.map((t) => ({ id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false,
      normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null,
      lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', vocab['[SEP]']], cls: ['[CLS]', vocab['[CLS]']] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100,
      vocab } };
}

async function main() {
  const dir = path.join(outDir, 'wordpiece_corpus');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'tokenizer.json');
  if (!fs.existsSync(file)) {
    const initial = Object.fromEntries(SPECIALS.map((t, i) => [t, i]));
    const trainer = Tokenizer.fromString(JSON.stringify(spec(initial, true)));
    trainer.train(FILES.map((f) => path.join(corpus, f)));
    trainer.save(file);
    const learned = Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')).model.vocab)
      .sort((a, b) => a[1] - b[1]).map(([t]) => t).filter((t) => !SPECIALS.includes(t));
    const trained = Object.fromEntries([...SPECIALS, ...learned].map((t, i) => [t, i]));
    fs.writeFileSync(file, JSON.stringify(spec(trained, true)) + '\n');
  }
  const { vocab } = JSON.parse(fs.readFileSync(file, 'utf8')).model;
  const goldens = {};
  for (const lowercase of [true, false]) {
    const tok = Tokenizer.fromString(JSON.stringify(spec(vocab, lowercase)));
    const streams = {};
    for (const f of FILES) streams[f] = await idStream(tok, path.join(corpus, f));
    goldens[lowercase ? 'uncased' : 'cased'] = streams;
  }
  fs.writeFileSync(path.join(outDir, 'wordpiece_corpus.json'), JSON.stringify(goldens, null, 1) + '\n');
  console.log(`${Object.keys(vocab).length} tokens;`, JSON.stringify(goldens));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
