// Golden encodings of HF's Rust tokenizer (npm `tokenizers`) for a BERT-style WordPiece
// tokenizer.json, as some `model_type: roberta` checkpoints ship one (a cased BertTokenizer):
// BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing, WordPiece decoder; and variants
// (BertProcessing, no post-processor, without clean_text / handle_chinese_chars / normalizer, a low
// max_input_chars_per_word, another template, an added token, uncased: lowercase and
// strip_accents). Also what BertNormalizer and BertPreTokenizer do with every code point.
//
//   source tools/hf_goldens/hf_tokenizers_env.sh
//   node tools/hf_goldens/gen_wordpiece_goldens.js tests/data/hf ../shared/assets
//
// Deterministic; writes OUTDIR/wordpiece/tokenizer.json, OUTDIR/wordpiece.jsonl,
// OUTDIR/bert_char_classes.txt, OUTDIR/bert_normalizer_maps.txt and OUTDIR/decoder_none.jsonl
// (decode without a decoder: HF joins the tokens with spaces; of the roberta-base tokenizer.json in
// ASSETS too).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { patched, setTruncation, encodingFields } = require('./patch.js');
const { encodeWords } = require('./pretokenized.js');

const [outDir, assets] = process.argv.slice(2);
if (!outDir || !assets) {
  console.error('usage: node gen_wordpiece_goldens.js OUTDIR ASSETS');
  process.exit(2);
}

// The vocabulary: specials, then words and pieces of the texts below, in a fixed order.
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const WORDS = ['the', 'The', 'quick', 'brown', 'fox', 'jump', '##s', '##ed', 'over', 'lazy', 'dog', 'New', 'York',
  'is', 'a', 'city', 'in', 'hello', 'world', 'Hello', 'World', 'don', 't', 'stop', 'caf', '##é', 'na', '##ï', '##ve',
  'un', '##believ', '##able', '##ly', 'x', 'y', 'z', 'ab', '##c', '##cd', 'cd', '1', '2', '3',
  '##0', '##5', '20', '##24',
  '안녕', '##하', '##세요', '서울', '##은', '한국', '##의', '수도', '##입니다', '저', '##는', '학생', '나', '##무',
  '日', '本', '語', '中', '文', '東', '京', '㐀', '𠀀', '豈', 'ｔｅｓｔ', 'é', 'e', '##\u0301', 'ñ', 'Ω', '∑',
  '!', '?', '.', ',', "'", '"', '(', ')', '-', '$', '+', '<', '=', '>', '^', '`', '|', '~', '@',
  '#', '%', '&', '*', '/',
  ':', ';', '[', ']', '\\', '_', '{', '}', '¿', '«', '»', '。', '、', '「', '」', '—', '…', '·', '‽', '⁇',
  '##x', '##y', '##z', '##o', '##n', '##e', '##a', '##b', '##d', '##r', '##l', '##h', '##w', '##k', '##t', '##i',
  '##u', '##m', '##p', '##s', '##g', '##f', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'k', 'l',
  'm', 'n', 'o', 'p', 'r',
  's', 'u', 'v', 'w', '##v', '##c', 'wor', '##ld', 'hel', '##lo', '😀', '##😀', '\u200d', 'ß', '##ß', 'İ', 'ﬁ', '##ﬁ',
  // what the uncased variants need: Hangul syllables after NFD (jamo), lowercase Greek, ...
  '안녕'.normalize('NFD'), '##' + '하세요'.normalize('NFD'), 'σασ', 'οδοσ', 'οδος', '##σ', 'istanbul', 'i', '##\u0307',
  '##\u{1D165}', '##\u{1D16D}',  // two spacing marks (Mc) that NFD reorders
  '\u{1D158}', '##\u{1B44}', '##\u{1D16E}'];  // U+1D160's pieces, reordered after U+1B44 (ccc 9)
const vocab = {};
for (const t of [...SPECIALS, ...WORDS]) if (!(t in vocab)) vocab[t] = Object.keys(vocab).length;

const added = (id, content, special, extra = {}) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
  normalized: false, special, ...extra });
