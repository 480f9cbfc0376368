#!/usr/bin/env python3
"""acct_test.py: run one case of acct_prog under the preload on the simulated
device (with the sim's ledger on), then hold the report against what the case
must show (issue 11): its JSON accounting against the ledger
(tests/ledger/check_ledger.py), named numbers of the JSON and text reports,
and `vramtrace check` limits that must pass and fail.

usage: acct_test.py VRAMTRACE PRELOAD SIMDIR CHECKER PROG OUTDIR CASE
Exit 0 when everything holds, 1 with one line per failure."""
import json
import os
import shutil
import subprocess
import sys

MiB = 1 << 20


class Case:
    def __init__(self, argv):
        (self.tool, self.preload, self.simdir, self.checker, self.prog, self.out,
         self.name) = argv
        self.fails = []

    def expect(self, ok, what):
        if not ok:
            self.fails.append(what)

    def run(self):
        shutil.rmtree(self.out, ignore_errors=True)
        os.makedirs(self.out)
        self.ledger = os.path.join(self.out, "ledger.jsonl")
        self.trace = os.path.join(self.out, "trace.vtrace")
        self.json_path = os.path.join(self.out, "report.json")
        env = dict(os.environ, VRAMTRACE_SIM_LEDGER=self.ledger, VRAMTRACE_OUTPUT=self.trace,
                   LD_PRELOAD=self.preload, LD_LIBRARY_PATH=self.simdir,
                   VRAMTRACE_SIM_DEVICE="t4", VRAMTRACE_SIM_MEMORY="640MiB",
                   VRAMTRACE_SIM_CONTEXT_RESERVE="300MiB")
        p = subprocess.run([self.prog, self.name], env=env, capture_output=True, text=True,
                           timeout=120)
        self.stderr = p.stderr
        if p.returncode != 0:
            sys.exit(f"acct_test: {self.name}: the program exited {p.returncode}: {p.stderr}")
        p = subprocess.run([self.tool, "report", self.trace, "--json", self.json_path],
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            sys.exit(f"acct_test: {self.name}: report failed: {p.stderr}")
        self.text = p.stdout
        with open(self.json_path) as f:
            self.report = json.load(f)
        p = subprocess.run([sys.executable, self.checker, "--ledger", self.ledger, "--report",
                            self.json_path], capture_output=True, text=True, timeout=120)
        self.expect(p.returncode == 0,
                    f"the accounting does not match the ledger:\n{p.stdout}{p.stderr}")

    def row(self, device, kind):
        for r in self.report["accounting"]:
            if r["device"] == device and r["kind"] == kind:
                return r
        self.fails.append(f"no accounting row for device {device} kind {kind}")
        return {}

    def check(self, *limits):
        """Exit status of `vramtrace check TRACE LIMITS...`."""
        return subprocess.run([self.tool, "check", self.trace, *limits],
                              capture_output=True, timeout=120).returncode

    def totals(self):
        return self.report["totals"]


def producer(c):
    t = c.totals()
    c.expect(t["peak_allocated_bytes"] == 256 * MiB,
             f"peak allocated {t['peak_allocated_bytes']}, want 256 MiB (4 x 64 MiB)")
    c.expect(c.row(0, "device").get("peak_live_bytes") == 256 * MiB, "accounting peak")
    c.expect(c.row(0, "device").get("live_bytes_at_failures") == [256 * MiB],
             "live at the failure")
    ooms = c.report["ooms"]
    c.expect(len(ooms) == 1 and ooms[0]["verdict"] == "capacity",
             f"verdict {[o['verdict'] for o in ooms]}, want capacity")
    c.expect(ooms and ooms[0].get("external_bytes") == 0, "external bytes at the OOM")
    c.expect(c.check("--max-peak", "255MiB") == 1, "check --max-peak 255MiB should fail")
    c.expect(c.check("--max-peak", "256MiB") == 0, "check --max-peak 256MiB should pass")


def hold8(c):
    t = c.totals()
    c.expect(t["peak_allocated_bytes"] == 8 * MiB,
             f"peak allocated {t['peak_allocated_bytes']}, want 8 MiB (8 threads x 1 MiB)")
    c.expect(c.check("--max-peak", "7MiB") == 1, "check --max-peak 7MiB should fail")
    c.expect(c.check("--max-peak", "8MiB") == 0, "check --max-peak 8MiB should pass")


def vmm(c, unmapped):
    r = c.row(0, "vmm")
    c.expect(r.get("peak_live_bytes") == 64 * MiB, "vmm peak live 64 MiB")
    c.expect(r.get("leaked_bytes") == (0 if unmapped else 64 * MiB),
             f"vmm leaked {r.get('leaked_bytes')}")
    ooms = c.report["ooms"]
    c.expect(len(ooms) == 1 and ooms[0]["verdict"] == "capacity",
             f"verdict {[o['verdict'] for o in ooms]}, want capacity (the mapped 64 MiB is live)")
    c.expect(ooms and ooms[0].get("live_allocated_bytes", ooms[0].get("live_allocated")) ==
             64 * MiB, f"live at the OOM: {ooms and ooms[0]}")
    c.expect(c.totals()["peak_allocated_bytes"] == 64 * MiB, "device peak counts the VMM memory")
    if not unmapped:
        c.expect(c.check("--max-leaked", "63MiB") == 1, "a mapped VMM handle is a device leak")
    # the preload's own exit summary agrees: the memory lived until the unmap
    leak = "live at exit 0 B in 0 allocations" if unmapped else "live at exit 64.00 MiB in 1 allocation"
    c.expect(f"vramtrace: device 0: peak reserved 64.00 MiB, 1 allocation, {leak},"
             in c.stderr, f"the preload's summary: {c.stderr}")


def pinned(c):
    t = c.totals()
    c.expect(t["leaked_bytes"] == MiB, f"device leaked {t['leaked_bytes']}, want 1 MiB")
    c.expect(t["host_leaked_bytes"] == 32 * MiB, f"host leaked {t['host_leaked_bytes']}")
    c.expect(t["peak_allocated_bytes"] == MiB, "pinned memory kept out of the device peak")
    kinds = sorted((l["kind"], l["bytes"]) for l in c.report["leaks"])
    c.expect(kinds == [("device", MiB), ("host_pinned", 32 * MiB)], f"leak kinds {kinds}")
    c.expect("33554432 bytes in 1 allocation was never freed (host_pinned memory)" in c.text,
             "the text labels the pinned leak")
    c.expect("host      host_pinned" in c.text, "the text lists the host_pinned row")
    c.expect(c.row(-1, "host_pinned").get("peak_live_bytes") == 36 * MiB, "pinned peak")
    c.expect(c.check("--max-leaked", "1MiB") == 0, "--max-leaked counts device memory only")
    c.expect(c.check("--max-host-leaked", "16MiB") == 1, "--max-host-leaked 16MiB should fail")
    c.expect(c.check("--max-host-leaked", "32MiB") == 0, "--max-host-leaked 32MiB should pass")


def register(c):
    r = c.row(-1, "host_registered")
    c.expect(r.get("allocations") == 2 and r.get("frees") == 1, f"registered row {r}")
    c.expect(r.get("leaked_bytes") == 8 * MiB, "one registration kept")
    c.expect(c.totals()["leaked_bytes"] == 0, "registered memory is not a device leak")
    c.expect("(host_registered memory)" in c.text, "the text labels the registered leak")


def no_growth(c):
    g = c.report["total_growth"]
    c.expect(g["bytes_per_iteration"] == 0 or abs(g["bytes_per_iteration"]) < 64 * 1024,
             f"growth {g['bytes_per_iteration']} bytes/iteration in a leak-free loop")
    c.expect(g["projected_oom_iteration"] in (-1, None), "no projection for a leak-free loop")
    c.expect("projected out of memory" not in c.text, "no projection in the text")
    c.expect(c.check("--max-growth", "64KiB") == 0, "check --max-growth 64KiB should pass")


def leakloop(c):
    it = c.report["iteration"]
    c.expect(it["kind"] == "call_site" and it["count"] >= 3, f"iterations {it}")
    g = c.report["total_growth"]["bytes_per_iteration"]
    c.expect(abs(g - MiB) < 1024, f"growth {g} bytes/iteration, want 1 MiB")
    c.expect(c.check("--max-growth", "64KiB") == 1, "check --max-growth 64KiB should fail")


CASES = {"producer": producer, "hold8": hold8, "vmm": lambda c: vmm(c, True),
         "vmmleak": lambda c: vmm(c, False), "pinned": pinned, "register": register,
         "bandwidth": no_growth, "streamord": no_growth, "leakloop": leakloop}


def main():
    if len(sys.argv) != 8 or sys.argv[7] not in CASES:
        sys.exit(__doc__)
    c = Case(sys.argv[1:])
    c.run()
    CASES[c.name](c)
    for f in c.fails:
        print(f"acct_test: {c.name}: FAIL: {f}")
    if c.fails:
        print(c.text)
        return 1
    print(f"acct_test: {c.name}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
