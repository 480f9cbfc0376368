#!/usr/bin/env python3
"""Unit tests of check_ledger.py: small hand-written ledger + report pairs.
A matching pair passes; each wrong number (one allocation too many, a peak
off by some bytes, a wrong live-at-failure, wrong leaked bytes, a missing
(device, kind)) makes it fail; unusable input exits 2."""
import copy
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_ledger.py")
PID = 4242


def ledger_lines():
    """A process: two device allocations, an OOM, a free, pinned host memory,
    a VMM handle mapped twice and released while mapped, a leak at exit."""
    ev = [
        ("alloc", {"kind": "device", "device": 0, "addr": "0x1000", "size": 1000}),
        ("alloc", {"kind": "device", "device": 0, "addr": "0x2000", "size": 4096}),
        ("fail", {"kind": "device", "device": 0, "size": 1 << 40, "error": 2}),
        ("free", {"kind": "device", "device": 0, "addr": "0x1000", "size": 1000}),
        ("bad_free", {"addr": "0x1000", "error": 1}),
        ("alloc", {"kind": "host_pinned", "device": -1, "addr": "0x9000", "size": 64}),
        ("vmm_create", {"handle": "0xa", "device": 1, "size": 2 << 20}),
        ("vmm_map", {"handle": "0xa", "device": 1, "addr": "0x40000000", "size": 2 << 20}),
        ("vmm_map", {"handle": "0xa", "device": 1, "addr": "0x40200000", "size": 2 << 20}),
        ("vmm_release", {"handle": "0xa", "device": 1, "size": 2 << 20}),
        ("vmm_unmap", {"handle": "0xa", "device": 1, "addr": "0x40000000", "size": 2 << 20}),
        ("fail", {"kind": "vmm", "device": 1, "size": 1 << 40, "error": 2}),
        ("vmm_unmap", {"handle": "0xa", "device": 1, "addr": "0x40200000", "size": 2 << 20}),
        ("exit", {}),
    ]
    out = []
    for seq, (op, extra) in enumerate(ev, 1):
        line = {"seq": seq, "pid": PID, "tid": PID, "t_ns": seq * 10, "op": op, "api": "x",
                "error": 0}
        line.update(extra)
        out.append(line)
    return out


def good_report():
    return {"accounting": [
        {"device": -1, "kind": "host_pinned", "allocations": 1, "frees": 0, "failed": 0,
         "peak_live_bytes": 64, "live_bytes_at_failures": [], "leaked_bytes": 64,
         "leaked_allocations": 1},
        {"device": 0, "kind": "device", "allocations": 2, "frees": 1, "failed": 1,
         "peak_live_bytes": 5096, "live_bytes_at_failures": [5096], "leaked_bytes": 4096,
         "leaked_allocations": 1},
        {"device": 1, "kind": "vmm", "allocations": 1, "frees": 1, "failed": 1,
         "peak_live_bytes": 2 << 20, "live_bytes_at_failures": [2 << 20], "leaked_bytes": 0,
         "leaked_allocations": 0},
    ]}