const template = (single, pair) => ({
  type: 'TemplateProcessing', single, pair,
  special_tokens: { '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
    '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] } },
});
const S = (id, type_id = 0) => ({ SpecialToken: { id, type_id } });
const Q = (id, type_id = 0) => ({ Sequence: { id, type_id } });
const base = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: SPECIALS.map((t) => added(vocab[t], t, true)),
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null,
    lowercase: false },
  pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: template([S('[CLS]'), Q('A'), S('[SEP]')],
    [S('[CLS]'), Q('A'), S('[SEP]'), Q('B', 1), S('[SEP]', 1)]),
  decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100,
    vocab },
};

const NEXT = Object.keys(vocab).length;
const ADDED = [['<Extra>', true], ['Café', true], ['中文', true], ['[Keep]', false], ['Naïve', true, { lstrip: true }]]
  .map(([content, normalized, extra], k) => ['/added_tokens/-', added(NEXT + k, content, false, { normalized, ...extra })]);
const VARIANTS = {
  base: [],
  bert_processing: [['/post_processor', { type: 'BertProcessing', sep: ['[SEP]', vocab['[SEP]']],
    cls: ['[CLS]', vocab['[CLS]']] }]],
  no_post_processor: [['/post_processor', null]],
  // another layout: no [CLS], two [SEP] between the texts, type ids 0 / 2
  other_template: [['/post_processor', template([Q('A'), S('[SEP]')],
    [Q('A'), S('[SEP]'), S('[SEP]', 2), Q('B', 2), S('[SEP]', 2)])]],
  no_clean_text: [['/normalizer/clean_text', false]],
  no_chinese_chars: [['/normalizer/handle_chinese_chars', false]],
  no_normalizer: [['/normalizer', null]],
  short_words: [['/model/max_input_chars_per_word', 5]],
  no_cleanup: [['/decoder/cleanup', false]],
  no_decoder: [['/decoder', null]],
  // a token added as transformers adds one (not special, normalized): matched before pre-tokenization
  added_token: [['/added_tokens/-', added(Object.keys(vocab).length, '<extra>', false, { normalized: true })]],
  // uncased: lowercase (Rust's char::to_lowercase) and strip_accents (NFD, non-spacing marks removed)
  lowercase: [['/normalizer/lowercase', true]],
  lowercase_keep_accents: [['/normalizer/lowercase', true], ['/normalizer/strip_accents', false]],
  strip_accents: [['/normalizer/strip_accents', true]],
  // normalized added tokens are matched by their normalized content in the normalized text (HF's
  // AddedVocabulary::extract_and_normalize); a non-normalized one in the raw text
  added_lowercase: [['/normalizer/lowercase', true], ...ADDED],
  added_cased: [...ADDED, ['/added_tokens/-', added(NEXT + 5, 'a\u200bb', false, { normalized: true })]],
};

const TEXTS = ['The quick brown fox jumps over the lazy dog.', 'New York is a city in the world!',
  'hello world', 'Hello, World? (x) "y" z...', "don't stop", 'café naïve', 'unbelievably', 'x y z ab abc abcd',
  '2024 2025 1 2 3', '안녕하세요 서울은 한국의 수도입니다.', '저는 학생입니다', '日本語 中文 東京', '日本語で話す',
  'x日y', '㐀𠀀豈 ｔｅｓｔ', 'é é e\u0301 ñ Ω ∑', 'a\u0000b c\ufffdd e\u200bf g\u00adh', 'a\u000bb c\u0085d e\u001fx',
  'tab\there\nnew\r\nline\u3000ideo\u2003em', '  lead and trail  ', '', ' ', '\u0000', '[MASK] is [MASK].',
  'hello[MASK]world', 'a [UNK] b [CLS]x', 'supercalifragilisticexpialidocious', 'hel lo wor ld', 'wor\u0000ld',
  '\u0000ab\u0000 cd\u0000', '😀 x😀 😀😀', 'x\u200dy', '¿Qué? «hola» 。、「」—…·‽⁇', '$5 + 3 < 4 = x > y ^ z | ~ `a`',
  'ßß İ ﬁﬁ', 'a\ue000b \uf8ff', '\u0378\u0379 x\u0378y', 'a<extra>b <extra> c', 'abcdef abcde ab##c', '#hash ##c',
  // case and accents: multi-character lowercase (İ), title case, final sigma (not applied by Rust's
  // char::to_lowercase), marks reordered by NFD (both removed; two Mc kept and swapped; a decomposition's
  // added marks sorted after the next character's mark, taking its span), NFD giving
  // punctuation or white space, Hangul, the Kelvin and Ångström signs, capital sharp s
  'İstanbul ΣΑΣ ΟΔΟΣ ǅ ǈ ÀÉÎÕÜ Ça', 'e\u0301\u0316 a\u0316\u0301b x\u{1D16D}\u{1D165}y \u0f73\u0f71 \u{1D160}\u{1B44}',
  'a\u037eb c\u1fefd e\u0387f\u2000g', '안녕하세요 ㄱ각 K Å ẞ Ⅻ ＡＢ', 'ÉCOLE Éé\u0301 NAÏVE [MASK] Café',
  // the added tokens of added_lowercase / added_cased, as written and as normalized
  'Café <EXTRA> cafe\u0301 [Keep] [keep] 中文 中 文', 'x<extra>y ab a\u200bb  NAÏVE x Naïve<Extra>'];
