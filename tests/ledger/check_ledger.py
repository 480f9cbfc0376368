#!/usr/bin/env python3
"""Hold a vramtrace report's "accounting" section against the simulated
device's ledger (the independent ground truth).

usage: check_ledger.py --ledger FILE --report JSON [--pid P] [--fields F,F...] [--devices]
                       [--trace TRACE]

The ledger (VRAMTRACE_SIM_LEDGER, sim/README.md "Ledger") holds one JSON
object per line. From the lines of one process (--pid, or the only pid in the
file) this recomputes, per (device, kind), every field of the report's
"accounting" array (docs: the contract between sim/ and report/):
allocations, frees, failed, peak_live_bytes, live_bytes_at_failures,
leaked_bytes, leaked_allocations; prints each difference and exits 1 on any,
0 when all match, 2 on unusable input (a missing or malformed file, a report
without "accounting", a ledger that contradicts itself).

Rules: an allocation is live from its "alloc" line to its "free" line; a VMM
handle (kind "vmm") is live from "vmm_create" until it is released (the
sim's "vmm_release" is its last reference's; a "vmm_retain" after it, of
memory still mapped, makes it live again) and its last mapping is unmapped; a "fail" records the live bytes of its own (device,
kind) at that moment; what is live at the "exit" line (or at the end of the
ledger when the process died without one) is leaked. Debian python3, stdlib
only.

--devices also holds the device totals against it: each device's
"peak_allocated_bytes" (devices[]) and the run's (totals) are the peaks of the
live bytes of kinds device, managed and vmm on that device and on all devices
together, in the ledger's order; each failed allocation's
"live_allocated_bytes" (ooms[]: the first failures and the latest) is its
device's total then (pinned host memory's for a failure on the host), and its
"api" the ledger's (report_api), and its "graph_pool" (a report of a trace
of format 13 and later) the ledger's "graph_pool" bytes of the fail line
(the device's graph memory pool then; null when the line has none) and, as
"kept_bytes", those less the bytes of the allocations cuGraphLaunch made
that are live on that device then. Each device's "timeline" ends at the
device's live bytes at exit and its most allocated is the device's peak;
the leak list ("leaks", and "left_out"."leaks" for the groups past its
end) holds, per kind, the bytes and allocations live at exit, and the
peak's lists by call stack and by NVTX range ("sites", "phases", each with
its "left_out" part) sum to the run's peak (since
session 41: a VMM unmap that ended several handles left a timeline 12 MiB
above the device's memory at exit). Only for a run without NVTX heaps (the
report counts a heap's regions as allocated, not its cudaMalloc).

Failed frees: a report of a trace that records them (format 12 and later:
"failed_frees" a list, not null) lists each free call that failed; the
ledger's "bad_free" lines (address, error) of the process must be the same
calls: their number is totals.failed_frees, and the (address, error) pairs
of the listed ones (the first 1000) are the ledger's first ones. With
--other-run (a trace recorded in another run than the ledger's, as on a real
GPU: addresses differ) the count and the errors are compared, not addresses.

--trace also holds the summary that ends the trace (docs/trace.md, "Summary":
the recorder's most allocations live at once, all kinds) against the most
allocations the ledger has live at once by the same rules; a trace that ends
without a summary is a mismatch (a clean exit writes one).
"""
import argparse
import json
import re
import struct
import sys

# The sim's own alloc/free lines, parsed without json (a ledger can hold
# millions); anything else, or any other spelling, goes through json.loads.
FAST_LINE = re.compile(
    r'\{"seq":(\d+),"pid":(-?\d+),"tid":(-?\d+),"t_ns":\d+,"op":"(alloc|free)","api":"([^"\\]*)",'
    r'"error":0,"kind":"([a-z_]+)","device":(-?\d+),"addr":"(0x[0-9a-f]+)","size":(\d+)\}\s*$')
DEVICE_KINDS = ("device", "managed", "vmm", "array")  # what the report's device totals count
FIELDS = ("allocations", "frees", "failed", "peak_live_bytes",
          "live_bytes_at_failures", "leaked_bytes", "leaked_allocations")


class Unusable(Exception):
    """Input the checker cannot judge (exit status 2)."""


def at(where):
    """A (path, line number) as path:line."""
    return f"{where[0]}:{where[1]}"


