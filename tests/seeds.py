"""The seed loop of the random-program tests (tests/procs/tree_random.py,
tests/report/diff_random.py, tests/pytorch/fork_workers.py): run_seed(seed)
-> the list of what differs from the truth, for each seed; a summary line;
the exit status. And report_json, their one way to read a report.

wrong: the truth was made wrong on purpose (--wrong), so every seed must
find something. Exit: 0 all held (or, with wrong, every seed caught it), 1
otherwise, 3 when the harness could not run (an OS error, a timeout, a bad
file)."""
import argparse
import json
import subprocess


def report_json(vramtrace, option, out, trace):
    """`vramtrace report -q OPTION OUT TRACE` (--json, --chrome: a JSON
    output), parsed. RuntimeError when the report fails."""
    p = subprocess.run([vramtrace, "report", "-q", option, out, trace], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError(f"report {option} {trace} exited {p.returncode}: {p.stderr[-400:]}")
    with open(out) as f:
        return json.load(f)


def add_arguments(ap):
    """The options every such test takes: --vramtrace BIN, --work DIR,
    --seeds A-B, --wrong."""
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", required=True, help="A-B")
    ap.add_argument("--wrong", action="store_true")


def run_seeds(run_seed, o):
    """run_seed over o.seeds ("A-B"), o.wrong as above."""
    lo, hi = (int(x) for x in o.seeds.split("-"))
    wrong, failed = o.wrong, 0
    errors = (RuntimeError, OSError, KeyError, ValueError, subprocess.TimeoutExpired)
    try:
        for seed in range(lo, hi + 1):
            found = run_seed(seed)
            failed += bool(found)
            print(f"seed {seed}: {len(found)} wrong")
            for e in found:
                print("  " + e)
    except errors as e:
        print(f"harness: {e}")
        return 3
    if wrong:
        print(f"wrong truth caught in {failed} of {hi - lo + 1} seeds")
        return 0 if failed == hi - lo + 1 else 1
    print(f"{hi - lo + 1} seeds, {failed} wrong")
    return 1 if failed else 0


def torch_main(doc, run_seed, options=()):
    """The main of a random test that runs PyTorch: the options above,
    --python PY and options (names of further required options), then
    run_seed(o, seed) over the seeds; 77 (ctest SKIP) when PY cannot import
    torch."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_arguments(ap)
    ap.add_argument("--python", required=True)
    for name in options:
        ap.add_argument(name, required=True)
    o = ap.parse_args()
    if subprocess.run([o.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIP: {o.python} cannot import torch")
        return 77
    return run_seeds(lambda seed: run_seed(o, seed), o)
