"""A doctest for Markdown: runs the code blocks of README.md and docs/*.md that are marked
runnable, so a renamed option or a changed output breaks the build, not the reader.

A block is runnable when the line before it (blank lines aside) is an HTML comment, which GitHub
does not show:

    <!-- doctest -->
    <!-- doctest: server="--model models/demo" requires=node:openai,python:numpy -->

Two kinds of block run:
- a shell session: lines starting with `$ ` are commands (a trailing `\\` continues one), the lines
  after a command up to the next are its expected output (stdout and stderr). Output lines compare
  with runs of spaces collapsed; a decimal number matches within 5 units of its last printed digit
  (the docs show rounded figures) or 2e-5 of its value (last bits differ between CPUs), an integer
  exactly; `...` inside a line matches any text, and a line of only `...` any
  number of lines. A command must exit 0.
- a Python session (```python with `>>>` prompts): run by Python's own doctest module with
  ELLIPSIS and NORMALIZE_WHITESPACE.

Everything runs in a scratch folder that links every top-level entry of the repository (and
`../shared` beside it) and has `build` pointing at the build tree, so the docs' `./build/roberta` and `models/demo` work and
nothing is written into the repository; `/tmp/` in a command becomes the scratch folder's tmp/.
`server=ARGS` starts `roberta serve ARGS` on a free port for the block (the block's `8080` becomes
that port) and stops it after. `requires=` skips the block, saying so, when a Python module
(python:NAME), a Node module in the build tree's npm folder (node:NAME) or a command (cmd:NAME) is
missing.

Usage: doctest_md.py REPO_ROOT BUILD_DIR [FILE.md ...]
(default: README.md, examples/README.md and docs/*.md)
"""
import os
import pathlib
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

root = pathlib.Path(sys.argv[1]).resolve()
build = pathlib.Path(sys.argv[2]).resolve()
pages = [root / p for p in sys.argv[3:]] or [root / "README.md", root / "examples" / "README.md",
                                             *sorted((root / "docs").glob("*.md"))]
node_modules = build / "serve-npm" / "node_modules"
failures, ran, skipped = [], 0, []

MARK = re.compile(r"<!--\s*doctest(?::\s*(.*?))?\s*-->\s*$")
NUMBER = re.compile(r"(-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)")


