"""Reading the plain-text training corpus (../shared/assets/corpus): hard-wrapped paragraphs."""


def paragraphs(path):
    """Paragraphs of a hard-wrapped text file: lines joined by a space, blank lines separate."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.strip():
                lines.append(line.strip())
            elif lines:
                yield " ".join(lines)
                lines = []
    if lines:
        yield " ".join(lines)
