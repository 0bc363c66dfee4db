// A copy of tokenizer.json `base` with a golden record's `patch` applied: [JSON pointer, value]
// pairs, a final "-" appending to an array (JSON pointer's "append"); and a record's truncation
// ({max_length, direction, strategy} or null) set on an HF tokenizer. Shared by the generators of
// variant, pre-tokenized and WordPiece goldens.
'use strict';

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

module.exports = { patched, setTruncation };
