#!/usr/bin/python3
"""Where HF's Precompiled normalizer sees extended grapheme clusters: the goldens of
tests/data/hf/precompiled_graphemes.json.

    source tools/hf_goldens/hf_tokenizers_env.sh
    /usr/bin/python3 tools/hf_goldens/gen_grapheme_goldens.py tests/data/hf

HF's Precompiled (the Rust crate spm_precompiled) replaces a grapheme of fewer than 6 bytes by the
rule of the shortest prefix of it that has one, else each character by its own. With a charsmap
(built by Google's sentencepiece from a rule file) that maps "a" to "<" and every other code point
(but "<" and "[") to "[", HF's output shows the graphemes: "a" + X normalizes to "<" when X extends
the "a" (one grapheme, replaced whole by the rule of its prefix "a"), else to "<[" (or "<<" for
X = "a"); X + "a" to "[" when X joins the "a" after it (a Prepend character). Those two sets, as
ranges, are `extends` and `prepends`; `sequences` are longer texts (emoji with ZWJ, Hangul,
regional indicators, CR LF, controls, Indic conjuncts) with HF's output; `charsmap` is the
charsmap, so the test runs our normalizer on the same rules. Every code point but surrogates.
Deterministic.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_unigram_tokenizer import parse_model  # noqa: E402

SEQUENCES = [
    "\r\n", "\r\na", "\n\r", "a\r\n\u0301", "\u0001\u0301", "\u0301a", "a\u200d", "a\u200da",
    "\u00a9\u200d\u00a9", "\u00a9\u200d", "\u00a9\u0301\u200d\u00a9", "a\u200d\u00a9", "\U0001F600\u200d\U0001F600",
    "\U0001F1E6\U0001F1E8\U0001F1E6", "\U0001F1E6\u0301", "\u0600\u1100\u1161", "\u0600\u1100", "\u0600\uac00\u11a8",
    "\u0600\u0600a", "\u0600\r", "\u0600\u0301", "\u1100\u1161\u11a8", "\uac00\u1161", "\uac01\u11a8",
    "\u0915\u094d\u0937", "\u0915\u094d\u200d\u0937", "\u0915\u0937", "e\u0301\u0302", "e\u0301\u0302\u0303",
    "\u0e01\u0e33", "a\u0903", "a\ufe0f", "a\U000e0100", "a\U0001d165", "\U000110bda", "\U000110bd\U000110bda",
    "\u0915\u0301\u0302", "x\u0308\u0308\u0308\u0308",
]


def build_charsmap(tmp):
    rules = ["61\t3C"] + ["%X\t5B" % cp for cp in range(1, 0x110000)
                          if not 0xD800 <= cp <= 0xDFFF and cp not in (0x61, 0x3C, 0x5B)]
    tsv, text = os.path.join(tmp, "rules.tsv"), os.path.join(tmp, "in.txt")
    with open(tsv, "w") as f:
        f.write("\n".join(rules) + "\n")
    with open(text, "w") as f:
        f.write("abc def\n" * 100)
    prefix = os.path.join(tmp, "g")
    spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=10, model_type="unigram",
                                   normalization_rule_tsv=tsv, num_threads=1, hard_vocab_limit=False,
                                   minloglevel=2)
    with open(prefix + ".model", "rb") as f:
        return parse_model(f.read())["normalizer_spec"]["precompiled_charsmap"]


NODE = r"""
const { precompiled } = require('tokenizers');
const [charsmap, sequences] = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const n = precompiled(Array.from(Buffer.from(charsmap, 'base64')));
const extends_ = [], prepends = [];
const add = (ranges, cp) => {
  const last = ranges[ranges.length - 1];
  if (last && last[1] === cp - 1) last[1] = cp; else ranges.push([cp, cp]);
};
for (let cp = 1; cp < 0x110000; ++cp) {
  if (cp >= 0xD800 && cp <= 0xDFFF) continue;
  const x = String.fromCodePoint(cp);
  const after = n.normalizeString('a' + x), before = n.normalizeString(x + 'a');
  if (after === '<') add(extends_, cp);
  else if (!['<[', '<<', '<' + x].includes(after)) throw new Error('a + U+' + cp.toString(16) + ': ' + after);
  if (before === '[' || (cp === 0x61 && before === '<')) add(prepends, cp);
}
const out = sequences.map((text) => ({ text, normalized: n.normalizeString(text) }));
console.log(JSON.stringify({ extends: extends_, prepends, sequences: out }));
"""


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_grapheme_goldens.py OUTDIR")
    with tempfile.TemporaryDirectory() as tmp:
        charsmap = base64.b64encode(build_charsmap(tmp)).decode()
    done = subprocess.run(["node", "-e", NODE], input=json.dumps([charsmap, SEQUENCES]), capture_output=True,
                          text=True, check=True)
    result = json.loads(done.stdout)
    doc = {"about": "HF's Precompiled normalizer (tokenizers 0.23.2) with `charsmap` (a -> <, every other code "
                    "point but < and [ -> [): tools/hf_goldens/gen_grapheme_goldens.py",
           "charsmap": charsmap, **result}
    path = os.path.join(sys.argv[1], "precompiled_graphemes.json")
    with open(path, "w") as f:
        f.write(json.dumps(doc, ensure_ascii=True) + "\n")
    print(f"{path}: {len(result['extends'])} extend ranges, {len(result['prepends'])} prepend ranges, "
          f"{len(result['sequences'])} sequences")


if __name__ == "__main__":
    main()