class CheckLedger(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.ledger = os.path.join(self.dir.name, "ledger.jsonl")
        self.report = os.path.join(self.dir.name, "report.json")
        self.write_ledger(ledger_lines())

    def tearDown(self):
        self.dir.cleanup()

    def write_ledger(self, lines, compact=False):
        """compact: spelled as the sim writes it (the checker's fast path)."""
        seps = (",", ":") if compact else None
        with open(self.ledger, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(o, separators=seps) + "\n" for o in lines)

    def run_checker(self, report, *extra):
        with open(self.report, "w", encoding="utf-8") as f:
            json.dump(report, f)
        r = subprocess.run([sys.executable, CHECKER, "--ledger", self.ledger, "--report",
                            self.report, *extra], capture_output=True, text=True, check=False)
        return r.returncode, r.stdout + r.stderr

    def entry(self, report, device, kind):
        return next(e for e in report["accounting"] if (e["device"], e["kind"]) == (device, kind))

    def assert_mismatch(self, report, needle):
        rc, out = self.run_checker(report)
        self.assertEqual(rc, 1, out)
        self.assertIn(needle, out)

    def test_matching_pair_passes(self):
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 0, out)
        self.assertIn("matches", out)

    def test_sim_spelling_gives_the_same_result(self):
        self.write_ledger(ledger_lines(), compact=True)
        with open(self.ledger, encoding="utf-8") as f:
            self.assertIn('{"seq":1,"pid":4242,"tid":4242,"t_ns":10,"op":"alloc","api":"x",'
                          '"error":0,"kind":"device","device":0,"addr":"0x1000","size":1000}',
                          f.read())
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 0, out)
        r = good_report()
        self.entry(r, 0, "device")["allocations"] += 1
        self.assert_mismatch(r, "device 0 kind device: allocations: report 3, ledger 2")

    def test_one_allocation_too_many_fails(self):
        r = good_report()
        self.entry(r, 0, "device")["allocations"] += 1
        self.assert_mismatch(r, "device 0 kind device: allocations: report 3, ledger 2")

    def test_one_allocation_too_few_fails(self):
        r = good_report()
        self.entry(r, -1, "host_pinned")["allocations"] -= 1
        self.assert_mismatch(r, "allocations: report 0, ledger 1")

    def test_one_free_off_fails(self):
        r = good_report()
        self.entry(r, 1, "vmm")["frees"] = 0
        self.assert_mismatch(r, "device 1 kind vmm: frees: report 0, ledger 1")

    def test_peak_off_by_some_bytes_fails(self):
        r = good_report()
        self.entry(r, 0, "device")["peak_live_bytes"] -= 24
        self.assert_mismatch(r, "peak_live_bytes: report 5072, ledger 5096")

    def test_wrong_live_at_failure_fails(self):
        r = good_report()
        self.entry(r, 0, "device")["live_bytes_at_failures"] = [4096]
        self.assert_mismatch(r, "live_bytes_at_failures: report [4096], ledger [5096]")

    def test_extra_failure_fails(self):
        r = good_report()
        e = self.entry(r, 1, "vmm")
        e["failed"], e["live_bytes_at_failures"] = 2, [2 << 20, 0]
        self.assert_mismatch(r, "device 1 kind vmm: failed: report 2, ledger 1")

    def test_wrong_leaked_fails(self):
        r = good_report()
        self.entry(r, 0, "device")["leaked_bytes"] = 5096
        self.assert_mismatch(r, "leaked_bytes: report 5096, ledger 4096")
        r = good_report()
        self.entry(r, -1, "host_pinned")["leaked_allocations"] = 0
        self.assert_mismatch(r, "leaked_allocations: report 0, ledger 1")

    def test_missing_device_kind_fails(self):
        r = good_report()
        r["accounting"] = [e for e in r["accounting"] if e["kind"] != "vmm"]
        self.assert_mismatch(r, "device 1 kind vmm: in the ledger")

    def test_extra_device_kind_fails(self):
        r = good_report()
        extra = copy.deepcopy(self.entry(r, 0, "device"))
        extra["kind"] = "managed"
        r["accounting"].append(extra)
        self.assert_mismatch(r, "device 0 kind managed: in the report, no such event")

    def test_missing_field_fails(self):
        r = good_report()
        del self.entry(r, 0, "device")["frees"]
        self.assert_mismatch(r, "frees: report <missing>, ledger 1")

    def devices_report(self):
        """good_report() with the device totals the ledger gives: device 0 peaks at
        both allocations, device 1 at its VMM handle, the run when the handle is
        made while 4096 bytes are live on device 0 (host memory never counts)."""
        r = good_report()
        r["devices"] = [{"id": 0, "peak_allocated_bytes": 5096,
                         "timeline": [[1, 5096, 5096], [2, 4096, 4096]]},
                        {"id": 1, "peak_allocated_bytes": 2 << 20,
                         "timeline": [[1, 2 << 20, 2 << 20], [2, 0, 0]]}]
        r["totals"] = {"peak_allocated_bytes": 4096 + (2 << 20)}
        r["ooms"] = [{"live_allocated_bytes": 5096, "api": "x"},
                     {"live_allocated_bytes": 2 << 20, "api": "x"}]
        r["leaks"] = [{"bytes": 4096, "count": 1, "kind": "device"},
                      {"bytes": 64, "count": 1, "kind": "host_pinned"}]
        return r

    def test_timelines_and_leaks(self):
        """The timeline's most and last allocated bytes are the device's peak
        and live bytes at exit; the leak list's bytes and allocations per kind
        (all kinds together when some were left out) the ledger's at exit."""
        r = self.devices_report()
        r["devices"][0]["timeline"][1][1] = 4096 + 64  # host memory counted in
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("device 0: timeline's last allocated 4160, ledger's live at exit 4096", out)
        r = self.devices_report()
        r["devices"][1]["timeline"][0][1] = 1 << 20  # the peak's bucket lost
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("device 1: timeline's most allocated 1048576, ledger's peak 2097152", out)
        r = self.devices_report()
        r["leaks"][1]["kind"] = "device"  # host memory listed as device memory
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("leaks of kind device: report 4160 bytes in 2, ledger 4096 in 1", out)
        r = self.devices_report()
        r["leaks"].pop()  # left out, and said so: all kinds together
        r["left_out"] = {"leaks": {"stacks": 1, "bytes": 64, "allocations": 1}}
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["left_out"]["leaks"]["allocations"] = 2
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("leaks of kind all: report 4160 bytes in 3, ledger 4160 in 2", out)

    def test_peak_lists(self):
        """The peak's lists by call stack and NVTX range, with their left-out
        parts, sum to the run's peak."""
        r = self.devices_report()
        r["sites"] = [{"bytes": 4096 + (1 << 20)}, {"bytes": 1 << 20}]
        r["phases"] = [{"bytes": 4096 + (2 << 20)}]
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["sites"].pop()  # a site lost, not counted as left out
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("sites at the peak: report 1052672 bytes, ledger's peak 2101248", out)
        r["left_out"] = {"sites": {"bytes": 1 << 20}}
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)

    def test_device_peaks(self):
        rc, out = self.run_checker(self.devices_report(), "--devices")
        self.assertEqual(rc, 0, out)
        r = self.devices_report()
        r["devices"][0]["peak_allocated_bytes"] = 5096 + 64  # host memory counted in
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("device 0: peak_allocated_bytes: report 5160, ledger 5096", out)
        r = self.devices_report()
        r["totals"]["peak_allocated_bytes"] = 5096 + (2 << 20)  # peaks summed, not the run's
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("totals: peak_allocated_bytes", out)
        rc, out = self.run_checker(r)  # without --devices: the accounting only
        self.assertEqual(rc, 0, out)
        r = self.devices_report()
        r["ooms"][1]["live_allocated_bytes"] = (2 << 20) + 4096  # device 0's bytes counted in
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("failed allocation 2: live_allocated_bytes: report 2101248, ledger 2097152",
                      out)
        r = self.devices_report()
        r["ooms"][0]["api"] = "cudaMallocAsync"  # a from-pool call under the plain name
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("failed allocation 1: api: report cudaMallocAsync, ledger x", out)

    def test_failures_past_the_report_cap(self):
        """A report past its cap lists the first failures and the latest: its last
        entry is the ledger's last failure, not the one at its own position."""
        lines = ledger_lines()
        exit_line = lines.pop()
        n = exit_line["seq"]
        lines.append({"seq": n, "pid": PID, "tid": PID, "t_ns": n * 10, "op": "fail",
                      "api": "x", "error": 2, "kind": "device", "device": 0, "size": 1 << 40})
        lines.append(dict(exit_line, seq=n + 1))
        self.write_ledger(lines)
        r = self.devices_report()
        e = self.entry(r, 0, "device")
        e["failed"], e["live_bytes_at_failures"] = 2, [5096, 4096]
        r["ooms"] = [{"live_allocated_bytes": 5096, "api": "x"},
                     {"live_allocated_bytes": 4096, "api": "x"}]  # failures 1 and 3
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["ooms"][1]["live_allocated_bytes"] = 2 << 20  # failure 2's, at its own position
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("failed allocation 3: live_allocated_bytes", out)

    def test_host_pinned_peak(self):
        """totals.host_pinned_peak_bytes is the peak of the pinned and
        registered host memory live together (64 bytes here)."""
        r = self.devices_report()
        r["totals"]["host_pinned_peak_bytes"] = 64
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["totals"]["host_pinned_peak_bytes"] = 64 + 4096  # device memory counted in
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("totals: host_pinned_peak_bytes: report 4160, ledger 64", out)

    def test_device_free_at_failures(self):
        """A fail line's free and total bytes are held to the report's
        device_free_bytes and device_total_bytes, unless another thread's
        line comes before the failing thread's next one (the device may have
        changed before the preload asked)."""
        lines = ledger_lines()
        lines[2].update({"free": 1 << 20, "total": 1 << 30})
        self.write_ledger(lines)
        r = self.devices_report()
        r["ooms"][0].update({"device_free_bytes": 1 << 20, "device_total_bytes": 1 << 30})
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["ooms"][0]["device_free_bytes"] = (1 << 20) + 4096  # sampled after a free
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("failed allocation 1: device (free, total): report (1052672, 1073741824), "
                      "ledger (1048576, 1073741824)", out)
        r["ooms"][0].update({"device_free_bytes": 1 << 20, "device_total_bytes": 2 << 30})
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)  # another device's total
        lines[3]["tid"] = PID + 1  # another thread freed before the failing thread went on
        self.write_ledger(lines)
        r["ooms"][0]["device_free_bytes"] = (1 << 20) + 1000
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)

    def test_outside_recording_at_failures(self):
        """An out-of-memory failure's use outside the recording, less the
        driver's rounding the report counts in it, is the sim's "outside"
        (its context reserve, other processes); another error's is not
        worked out and not compared."""
        lines = ledger_lines()
        lines[2].update({"free": 1 << 20, "total": 1 << 30, "outside": 300 << 20})
        self.write_ledger(lines)
        r = self.devices_report()
        r["ooms"][0].update({"device_free_bytes": 1 << 20, "device_total_bytes": 1 << 30,
                             "error": 2, "outside_recording_bytes": (300 << 20) + 512,
                             "rounding_bytes": 512})
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["ooms"][0]["rounding_bytes"] = 0  # the rounding read as use outside the recording
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("failed allocation 1: outside_recording_bytes less rounding_bytes: report "
                      "314573312, ledger 314572800", out)
        r["ooms"][0]["error"] = 1
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)

    def test_pool_reserved_peak(self):
        """The most the report says the pools reserved on a device (where
        sampled) is at most the most the ledger's pool_grow and pool_release
        lines had them reserve at once."""
        lines = ledger_lines()
        lines.insert(1, {"seq": 0, "pid": PID, "tid": PID, "op": "pool_grow", "device": 0,
                         "addr": "0x100000", "size": 32 << 20})
        lines.insert(2, {"seq": 0, "pid": PID, "tid": PID, "op": "pool_release", "device": 0,
                         "addr": "0x100000", "size": 32 << 20})
        lines.insert(3, {"seq": 0, "pid": PID, "tid": PID, "op": "pool_grow", "device": 0,
                         "addr": "0x200000", "size": 64 << 20})
        for i, line in enumerate(lines):
            line["seq"] = i + 1
        self.write_ledger(lines)
        r = self.devices_report()
        r["devices"][0]["pool_reserved_peak_bytes"] = 64 << 20
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["devices"][0]["pool_reserved_peak_bytes"] = 96 << 20  # the released 32 MiB kept
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("device 0: pool_reserved_peak_bytes: report 100663296, more than the "
                      "ledger's pools ever reserved at once (67108864)", out)

    def test_held_at_failures(self):
        """What the report says the process holds on the device at an
        out-of-memory failure (live_reserved_bytes: live data, heaps, pools'
        free reserve) is at most the device's memory in use less the sim's
        "outside": a destroyed pool's reserve kept went past it."""
        lines = ledger_lines()
        lines[2].update({"free": 700 << 20, "total": 1 << 30, "outside": 200 << 20})
        self.write_ledger(lines)
        r = self.devices_report()
        r["ooms"][0].update({"device_free_bytes": 700 << 20, "device_total_bytes": 1 << 30,
                             "error": 2, "outside_recording_bytes": 200 << 20,
                             "device": 0, "live_reserved_bytes": 124 << 20})
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 0, out)
        r["ooms"][0]["live_reserved_bytes"] = (124 << 20) + 1
        rc, out = self.run_checker(r, "--devices")
        self.assertEqual(rc, 1, out)
        self.assertIn("failed allocation 1: live_reserved_bytes: report 130023425, more than the "
                      "ledger's device memory in use less outside (130023424)", out)

    def test_report_api_names(self):
        sys.path.insert(0, os.path.dirname(CHECKER))
        import check_ledger
        self.assertEqual(check_ledger.report_api("cuMemAlloc_v2"), "cuMemAlloc")
        self.assertEqual(check_ledger.report_api("cudaHostAlloc"), "cudaHostAlloc")
        self.assertEqual(check_ledger.report_api("cuMemAllocHost_v2"), "cuMemAllocHost")
        self.assertEqual(check_ledger.report_api("cudaMallocFromPoolAsync"),
                         "cudaMallocFromPoolAsync")

    def test_process_without_exit_leaks_what_is_live_at_the_end(self):
        self.write_ledger([o for o in ledger_lines() if o["op"] != "exit"])
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 0, out)

    def test_events_after_exit_are_not_counted(self):
        late = {"seq": 99, "pid": PID, "tid": 1, "t_ns": 1, "op": "free", "api": "cudaFree",
                "error": 0, "kind": "device", "device": 0, "addr": "0x2000", "size": 4096}
        self.write_ledger(ledger_lines() + [late])
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 0, out)

    def test_pid_selects_one_process(self):
        other = [dict(o, pid=7) for o in ledger_lines()[:2]] + [
            {"seq": 3, "pid": 7, "tid": 7, "t_ns": 1, "op": "exit", "api": "", "error": 0}]
        self.write_ledger(ledger_lines() + other)
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 2, out)
        self.assertIn("--pid", out)
        rc, out = self.run_checker(good_report(), "--pid", str(PID))
        self.assertEqual(rc, 0, out)
        rc, out = self.run_checker(good_report(), "--pid", "7")
        self.assertEqual(rc, 1, out)

    def write_trace(self, peak_live, tag=b"VTSUMARY"):
        """A file ending like a trace with a summary frame of peak_live."""
        path = os.path.join(self.dir.name, "trace.vtrace")
        with open(path, "wb") as f:
            f.write(b"VTRACE\0\n" + bytes(40))
            if peak_live is not None:
                f.write(struct.pack("<II8sQ", 0x184D2A5E, 16, tag, peak_live))
        return path

    def test_trace_summary(self):
        # live at once: 0x1000, 0x2000; then 0x2000, the pinned buffer and
        # the VMM handle (3); the handle dies at its last unmap
        rc, out = self.run_checker(good_report(), "--trace", self.write_trace(3))
        self.assertEqual(rc, 0, out)
        for wrong in (2, 4):
            rc, out = self.run_checker(good_report(), "--trace", self.write_trace(wrong))
            self.assertEqual(rc, 1, out)
            self.assertIn(f"summary: peak_live: trace {wrong}, ledger 3", out)
        for bad in (self.write_trace(None), self.write_trace(3, tag=b"VTSUMARX")):
            rc, out = self.run_checker(good_report(), "--trace", bad)
            self.assertEqual(rc, 1, out)
            self.assertIn("ends without a summary", out)
        rc, out = self.run_checker(good_report(), "--trace", os.path.join(self.dir.name, "none"))
        self.assertEqual(rc, 2, out)

    def test_unusable_inputs_exit_2(self):
        rc, out = self.run_checker({"totals": {}})
        self.assertEqual(rc, 2, out)
        self.assertIn("accounting", out)
        with open(self.ledger, "a", encoding="utf-8") as f:
            f.write("not json\n")
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 2, out)
        os.unlink(self.ledger)
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 2, out)

    def test_contradictory_ledger_exits_2(self):
        lines = ledger_lines()
        lines[3]["addr"] = "0x7777"  # a free of something never allocated
        self.write_ledger(lines)
        rc, out = self.run_checker(good_report())
        self.assertEqual(rc, 2, out)
        self.assertIn("not live", out)


if __name__ == "__main__":
    unittest.main()