class Key:
    """The running numbers of one (device, kind)."""

    def __init__(self):
        self.allocations = self.frees = self.failed = 0
        self.live_bytes = self.peak = 0
        self.live = {}  # addr or handle -> size
        self.at_failures = []

    def born(self, ident, size, where):
        if ident in self.live:
            raise Unusable(f"{at(where)}: {ident} is already live")
        self.live[ident] = size
        self.allocations += 1
        self.live_bytes += size
        self.peak = max(self.peak, self.live_bytes)

    def died(self, ident, where):
        if ident not in self.live:
            raise Unusable(f"{at(where)}: {ident} is not live")
        self.live_bytes -= self.live.pop(ident)
        self.frees += 1

    def result(self):
        return {"allocations": self.allocations, "frees": self.frees,
                "failed": self.failed, "peak_live_bytes": self.peak,
                "live_bytes_at_failures": list(self.at_failures),
                "leaked_bytes": self.live_bytes,
                "leaked_allocations": len(self.live)}


class Process:
    """The replay of one process's ledger lines, in the sim's order (seq).
    watch (optional): told of every change of live memory, watch.live(ident,
    device, kind, delta) (ident: the address, or a VMM handle; delta: +size
    when it becomes live, -size when it dies), and of every failed
    allocation, watch.failed(line): the other checkers (check_memviz.py,
    check_ranges.py) follow the ledger through these rules, not their own."""

    def __init__(self, watch=None):
        self.watch = watch
        self.keys = {}  # (device, kind) -> Key
        self.handles = {}  # handle -> [device, mappings, released]
        self.last_seq = 0
        self.exited = False
        # the device totals (kinds DEVICE_KINDS): live and peak bytes per
        # device, and of all devices together
        self.dev_live, self.dev_peak = {}, {}
        self.all_live = self.all_peak = 0
        self.host_live = self.host_peak = 0  # host memory's (device -1) live bytes, and their peak
        # allocations of every kind live at once (the trace's summary)
        self.count_live = self.count_peak = 0
        self.fail_live = []  # the failing device's total (host: pinned memory) at each fail
        self.fail_live_count = []  # and how many allocations made it up
        self.fail_api = []  # the api of each fail, as the report names it (report_api)
        self.fail_oom = []  # whether each fail is out of memory (error 2)
        self.bad_frees = []  # (address, error) of each "bad_free": a free call that failed
        # each fail's graph memory pool: (reserved bytes, those less the live
        # graph allocations' bytes on its device), None when it held nothing
        self.fail_graph_pool = []
        self.graph_live = {}  # device -> bytes of live allocations made by cuGraphLaunch
        # device -> bytes the stream-ordered pools reserve now, and the most
        # at once (pool_grow, pool_release)
        self.pool_reserved, self.pool_peak = {}, {}
        # each fail's device (free, total) bytes as the sim's cuMemGetInfo
        # answered at the fail line, None without them (host memory); and
        # whether no other thread's line came before the failing thread's
        # next one: then the device was the same when the preload asked
        # (right after the failed call, before the thread's next call)
        self.fail_free = []
        self.fail_alone = []
        self.open_fail = {}  # tid -> index of its fail whose window is open
        self.graph_addr = {}  # (device, addr) of those -> size

    def total(self, ident, device, kind, delta):
        """A live-bytes change of (device, kind): the watch, the device totals."""
        if self.watch:
            self.watch.live(ident, device, kind, delta)
        if device < 0:  # pinned and registered host memory together
            self.host_live += delta
            self.host_peak = max(self.host_peak, self.host_live)
            return
        if kind not in DEVICE_KINDS:
            return
        live = self.dev_live[device] = self.dev_live.get(device, 0) + delta
        self.dev_peak[device] = max(self.dev_peak.get(device, 0), live)
        self.all_live += delta
        self.all_peak = max(self.all_peak, self.all_live)

    @staticmethod
    def counted(device, kind, failing):
        """Whether (device, kind) is part of the failing device's total (of
        host memory's for -1): what dev_live and host_live count."""
        return device < 0 if failing < 0 else device == failing and kind in DEVICE_KINDS

    def count(self, n):
        """n allocations (of any kind) became live (+1) or died (-1)."""
        self.count_live += n
        self.count_peak = max(self.count_peak, self.count_live)

    def key(self, device, kind):
        k = self.keys.get((device, kind))
        if k is None:
            k = self.keys[(device, kind)] = Key()
        return k

    def vmm(self, op, o, where):
        h = field(o, "handle", where)
        if op == "vmm_create":
            self.key(field(o, "device", where), "vmm").born(h, field(o, "size", where), where)
            self.total(h, o["device"], "vmm", o["size"])
            self.count(1)
            self.handles[h] = [o["device"], 0, False]
            return
        state = self.handles.get(h)
        if state is None:
            raise Unusable(f"{at(where)}: {op} of unknown handle {h}")
        if op == "vmm_map":
            state[1] += 1
        elif op == "vmm_unmap":
            if state[1] == 0:
                raise Unusable(f"{at(where)}: unmap of unmapped handle {h}")
            state[1] -= 1
        elif op == "vmm_retain":  # a released handle still mapped, retained again: live
            if not state[2]:
                raise Unusable(f"{at(where)}: vmm_retain of unreleased handle {h}")
            state[2] = False
        else:
            if state[2]:
                raise Unusable(f"{at(where)}: handle {h} released twice")
            state[2] = True
        if state[2] and state[1] == 0:  # released and no longer mapped: the memory dies
            k = self.key(state[0], "vmm")
            self.total(h, state[0], "vmm", -k.live[h])
            k.died(h, where)
            self.count(-1)
            del self.handles[h]

    def line(self, o, where):
        if self.exited:
            return  # after exit (e.g. another library's destructor): not counted
        if o["seq"] <= self.last_seq:
            raise Unusable(f"{at(where)}: seq {o['seq']} after {self.last_seq}")
        self.last_seq = o["seq"]
        self.window(o.get("tid"))
        op = o["op"]
        if op == "alloc":
            self.key(field(o, "device", where), field(o, "kind", where)).born(
                field(o, "addr", where), field(o, "size", where), where)
            self.total(o["addr"], o["device"], o["kind"], o["size"])
            self.count(1)
            if o.get("api") == "cuGraphLaunch":
                self.graph_addr[(o["device"], o["addr"])] = o["size"]
                self.graph_live[o["device"]] = self.graph_live.get(o["device"], 0) + o["size"]
        elif op == "free":
            k = self.key(field(o, "device", where), field(o, "kind", where))
            size = k.live.get(field(o, "addr", where), 0)
            k.died(o["addr"], where)
            self.total(o["addr"], o["device"], o["kind"], -size)
            self.count(-1)
            g = self.graph_addr.pop((o["device"], o["addr"]), None)
            if g is not None:
                self.graph_live[o["device"]] -= g
        elif op == "fail":
            k = self.key(field(o, "device", where), field(o, "kind", where))
            k.failed += 1
            k.at_failures.append(k.live_bytes)
            self.fail_api.append(report_api(o.get("api", "")))
            self.fail_oom.append(o.get("error") == 2)
            self.fail_free.append((o["free"], o.get("total"), o.get("outside"))
                                  if "free" in o else None)
            self.fail_alone.append(True)
            self.open_fail[o.get("tid")] = len(self.fail_free) - 1
            gp = o.get("graph_pool")
            self.fail_graph_pool.append(
                None if gp is None else (gp, max(0, gp - self.graph_live.get(o["device"], 0))))
            if self.watch:
                self.watch.failed(o)
            mine = [v for (d, k), v in self.keys.items() if self.counted(d, k, o["device"])]
            self.fail_live.append(sum(v.live_bytes for v in mine))
            self.fail_live_count.append(sum(len(v.live) for v in mine))
        elif op in ("vmm_create", "vmm_map", "vmm_unmap", "vmm_release", "vmm_retain"):
            self.vmm(op, o, where)
        elif op == "exit":
            self.exited = True
        elif op == "bad_free":
            self.bad_frees.append((int(field(o, "addr", where), 16), field(o, "error", where)))
        elif op in ("pool_grow", "pool_release"):  # a pool's reserve: no allocation
            dev = field(o, "device", where)
            r = self.pool_reserved[dev] = self.pool_reserved.get(dev, 0) + (
                field(o, "size", where) * (1 if op == "pool_grow" else -1))
            self.pool_peak[dev] = max(self.pool_peak.get(dev, 0), r)
        else:
            raise Unusable(f"{at(where)}: unknown op {op!r}")

    def window(self, tid):
        """A line of thread tid: it closes tid's open fail window and makes
        every other open one not alone."""
        if not self.open_fail:
            return
        self.open_fail.pop(tid, None)
        for k in self.open_fail.values():
            self.fail_alone[k] = False

    def result(self):
        return {k: v.result() for k, v in self.keys.items()}

    def device_peaks(self):
        """{device: peak bytes} and the all-devices peak of the device totals."""
        return dict(self.dev_peak), self.all_peak


