#!/usr/bin/python3
"""Instruction counts of the ARM GEMM kernels' inner loops, from the disassembly of an aarch64 build
(the emulator tells nothing about speed; these counts and a CPU's published issue rates are what an
estimate can rest on, docs/arm64.md#speed-an-estimate):

    python3 tools/arm64_inner_loops.py build-arm64/roberta

For each kernel's full register block it finds the innermost loop holding its multiply instruction
(the backward branch whose body is densest in them) and prints, per iteration: the
multiply-accumulates (MACs) done, the instructions, how many are the multiply instruction, loads,
other vector instructions (they share the SIMD pipes with the multiplies), the rest (integer and
branches), and MACs per instruction.
"""
import re
import subprocess
import sys

# (symbol substring, multiply mnemonic, MACs per instruction, what)
KERNELS = [
    ("block_neon<6ul, float>", "fmla", 4, "fp32, NEON fmla (6 x 32 block, two passes of 16 columns)"),
    ("block_neon<6ul, unsigned short>", "fmla", 4, "bf16 widened to fp32, NEON fmla (6 x 32)"),
    ("block_bfmmla<4ul>", "bfmmla", 16, "bf16, bfmmla 2x4x2 (4 x 32 block)"),
    ("block_sdot<4ul>", "sdot", 16, "int8, sdot 4-way (4 x 64 block)"),
    ("block_smmla<4ul>", "smmla", 32, "int8, smmla 2x8x2 (4 x 64 block)"),
]


def functions(binary):
    """{demangled name: [(address, mnemonic, operands)]} for the kernels' symbols."""
    out = subprocess.run(["aarch64-linux-gnu-objdump", "-d", "-C", "--no-show-raw-insn", binary],
                         check=True, capture_output=True, text=True).stdout
    found, current = {}, None
    for line in out.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if head:
            name = head.group(1)
            current = name if any(k[0] in name for k in KERNELS) else None
            if current:
                found[current] = []
            continue
        ins = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if current and ins:
            found[current].append((int(ins.group(1), 16), ins.group(2), ins.group(3)))
    return found


def inner_loop(code, mnemonic):
    """The body [start, branch] of the backward branch whose instructions are most often `mnemonic`
    (the innermost loop: an outer one adds its own instructions to the inner one's)."""
    best = None
    for i, (addr, op, args) in enumerate(code):
        if not (op == "b" or op.startswith("b.") or op in ("cbnz", "cbz", "tbnz", "tbz")):
            continue
        target = re.search(r"\b([0-9a-f]+) <", args)
        if not target or int(target.group(1), 16) >= addr:
            continue
        start = int(target.group(1), 16)
        body = [c for c in code[: i + 1] if c[0] >= start]
        count = sum(1 for c in body if c[1] == mnemonic)
        if count and (best is None or count / len(body) > best[0] / len(best[1])):
            best = (count, body)
    return best[1] if best else []


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    found = functions(sys.argv[1])
    print(f"{'kernel':58} {'MACs':>5} {'instr':>5} {'mul':>4} {'loads':>5} {'simd':>5} {'other':>5} "
          f"{'MACs/instr':>10}")
    for symbol, mnemonic, macs, what in KERNELS:
        names = [n for n in found if symbol in n]
        if not names:
            print(f"{what:58} (not in this binary)")
            continue
        body = inner_loop(found[names[0]], mnemonic)
        muls = sum(1 for c in body if c[1] == mnemonic)
        loads = sum(1 for c in body if c[1].startswith("ld"))
        # other vector instructions (zips, moves, flips): they take the SIMD pipes the multiplies use
        simd = sum(1 for c in body if c[1] != mnemonic and not c[1].startswith("ld")
                   and re.search(r"\bv\d+\.", c[2]))
        total = len(body)
        print(f"{what:58} {muls * macs:5} {total:5} {muls:4} {loads:5} {simd:5} {total - muls - loads - simd:5} "
              f"{muls * macs / total:10.1f}")


if __name__ == "__main__":
    main()
