"""docs/cli-reference.md is `roberta --help` and every `roberta COMMAND --help`, which the CLI
generates from its command and option tables (tools/cli/main.cpp, common.cpp): this script writes
the page from the program, or checks that the page is what the program prints now.

Usage: cli_reference.py ROBERTA_BINARY PAGE [--write]
"""
import pathlib
import subprocess
import sys

binary, page = sys.argv[1], pathlib.Path(sys.argv[2])
write = "--write" in sys.argv[3:]


def helptext(*args):
    return subprocess.run([binary, *args, "--help"], check=True, capture_output=True, text=True).stdout


top = helptext()
commands = []
in_commands = False
for line in top.splitlines():
    if line == "Commands:":
        in_commands = True
    elif in_commands and line.startswith("  "):
        commands.append(line.split()[0])
    elif in_commands:
        break
if len(commands) < 10:
    sys.exit(f"found only {commands} in `roberta --help`")

parts = ["# `roberta` command reference", "",
         "Generated from the program (`roberta --help` and `roberta COMMAND --help`, which come from the CLI's",
         "command and option tables); the `docs_cli_reference` test fails when this page and the program differ.",
         "Regenerate it with:", "",
         "    /usr/bin/python3 tests/docs/cli_reference.py build/roberta docs/cli-reference.md --write", "",
         "[cli.md](cli.md) explains the commands with examples.", "",
         "## roberta", "", "```", top.rstrip("\n"), "```", ""]
for c in commands:
    parts += [f"## roberta {c}", "", "```", helptext(c).rstrip("\n"), "```", ""]
text = "\n".join(parts)

if write:
    page.write_text(text)
    print(f"wrote {page}: {len(commands)} commands")
elif not page.exists() or page.read_text() != text:
    old = page.read_text().splitlines() if page.exists() else []
    new = text.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    print(f"FAIL {page} differs from the program's help from line {first + 1}:")
    print(f"  page:    {old[first] if first < len(old) else '(end)'}")
    print(f"  program: {new[first] if first < len(new) else '(end)'}")
    print(f"regenerate: /usr/bin/python3 tests/docs/cli_reference.py {binary} {page} --write")
    sys.exit(1)
else:
    print(f"{page} matches the help of {len(commands)} commands")
