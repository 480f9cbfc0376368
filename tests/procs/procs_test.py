"""procs_test.py: vramtrace on process trees, on the simulated device.

One CASE per ctest (timeout, sh_c, bash_c, bash_script, env, python, shim,
cuda_parent, ranks, shared_oom; existing is separate). Each command is run three ways, each in an empty working
directory:
  o  `vramtrace run --sim -o run.vtrace -- CMD`
  d  `vramtrace run --sim -- CMD`
     run must name exactly the traces that hold the allocations (counted in
     each trace with vt_check), and nothing else is left in the working
     directory; with -o the first trace is run.vtrace, the others
     run.<pid>.vtrace; without, vramtrace.t_rank.<pid>.vtrace;
  q  CMD with and without LD_PRELOAD=libvramtrace.so VRAMTRACE_QUIET=1
     VRAMTRACE_OUTPUT=run.vtrace: stdout and stderr byte-identical.
ranks and shared_oom also check the multi-process report.

usage: procs_test.py --vramtrace V --check C --preload P --sim DIR --rank T
       --launch L --src DIR --out DIR CASE
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def case_command(a, case):
    """(command, extra environment, traces expected, per-trace expectations)"""
    rank, each = a.rank, {"allocs": "3", "frees": "3", "failed": "0"}
    if case == "timeout":
        return ["timeout", "60", rank, "3x1"], {}, 1, each
    if case == "sh_c":
        return ["sh", "-c", f"'{rank}' 3x1 && true"], {}, 1, each
    if case == "bash_c":
        return ["bash", "-c", f"'{rank}' 3x1"], {}, 1, each
    if case == "shim":  # a pyenv-like shim: a bash script, env, then Python
        return ["bash", os.path.join(a.src, "script.sh"), "env", sys.executable,
                os.path.join(a.src, "launch.py"), rank, "3x1"], {}, 1, each
    if case == "bash_script":
        return ["bash", os.path.join(a.src, "script.sh"), rank, "3x1"], {}, 1, each
    if case == "env":
        return ["env", "FOO=1", rank, "3x1"], {}, 1, each
    if case == "python":
        return [sys.executable, os.path.join(a.src, "launch.py"), rank, "3x1"], {}, 1, each
    if case == "cuda_parent":  # a CUDA program that fork+execs another
        return [rank, "3x1"], {"VT_SPAWN": "1"}, 2, each
    if case == "ranks":
        cmd = [a.launch, "4", rank, "3x1", "3x2", "3x4", "3x8"]
        return cmd, {"VRAMTRACE_SIM_DEVICES": "2"}, 4, each
    if case == "shared_oom":
        env = {"VRAMTRACE_SIM_MEMORY": "1GiB", "VRAMTRACE_SIM_CONTEXT_RESERVE": "0",
               "VRAMTRACE_SIM_SHARED": os.path.join(a.out, "ledger"),
               "VT_SYNC": os.path.join(a.out, "sync")}
        return [a.launch, "2", rank, "1x700", "1x500"], env, 2, None
    raise Fail(f"unknown case {case}")


def base_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VRAMTRACE_") and k not in ("LD_PRELOAD", "VT_SYNC", "VT_SPAWN")}
    env["VRAMTRACE_SIM_DEVICE"] = "t4"
    env.update(extra)
    return env


def fresh(a, name):
    """A clean working directory, sync directory and ledger for one run."""
    for p in ("sync", "ledger"):
        shutil.rmtree(os.path.join(a.out, p), ignore_errors=True)
    os.makedirs(os.path.join(a.out, "sync"))
    cwd = os.path.join(a.out, name)
    os.makedirs(cwd)
    return cwd


def named(stderr):
    """The traces `vramtrace run` named, in order."""
    out = []
    for line in stderr.splitlines():
        m = re.match(r"vramtrace run: trace: (.*)$", line) or \
            re.match(r"vramtrace run:   (.*)$", line)
        if m:
            out.append(m.group(1))
    return out


def vt_check(a, path):
    p = subprocess.run([a.check, path], capture_output=True, text=True)
    check(p.returncode == 0, f"{path} does not read back: {p.stderr}")
    return dict(line.split("=", 1) for line in p.stdout.split() if "=" in line)


def check_ledgers(a, cwd, traces, ldir):
    """Each process's report accounting against the sim's own ledger of that
    process (tests/ledger/check_ledger.py)."""
    rep = os.path.join(ldir, "report.json")
    p = subprocess.run([a.vramtrace, "report", "-q", "--json", rep] + traces, cwd=cwd,
                       capture_output=True, text=True)
    check(p.returncode == 0, f"report --json exited {p.returncode}: {p.stderr}")
    with open(rep) as f:
        doc = json.load(f)
    checker = os.path.join(a.src, "..", "ledger", "check_ledger.py")
    for f in doc.get("files", [doc]):
        pid = f["program"]["pid"]
        q = subprocess.run([sys.executable, checker, "--ledger", os.path.join(ldir, f"ledger.{pid}"),
                            "--report", rep, "--pid", str(pid)], capture_output=True, text=True)
        check(q.returncode == 0, f"pid {pid}: report vs the sim's ledger: {q.stdout}{q.stderr}")


def run_mode(a, mode, cmd, extra, ntraces, each):
    cwd = fresh(a, mode)
    opt = ["-o", "run.vtrace"] if mode == "o" else []
    ldir = os.path.join(a.out, "simledger." + mode)
    shutil.rmtree(ldir, ignore_errors=True)
    os.makedirs(ldir)
    env = base_env(extra)
    env["VRAMTRACE_SIM_LEDGER"] = os.path.join(ldir, "ledger.%p")
    p = subprocess.run([a.vramtrace, "run", "--sim"] + opt + ["--"] + cmd, cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=120)
    sys.stderr.write(p.stderr)
    check(p.returncode == 0, f"{mode}: vramtrace run exited {p.returncode}")
    traces = named(p.stderr)
    check(len(traces) == ntraces, f"{mode}: run named {len(traces)} traces, expected {ntraces}")
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("vramtrace run: /")]
    check(not said, f"{mode}: every process closed its trace, yet run said: {said}")
    files = sorted(os.listdir(cwd))
    check(sorted(traces) == files,
          f"{mode}: the working directory holds {files}, run named {traces}")
    pat = r"run(\.\d+)?\.vtrace" if mode == "o" else r"vramtrace\.t_rank\.\d+\.vtrace"
    for t in traces:
        check(re.fullmatch(pat, t), f"{mode}: unexpected trace name {t}")
    if mode == "o":
        check("run.vtrace" in traces, "o: no process got the run's name run.vtrace")
    stats = {t: vt_check(a, os.path.join(cwd, t)) for t in traces}
    check_ledgers(a, cwd, traces, ldir)
    for t, s in stats.items():
        for k, v in (each or {}).items():
            check(s.get(k) == v, f"{mode}: {t}: {k}={s.get(k)}, expected {v}")
    return cwd, traces, stats


def quiet_mode(a, cmd, extra):
    results = []
    for traced in (False, True):
        cwd = fresh(a, "q" + ("t" if traced else "p"))
        env = base_env(extra)
        env["LD_LIBRARY_PATH"] = a.sim
        if traced:  # a run name, so that several processes meet on it
            env.update(LD_PRELOAD=a.preload, VRAMTRACE_QUIET="1", VRAMTRACE_OUTPUT="run.vtrace")
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=120)
        results.append(p)
    plain, quiet = results
    check(plain.returncode == quiet.returncode,
          f"q: exit {quiet.returncode} with the preload, {plain.returncode} without")
    # ranks print in any order: compare their lines as sets
    check(sorted(plain.stdout.splitlines()) == sorted(quiet.stdout.splitlines()),
          "q: stdout differs with the preload")
    check(plain.stderr == quiet.stderr,
          f"q: stderr differs with VRAMTRACE_QUIET=1:\n{plain.stderr!r}\n{quiet.stderr!r}")


def report(a, cwd, args):
    p = subprocess.run([a.vramtrace, "report", "--no-symbols"] + args, cwd=cwd,
                       capture_output=True, text=True)
    check(p.returncode == 0, f"report exited {p.returncode}: {p.stderr}")
    return p.stdout


def report_symbols(a, cwd, args):
    p = subprocess.run([a.vramtrace, "report"] + args, cwd=cwd, capture_output=True, text=True)
    check(p.returncode == 0, f"report exited {p.returncode}: {p.stderr}")
    return p.stdout


def report_json(a, cwd, args):
    p = subprocess.run([a.vramtrace, "report", "-q", "--json", "-"] + args, cwd=cwd,
                       capture_output=True, text=True)
    check(p.returncode == 0, f"report --json exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def check_ranks(a, cwd, traces, stats):
    # every rank on device rank % 2, and the run section sums the devices:
    # device 0: ranks 0 and 2 (3 x 1 MiB, 3 x 4 MiB), device 1: 3 x 2 + 3 x 8 MiB
    peaks = sorted(int(s["peak"]) for s in stats.values())
    check(peaks == [3 << 20, 6 << 20, 12 << 20, 24 << 20], f"ranks: peaks {peaks}")
    text = report(a, cwd, ["run.vtrace"])  # the run's name brings all 4
    check(re.search(r"== vramtrace run [0-9a-f]{16}: 4 processes ==", text),
          "ranks: no run section for 4 processes")
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r"^(\d+)\s+(.*)$", text.split("peak allocated per device")[1], re.M)}
    check(rows.get("0", "").split()[-4:-2] == ["15.00", "MiB"] or "15.0" in rows.get("0", ""),
          f"ranks: device 0 row {rows.get('0')!r}, expected a sum of 15 MiB")
    check("30.0" in rows.get("1", ""), f"ranks: device 1 row {rows.get('1')!r}, expected 30 MiB")
    for t in traces:
        pid = t.split(".")[1] if t != "run.vtrace" else None
        if pid:
            check(f"pid {pid} " in text, f"ranks: pid {pid} missing from the run section")
    runs = report_json(a, cwd, ["run.vtrace"])["runs"]
    check(len(runs) == 1 and len(runs[0]["processes"]) == 4, f"ranks: JSON runs {runs}")
    ranks = sorted(p["rank"] for p in runs[0]["processes"])
    check(ranks == [0, 1, 2, 3], f"ranks: JSON ranks {ranks}")
    devs = {d["device"]: d for d in runs[0]["devices"]}
    for dev, want, members in ((0, 15 << 20, [0, 2]), (1, 30 << 20, [1, 3])):
        check(devs[dev]["sum_of_peaks_bytes"] == want,
              f"ranks: device {dev} sum {devs[dev]['sum_of_peaks_bytes']}, expected {want}")
        check(sorted(x["rank"] for x in devs[dev]["peak_allocated_bytes"]) == members,
              f"ranks: device {dev} used by {devs[dev]['peak_allocated_bytes']}")
        check(0 < devs[dev]["peak_of_sum_bytes"] <= want, f"ranks: device {dev} peak of sum")
    for r in range(4):  # the launcher's RANK, from each trace's header
        check(re.search(rf"^rank {r} pid \d+ t_rank", text, re.M),
              f"ranks: rank {r} missing from the run section")


def check_shared(a, cwd, traces, stats):
    holder = [t for t, s in stats.items() if s["allocs"] == "1" and s["failed"] == "0"]
    failer = [t for t, s in stats.items() if s["allocs"] == "0" and s["failed"] == "1"]
    check(len(holder) == 1 and len(failer) == 1, f"shared_oom: traces {stats}")
    text = report_symbols(a, cwd, traces)
    sect = text.split("failed allocations and the run's other processes:")
    check(len(sect) == 2, "shared_oom: no failure in the run section")
    m = re.search(r"rank 0 pid \d+ t_rank \S+ \S+ held (\S+ \S+) on device 0 then:\n\s+(\S+ \S+) in 1 allocation at (\S+)",
                  sect[1])
    check(m, f"shared_oom: the failure does not name the other rank's memory:\n{sect[1]}")
    check(m.group(1) == "700.00 MiB" or m.group(1).startswith("700"),
          f"shared_oom: held {m.group(1)}")
    check(m.group(3) == "hold_block", f"shared_oom: named {m.group(3)}, expected hold_block")
    fails = report_json(a, cwd, traces)["runs"][0]["failures"]
    check(len(fails) == 1 and fails[0]["rank"] == 1, f"shared_oom: JSON failures {fails}")
    check(fails[0].get("repeats") == 0, f"shared_oom: its one failure repeats none: {fails[0]}")
    held = fails[0]["held_by"]
    check(len(held) == 1 and held[0]["rank"] == 0 and held[0]["bytes"] == 700 << 20 and
          held[0]["sites"][0]["function"] == "hold_block", f"shared_oom: JSON held_by {held}")
    # the failing rank's own report: its device's use outside its recording
    # is the other rank's 700 MiB (no context reserve; the sim's rounding of
    # 700 MiB is none), its free bytes what that leaves of 1 GiB
    # (under another name: "run.vtrace", which either rank may have written,
    # brings the whole run to the report)
    shutil.copyfile(os.path.join(cwd, failer[0]), os.path.join(cwd, "failing_rank.vtrace"))
    oom = report_json(a, cwd, ["failing_rank.vtrace"])["ooms"][0]
    got = (oom["outside_recording_bytes"] - oom["rounding_bytes"], oom["device_free_bytes"])
    want = (700 << 20, 324 << 20)
    check(got == want, f"shared_oom: the failing rank's (outside the recording, free) {got}, "
          f"expected {want}")


def shared_without_ledger(a, cmd, extra):
    """Without the shared ledger each process has the whole device: no
    failure, so the failure above comes from the other rank's memory."""
    fresh(a, "noledger")
    env = base_env({k: v for k, v in extra.items() if k != "VRAMTRACE_SIM_SHARED"})
    env["LD_LIBRARY_PATH"] = a.sim
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    check("rank 1 device 0 ok=1 failed=0" in p.stdout,
          f"shared_oom: without the ledger rank 1 should fit: {p.stdout}")


