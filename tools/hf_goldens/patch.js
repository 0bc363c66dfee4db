// Helpers shared by the golden generators: a copy of tokenizer.json `base` with a golden record's
// `patch` applied ([JSON pointer, value] pairs, a final "-" appending to an array: JSON pointer's
// "append"); a record's truncation ({max_length, direction, strategy} or null) set on an HF
// tokenizer; an HF Encoding's fields as the records hold them; and HF's id stream of a corpus file.
'use strict';
const crypto = require('crypto');
const fs = require('fs');

function patched(base, patch) {
  const doc = JSON.parse(JSON.stringify(base));
  for (const [pointer, value] of patch) {
    const keys = pointer.split('/').slice(1);
    let o = doc;
    for (const k of keys.slice(0, -1)) o = o[k];
    const last = keys[keys.length - 1];
    if (last === '-') o.push(value);
    else o[last] = value;
  }
  return doc;
}

const STRATEGY = { longest_first: 'LongestFirst', only_first: 'OnlyFirst', only_second: 'OnlySecond' };

function setTruncation(tok, trunc) {
  if (trunc) {
    tok.setTruncation(trunc.max_length, { strategy: STRATEGY[trunc.strategy || 'longest_first'],
      direction: trunc.direction });
  } else {
    tok.disableTruncation();
  }
}

// ids, tokens, offsets, type_ids, special_tokens_mask, sequence_ids and word_ids of HF Encoding
// `e` (-1 where HF has none).
function encodingFields(e) {
  const orNone = (x) => (x === null || x === undefined ? -1 : x);
  return { ids: e.getIds(), tokens: e.getTokens(), offsets: e.getOffsets(), type_ids: e.getTypeIds(),
    special_tokens_mask: e.getSpecialTokensMask(), sequence_ids: e.getSequenceIds().map(orNone),
    word_ids: e.getWordIds().map(orNone) };
}

// Every line of the file at `filePath` encoded alone without special tokens: the token count and
// the sha256 of the ids (little-endian int32), as corpus/SOURCES.md gives them for roberta-base.
async function idStream(tok, filePath) {
  const lines = fs.readFileSync(filePath, 'utf8').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const hash = crypto.createHash('sha256');
  let tokens = 0;
  for (let i = 0; i < lines.length; i += 10000) {
    const encodings = await tok.encodeBatch(lines.slice(i, i + 10000), { addSpecialTokens: false });
    for (const e of encodings) {
      const ids = Int32Array.from(e.getIds());  // little-endian on x86-64 and arm64
      hash.update(Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength));
      tokens += ids.length;
    }
  }
  return { tokens, sha256: hash.digest('hex') };
}

module.exports = { patched, setTruncation, encodingFields, idStream };