const PAIRS = [['hello world', 'New York'], ['안녕하세요', '서울은 한국의 수도입니다.'], ['x', ''],
  ['The quick brown fox', 'jumps over the lazy dog'], ['日本語', 'x y']];
const WORD_LISTS = [[['New', 'York-based', 'fox', 'jumps'], null], [['안녕하세요', '서울은', '日本語', ''], null],
  [['a\u0000b', ' x ', 'unbelievably', '[MASK]', 'qqq'], null], [['hello', 'world!'], ['The', 'lazy', 'dog.']]];
const TRUNC = [null, { max_length: 6, direction: 'right' }, { max_length: 5, direction: 'left' },
  { max_length: 7, direction: 'right', strategy: 'only_first' }];

// What BertNormalizer (clean_text, handle_chinese_chars) and BertPreTokenizer do with each code
// point, from HF's tokens of "a" + c + "b" (max_input_chars_per_word 2: a word of three characters
// is [UNK]): R removed, W white space, P a word of its own, C a word of its own only with
// handle_chinese_chars; others stay in the word. Written as ranges "first last class" (hex).
async function charClasses() {
  const probe = (chinese) => Tokenizer.fromString(JSON.stringify({ ...base, added_tokens: [], post_processor: null,
    decoder: null, normalizer: { ...base.normalizer, handle_chinese_chars: chinese },
    model: { ...base.model, max_input_chars_per_word: 2, vocab: { '[UNK]': 0, a: 1, '##b': 2, b: 3 } } }));
  const [t1, t0] = [probe(true), probe(false)];
  const ranges = [];
  for (let s = 0; s < 0x110000; s += 16384) {
    const cps = [];
    for (let c = s; c < Math.min(0x110000, s + 16384); ++c) if (c < 0xD800 || c > 0xDFFF) cps.push(c);
    const texts = cps.map((c) => 'a' + String.fromCodePoint(c) + 'b');
    const [e1, e0] = [await t1.encodeBatch(texts), await t0.encodeBatch(texts)];
    cps.forEach((c, i) => {
      const k1 = e1[i].getTokens().join(' '), k0 = e0[i].getTokens().join(' ');
      const k = k1 === 'a ##b' ? 'R' : k1 === 'a b' ? 'W' : k1 === '[UNK]' ? null
        : k1 === 'a [UNK] b' ? (k0 === 'a [UNK] b' ? 'P' : 'C') : '?';
      if (k === '?') throw new Error('unexpected tokens for U+' + c.toString(16) + ': ' + k1);
      if (k === null) return;
      const last = ranges[ranges.length - 1];
      if (last && last[2] === k && last[1] === c - 1) last[1] = c;
      else ranges.push([c, c, k]);
    });
  }
  return ranges.map(([a, b, k]) => `${a.toString(16)} ${b.toString(16)} ${k}`).join('\n') + '\n';
}

