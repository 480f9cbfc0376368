#!/usr/bin/env python3
"""Check a `vramtrace report --memory-viz` pickle against the fields of
torch.cuda.memory._snapshot() (PyTorch 2.x, torch/cuda/memory.py) and against
the same run's JSON report: read with the standard library's pickle only.

usage: memviz_check.py SNAPSHOT.pickle REPORT.json [_memory_viz.py]
  With PyTorch's torch/cuda/_memory_viz.py (stdlib-only at import), its
  segsum / trace_plot / segment_plot / memory must read the snapshot too.
Exit 0 ok, 1 a check failed."""
import importlib.util
import json
import pickle
import sys

BLOCK_STATES = {"active_allocated", "active_awaiting_free", "inactive"}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom"}
errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)
    return cond


def frames_ok(fr, where):
    if not check(isinstance(fr, list), f"{where}: frames is not a list"):
        return
    for f in fr:
        check(isinstance(f.get("filename"), str) and isinstance(f.get("line"), int)
              and isinstance(f.get("name"), str), f"{where}: bad frame {f!r}")


def check_segments(segs):
    for i, s in enumerate(segs):
        w = f"segment {i}"
        for k, t in (("device", int), ("address", int), ("total_size", int),
                     ("allocated_size", int), ("active_size", int), ("stream", int),
                     ("segment_type", str), ("blocks", list)):
            check(isinstance(s.get(k), t), f"{w}: {k} missing or not {t.__name__}")
        check(s.get("segment_type") in ("small", "large"), f"{w}: segment_type")
        at, active = s["address"], 0
        for j, b in enumerate(s["blocks"]):
            check(b["state"] in BLOCK_STATES, f"{w} block {j}: state {b['state']!r}")
            check(b.get("address", at) == at, f"{w} block {j}: not contiguous")
            at += b["size"]
            if b["state"] == "active_allocated":
                active += b["size"]
                frames_ok(b["frames"], f"{w} block {j}")
                check(b["requested_size"] <= b["size"], f"{w} block {j}: requested > size")
        check(at == s["address"] + s["total_size"], f"{w}: blocks do not tile the segment")
        check(active == s["allocated_size"], f"{w}: allocated_size {s['allocated_size']} "
              f"!= active blocks {active}")


def replay(traces):
    """Per device: (max allocated, final allocated, final reserved, last entry)."""
    out = []
    for dev, tr in enumerate(traces):
        alloc = res = peak = 0
        live = {}
        for k, e in enumerate(tr):
            a = e["action"]
            if not check(a in ACTIONS, f"device {dev} entry {k}: action {a!r}"):
                continue
            frames_ok(e["frames"], f"device {dev} entry {k}")
            if a == "alloc":
                check(e["addr"] not in live, f"device {dev} entry {k}: alloc of a live address")
                live[e["addr"]] = e["size"]
                alloc += e["size"]
                peak = max(peak, alloc)
            elif a == "free_completed":
                check(live.pop(e["addr"], None) == e["size"],
                      f"device {dev} entry {k}: free of an unknown block")
                alloc -= e["size"]
            elif a == "segment_alloc":
                res += e["size"]
            elif a == "segment_free":
                res -= e["size"]
        out.append((peak, alloc, res, tr[-1] if tr else None))
    return out


def check_report(snap, rep):
    segs, traces = snap["segments"], snap["device_traces"]
    alloc = sum(s["allocated_size"] for s in segs)
    reserved = sum(s["total_size"] for s in segs)
    per_dev = replay(traces)
    check(sum(d[1] for d in per_dev) == alloc,
          f"trace replay ends at {sum(d[1] for d in per_dev)} B allocated, segments hold {alloc}")
    check(sum(d[2] for d in per_dev) == reserved,
          f"trace replay ends at {sum(d[2] for d in per_dev)} B reserved, segments hold {reserved}")
    fatal = [o for o in rep.get("ooms", []) if o.get("fatal")]
    if fatal:
        o = fatal[-1]
        last = per_dev[o["device"]][3]
        check(last and last["action"] == "oom" and last["size"] == o["requested_bytes"],
              f"the trace does not end with the fatal oom ({last and last['action']})")
        check(alloc == o["live_allocated_bytes"],
              f"segments allocate {alloc} B, the report has {o['live_allocated_bytes']} live at the OOM")
        check(reserved == o["live_reserved_bytes"],
              f"segments reserve {reserved} B, the report has {o['live_reserved_bytes']} at the OOM")
        return f"at the fatal OOM: {alloc} B allocated, {reserved} B reserved"
    peak = rep["totals"]["peak_allocated_bytes"]
    check(alloc == peak, f"segments allocate {alloc} B at the snapshot, the report's peak is {peak}")
    tpeak = sum(d[0] for d in per_dev)
    check(max(d[0] for d in per_dev) <= peak and tpeak >= peak,
          f"trace replay peaks at {tpeak} B, the report's peak is {peak}")
    check(reserved <= rep["totals"]["peak_reserved_bytes"], "more reserved than the report's peak")
    return f"at the peak: {alloc} B allocated (report {peak}), {reserved} B reserved"


def check_torch(snap, path):
    spec = importlib.util.spec_from_file_location("torch_memory_viz", path)
    mv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mv)
    s = mv.segsum(snap)  # asserts its own size bookkeeping
    alloc = sum(x["allocated_size"] for x in snap["segments"])
    check(f"total_allocated: {mv.Bytes(alloc)}" in s, "segsum's total_allocated differs")
    check(len(mv.trace_plot(snap)) > 1000, "trace_plot made no page")
    check(len(mv.segment_plot(snap)) > 1000, "segment_plot made no page")
    lines = mv.memory(snap, format_flamegraph=lambda x: x)
    got = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines.splitlines()
              if ";active_allocated;" in ln and "<gaps>" not in ln)
    check(got == alloc, f"memory()'s active_allocated lines add up to {got} B, not {alloc}")
    total = [ln for ln in s.splitlines() if ln.startswith("total_allocated")]
    print("memviz_check: PyTorch's _memory_viz (segsum, trace_plot, segment_plot, memory) "
          f"read it: segsum {total[0] if total else '?'}")


def main():
    with open(sys.argv[1], "rb") as f:
        snap = pickle.load(f)
    rep = json.load(open(sys.argv[2]))
    ok = check(isinstance(snap, dict) and isinstance(snap.get("segments"), list)
               and isinstance(snap.get("device_traces"), list), "not a snapshot dict")
    if ok:
        check(snap["segments"], "no segments")
        check(any(s["blocks"] for s in snap["segments"]), "no blocks")
        check(any(snap["device_traces"]), "empty device_traces")
        check_segments(snap["segments"])
        what = check_report(snap, rep)
        if len(sys.argv) > 3 and not errors:
            check_torch(snap, sys.argv[3])
    for e in errors[:20]:
        print("memviz_check: " + e)
    if not errors:
        print(f"memviz_check: ok: {len(snap['segments'])} segments, "
              f"{sum(len(s['blocks']) for s in snap['segments'])} blocks, "
              f"{sum(len(t) for t in snap['device_traces'])} trace entries; {what}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
