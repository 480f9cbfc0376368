#!/usr/bin/env python3
"""The pool's state at a failed stream-ordered allocation, held against the
simulated device's ledger (tests/pool/README.md).

Runs PROGRAM under `vramtrace run --sim=t4` with the sim's ledger on, renders
the trace with `vramtrace report --json`, and checks its last unrecovered
failure (the program gives the request up and exits 0, so the failure is
listed as handled, never fatal, under the headline kind oom_handled):

* its pool_stat (JSON "pool") equals the ledger at the failing call: reserved
  = the bytes of the pool's segments (pool_grow - pool_release lines), used =
  the bytes of live stream-ordered allocations (alloc - free lines; the
  program's sizes are 2 MiB multiples, so the sim's rounding adds nothing);
* the request is the ledger's fail line's size;
* the verdict is VERDICT, and agrees with the ledger: "fragmentation" exactly
  when the free reserve + the device's free bytes (capacity - reserved - other
  live allocations; no context reserve) hold the request.

    check_pool.py --vramtrace BIN --sim-lib DIR --work DIR --verdict V [--wrong [--perturb]] -- PROGRAM ARGS

--wrong: a wrong expectation (VERDICT, or with --perturb the ledger's
reserved bytes one 2 MiB segment too high); exit 0 only if it is caught. Exit 0 ok, 1 a check failed, 3 harness error.
"""
import argparse
import json
import os
import subprocess
import sys

CAPACITY = 1 << 30
ASYNC_APIS = ("cudaMallocAsync", "cuMemAllocFromPoolAsync", "cuMemAllocAsync",
              "cudaMallocFromPoolAsync")


def ledger_at_failure(path):
    """(reserved, used, other_live, request) at the first fail line."""
    reserved = used = other = 0
    live = {}
    for line in open(path):
        o = json.loads(line)
        op = o["op"]
        if op == "pool_grow":
            reserved += o["size"]
        elif op == "pool_release":
            reserved -= o["size"]
        elif op == "alloc" and o.get("kind") == "device":
            live[o["addr"]] = (o["size"], o["api"] in ASYNC_APIS)
        elif op == "free" and o["addr"] in live:
            del live[o["addr"]]
        elif op == "fail":
            used = sum(s for s, a in live.values() if a)
            other = sum(s for s, a in live.values() if not a)
            return reserved, used, other, o["size"]
    raise ValueError("the ledger has no failed allocation")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--sim-lib", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--verdict", required=True)
    ap.add_argument("--wrong", action="store_true")
    ap.add_argument("--perturb", action="store_true",
                    help="take the ledger's reserved bytes one 2 MiB segment too high")
    ap.add_argument("program", nargs="+")
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    trace, ledger, rep = (os.path.join(o.work, n) for n in ("t.vtrace", "ledger.jsonl",
                                                              "report.json"))
    for f in (trace, ledger):
        if os.path.exists(f):
            os.remove(f)
    env = dict(os.environ, VRAMTRACE_SIM_MEMORY="1GiB", VRAMTRACE_SIM_CONTEXT_RESERVE="0",
               VRAMTRACE_SIM_LEDGER=ledger, VRAMTRACE_QUIET="1")
    try:
        p = subprocess.run([o.vramtrace, "run", "--sim=t4", "-o", trace, "--"] + o.program,
                           env=env, capture_output=True, text=True, timeout=120)
        print(p.stdout.strip())
        if p.returncode != 0:
            print(f"harness: the program exited {p.returncode}: {p.stderr.strip()}")
            return 3
        q = subprocess.run([o.vramtrace, "report", trace, "--json", rep, "-q"],
                           capture_output=True, text=True, timeout=120)
        if q.returncode != 0:
            print(f"harness: vramtrace report failed: {q.stderr.strip()}")
            return 3
        r = json.load(open(rep))
        reserved, used, other, request = ledger_at_failure(ledger)
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        print("harness:", e)
        return 3
    if o.perturb:
        reserved += 2 << 20
    oom = next((x for x in reversed(r["ooms"]) if not x["recovered"]), None)
    pool = (oom or {}).get("pool") or {}
    device_free = CAPACITY - reserved - other
    fragmented = reserved - used + device_free >= request
    print(f"ledger at the failure: pool reserved {reserved}, used {used}, device free "
          f"{device_free}, request {request} ({'fits in free reserve + device free' if fragmented else 'exceeds every free byte'})")
    print(f"report: pool {pool}, request {oom and oom['requested_bytes']}, verdict "
          f"{oom and oom['verdict']}")
    ok = True
    problems = []
    if not oom:
        problems.append("no unrecovered failure in the report")
    else:
        if oom["fatal"] or r["verdict"]["kind"] != "oom_handled":
            problems.append(f"the program exited 0: fatal {oom['fatal']}, headline "
                            f"{r['verdict']['kind']}")
        if (pool.get("reserved_bytes"), pool.get("used_bytes")) != (reserved, used):
            problems.append("the pool's reserved/used differ from the ledger")
        if oom["requested_bytes"] != request:
            problems.append("the request differs from the ledger")
        if oom["verdict"] != o.verdict:
            problems.append(f"verdict {oom['verdict']}, expected {o.verdict}")
        if (o.verdict == "fragmentation") != fragmented:
            problems.append("the expected verdict disagrees with the ledger's arithmetic")
    for m in problems:
        print("FAIL:", m)
        ok = False
    if o.wrong:
        print("wrong ground truth", "CAUGHT" if not ok else "NOT caught")
        return 0 if not ok else 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