// What BertNormalizer's lowercase and strip_accents (each alone) make of every code point they
// change: lines "cp L|S cps" (hex), from HF's normalizer itself (normalizeString).
function normalizerMaps() {
  const { bertNormalizer } = require('tokenizers');
  const opts = { cleanText: false, handleChineseChars: false };
  const lower = bertNormalizer({ ...opts, stripAccents: false, lowercase: true });
  const strip = bertNormalizer({ ...opts, stripAccents: true, lowercase: false });
  const hex = (s) => Array.from(s, (c) => c.codePointAt(0).toString(16)).join(' ');
  const out = [];
  for (let cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const s = String.fromCodePoint(cp);
    for (const [kind, n] of [['L', lower], ['S', strip]]) {
      const t = n.normalizeString(s);
      if (t !== s) out.push(`${cp.toString(16)} ${kind} ${hex(t)}`.trimEnd());
    }
  }
  return out.join('\n') + '\n';
}

async function main() {
  fs.mkdirSync(path.join(outDir, 'wordpiece'), { recursive: true });
  fs.writeFileSync(path.join(outDir, 'wordpiece', 'tokenizer.json'), JSON.stringify(base, null, 1) + '\n');
  const lines = [];
  for (const [name, patch] of Object.entries(VARIANTS)) {
    const tok = Tokenizer.fromString(JSON.stringify(patched(base, patch)));
    for (const [a, b] of [...TEXTS.map((t) => [t, null]), ...PAIRS])
      for (const special of [true, false])
        for (const trunc of TRUNC) {
          setTruncation(tok, trunc);
          const record = { variant: name, patch, a, b, add_special_tokens: special,
            truncation: trunc && { strategy: 'longest_first', ...trunc } };
          let e;
          try {
            e = await tok.encode(a, b, { addSpecialTokens: special });
          } catch (err) {  // e.g. only_first with a text A too short for max_length: an error here too
            lines.push(JSON.stringify({ ...record, error: String(err.message || err) }));
            continue;
          }
          Object.assign(record, encodingFields(e));
          if (!trunc) {
            record.decoded = await tok.decode(e.getIds(), false);
            record.decoded_skip_special = await tok.decode(e.getIds(), true);
          }
          lines.push(JSON.stringify(record));
        }
  }
  // Lists of words (is_pretokenized / is_split_into_words): each word through BertNormalizer,
  // BertPreTokenizer and WordPiece alone, its tokens' word id its index, offsets into the word.
  for (const name of ['base', 'bert_processing']) {
    const spec = patched(base, VARIANTS[name]);
    const tok = Tokenizer.fromString(JSON.stringify(spec));
    const raw = Tokenizer.fromString(JSON.stringify({ ...spec, post_processor: null }));
    for (const [words, pairWords] of WORD_LISTS)
      for (const special of [true, false])
        for (const trunc of [null, { max_length: 6, strategy: 'LongestFirst', direction: 'right' }]) {
          const [{ encoding: e, word_ids }] = await encodeWords(tok, raw, spec, words, pairWords, special, trunc);
          lines.push(JSON.stringify({ variant: name, patch: VARIANTS[name], words, pair_words: pairWords,
            add_special_tokens: special, truncation: trunc && { ...trunc, strategy: 'longest_first' },
            ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(), type_ids: e.getTypeIds(),
            special_tokens_mask: e.getSpecialTokensMask(),
            sequence_ids: e.getSequenceIds().map((x) => (x === null || x === undefined ? -1 : x)), word_ids }));
        }
  }
  fs.writeFileSync(path.join(outDir, 'wordpiece.jsonl'), lines.join('\n') + '\n');
  fs.writeFileSync(path.join(outDir, 'bert_char_classes.txt'), await charClasses());
  fs.writeFileSync(path.join(outDir, 'bert_normalizer_maps.txt'), normalizerMaps());
  // decode without a decoder, byte-level BPE (roberta-base's tokenizer.json, decoder null)
  const roberta = JSON.parse(fs.readFileSync(path.join(assets, 'roberta-base-tokenizer', 'tokenizer.json'), 'utf8'));
  const bare = Tokenizer.fromString(JSON.stringify({ ...roberta, decoder: null }));
  const plain = [];
  for (const text of ['Hello world!', ' café <mask> naïve', 'a\nb  c', '日本語']) {
    const e = await bare.encode(text);
    for (const skip of [false, true])
      plain.push(JSON.stringify({ text, ids: e.getIds(), skip_special_tokens: skip,
        decoded: await bare.decode(e.getIds(), skip) }));
  }
  fs.writeFileSync(path.join(outDir, 'decoder_none.jsonl'), plain.join('\n') + '\n');
  console.log(`wrote ${lines.length} records`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
