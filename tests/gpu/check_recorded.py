#!/usr/bin/env python3
"""Hold the report of a trace recorded on a real GPU (kept under
tests/gpu/<machine-date>/, see tests/gpu/README.md) against an independent
truth that needs no GPU:

  corpus NAME [FIELDS]  the same corpus program run here on the simulated
                        device with its ledger on (VRAMTRACE_SIM_LEDGER; the
                        program's calls and sizes do not depend on the
                        device); the report's accounting must equal the
                        ledger's (tests/ledger/check_ledger.py), FIELDS
                        (comma-separated) only where the peak depends on
                        thread timing
  bench NAME ARGS...    the same for a bench program with arguments
  train_oom             train's own out-of-memory message on stderr (kept
                        beside the trace): request, free and total memory,
                        the allocator's reserved-but-unallocated bytes
  pyframes NAME         the Python frames of torch/NAME.vtrace's top sites
                        against the scripts' source (tests/pytorch): each
                        frame's line lies in its function, each caller's
                        line calls the frame below it, the innermost line
                        makes a tensor (torch., .cuda(, .to()

usage: check_recorded.py --vramtrace BIN --bin DIR --sim-lib DIR --fixtures DIR
                         --work DIR [--wrong] CASE ARGS...
--wrong perturbs the truth (train_oom: every number by one unit of its last
digit; pyframes: every line one further): exit 0 only if the check then
fails. Exit 0 all checks held, 1 a
check failed, 2 the harness could not run. Python 3.9+ standard library.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_LEDGER = os.path.join(HERE, "..", "ledger", "check_ledger.py")
UNITS = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}


class Harness(Exception):
    """The check could not be made (exit 2)."""


def report_json(o, trace, out):
    q = subprocess.run([o.vramtrace, "report", trace, "--json", out, "-q"],
                       capture_output=True, text=True, timeout=300)
    if q.returncode != 0:
        raise Harness(f"vramtrace report {trace} failed: {q.stderr.strip()}")
    with open(out) as f:
        return json.load(f)


def sim_ledger(o, name, argv):
    """Run argv on the simulated device with its ledger on; the ledger's path."""
    ledger = os.path.join(o.work, name + ".ledger.jsonl")
    if os.path.exists(ledger):
        os.remove(ledger)
    env = dict(os.environ, VRAMTRACE_SIM_LEDGER=ledger, LD_LIBRARY_PATH=o.sim_lib)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not os.path.exists(ledger):
        raise Harness(f"{' '.join(argv)} on the simulated device: exit {p.returncode}, "
                      f"{p.stderr.strip()[-500:]}")
    return ledger


def check_ledger_case(o, trace_name, argv, fields):
    ledger = sim_ledger(o, trace_name, argv)
    rep = os.path.join(o.work, trace_name + ".report.json")
    report_json(o, os.path.join(o.fixtures, trace_name + ".vtrace"), rep)
    cmd = [sys.executable, CHECK_LEDGER, "--ledger", ledger, "--report", rep, "--other-run"]
    if fields:
        cmd += ["--fields", fields]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(p.stdout.strip() or p.stderr.strip())
    if p.returncode == 2:
        raise Harness(p.stderr.strip())
    return p.returncode == 0


def corpus(o, args):
    name, fields = args[0], args[1] if len(args) > 1 else None
    prog = os.path.join(o.bin, "corpus_" + ("dlopen_main" if name == "dlopen" else name))
    argv = [prog]
    if name == "dlopen":
        argv.append(os.path.join(o.bin, "..", "lib", "libcorpus_alloc.so"))
    return check_ledger_case(o, "corpus_" + name, argv, fields)


def bench(o, args):
    return check_ledger_case(o, args[0], [os.path.join(o.bin, args[1])] + args[2:], None)


def decimals(num):
    """How many decimals a printed number has ("6.85": 2)."""
    return len(num.split(".")[1]) if "." in num else 0


def fmt_like(n, text):
    """n bytes in the unit and decimals of text ("6.85 GiB")."""
    num, unit = text.split()
    return f"{n / (1 << UNITS[unit]):.{decimals(num)}f} {unit}"


def bump(text):
    """text ("6.85 GiB") one unit of its last digit higher ("6.86 GiB")."""
    num, unit = text.split()
    d = decimals(num)
    return f"{float(num) + 10 ** -d:.{d}f} {unit}"


