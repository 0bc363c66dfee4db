#!/usr/bin/python3
"""`roberta embed` streams: peak memory for N lines (default 300,000; CTest's run) is that of a
tenth as many (within 8 MB), and a single 10 MB line is truncated with a warning, not a crash.
Usage: bounded_memory.py ROBERTA_BINARY MODEL_DIR WORK_DIR [N]"""
import os
import resource
import subprocess
import sys

roberta, model, work = sys.argv[1:4]
count = int(sys.argv[4]) if len(sys.argv) > 4 else 300_000
os.makedirs(work, exist_ok=True)


def peak_kb_of(lines, name):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        for i in range(lines):
            f.write(f"line number {i} of a long stream\n")
    pid = os.fork()
    if pid == 0:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            os.execv(roberta, [roberta, "embed", "--model", model, path])
    _, status, usage = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"embed failed on {lines} lines"
    return usage.ru_maxrss


small, large = peak_kb_of(count // 10, "small.txt"), peak_kb_of(count, "large.txt")
print(f"peak RSS: {count // 10:,} lines {small} KB, {count:,} lines {large} KB")
assert large - small < 8 * 1024, "memory grows with the number of lines"

line = ("word " * 2_100_000)[:10_000_000] + "\n"
r = subprocess.run([roberta, "embed", "--model", model], input=line.encode(), capture_output=True)
assert r.returncode == 0, r.stderr.decode()
assert b"warning: line 1 was truncated" in r.stderr, r.stderr.decode()
assert r.stdout.count(b"\n") == 1
print("10 MB line: truncated with a warning, one embedding")
