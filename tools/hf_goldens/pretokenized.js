// Hugging Face's encode of a pre-tokenized input (tokenizers' is_pretokenized=True, transformers'
// is_split_into_words=True) with the node binding of `tokenizers`, which cannot take a list of
// words itself (its encode takes strings only). Rust's Tokenizer::encode_single_sequence does, for
// InputSequence::PreTokenized (tokenizers/src/tokenizer/mod.rs):
//   words.enumerate().map(|(i, w)| encode(true, i, w)).collect()
// that is: each word alone through the added vocabulary, the pre-tokenizer and the model, every
// token of word i given word id i (PreTokenizedString::into_encoding(Some(i), ...)), then
// Encoding::merge(encodings, growing_offsets = false) (FromIterator for Encoding), so offsets
// stay relative to each word; then Tokenizer::post_process (truncation, the post-processor's
// trim_offsets and special tokens). Here each step is HF's own function: `raw.encode` (the same
// tokenizer without post-processor) per word, `mergeEncodings(list, false)`, `tok.postProcess`
// with the truncation set on `tok`. Two rules are written out, the binding having no way to run
// them on a word list:
// - the word ids: HF's per-word encode numbers the word's pre-tokens; into_encoding(Some(i))
//   gives them all i;
// - with truncation, do_tokenize tokenizes each word with the limit max_length (not for text A
//   under only_second): PreTokenizedString::tokenize_with_limit walks the word's splits from the
//   kept side and stops after the first split it tokenizes (not an added token's, which comes
//   tokenized) at which the tokens counted reach max_length. That drops tokens only of a word
//   longer than max_length, but the shorter length can change how longest_first shares a pair.
//   The cut is made with HF's Encoding.truncate on the word's encoding.
'use strict';

const { mergeEncodings } = require('tokenizers');

// Returns the encoding's windows, each {encoding, word_ids}: the main one, then (with
// `truncation.overflow`: transformers' return_overflowing_tokens) its overflowing ones, as
// Encoding::truncate cut them: window j holds the tokens [j * (kept - stride), + kept).
// `spec`: the tokenizer.json `tok` was made from (its added_tokens' ids).
async function encodeWords(tok, raw, spec, words, pairWords, addSpecial, truncation) {
  const strategy = truncation ? truncation.strategy || 'LongestFirst' : null;
  const direction = truncation ? (truncation.direction || 'right').toLowerCase() : 'right';
  const added = new Set((spec.added_tokens || []).map((t) => t.id));
  const part = async (list, typeId) => {
    const encodings = [];
    const wordOf = [];
    for (let i = 0; i < list.length; i++) {
      const e = await raw.encode(list[i], null, { addSpecialTokens: false });
      if (truncation && (strategy !== 'OnlySecond' || typeId !== 0)) {
        const keep = withLimit(e, truncation.max_length, direction, added);
        if (keep < e.getLength()) e.truncate(keep, 0, direction);
      }
      encodings.push(e);
      for (let t = 0; t < e.getLength(); t++) wordOf.push(i);
    }
    return { merged: mergeEncodings(encodings, false), wordOf };
  };
  const a = await part(words, 0);
  const b = pairWords ? await part(pairWords, 1) : null;
  if (truncation) {
    tok.setTruncation(truncation.max_length, {
      strategy: truncation.strategy || 'LongestFirst',
      direction: (truncation.direction || 'right').toLowerCase(),
      stride: truncation.stride || 0,
    });
  } else {
    tok.disableTruncation();
  }
  let out;
  try {
    out = tok.postProcess(a.merged, b ? b.merged : null, addSpecial);
  } finally {
    tok.disableTruncation();
  }
  const left = truncation && (truncation.direction || 'right').toLowerCase() === 'left';
  const windows = truncation && truncation.overflow ? [out].concat(out.getOverflowing()) : [out];
  if (windows.length > 1 && (b || left)) throw new Error('encodeWords: overflowing windows of one text cut right only');
  // The positions of each sequence's tokens in an encoding (what the post-processor did not add).
  const positionsOf = (e, seq) => {
    const seqIds = e.getSequenceIds();
    const special = e.getSpecialTokensMask();
    const positions = [];
    for (let t = 0; t < seqIds.length; t++) if (!special[t] && (seqIds[t] ?? (b ? -1 : 0)) === seq) positions.push(t);
    return positions;
  };
  const kept = positionsOf(out, 0).length;
  const step = kept - ((truncation && truncation.stride) || 0);
  // Word ids: the tokens of each sequence that truncation kept, a prefix (right) or a suffix (left);
  // window j holds the tokens from j * step.
  return windows.map((e, j) => {
    const wordIds = new Array(e.getLength()).fill(-1);
    for (const [seq, p] of [[0, a], [1, b]]) {
      if (!p) continue;
      const positions = positionsOf(e, seq);
      const skip = left ? p.wordOf.length - positions.length : j * step;
      positions.forEach((t, k) => { wordIds[t] = p.wordOf[skip + k]; });
    }
    return { encoding: e, word_ids: wordIds };
  });
}

// How many tokens of a word's encoding tokenize_with_limit keeps (its splits: the word ids of the
// word encoded alone; added tokens come tokenized and never stop the walk).
function withLimit(e, maxTokens, direction, added) {
  const wordIds = e.getWordIds();
  const ids = e.getIds();
  const n = wordIds.length;
  const at = (k) => (direction === 'left' ? n - 1 - k : k);
  let k = 0;
  while (k < n) {
    const w = wordIds[at(k)];
    const isAdded = added.has(ids[at(k)]);
    while (k < n && wordIds[at(k)] === w) k++;
    if (!isAdded && k >= maxTokens) break;
  }
  return k;
}

module.exports = { encodeWords };