def train_oom(o, args):
    """The fatal OOM of train_oom.vtrace against train's own message."""
    with open(os.path.join(o.fixtures, "train_oom.stderr")) as f:
        err = f.read()
    m = re.search(r"Tried to allocate ([\d.]+ \w+)\. GPU (\d+) has a total capacity of "
                  r"([\d.]+ \w+) of which ([\d.]+ \w+) is free\..*?and ([\d.]+ \w+) is reserved "
                  r"by this allocator but unallocated", err)
    b = re.search(r"allocating (\d+) bytes", err)
    if not m or not b:
        raise Harness("train_oom.stderr holds no PyTorch-style OOM message")
    truth = {"requested_bytes": int(b.group(1)), "device_total_bytes": m.group(3),
             "device_free_bytes": m.group(4), "heap_free_bytes": m.group(5)}
    if o.wrong:
        truth["requested_bytes"] += 1
        for k in ("device_total_bytes", "device_free_bytes", "heap_free_bytes"):
            truth[k] = bump(truth[k])
    rep = report_json(o, os.path.join(o.fixtures, "train_oom.vtrace"),
                      os.path.join(o.work, "train_oom.report.json"))
    fatal = [x for x in rep["ooms"] if x["fatal"]]
    if not fatal:
        print("no fatal OOM in the report")
        return False
    oom, ok = fatal[0], True
    print(f"verdict: {oom['verdict']}")
    ok = oom["verdict"] == "capacity" and ok
    for k, want in truth.items():
        got = oom[k] if isinstance(want, int) else fmt_like(oom[k], want)
        same = got == want
        print(f"{k}: vramtrace {got}, train {want}{'' if same else '  DIFFERS'}")
        ok = same and ok
    return ok


def functions(path):
    """{name: [(first, last line)]} of a Python file's functions; <module>: all."""
    import ast
    with open(path) as f:
        text = f.read()
    spans = {"<module>": [(1, len(text.splitlines()))]}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.setdefault(node.name, []).append((node.lineno, node.end_lineno))
    return spans, text.splitlines()


def frame_ok(fr, callee, src, shift):
    """Problems with one Python frame fr (callee: the frame it calls, or None)."""
    path = os.path.join(src, os.path.basename(fr["file"]))
    if not os.path.exists(path):
        return [f"{fr['file']}: no such script in {src}"]
    spans, lines = functions(path)
    line = fr["line"] + shift
    where = f"{os.path.basename(path)}:{line} ({fr['function']})"
    if not any(a <= line <= b for a, b in spans.get(fr["function"], [])):
        return [f"{where}: not inside a function of that name"]
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if callee:
        ok, want = callee["function"] in text, callee["function"]
    else:  # where a tensor is made on the GPU
        ok, want = re.search(r"torch\.|\.cuda\(|\.to\(", text), "torch, .cuda( or .to("
    return [] if ok else [f"{where}: the line does not call {want}: {text.strip()!r}"]


def pyframes(o, args):
    """The Python frames of the top sites of torch/NAME.vtrace against the source."""
    name, src = args[0], os.path.join(HERE, "..", "pytorch")
    rep = report_json(o, os.path.join(o.fixtures, "torch", name + ".vtrace"),
                      os.path.join(o.work, name + ".report.json"))
    problems, seen = [], 0
    for site in rep["sites"][:5]:
        py = [f for f in site["stack"] if f["module"] == "python"]
        for i, fr in enumerate(py):
            if fr["function"].startswith("<") and fr["function"] != "<module>":
                continue
            problems += frame_ok(fr, py[i - 1] if i else None, src, 1 if o.wrong else 0)
            seen += 1
    for p in problems:
        print("pyframes:", p)
    print(f"pyframes: {seen} Python frames of the top sites checked, {len(problems)} wrong")
    return seen > 0 and not problems


CASES = {"corpus": corpus, "bench": bench, "train_oom": train_oom, "pyframes": pyframes}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for a in ("--vramtrace", "--bin", "--sim-lib", "--fixtures", "--work"):
        ap.add_argument(a, required=True)
    ap.add_argument("--wrong", action="store_true")
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    try:
        ok = CASES[o.case](o, o.args)
    except (Harness, OSError, KeyError, ValueError, subprocess.TimeoutExpired) as e:
        print(f"check_recorded: cannot check: {e}", file=sys.stderr)
        return 2
    if o.wrong:
        print("wrong ground truth", "CAUGHT" if not ok else "NOT caught")
        return 0 if not ok else 1
    print("check_recorded:", "holds" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