def existing(a):
    """A name held by an earlier run: vramtrace run refuses before the
    program starts, --force replaces it; a plain preloaded run moves to the
    name with its pid and says so (not under VRAMTRACE_QUIET=1)."""
    cwd = fresh(a, "e")
    env = base_env({})
    vt = [a.vramtrace, "run", "--sim"]
    cmd = ["--", a.rank, "3x1"]

    def run(args, extra=None):
        e = dict(env, **(extra or {}))
        return subprocess.run(args, cwd=cwd, env=e, capture_output=True, text=True, timeout=60)

    check(run(vt + ["-o", "run.vtrace"] + cmd).returncode == 0, "e: first run failed")
    first = os.stat(os.path.join(cwd, "run.vtrace"))
    p = run(vt + ["-o", "run.vtrace"] + cmd)
    check(p.returncode == 2 and "already exists" in p.stderr and "--force" in p.stderr,
          f"e: an existing name was not refused: {p.returncode} {p.stderr}")
    check(p.stdout == "", "e: the program ran although the name was taken")
    same = os.stat(os.path.join(cwd, "run.vtrace"))
    check((same.st_ino, same.st_size, same.st_mtime_ns) ==
          (first.st_ino, first.st_size, first.st_mtime_ns), "e: the refused run touched run.vtrace")
    p = run(vt + ["--force", "-o", "run.vtrace"] + cmd)
    check(p.returncode == 0 and "vramtrace run: trace: run.vtrace" in p.stderr,
          f"e: --force did not record into run.vtrace: {p.stderr}")
    check(os.stat(os.path.join(cwd, "run.vtrace")).st_mtime_ns != first.st_mtime_ns,
          "e: --force left the old trace")
    check(os.listdir(cwd) == ["run.vtrace"], f"e: files {os.listdir(cwd)}")
    plain = dict(LD_LIBRARY_PATH=a.sim, LD_PRELOAD=a.preload, VRAMTRACE_OUTPUT="run.vtrace")
    p = run([a.rank, "3x1"], plain)
    m = re.search(r"vramtrace: run.vtrace is from an earlier run and is kept; "
                  r"this trace is (run\.\d+\.vtrace)", p.stderr)
    check(p.returncode == 0 and m, f"e: a plain run over an earlier trace: {p.stderr}")
    s = vt_check(a, os.path.join(cwd, m.group(1)))
    check(s["allocs"] == "3", f"e: {m.group(1)} holds {s['allocs']} allocations")
    p = run([a.rank, "3x1"], dict(plain, VRAMTRACE_QUIET="1"))
    check(p.returncode == 0 and p.stderr == "", f"e: quiet run printed {p.stderr!r}")
    check(len(os.listdir(cwd)) == 3, f"e: files {os.listdir(cwd)}")


def main():
    ap = argparse.ArgumentParser()
    for opt in ("vramtrace", "check", "preload", "sim", "rank", "launch", "src", "out"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("case")
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    try:
        if a.case == "existing":
            existing(a)
            print(f"procs_test {a.case}: ok")
            return 0
        cmd, extra, ntraces, each = case_command(a, a.case)
        for mode in ("o", "d"):
            cwd, traces, stats = run_mode(a, mode, cmd, extra, ntraces, each)
            if a.case == "ranks" and mode == "o":
                check_ranks(a, cwd, traces, stats)
            if a.case == "shared_oom":
                check_shared(a, cwd, traces, stats)
        quiet_mode(a, cmd, extra)
        if a.case == "shared_oom":
            shared_without_ledger(a, cmd, extra)
    except Fail as e:
        print(f"procs_test {a.case}: FAIL: {e}", file=sys.stderr)
        return 1
    print(f"procs_test {a.case}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
