#!/usr/bin/env python3
"""Hold the simulated device's answers to a probe program (tests/gpu/probe_*.c)
against a real GPU's answers to the same program, recorded there
(tests/gpu/<machine-date>/probe_*.txt, tests/gpu/README.md).

Line by line, the probe's stdout on the simulated device must equal the
recorded one, except:
  --skip REGEX  recorded lines matching it are not compared (an answer the
                simulated device does not model, named in tests/gpu/README.md)
  --mask REGEX  the text it matches is replaced by "*" in both (values that
                differ from run to run, as pointers, or that the sim does not
                model, as a pool's reserve)
The recorded file's last line ("probe rc N") is the probe's exit status.

  --memory SIZE, --reserve SIZE
                the simulated device's capacity and context reserve
                (VRAMTRACE_SIM_MEMORY, _CONTEXT_RESERVE; default: the
                h100-80gb profile's), so that free memory compares as the
                GPU's: its total, and its total less the free memory the
                probe's first line shows

usage: probe_sim.py --probe BIN --sim-lib DIR --recorded FILE [--skip R]...
                    [--mask R]... [--memory SIZE --reserve SIZE] [--wrong]
--wrong changes the first compared recorded answer (its first number, plus
one): exit 0 only if the comparison then fails.
Exit 0 all compared answers equal, 1 some differ (printed), 2 harness error.
Python 3.9+ standard library.
"""
import argparse
import os
import re
import subprocess
import sys


def load_recorded(path):
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or not re.fullmatch(r"probe\d* rc -?\d+", lines[-1]):
        raise ValueError(f"{path}: no 'probe rc N' last line")
    return lines[:-1], int(lines[-1].split()[-1])


def run_probe(o):
    env = dict(os.environ, LD_LIBRARY_PATH=o.sim_lib, VRAMTRACE_SIM_DEVICE="h100-80gb")
    env.pop("LD_PRELOAD", None)
    if o.memory:
        env["VRAMTRACE_SIM_MEMORY"] = o.memory
    if o.reserve:
        env["VRAMTRACE_SIM_CONTEXT_RESERVE"] = o.reserve
    q = subprocess.run([o.probe], capture_output=True, text=True, timeout=120, env=env)
    return q.stdout.splitlines(), q.returncode


def masked(line, masks):
    for m in masks:
        line = re.sub(m, "*", line)
    return line


def perturb(lines, skips):
    """The first compared line with a number in it, that number plus one."""
    for i, line in enumerate(lines):
        if any(re.search(s, line) for s in skips):
            continue
        m = re.search(r"-?\d+", line)
        if m:
            lines[i] = line[:m.start()] + str(int(m.group()) + 1) + line[m.end():]
            return lines
    raise ValueError("no recorded answer to change")


def compare(recorded, rc_rec, got, rc_got, o):
    bad = []
    if rc_rec != rc_got:
        bad.append(f"exit status: recorded {rc_rec}, simulated device {rc_got}")
    if len(recorded) != len(got):
        bad.append(f"{len(recorded)} recorded lines, {len(got)} from the simulated device")
    for n, (r, g) in enumerate(zip(recorded, got), 1):
        if any(re.search(s, r) for s in o.skip):
            continue
        if masked(r, o.mask) != masked(g, o.mask):
            bad.append(f"line {n}: recorded {r!r}, simulated device {g!r}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", required=True)
    ap.add_argument("--sim-lib", required=True)
    ap.add_argument("--recorded", required=True)
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("--mask", action="append", default=[])
    ap.add_argument("--memory")
    ap.add_argument("--reserve")
    ap.add_argument("--wrong", action="store_true")
    o = ap.parse_args()
    try:
        recorded, rc_rec = load_recorded(o.recorded)
        if o.wrong:
            recorded = perturb(recorded, o.skip)
        got, rc_got = run_probe(o)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        print(f"probe_sim: {e}", file=sys.stderr)
        return 2
    bad = compare(recorded, rc_rec, got, rc_got, o)
    for b in bad:
        print(f"probe_sim: {b}")
    compared = sum(1 for r in recorded if not any(re.search(s, r) for s in o.skip))
    if o.wrong:
        print(f"probe_sim: --wrong: {'failed as it must' if bad else 'did NOT fail'}")
        return 0 if bad else 1
    print(f"probe_sim: {compared} of {len(recorded)} answers compared, "
          f"{'all equal' if not bad else f'{len(bad)} differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