# APIs the trace records under one name (trace/vtrace.h enum vt_api).
def report_api(name):
    """The name the report gives an api the ledger names: without the driver's
    versioned suffixes."""
    for suffix in ("_ptsz", "_v2"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    return name


def field(obj, name, where):
    if name not in obj:
        raise Unusable(f"{at(where)}: no \"{name}\"")
    return obj[name]


def replay(path, pid, watch=None):
    """The Process replayed from the ledger lines of `pid` (or of the only
    process in the file) as they stream by (the sim writes each process's
    lines in seq order), telling watch (see Process)."""
    procs = {}
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise Unusable(f"cannot read ledger {path}: {e.strerror}") from e
    with f:
        for n, text in enumerate(f, 1):
            m = FAST_LINE.match(text)
            if m:
                seq, p, tid, op, api, kind, dev, addr, size = m.groups()
                o = {"seq": int(seq), "pid": int(p), "tid": int(tid), "op": op, "api": api,
                     "kind": kind,
                     "device": int(dev),
                     "addr": addr, "size": int(size)}
            elif not text.strip():
                continue
            else:
                try:
                    o = json.loads(text)
                except ValueError as e:
                    raise Unusable(f"{path}:{n}: not JSON: {e}") from e
            if not isinstance(o, dict) or "seq" not in o or "pid" not in o or "op" not in o:
                raise Unusable(f"{path}:{n}: not a ledger line")
            if pid is not None and o["pid"] != pid:
                continue
            proc = procs.get(o["pid"])
            if proc is None:
                proc = procs[o["pid"]] = Process(watch)
            proc.line(o, (path, n))
    if pid is None and len(procs) > 1:
        raise Unusable(f"{path}: the ledger holds pids {sorted(procs)}; pick one with --pid")
    if not procs:
        raise Unusable(f"{path}: no ledger line" + (f" of pid {pid}" if pid is not None else ""))
    return next(iter(procs.values()))


def load_report(path, pid=None):
    """The report (JSON); of a report of several traces ({"files": [...]}), the
    file whose program pid is `pid`."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise Unusable(f"cannot read report {path}: {e.strerror}") from e
    except ValueError as e:
        raise Unusable(f"{path}: not JSON: {e}") from e
    if isinstance(report, dict) and isinstance(report.get("files"), list):
        mine = [f for f in report["files"]
                if isinstance(f, dict) and f.get("program", {}).get("pid") == pid]
        if len(mine) != 1:
            raise Unusable(f"{path}: a report of several traces needs --pid of one of them")
        report = mine[0]
    return report


def read_report(path, pid=None):
    """The report's accounting by (device, kind)."""
    report = load_report(path, pid)
    acc = report.get("accounting") if isinstance(report, dict) else None
    if not isinstance(acc, list):
        raise Unusable(f"{path}: no \"accounting\" array")
    out = {}
    for entry in acc:
        if not isinstance(entry, dict) or "device" not in entry or "kind" not in entry:
            raise Unusable(f"{path}: accounting entry without device and kind: {entry!r}")
        k = (entry["device"], entry["kind"])
        if k in out:
            raise Unusable(f"{path}: accounting lists device {k[0]} kind {k[1]} twice")
        out[k] = entry
    return out


def compare(expected, reported, fields=FIELDS):
    """Mismatch messages, one per differing number of `fields` or missing entry."""
    problems = []

    def name(k):
        return f"device {k[0]} kind {k[1]}"

    for k in sorted(expected.keys() | reported.keys(), key=lambda k: (k[0], k[1])):
        if k not in reported:
            problems.append(f"{name(k)}: in the ledger {expected[k]}, missing from the report")
            continue
        if k not in expected:
            problems.append(f"{name(k)}: in the report, no such event in the ledger")
            continue
        for f in fields:
            want, got = expected[k][f], reported[k].get(f, "<missing>")
            if want != got:
                problems.append(f"{name(k)}: {f}: report {got}, ledger {want}")
    return problems


def listed_failures(listed, fail_oom):
    """Which of the ledger's failures (0-based; fail_oom: whether each is out of
    memory) a report's `listed` ooms entries are: the first ones and, past the
    report's cap, always the latest out-of-memory one in its last slot
    (report/oom.c, VR_MAX_OOMS)."""
    if len(fail_oom) < listed:
        raise Unusable(f"the ledger has {len(fail_oom)} failed allocations, the report lists "
                       f"{listed}")
    kept = list(range(listed))
    if listed and listed < len(fail_oom):
        kept[-1] = max(k for k in range(listed - 1, len(fail_oom))
                       if k == listed - 1 or fail_oom[k])
    return kept


def compare_devices(proc, report):
    """Mismatch messages of the device totals' peaks (--devices)."""
    peaks, all_peak = proc.device_peaks()
    got = {d.get("id"): d.get("peak_allocated_bytes") for d in report.get("devices", [])
           if isinstance(d, dict)}
    problems = []
    for dev in sorted(set(peaks) | {d for d in got if d is not None and d >= 0}):
        want = peaks.get(dev, 0)
        if got.get(dev, 0) != want:
            problems.append(f"device {dev}: peak_allocated_bytes: report {got.get(dev)}, "
                            f"ledger {want}")
    total = report.get("totals", {}).get("peak_allocated_bytes")
    if total != all_peak:
        problems.append(f"totals: peak_allocated_bytes: report {total}, ledger {all_peak}")
    problems += compare_timelines(proc, report)
    problems += compare_leaks(proc, report)
    problems += compare_peak_lists(all_peak, report)
    # the most the pools reserved where sampled (iteration ends, memory
    # samples, failures) is at most the most they reserved at once: a
    # destroyed pool's last sample kept beside a new pool's went past it
    for d in report.get("devices", []):
        got = d.get("pool_reserved_peak_bytes") if isinstance(d, dict) else None
        want = proc.pool_peak.get(d.get("id"), 0) if got is not None else None
        if got is not None and got > want:
            problems.append(f"device {d.get('id')}: pool_reserved_peak_bytes: report {got}, more "
                            f"than the ledger's pools ever reserved at once ({want})")
    host = report.get("totals", {}).get("host_pinned_peak_bytes")
    if host is not None and host != proc.host_peak:
        problems.append(f"totals: host_pinned_peak_bytes: report {host}, ledger {proc.host_peak}")
    ooms = report.get("ooms", [])
    if len(ooms) <= len(proc.fail_live):
        for o, k in zip(ooms, listed_failures(len(ooms), proc.fail_oom)):
            n, want, api = k + 1, proc.fail_live[k], proc.fail_api[k]
            if o.get("live_allocated_bytes") != want:
                problems.append(f"failed allocation {n}: live_allocated_bytes: report "
                                f"{o.get('live_allocated_bytes')}, ledger {want}")
            if o.get("api") != api:
                problems.append(f"failed allocation {n}: api: report {o.get('api')}, ledger {api}")
            problems += compare_free(o, n, proc.fail_free[k], proc.fail_alone[k])
            if "graph_pool" in o:  # trace format 13 and later
                gp = o["graph_pool"]
                got = None if gp is None else (gp.get("reserved_bytes"), gp.get("kept_bytes"))
                if got != proc.fail_graph_pool[k]:
                    problems.append(f"failed allocation {n}: graph pool (reserved, kept): report "
                                    f"{got}, ledger {proc.fail_graph_pool[k]}")
    return problems


def compare_timelines(proc, report):
    """Mismatch messages of each device's timeline ([t_ns, allocated,
    reserved] points: each bucket's most and last, report/model.c): its
    most allocated is the device's peak and its last point the device's live
    bytes at exit (kinds DEVICE_KINDS), both as the ledger has them."""
    peaks, _ = proc.device_peaks()
    problems = []
    for d in report.get("devices", []):
        dev, points = d.get("id"), d.get("timeline") or []
        if not isinstance(dev, int) or dev < 0 or not points:
            continue
        most, last = max(p[1] for p in points), points[-1][1]
        if most != peaks.get(dev, 0):
            problems.append(f"device {dev}: timeline's most allocated {most}, ledger's peak "
                            f"{peaks.get(dev, 0)}")
        if last != proc.dev_live.get(dev, 0):
            problems.append(f"device {dev}: timeline's last allocated {last}, ledger's live at "
                            f"exit {proc.dev_live.get(dev, 0)}")
    return problems


def compare_peak_lists(all_peak, report):
    """Mismatch messages of the peak's composition lists: the call stacks
    ("sites") and NVTX ranges ("phases") live at the run's peak, each with
    its "left_out" part, sum to the ledger's peak of all devices (each list
    only when the report has it)."""
    problems = []
    out = report.get("left_out") or {}
    for name in ("sites", "phases"):
        if name not in report:
            continue
        got = sum(x.get("bytes", 0) for x in report[name]) + (out.get(name) or {}).get("bytes", 0)
        if got != all_peak:
            problems.append(f"{name} at the peak: report {got} bytes, ledger's peak {all_peak}")
    return problems


def compare_leaks(proc, report):
    """Mismatch messages of the leak list (leaks[], grouped by call stack,
    and left_out.leaks, the groups past the list's end): its bytes and
    allocations per kind are the ledger's live ones at exit (leaked_bytes,
    leaked_allocations), every kind; per kind only when nothing was left out
    (left_out gives no kinds), else all kinds together."""
    want_b, want_n = {}, {}
    for (_, kind), v in proc.result().items():
        want_b[kind] = want_b.get(kind, 0) + v["leaked_bytes"]
        want_n[kind] = want_n.get(kind, 0) + v["leaked_allocations"]
    got_b, got_n = {}, {}
    for x in report.get("leaks", []):
        got_b[x.get("kind")] = got_b.get(x.get("kind"), 0) + x.get("bytes", 0)
        got_n[x.get("kind")] = got_n.get(x.get("kind"), 0) + x.get("count", 0)
    out = (report.get("left_out") or {}).get("leaks") or {}
    if out.get("bytes") or out.get("allocations"):
        got_b = {"all": sum(got_b.values()) + out.get("bytes", 0)}
        got_n = {"all": sum(got_n.values()) + out.get("allocations", 0)}
        want_b, want_n = {"all": sum(want_b.values())}, {"all": sum(want_n.values())}
    problems = []
    for kind in sorted(set(want_b) | set(got_b), key=str):
        if got_b.get(kind, 0) != want_b.get(kind, 0) or got_n.get(kind, 0) != want_n.get(kind, 0):
            problems.append(f"leaks of kind {kind}: report {got_b.get(kind, 0)} bytes in "
                            f"{got_n.get(kind, 0)}, ledger {want_b.get(kind, 0)} in "
                            f"{want_n.get(kind, 0)}")
    return problems


def compare_free(oom, n, want, alone):
    """Mismatch messages of a listed failure's device free and total bytes
    against the sim's at its fail line (want, None: not written), when no
    other thread's line came between the failure and the preload's sample.
    A failure with another error than out of memory may have free bytes
    unknown (null: the driver could not say, e.g. without a context; then
    the sim's cuMemGetInfo could not either); an out-of-memory one may not."""
    if want is None or not alone:
        return []
    free, total, outside = want
    got = (oom.get("device_free_bytes"), oom.get("device_total_bytes"))
    if got[0] is None and got[1] == total and oom.get("error") != 2:
        return []
    if got != (free, total):
        return [f"failed allocation {n}: device (free, total): report {got}, ledger "
                f"{(free, total)}"]
    # worked out for out-of-memory failures only; it holds the driver's
    # rounding of the recorded allocations (docs/report.md: "of which up to
    # ... is the driver's rounding"), which the sim's "outside" does not
    got = oom.get("outside_recording_bytes")
    if outside is None or got is None or oom.get("error") != 2:
        return []
    got -= oom.get("rounding_bytes", 0)
    if got != outside:
        return [f"failed allocation {n}: outside_recording_bytes less rounding_bytes: report "
                f"{got}, ledger {outside}"]
    # what the process holds on the device (live data, heaps, pools' free
    # reserve) is at most what the device has in use less what the sim
    # counts outside the process's allocations and pools (the driver's
    # rounding is in neither side's "held"); a pool's reserve the report
    # kept after the program destroyed the pool went past it (session 34)
    held = oom.get("live_reserved_bytes")
    if oom.get("device", -1) >= 0 and held is not None and held > total - free - outside:
        return [f"failed allocation {n}: live_reserved_bytes: report {held}, more than the "
                f"ledger's device memory in use less outside ({total - free - outside})"]
    return []


def compare_failed_frees(proc, report, other_run=False):
    """Mismatch messages of the failed frees (a report of a trace of format 12
    or later; none before: its "failed_frees" is null); other_run: the errors
    only, the addresses of another run being other addresses."""
    listed = report.get("failed_frees")
    if listed is None:
        return []
    total = report.get("totals", {}).get("failed_frees")
    problems = []
    if total != len(proc.bad_frees):
        problems.append(f"failed frees: report {total}, ledger {len(proc.bad_frees)}")
    got = sorted((int(x.get("address", "0"), 16), x.get("error")) for x in listed)
    want = sorted(proc.bad_frees[:len(listed)])
    if other_run:
        got = sorted((0, e) for _, e in got)
        want = sorted((0, e) for _, e in want)
    for g, w in zip(got, want):
        if g != w:
            problems.append(f"failed free: report (0x{g[0]:x}, error {g[1]}), "
                            f"ledger (0x{w[0]:x}, error {w[1]})")
            break
    return problems


# The trace's summary frame (trace/records.h, docs/trace.md "Summary"): the
# file's last 24 bytes.
SUMMARY = struct.Struct("<II8sQ")
SUMMARY_MAGIC, SUMMARY_TAG = 0x184D2A5E, b"VTSUMARY"


def trace_summary(path):
    """The peak_live of the summary that ends trace `path`, None without one."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            if f.tell() < SUMMARY.size:
                return None
            f.seek(-SUMMARY.size, 2)
            magic, size, tag, peak_live = SUMMARY.unpack(f.read(SUMMARY.size))
    except OSError as e:
        raise Unusable(f"cannot read trace {path}: {e.strerror}") from e
    if magic != SUMMARY_MAGIC or size != SUMMARY.size - 8 or tag != SUMMARY_TAG:
        return None
    return peak_live


def compare_summary(proc, path):
    """Mismatch messages of the trace's summary (--trace)."""
    got = trace_summary(path)
    if got is None:
        return [f"{path}: the trace ends without a summary"]
    if got != proc.count_peak:
        return [f"summary: peak_live: trace {got}, ledger {proc.count_peak}"]
    return []


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--fields", help="compare only these (comma-separated; default all: "
                    + ",".join(FIELDS) + "), e.g. counts of a program whose peak depends on "
                    "thread timing, recorded in another run than the ledger's")
    ap.add_argument("--devices", action="store_true",
                    help="also the peak allocated bytes of each device and of the run")
    ap.add_argument("--other-run", action="store_true",
                    help="the trace was recorded in another run than the ledger's (a real GPU): "
                    "failed frees are compared by their errors, not their addresses")
    ap.add_argument("--trace", help="also the summary that ends this trace (the recorder's most "
                    "allocations live at once) against the ledger's; a trace without one fails")
    args = ap.parse_args(argv)
    fields = FIELDS
    if args.fields:
        fields = tuple(args.fields.split(","))
        bad = [f for f in fields if f not in FIELDS]
        if bad:
            print(f"check_ledger: unknown field(s) {', '.join(bad)}; known: {', '.join(FIELDS)}",
                  file=sys.stderr)
            return 2
    try:
        proc = replay(args.ledger, args.pid)
        expected = proc.result()
        reported = read_report(args.report, args.pid)
        report = load_report(args.report, args.pid)
    except Unusable as e:
        print(f"check_ledger: {e}", file=sys.stderr)
        return 2
    problems = compare(expected, reported, fields)
    if not args.fields:  # counts only (--fields): a run other than the ledger's
        problems += compare_failed_frees(proc, report, args.other_run)
    if args.devices:
        problems += compare_devices(proc, report)
    if args.trace:
        try:
            problems += compare_summary(proc, args.trace)
        except Unusable as e:
            print(f"check_ledger: {e}", file=sys.stderr)
            return 2
    for p in problems:
        print(f"check_ledger: mismatch: {p}")
    if not problems:
        print(f"check_ledger: report matches the ledger ({len(expected)} device/kind entries)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
