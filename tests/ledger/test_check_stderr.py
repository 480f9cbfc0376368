#!/usr/bin/env python3
"""Unit test of check_stderr.py: which failures of the ledger must have an
OOM block on the preload's stderr. A failure that its thread recovered from
(its next allocation of the same size and device) has none, unless another
thread's failure came first: diagnose.c keeps one failure pending, so that
failure printed it (corpus.graph_memory_random seed 152: a cuGraphLaunch of
1 B recovered by a cudaMalloc of 1 B after another thread's failure, whose
block check_stderr called "no such failure left in the ledger"). Debian
python3, stdlib only."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_stderr  # noqa: E402

PID = 7
GRAPH = "vramtrace: OUT OF MEMORY: cuGraphLaunch of 1 B failed with error 2 on device 0"
MALLOC = "vramtrace: OUT OF MEMORY: cudaMalloc of 1.00 TiB failed with error 2 on device 0"
LIVE = "vramtrace:   live: 0 B in 0 allocations"


def ledger(other_fails_first):
    """Thread 1's cuGraphLaunch of 1 B fails, then (other_fails_first)
    thread 2's cudaMalloc of 1 TiB, then thread 1 allocates 1 B."""
    ev = [(1, "fail", {"api": "cuGraphLaunch", "size": 1})]
    if other_fails_first:
        ev.append((2, "fail", {"api": "cudaMalloc", "size": 1 << 40}))
    ev += [(1, "alloc", {"api": "cudaMalloc", "addr": "0x1000", "size": 1}), (1, "exit", {})]
    out = []
    for seq, (tid, op, extra) in enumerate(ev, 1):
        line = {"seq": seq, "pid": PID, "tid": tid, "t_ns": seq * 10, "op": op, "error": 0,
                "api": "", "kind": "device", "device": 0}
        if op == "fail":
            line["error"] = 2
        line.update(extra)
        out.append(line)
    return out


class CheckStderr(unittest.TestCase):
    def run_checker(self, lines, stderr):
        with tempfile.TemporaryDirectory() as d:
            led, err = os.path.join(d, "ledger.jsonl"), os.path.join(d, "stderr")
            with open(led, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(o) + "\n" for o in lines)
            with open(err, "w", encoding="utf-8") as f:
                f.write("".join(t + "\n" for t in stderr))
            out = io.StringIO()
            with redirect_stdout(out):
                rc = check_stderr.main(["--ledger", led, "--stderr", err])
            return rc, out.getvalue()

    def test_recovered_has_no_block(self):
        rc, out = self.run_checker(ledger(False), [])
        self.assertEqual(rc, 0, out)
        rc, out = self.run_checker(ledger(False), [GRAPH, LIVE])
        self.assertEqual(rc, 1, out)
        self.assertIn("block 1 (cuGraphLaunch of 1 B on device 0): no such failure left", out)

    def test_recovered_after_another_failure_may_have_one(self):
        for stderr in ([GRAPH, LIVE, MALLOC, LIVE], [MALLOC, LIVE]):
            rc, out = self.run_checker(ledger(True), stderr)
            self.assertEqual(rc, 0, out)
        rc, out = self.run_checker(ledger(True), [GRAPH, LIVE, GRAPH, LIVE, MALLOC, LIVE])
        self.assertEqual(rc, 1, out)  # one request, not two
        self.assertIn("block 2 (cuGraphLaunch of 1 B on device 0): no such failure left", out)


if __name__ == "__main__":
    unittest.main()
