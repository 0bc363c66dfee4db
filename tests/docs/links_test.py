"""The README and docs/ as a reader meets them: the README is at most 300 lines with no line over
300 characters, and every relative link in the README, examples/README.md and docs/*.md reaches a
file that exists and, with a #fragment, a heading of that file (GitHub's anchors: lowercase,
punctuation dropped, spaces to hyphens). A code block right after a line naming a file of the
repository ("`examples/cpp/embed.cpp`:") must be that file's text (its leading comment lines
aside), so the README's examples are the ones CI builds and runs; the C++ lines of docs/library.md's
examples must be lines of tests/header_examples.cpp, which compiles them.

Usage: links_test.py REPO_ROOT
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
failures = []


def anchors(path):
    out = set()
    fenced = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        title = line.lstrip("#").strip().lower()
        title = re.sub(r"[^\w\- ]", "", title)
        out.add(title.replace(" ", "-"))
    return out


readme = root / "README.md"
lines = readme.read_text().splitlines()
if len(lines) > 300:
    failures.append(f"README.md has {len(lines)} lines (at most 300)")
for n, line in enumerate(lines, 1):
    if len(line) > 300:
        failures.append(f"README.md:{n}: {len(line)} characters (at most 300)")

pages = [readme, root / "examples" / "README.md"] + sorted((root / "docs").glob("*.md"))
checked = 0
for page in pages:
    text = page.read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    for n, target in ((text[: m.start()].count("\n") + 1, m.group(1)) for m in re.finditer(r"\]\(([^)\s]+)\)", text)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        checked += 1
        if not dest.exists():
            failures.append(f"{page.relative_to(root)}:{n}: link to {target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            failures.append(f"{page.relative_to(root)}:{n}: link to {target}: no heading #{fragment}")

# README code blocks that quote a file of the repository.
for m in re.finditer(r"`([\w./-]+)`:\n\n```\w*\n(.*?)```", readme.read_text(), flags=re.S):
    path, block = root / m.group(1), m.group(2)
    checked += 1
    if not path.exists():
        failures.append(f"README.md quotes {m.group(1)}: no such file")
        continue
    body = "\n".join(l for l in path.read_text().splitlines() if not (l.startswith("//") or l.startswith("# "))).strip()
    quoted = "\n".join(l for l in block.splitlines() if not (l.startswith("//") or l.startswith("# "))).strip()
    if body != quoted:
        failures.append(f"README.md's block for {m.group(1)} differs from the file")

# docs/library.md's C++ examples are compiled in tests/header_examples.cpp: each of their code lines
# (comments, blank and #include lines aside) must be a line there.
def code(line):
    return " ".join(re.sub(r"//.*$", "", line).split())


compiled = {code(l) for l in (root / "tests" / "header_examples.cpp").read_text().splitlines()}
library = root / "docs" / "library.md"
for n, line in enumerate(library.read_text().splitlines(), 1):
    c = code(line[4:]) if line.startswith("    ") else ""
    if "roberta::" in c or c.startswith(("for ", "std::printf", "auto ", "const ")):
        checked += 1
        if c not in compiled:
            failures.append(f"docs/library.md:{n}: `{c}` is not in tests/header_examples.cpp, which compiles the examples")

for f in failures:
    print("FAIL", f)
print(f"{checked} links checked in {len(pages)} pages; {len(failures)} failure(s)")
sys.exit(1 if failures or checked < 20 else 0)
