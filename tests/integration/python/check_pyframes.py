#!/usr/bin/env python3
"""check_pyframes.py: checks a vramtrace report of a Python program against
the program's own sites.

  check_pyframes.py --json J [--html H] [--folded F] --script S
      [--leak FUNC:LINE] [--freed FUNC:LINE] [--thread FUNC:LINE]
      [--native-thread FUNC]

--leak: exactly one leaked stack has the Python frame S:LINE in FUNC, and
  no leaked stack has the --freed frame.
--freed: a call site at the peak has that frame, and it is not the leak's
  stack (a different entry).
--thread: a leaked stack has that frame and no frame of the main thread's
  Python code ("<module>"): the thread is attributed to its own frames.
--native-thread: a leaked stack has the native function FUNC, no Python
  frame, and the "Python frames unknown" marker.
--eval-between OUTER:LINE,INNER:LINE: (a report made with --native) the
  leaked stack with INNER has, between INNER and OUTER, an
  _PyEval_EvalFrameDefault frame and a native frame that is not one: the C
  code that called back into Python sits between the two Python frames.
--unknown-only: every leaked stack has the "Python frames unknown" note and
  no Python frame (an interpreter whose frames are not read).
--html / --folded: every given Python frame appears there too.
--chrome: the leak's instant event's stack ("sf" in "stackFrames") has the
  --leak frame as "FUNC (file:LINE)".
Prints each failed check; exit 1 if any failed, 0 if all passed, 2 on
unusable input."""
import argparse
import json
import os
import sys

UNKNOWN = "[Python frames unknown: thread without Python state]"


def py_frames(stack):
    return [f for f in stack if f.get("module") == "python" and f["function"] != UNKNOWN]


def has(stack, script, func, line):
    return any(
        f["function"] == func and f["line"] == line and f["file"].endswith(script)
        for f in py_frames(stack)
    )


def check_between(leaks, script, outer, inner):
    for s in leaks:
        pos = {}
        for i, f in enumerate(s):
            for want in (outer, inner):
                if f.get("module") == "python" and (f["function"], f["line"]) == want:
                    if f["file"].endswith(script):
                        pos.setdefault(want, i)
        if len(pos) < 2:
            continue
        mid = s[pos[inner] + 1 : pos[outer]]
        # a frame without line information is labelled name+0xOFFSET (docs/report.md)
        names = [f["function"].split("+0x")[0] for f in mid]
        if pos[inner] < pos[outer] and "_PyEval_EvalFrameDefault" in names and any(
            f.get("module") != "python" and n != "_PyEval_EvalFrameDefault"
            for f, n in zip(mid, names)
        ):
            return []
        return [f"between {inner} and {outer}: {names}, want an eval frame and C frames"]
    return [f"no leaked stack has both {outer} and {inner}"]


def check_chrome(path, want):
    d = json.load(open(path))
    frames = d.get("stackFrames", {})
    for e in d["traceEvents"]:
        k = e.get("sf") if e.get("name") == "leak" else None
        while k:
            if frames[k]["name"] == want:
                return []
            k = frames[k].get("parent")
    return [f"no leak event of {os.path.basename(path)} has the frame {want} in its stack"]


def site(arg):
    func, _, line = arg.rpartition(":")
    return func, int(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--html")
    ap.add_argument("--folded")
    ap.add_argument("--chrome")
    ap.add_argument("--script", required=True)
    ap.add_argument("--leak", type=site)
    ap.add_argument("--freed", type=site)
    ap.add_argument("--thread", type=site)
    ap.add_argument("--native-thread")
    ap.add_argument("--unknown-only", action="store_true")
    ap.add_argument("--eval-between", type=lambda v: [site(x) for x in v.split(",")])
    a = ap.parse_args()
    try:
        rep = json.load(open(a.json))
        leaks = [l["stack"] for l in rep["leaks"]]
        sites = [s["stack"] for s in rep["sites"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"check_pyframes: unusable report {a.json}: {e}")
        return 2
    script = os.path.basename(a.script)
    bad = []
    if a.leak:
        n = sum(has(s, script, *a.leak) for s in leaks)
        if n != 1:
            bad.append(f"{n} leaked stacks have {script}:{a.leak[1]} in {a.leak[0]}, want 1")
    if a.freed:
        if any(has(s, script, *a.freed) for s in leaks):
            bad.append(f"the freed site {a.freed} is among the leaks")
        fs = [s for s in sites if has(s, script, *a.freed)]
        if not fs:
            bad.append(f"no call site at the peak has {script}:{a.freed[1]} in {a.freed[0]}")
        if a.leak and any(has(s, script, *a.leak) for s in fs):
            bad.append("the freed site and the leak are one entry")
    if a.thread:
        ts = [s for s in leaks if has(s, script, *a.thread)]
        if not ts:
            bad.append(f"no leaked stack has the thread's frame {a.thread}")
        elif any(f["function"] == "<module>" for s in ts for f in py_frames(s)):
            bad.append("the thread's stack has the main thread's <module> frame")
    if a.native_thread:
        ns = [s for s in leaks if any(f["function"] == a.native_thread for f in s)]
        if not ns:
            bad.append(f"no leaked stack has the native function {a.native_thread}")
        for s in ns:
            if py_frames(s):
                bad.append(f"the native thread's stack has Python frames: {py_frames(s)}")
            if not any(f["function"] == UNKNOWN for f in s):
                bad.append("the native thread's stack lacks the 'Python frames unknown' note")
    for path, fmt in ((a.folded, "{f} ({s}:{l})"), (a.html, "{f}")):
        if not path:
            continue
        text = open(path, encoding="utf-8").read()
        for want in (a.leak, a.freed, a.thread):
            if want:
                label = fmt.format(f=want[0], s=script, l=want[1])
                if label not in text or (fmt == "{f}" and f"{script}:{want[1]}" not in text):
                    bad.append(f"{os.path.basename(path)} lacks the Python frame {label}")
    if a.unknown_only:
        if not leaks:
            bad.append("no leaked stack")
        for s in leaks:
            if py_frames(s) or not any(f["function"] == UNKNOWN for f in s):
                bad.append(f"a leaked stack is not native-only with the note: {s}")
    if a.eval_between:
        bad += check_between(leaks, script, *a.eval_between)
    if a.chrome and a.leak:
        bad += check_chrome(a.chrome, f"{a.leak[0]} ({script}:{a.leak[1]})")
    for b in bad:
        print("check_pyframes: FAIL:", b)
    if not bad:
        print("check_pyframes: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