def blocks(path):
    """Yields (line number, options, code) of each marked block of the page."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        i += 1
        if not m:
            continue
        opts = dict(kv.split("=", 1) for kv in shlex.split(m.group(1) or ""))
        while i < len(lines) and not lines[i].strip():
            i += 1
        start = i + 1
        if i < len(lines) and lines[i].startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            yield start + 1, opts, "\n".join(lines[i + 1:end])
            i = end + 1
        else:  # an indented block
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            yield start, opts, "\n".join(l[4:] for l in lines[i:end]).rstrip()
            i = end


def missing(requires):
    for need in filter(None, requires.split(",")):
        kind, name = need.split(":", 1)
        if kind == "python" and subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                                               env=dict(os.environ, PYTHONPATH=str(build / "python"))).returncode:
            return need
        if kind == "node" and not (node_modules / name / "package.json").exists():
            return need
        if kind == "cmd" and not shutil.which(name):
            return need
    return None


def number_close(got, want):
    """Integers exactly; decimals within 5 units of the last printed digit, or 2e-5 of the value
    (float32's precision, for numbers printed with more digits than a float holds)."""
    if not re.search(r"[.eE]", want):
        return got == want
    mantissa, _, exponent = want.lower().partition("e")
    digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** (int(exponent or 0) - digits)
    return abs(float(got) - float(want)) <= max(5 * unit, 2e-5 * abs(float(want)))


def line_matches(got, want):
    if "..." in want:
        pattern = ".*".join(re.escape(" ".join(p.split())) for p in want.split("..."))
        return re.fullmatch(pattern, " ".join(got.split())) is not None
    g, w = NUMBER.split(" ".join(got.split())), NUMBER.split(" ".join(want.split()))
    return len(g) == len(w) and all(a == b if k % 2 == 0 else number_close(a, b)
                                    for k, (a, b) in enumerate(zip(g, w)))


def output_matches(got, want):
    if not want:
        return True
    if want[0].strip() == "...":
        return any(output_matches(got[k:], want[1:]) for k in range(len(got) + 1))
    return bool(got) and line_matches(got[0], want[0]) and output_matches(got[1:], want[1:])


def run_shell(code, cwd, env, where):
    commands, current = [], None
    for line in code.splitlines():
        if current is not None and current.endswith("\\"):
            current = current + "\n" + line  # bash reads the backslash-newline as one line
            commands[-1][0] = current
        elif line.startswith("$ "):
            current = line[2:]
            commands.append([current, []])
        elif commands:
            commands[-1][1].append(line)
    for command, want in commands:
        command = command.replace("/tmp/", str(cwd / "tmp") + "/")
        r = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        got = (r.stdout + r.stderr).rstrip("\n").splitlines()
        while want and not want[-1].strip():
            want.pop()
        if r.returncode != 0 or not output_matches(got, want):
            failures.append(f"{where}: `{command}` exit {r.returncode}; expected:\n  " + "\n  ".join(want) +
                            "\ngot:\n  " + "\n  ".join(got[:40]))


def run_python(code, cwd, env, where):
    script = ("import doctest, sys\n"
              "t = doctest.DocTestParser().get_doctest(sys.stdin.read(), {}, 'block', 'block', 0)\n"
              "r = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)\n"
              "r.run(t)\nsys.exit(1 if r.failures else 0)\n")
    r = subprocess.run([sys.executable, "-c", script], input=code, cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        failures.append(f"{where}: Python doctest failed:\n{r.stdout}{r.stderr}")


class Server:
    def __init__(self, args, cwd, env):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        command = [str(build / "roberta"), "serve", *shlex.split(args), "--port", str(self.port), "--quiet"]
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1)
                return
            except OSError:
                if self.process.poll() is not None:
                    self.log.seek(0)
                    raise RuntimeError(f"`{' '.join(command)}` exited with status {self.process.returncode}: "
                                       + self.log.read().decode(errors="replace"))
                time.sleep(0.1)
        raise RuntimeError(f"`{' '.join(command)}` did not get healthy in 60 s")

    def stop(self):
        self.process.terminate()
        return self.process.wait(timeout=30)


with tempfile.TemporaryDirectory() as scratch:
    cwd = pathlib.Path(scratch) / "repo"
    cwd.mkdir()
    if (root.parent / "shared").is_dir():  # ../shared, the test assets beside the repository
        (cwd.parent / "shared").symlink_to(root.parent / "shared")
    for entry in root.iterdir():
        if entry.name not in ("build", ".git"):
            (cwd / entry.name).symlink_to(entry)
    (cwd / "build").symlink_to(build)
    (cwd / "tmp").mkdir()
    env = dict(os.environ, PYTHONPATH=str(build / "python"), NODE_PATH=str(node_modules))
    for page in pages:
        for line, opts, code in blocks(page):
            where = f"{page.relative_to(root)}:{line}"
            need = missing(opts.get("requires", ""))
            if need:
                skipped.append(f"{where} (needs {need})")
                continue
            server = Server(opts["server"], cwd, env) if "server" in opts else None
            try:
                if server:
                    code = code.replace("8080", str(server.port))
                is_python = code.lstrip().startswith(">>>")
                (run_python if is_python else run_shell)(code, cwd, env, where)
                ran += 1
            finally:
                if server and server.stop() != 0:
                    failures.append(f"{where}: the server did not exit 0")

for s in skipped:
    print(f"skipped {s}")
for f in failures:
    print(f"FAIL {f}\n")
print(f"{ran} block(s) run, {len(skipped)} skipped, {len(failures)} failure(s)")
sys.exit(1 if failures or not ran else 0)
