#!/usr/bin/env python3
"""inline_check.py: check the logical frames of inline_prog's leaks.

  inline_check.py debug REPORT.json SOURCE.c [--shift N]
      every call site of inline_prog.c, found by its "@site:NAME" marker
      comment, is one leak whose stack reads inner function at its line, each
      caller at its call line, main at its call line. --shift N moves the
      expected lines by N (the test's proof that a wrong answer fails).
  inline_check.py stripped REPORT.json PROGRAM
      the stripped program: one leak per call address, labelled
      FUNCTION+0xOFFSET with the offset of that call's return address - 1
      (objdump -d of PROGRAM)."""
import json
import re
import subprocess
import sys


def markers(source):
    lines = {}
    with open(source) as f:
        for no, text in enumerate(f, 1):
            m = re.search(r"@site:(\w+)", text)
            if m and "never by number" not in text:
                lines[m.group(1)] = no
    return lines


def chains(report):
    with open(report) as f:
        doc = json.load(f)
    out = []
    doc = doc["reports"][0] if "reports" in doc else doc
    for leak in doc["leaks"]:
        out.append([(fr["function"], fr["line"], fr["inlined"]) for fr in leak["stack"]])
    return out


def check_debug(report, source, shift):
    ln = {k: v + shift for k, v in markers(source).items()}
    want = [[("dev_alloc", ln["inner"], True), ("caller_a", ln[s], False),
             ("main", ln["main_a"], False)] for s in ("a1", "a2", "a3")]
    want.append([("dev_alloc", ln["inner"], True), ("mid_alloc", ln["mid"], True),
                 ("caller_b", ln["b"], False), ("main", ln["main_b"], False)])
    got = chains(report)
    fails = 0
    for w in want:
        if not any(c[:len(w)] == w for c in got):
            print(f"FAIL: no leak with the frames {w}; leaks: {[c[:len(w)] for c in got]}")
            fails += 1
    if len(got) != len(want):
        print(f"FAIL: {len(got)} leaks, want {len(want)} (one per call site)")
        fails += 1
    return fails


def call_offsets(program, func):
    """Offsets in func of (return address - 1) of its calls to cudaMalloc."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", program], check=True,
                         capture_output=True, text=True).stdout
    start, offs, prev_call, inside = None, [], False, False
    for line in dis.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            inside = m.group(2) == func
            start = int(m.group(1), 16) if inside else start
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if not inside or not m:
            continue
        addr = int(m.group(1), 16)
        if prev_call:
            offs.append(addr - 1 - start)
        prev_call = m.group(2).startswith("call") and "cudaMalloc" in m.group(3)
    return offs


def check_stripped(report, program):
    got = chains(report)
    leaves = sorted(c[0][0] for c in got if c)
    want = sorted([f"caller_a+0x{o:x}" for o in call_offsets(program, "caller_a")] +
                  [f"caller_b+0x{o:x}" for o in call_offsets(program, "caller_b")])
    if len(want) != 4 or leaves != want:
        print(f"FAIL: leak leaves {leaves}, want one per call address {want}")
        return 1
    return 0


def main():
    mode, report, arg = sys.argv[1:4]
    shift = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--shift" else 0
    fails = check_debug(report, arg, shift) if mode == "debug" else check_stripped(report, arg)
    print("inline frames as expected" if not fails else f"{fails} failures")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
