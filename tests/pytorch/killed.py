#!/usr/bin/env python3
"""Hold a PyTorch process killed by SIGKILL (sc_killed.py) under `vramtrace
run --sim` against PyTorch's own numbers: run must recover what the process
had not written (its spill file, docs/trace.md) and record the kill, and the
report must then hold PyTorch's reserved bytes (its segments, every one live
when it was killed) as the device memory live at the end, and signal 9 as
the end of process.

usage: killed.py --vramtrace V --python P --work DIR [--wrong] [--real]
--wrong adds 512 bytes to PyTorch's number: exit 0 only if that is caught.
--real runs on the machine's GPU instead of the simulated T4
(tests/gpu/smoke.sh).
Exit 0 pass, 1 fail, 77 skip (no torch for P, or /dev/shm not writable).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print(f"killed: FAIL: {msg}")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--wrong", action="store_true")
    ap.add_argument("--real", action="store_true")
    o = ap.parse_args()
    if subprocess.run([o.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"killed: SKIP: {o.python} cannot import torch")
        sys.exit(77)
    if not os.access("/dev/shm", os.W_OK):
        print("killed: SKIP: /dev/shm is not writable (no spill file to recover)")
        sys.exit(77)
    os.makedirs(o.work, exist_ok=True)
    trace, stats, rep = (os.path.join(o.work, n) for n in ("killed.vtrace", "stats.json", "report.json"))
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    device = [] if o.real else ["--sim=t4"]
    q = subprocess.run([o.vramtrace, "run"] + device + ["-o", trace, "--force", "--",
                        o.python, os.path.join(HERE, "sc_killed.py"), stats],
                       capture_output=True, text=True, env=env, timeout=600)
    print(q.stdout + q.stderr)
    if q.returncode != 128 + 9:
        fail(f"vramtrace run exited with {q.returncode}, not 137")
    if "its end added" not in q.stderr:
        fail("vramtrace run did not recover the trace and record the kill")
    r = subprocess.run([o.vramtrace, "report", trace, "--json", rep, "--quiet"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"vramtrace report failed: {r.stderr}")
    with open(stats) as f:
        torch_stats = json.load(f)
    with open(rep) as f:
        report = json.load(f)
    reserved = torch_stats["reserved"] + (512 if o.wrong else 0)
    live = report["totals"]["leaked_bytes"]
    ex = report["program"]["exit"] or {}
    bad = []
    if live != reserved:
        bad.append(f"device memory live at the kill {live}, PyTorch's reserved {reserved}")
    if ex.get("signal") != 9:
        bad.append(f"end of process {ex}, not signal 9")
    if report["verdict"]["kind"] != "exited":
        bad.append(f"headline kind {report['verdict']['kind']}, not exited")
    print(f"killed: live {live}, PyTorch reserved {reserved} (allocated "
          f"{torch_stats['allocated']}), exit {ex}")
    if o.wrong:
        if not bad:
            fail("the perturbed number was not caught")
        print("killed: ok (the perturbed number was caught: " + "; ".join(bad) + ")")
        return
    if bad:
        fail("; ".join(bad))
    print("killed: ok")


if __name__ == "__main__":
    main()
