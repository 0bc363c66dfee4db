#!/usr/bin/python3
"""Map every unit of meaning of an old README onto today's README.md and docs/*.md, to check that
moving text between pages lost nothing. By default the 2,429-line README from before it was split
into docs/ (the parent of commit 339ce4c).

Usage: /usr/bin/python3 tools/docs_coverage.py [--repo REPO] [--rev 339ce4c^]
                                               [--tsv /tmp/readme_map.tsv] [--show weak|unmatched|all]

A unit is a paragraph, a list item, a table row or a code block of the old README, with the
headings above it as context; a unit of more than SPLIT_WORDS words is cut at sentence / clause
boundaries ('. ' and '; ') into pieces of at least MIN_PIECE words, so that a long table row is
checked fact by fact.

Score of a unit against a page = fraction of the unit's distinctive word 4-grams (3-grams for short
units) found in the page. "union" is the same fraction over all pages together (a unit whose facts
went to two pages). Fallback: distinctive tokens (numbers with a unit or decimals, --options,
UPPER_CASE variables, paths and file names, `code spans`) looked up in all pages; the final score is
max(ngram union, 0.85 * token coverage) when the unit has >= 3 such tokens, else the n-gram union.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys

SPLIT_WORDS = 70
MIN_PIECE = 12
WELL = 0.70
WEAK = 0.35

STOP = set("""a an the and or of to in on at by for with from as is are was were be been being it its
this that these those there their them they than then so such not no but if else when where which who
whom what how all any each every one ones two more most less same other own into over under up down out
about after before while also only too very can could would should may might must will shall do does
did done has have had our we us you your he she his her i me my per via e g i.e e.g eg etc vs s t""".split())

DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[ T]\d{1,2}:\d{2})?\b")
HASH_RE = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def git_show(repo, rev, path):
    return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def words(text):
    text = text.lower().replace("\u2011", "-").replace("\u2013", "-").replace("\u2014", "-")
    text = DATE_RE.sub(" ", text)
    text = HASH_RE.sub(" ", text)
    return re.findall(r"[a-z0-9]+", text)


def ngrams(toks, n):
    out = []
    for i in range(len(toks) - n + 1):
        g = tuple(toks[i:i + n])
        if sum(t not in STOP for t in g) >= min(2, n - 1):
            out.append(g)
    return out


# ---------------------------------------------------------------- old README -> units
def parse_units(text):
    lines = text.split("\n")
    units = []  # dict(line, heading, kind, text)
    heads = []
    i = 0
    cur = None  # [start_line, kind, [lines]]

    def flush():
        nonlocal cur
        if cur and "".join(cur[2]).strip():
            units.append({"line": cur[0], "heading": " > ".join(heads), "kind": cur[1],
                          "text": "\n".join(cur[2]), "lines": list(cur[3])})
        cur = None

    in_fence = False
    prev_blank = True
    while i < len(lines):
        ln = lines[i]
        no = i + 1
        if in_fence:
            cur[2].append(ln); cur[3].append(no)
            if ln.strip().startswith("```"):
                in_fence = False
                flush()
            i += 1
            continue
        if ln.strip().startswith("```"):
            flush()
            cur = [no, "code", [ln], [no]]
            in_fence = True
            i += 1
            continue
        m = re.match(r"^(#+)\s+(.*)", ln)
        if m:
            flush()
            level = len(m.group(1))
            heads[:] = heads[:level - 1]
            while len(heads) < level - 1:
                heads.append("")
            heads.append(m.group(2).strip())
            prev_blank = True
            i += 1
            continue
        if not ln.strip():
            if cur and cur[1] == "code":
                # an indented code block may hold blank lines: keep it open if more code follows
                j = i
                while j < len(lines) and not lines[j].strip():
                    j += 1
                if j < len(lines) and lines[j].startswith("    "):
                    cur[2].append(ln); cur[3].append(no)
                    i += 1
                    continue
            flush()
            prev_blank = True
            i += 1
            continue
        if ln.startswith("    ") and (prev_blank or (cur and cur[1] == "code")) and \
                not (cur and cur[1] == "item"):
            if not (cur and cur[1] == "code"):
                flush()
                cur = [no, "code", [], []]
            cur[2].append(ln); cur[3].append(no)
        elif ln.lstrip().startswith("|"):
            flush()
            if not re.match(r"^\s*\|[\s\-:|]+\|\s*$", ln):
                units.append({"line": no, "heading": " > ".join(heads), "kind": "row",
                              "text": ln, "lines": [no]})
        elif re.match(r"^\s*(?:[-*+]|\d+\.)\s+", ln):
            flush()
            cur = [no, "item", [ln], [no]]
        else:
            if cur is None or cur[1] == "code":
                flush()
                cur = [no, "para", [], []]
            cur[2].append(ln); cur[3].append(no)
        prev_blank = False
        i += 1
    flush()
    return units


ABBREV = re.compile(r"(?:\be\.g|\bi\.e|\betc|\bvs|\bcf|\bEq|\bNo|\bFig)\.$")


def split_long(unit):
    """Cut a long unit at '. ' / '; ' boundaries into pieces of >= MIN_PIECE words."""
    text = unit["text"]
    if unit["kind"] == "code" or len(text.split()) <= SPLIT_WORDS:
        return [unit]
    # char offset -> old line number
    offs = []
    pos = 0
    for ln, no in zip(text.split("\n"), unit["lines"]):
        offs.append((pos, no))
        pos += len(ln) + 1

    def line_at(p):
        no = offs[0][1]
        for o, n in offs:
            if o <= p:
                no = n
        return no

    cuts = [0]
    for m in re.finditer(r"[.;](?=\s+\S)", text):
        head = text[max(0, m.start() - 6):m.end()]
        if m.group() == "." and (ABBREV.search(head) or re.search(r"\d\.$", head)):
            continue
        cuts.append(m.end())
    cuts.append(len(text))
    pieces = []
    for a, b in zip(cuts, cuts[1:]):
        seg = text[a:b]
        if pieces and (len(seg.split()) < MIN_PIECE or len(pieces[-1][1].split()) < MIN_PIECE):
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + seg)
        else:
            pieces.append((a, seg))
    if len(pieces) > 1 and len(pieces[-1][1].split()) < MIN_PIECE:
        last = pieces.pop()
        pieces[-1] = (pieces[-1][0], pieces[-1][1] + last[1])
    out = []
    for a, seg in pieces:
        lead = len(seg) - len(seg.lstrip())
        out.append(dict(unit, line=line_at(a + lead), text=seg.strip(), kind=unit["kind"] + "*"))
    return out


# ---------------------------------------------------------------- distinctive tokens
def distinct_tokens(text):
    t = DATE_RE.sub(" ", text)
    found = set()
    for m in re.finditer(r"(?<![\w-])--[a-z][a-z0-9-]*", t):
        found.add(m.group())
    for m in re.finditer(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", t):
        found.add(m.group())
    for m in re.finditer(r"[\w.@-]*[\w-]/[\w./@*-]+|\b[\w-]+\.(?:py|cpp|h|hpp|json|jsonl|md|sh|txt|"
                         r"toml|cmake|svg|npy|bin|safetensors|yml|yaml|csv|js)\b", t):
        s = m.group().strip(".,;:()")
        if len(s) > 2 and not re.fullmatch(r"[\d/.]+", s):
            found.add(s)
    for m in re.finditer(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?(?:x|%|ms|MB|GB|KB|s|us|µs|tokens/s|"
                         r"GB/s|bits?|rows?|threads?|cores?))?(?![\w.]*\d)", t):
        s = m.group()
        num = re.sub(r"[^\d.]", "", s.split()[0] if " " in s else s)
        digits = num.replace(".", "")
        if HASH_RE.fullmatch(s):
            continue
        if "." in num or "%" in s or s.endswith("x") or len(digits) >= 3 or "," in s:
            if len(digits) >= 2 or "%" in s or s.endswith("x"):
                found.add(s)
    for m in re.finditer(r"`([^`\n]{3,40})`", t):
        s = m.group(1).strip()
        if not HASH_RE.fullmatch(s):
            found.add(s)
    return sorted(found)


def norm_for_lookup(s):
    s = s.lower().replace("`", "")
    s = re.sub(r"(?<=\d),(?=\d{3})", "", s)
    return re.sub(r"\s+", " ", s)


def token_variants(tok):
    n = norm_for_lookup(tok)
    v = {n}
    m = re.fullmatch(r"([\d.]+)\s?(x|%|ms|mb|gb|kb|s|us|µs|.*)", n)
    if m:  # 1.57x ~ 1.57 x ; 99.8% ~ 99.8 %
        v.add(m.group(1) + m.group(2))
        v.add(m.group(1) + " " + m.group(2))
    return v


# ---------------------------------------------------------------- index of current pages
class Page:
    def __init__(self, name, text):
        self.name = name
        self.lines = text.split("\n")
        self.lower = norm_for_lookup(text)
        self.grams = {3: collections.defaultdict(list), 4: collections.defaultdict(list)}
        toks = []
        for no, ln in enumerate(self.lines, 1):
            for w in words(ln):
                toks.append((w, no))
        ws = [w for w, _ in toks]
        for n in (3, 4):
            for i in range(len(ws) - n + 1):
                self.grams[n][tuple(ws[i:i + n])].append(toks[i][1])


def best_line(page, grams, n, span, near=None):
    hist = collections.Counter()
    for g in grams:
        occ = page.grams[n].get(g)
        if occ:
            for l in set(occ):
                hist[l] += 1.0 / len(set(occ))
    if not hist:
        return 0
    win = max(6, span)
    best, best_l = None, 0
    for l in sorted(hist):
        s = sum(v for k, v in hist.items() if l <= k < l + win)
        # ties (a table header repeated, a phrase said twice) go to the place nearest the
        # previous unit's match, so that the map follows the old README's order
        key = (round(s, 6), -abs(l - near) if near else 0)
        if best is None or key > best:
            best, best_l = key, l
    return best_l


def score_unit(unit, pages, prev=None):
    toks = words(unit["text"])
    n = 4 if len(toks) >= 10 else 3
    grams = ngrams(toks, n)
    if not grams and n == 4:
        n = 3
        grams = ngrams(toks, 3)
    gs = set(grams)
    per_page = []
    union = set()
    for p in pages:
        hit = {g for g in gs if g in p.grams[n]}
        union |= hit
        per_page.append((len(hit) / len(gs) if gs else 0.0, p))
    per_page.sort(key=lambda x: (-x[0], x[1].name != (prev or ("", 0))[0]))
    # spans of the unit that no found n-gram covers (what may have been lost or reworded)
    covered = [False] * len(toks)
    for i in range(len(toks) - n + 1):
        g = tuple(toks[i:i + n])
        if g in union or (g not in gs and any(g in p.grams[n] for p in pages)):
            for k in range(i, i + n):
                covered[k] = True
    # a gap: a run of uncovered tokens holding >= 2 content words or a figure (a changed number);
    # stop words alone never count
    gaps, run = [], []
    for t, c in zip(toks + ["."], covered + [True]):
        if c:
            if sum(w not in STOP for w in run) >= 2 or any(any(ch.isdigit() for ch in w)
                                                           for w in run):
                gaps.append(" ".join(run))
            run = []
        else:
            run.append(t)
    best_s, best_p = per_page[0]
    ng_union = len(union) / len(gs) if gs else 0.0
    dtoks = distinct_tokens(unit["text"])
    missing = []
    for t in dtoks:
        vs = token_variants(t)
        if not any(v in p.lower for p in pages for v in vs):
            missing.append(t)
    tok_cov = (1 - len(missing) / len(dtoks)) if dtoks else None
    final = ng_union
    if tok_cov is not None and len(dtoks) >= 3:
        final = max(final, 0.85 * tok_cov)
    if not gs:  # nothing distinctive to match with n-grams
        final = tok_cov if tok_cov is not None else 1.0
    if gs and best_s > 0:
        near = prev[1] if prev and prev[0] == best_p.name else None
        line = best_line(best_p, gs, n, len(unit["lines"]) * 2, near)
    else:  # locate by tokens
        line = 0
        for t in dtoks:
            if t not in missing:
                for p in pages:
                    for no, ln in enumerate(p.lines, 1):
                        if norm_for_lookup(t) in norm_for_lookup(ln):
                            best_p, line = p, no
                            break
                    if line:
                        break
            if line:
                break
    return {"score": final, "ngram_best": best_s, "ngram_union": ng_union, "tok_cov": tok_cov,
            "page": best_p.name, "pline": line, "missing": missing, "ngrams": len(gs), "gaps": gaps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--rev", default="339ce4c^")
    ap.add_argument("--tsv", default="/tmp/readme_map.tsv")
    ap.add_argument("--gaps", action="store_true",
                    help="print every unit (even a well matched one) with uncovered spans")
    ap.add_argument("--show", choices=["none", "weak", "unmatched", "all"], default="none",
                    help="print the weakly matched / unmatched units in full")
    a = ap.parse_args()

    old = git_show(a.repo, a.rev, "README.md")
    names = ["README.md"] + sorted(os.path.relpath(f, a.repo)
                                   for f in glob.glob(os.path.join(a.repo, "docs", "*.md")))
    pages = []
    for nm in names:
        with open(os.path.join(a.repo, nm), encoding="utf-8") as f:
            pages.append(Page(nm, f.read()))

    units = []
    for u in parse_units(old):
        units.extend(split_long(u))

    counts = collections.Counter()
    rows = []
    prev = None
    for u in units:
        r = score_unit(u, pages, prev)
        if r["pline"]:
            prev = (r["page"], r["pline"])
        status = "well" if r["score"] >= WELL else "weak" if r["score"] >= WEAK else "unmatched"
        counts[status] += 1
        rows.append((u, r, status))

    with open(a.tsv, "w", encoding="utf-8") as f:
        f.write("old_line\tstatus\tscore\tngram_best\tngram_union\ttok_cov\tbest\theading\tkind\t"
                "missing_tokens\tuncovered_spans\tunit\n")
        for u, r, st in rows:
            snippet = re.sub(r"\s+", " ", u["text"]).strip()[:100]
            f.write("\t".join([
                str(u["line"]), st, f"{r['score']:.2f}", f"{r['ngram_best']:.2f}",
                f"{r['ngram_union']:.2f}", "" if r["tok_cov"] is None else f"{r['tok_cov']:.2f}",
                f"{r['page']}:{r['pline']}", u["heading"].replace("\t", " "), u["kind"],
                " ".join(r["missing"])[:200].replace("\t", " "),
                " | ".join(r["gaps"])[:300].replace("\t", " "), snippet.replace("\t", " ")]) + "\n")

    total = len(rows)
    print(f"old README: {len(old.splitlines())} lines, {total} units "
          f"(long paragraphs / rows split into clauses of >= {MIN_PIECE} words)")
    print(f"  matched well (score >= {WELL}):  {counts['well']}")
    print(f"  weakly matched ({WEAK}..{WELL}): {counts['weak']}")
    print(f"  unmatched (< {WEAK}):            {counts['unmatched']}")
    print(f"pages searched: {', '.join(p.name for p in pages)}")
    print(f"TSV: {a.tsv}")
    with_gaps = sum(1 for _, r, _ in rows if r["gaps"])
    print(f"units with an uncovered span (>= 2 content words or a figure: reworded or lost): {with_gaps}")
    if a.gaps and a.show == "none":
        a.show = "unmatched"
    if a.show != "none":
        want = {"weak": {"weak", "unmatched"}, "unmatched": {"unmatched"},
                "all": {"well", "weak", "unmatched"}}[a.show]
        for u, r, st in rows:
            if st in want or (a.gaps and r["gaps"]):
                print(f"\n=== L{u['line']} [{st} {r['score']:.2f} ng={r['ngram_union']:.2f} "
                      f"tok={r['tok_cov']}] -> {r['page']}:{r['pline']}  ({u['heading']})")
                if r["missing"]:
                    print("    missing tokens:", ", ".join(r["missing"]))
                if r["gaps"]:
                    print("    uncovered:", " | ".join(r["gaps"]))
                print("    " + re.sub(r"\s+", " ", u["text"]).strip()[:1200])


if __name__ == "__main__":
    sys.exit(main())
