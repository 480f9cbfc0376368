#!/usr/bin/env python3
"""Write docs/scenarios.md from the scenario suite's JSON (tests/scenarios/, results/*.json).

    scripts/gen_scenarios_md.py --results build/tests/scenarios/results \
        --output docs/scenarios.md [--seeds ../shared/seeds] [--expect NAME...] \
        [--torch-results build/tests/pytorch/results]

Every number in the output comes from the results; nothing is typed by hand. With --seeds, each
quoted claim must appear verbatim (whitespace-normalised) in its seed file. With --expect, every
named scenario must have a result. With --torch-results, the rows measured with real PyTorch
(tests/pytorch/run_scenario.py --results) follow, each beside its trainer row; --expect-torch
names those that must be there. Exit 0 written, 1 a result or quote is missing or malformed,
77 --expect-torch given and no --torch-results directory (the PyTorch tests were skipped).
Python 3.9+ standard library only.
"""
import argparse
import glob
import json
import os
import re
import sys

ORDER = ["capacity_batch", "retain_history", "preload_dataset", "vary_batch_fragmentation",
         "accum_steps", "checkpoint", "fp16", "empty_cache", "no_zero_grad", "early_free",
         "gan_annotations"]


def relative_paths(text):
    """Paths of the checkout that ran the suite, as paths from the repository root
    (`/any/where/build/bin/train` -> `build/bin/train`), so the page does not depend
    on where it was generated."""
    return re.sub(r"(?<![\w.])/[^\s`]*?/(build/)", r"\1", text)


def mib(n):
    return "–" if n is None else f"{n / 1048576.0:,.1f} MiB"


def secs(t):
    if t is None:
        return "–"
    return f"{t * 1000:.1f} ms" if t < 1 else f"{t:.2f} s"


def pair(res, key, fmt):
    a = res.get("without") or {}
    b = res.get("with") or {}
    va, vb = a.get(key), b.get(key)
    if not a:
        return fmt(vb)
    return f"{fmt(va)} → {fmt(vb)}"


def verdict_cell(res):
    parts = []
    for side in ("without", "with"):
        r = res.get(side)
        if r and r.get("verdict"):
            parts.append(f"{r['verdict']} ({r['label']})")
    return "; ".join(parts) if parts else (res.get("verdict") or "–")


# "Does the seed's claim hold?" (issue 17), judged from each row's numbers by
# the rule written beside it: holds / does not hold / holds only when ... A
# claim of a large saving ("significantly", "dramatically") holds when peak
# allocated drops by at least BIG; one of growth or an OOM holds when the run
# shows it.
BIG = 0.25


def _get(r, side, key):
    return (r.get(side) or {}).get(key)


def _drop(r, key="peak_allocated_bytes"):
    a, b = _get(r, "without", key), _get(r, "with", key)
    return (a - b) / a if a and b is not None else None


def _pct(x):
    """A drop as a signed change: 0.2 -> −20%, -0.1 -> +10%."""
    n = round(x * 100)
    return f"−{n}%" if n > 0 else (f"+{-n}%" if n < 0 else "±0%")


def _holds_capacity(r):
    v = _get(r, "without", "verdict")
    if v != "capacity":
        return f"does not hold here (verdict {v})"
    return ("holds only when the activations are large: the DCGAN at 256×256 on a T4 fails "
            "(capacity); seed 004 wrote it about a 10→50→2 linear model, where batch 1024 fits "
            "(see the PyTorch row `seed004_linear_b1024`)")


def _holds_saving(r):
    d = _drop(r)
    if d is None:
        return "–"
    ta, tb = _get(r, "without", "time_per_step_s"), _get(r, "with", "time_per_step_s")
    t = f"; time per step {secs(ta)} → {secs(tb)}" if ta and tb else ""
    by_size = sorted((r.get("peak_allocated_by_size") or {}).items(), key=lambda x: int(x[0]))
    for size, (a, b) in by_size:
        t += f"; {size}×{size} memory-only: peak allocated {_pct((a - b) / a)}"
    if d >= BIG:
        return f"holds: peak allocated {_pct(d)}{t}"
    if d > 0:
        return f"holds only in part: peak allocated {_pct(d)} (not ≥ {BIG:.0%}){t}"
    return f"does not hold: peak allocated {_pct(d)}{t}"


def _holds_no_increase(r):
    d = _drop(r)
    return "–" if d is None else (f"holds: peak allocated {_pct(d)}" if d >= 0 else
                                  f"does not hold: peak allocated {_pct(d)}")


def _holds_oom_growth(r):
    v = _get(r, "without", "verdict")
    return (f"holds: OOM after {_get(r, 'without', 'steps_completed')} steps, verdict {v}"
            if v == "leak" else f"does not hold here (verdict {v})")


def _holds_preload(r):
    a, b = _get(r, "without", "peak_allocated_bytes"), _get(r, "with", "peak_allocated_bytes")
    v = _get(r, "without", "verdict")
    return (f"holds only when the dataset is large against the device: here it costs "
            f"{mib(a - b)} more and {'fails (' + v + ')' if v else 'fits'}") if a and b else "–"


def _holds_frag(r):
    v = _get(r, "without", "verdict")
    return ("holds: a failed request while live data + request fit (verdict fragmentation); "
            "--empty-cache removes it" if v == "fragmentation" and _get(r, "with", "exit") == 0
            else f"not shown here (verdict {v})")


def _holds_empty_cache(r):
    a = _get(r, "without", "reserved_between_steps_bytes")
    b = _get(r, "with", "reserved_between_steps_bytes")
    if a is None or b is None:
        return "–"
    word = "holds" if b < a else "does not hold"
    return (f"{word}: reserved between steps {mib(a)} → {mib(b)}; peak reserved "
            f"{mib(_get(r, 'without', 'peak_reserved_bytes'))} → "
            f"{mib(_get(r, 'with', 'peak_reserved_bytes'))}, cudaMalloc calls "
            f"{_get(r, 'without', 'cudamalloc_calls')} → {_get(r, 'with', 'cudamalloc_calls')}")


def _holds_growth(r):
    g = _get(r, "with", "growth_bytes_per_iteration")
    return (f"does not hold: no growth (gradients accumulate in place), peak allocated "
            f"{_pct(_drop(r))}" if not g else f"holds: {mib(g)} per step")


def _holds_reclaim(r):
    d = _drop(r)
    return "–" if d is None else (
        f"does not hold: peak allocated {_pct(d)}, peak reserved "
        f"{_pct(_drop(r, 'peak_reserved_bytes'))}"
        if d < BIG else f"holds: peak allocated {_pct(d)}")


def _holds_caching(r):
    a, b = _get(r, "with", "peak_allocated_bytes"), _get(r, "with", "peak_reserved_bytes")
    return (f"holds: {mib(b - a)} reserved beyond the peak allocated" if a and b and b > a
            else "–")


HOLDS = {"capacity_batch": _holds_capacity, "retain_history": _holds_oom_growth,
         "preload_dataset": _holds_preload, "vary_batch_fragmentation": _holds_frag,
         "accum_steps": _holds_no_increase, "checkpoint": _holds_saving, "fp16": _holds_saving,
         "empty_cache": _holds_empty_cache, "no_zero_grad": _holds_growth,
         "early_free": _holds_reclaim, "gan_annotations": _holds_caching}


def _torch_holds(t):
    """The claim's verdict for a row measured with real PyTorch (tests/pytorch)."""
    n, v = t["name"], t.get("verdict")
    line = t.get("growth_line")
    if n == "seed004_linear_b1024":
        return (f"does not hold for the seed's own model: batch 1024 completes, PyTorch's peak "
                f"allocated {kib(t['torch_allocated_peak'])} in one "
                f"{mib(t['peak_reserved_bytes'])} segment" if t["exit"] == 0
                else f"holds (exit {t['exit']}, verdict {v})")
    if n == "dcgan_256_b1024_oom":
        return (f"holds for the DCGAN at 256×256 on a T4: OOM, verdict {v}" if v
                else "does not hold: it fits")
    if n == "retained_list":
        return (f"holds: OOM, verdict {v}, {mib(t['growth_bytes_per_iteration'])} more per "
                f"step; per segment the growing site is {line} (the call that found the cache "
                f"full)" if v == "leak" else f"not shown (verdict {v})")
    if n == "retained_list_tensors":
        return (f"holds: the growing site, {mib(t['growth_bytes_per_iteration'])} per step, "
                f"is {line}, the line that appends" if line else "no growing site")
    if n == "preload_dataset":
        return (f"holds only when the dataset is large against the device: on "
                f"{t['environment'].split()[0].split('=')[1]} the preload fails (verdict {v})"
                if v else "does not hold here: it fits")
    if n == "vary_shapes":
        return (f"holds: PyTorch reports {t['torch_unallocated']} reserved but unallocated "
                f"at a {mib(t['requested_bytes'])} request; vramtrace's verdict is **{v}** "
                f"(it sees PyTorch's segments, not the blocks inside them)"
                if t.get("torch_unallocated") else f"not shown (verdict {v})")
    if n == "vary_shapes_tensors":
        pool = t.get("pool") or {}
        at = t.get("torch_at_oom") or {}
        return (f"holds: verdict **fragmentation**: the cudaMallocAsync pool holds "
                f"{mib(pool.get('reserved_bytes'))} of which {mib(pool.get('used_bytes'))} are "
                f"in use (PyTorch's memory_stats there: {mib(at.get('reserved_bytes.all.current'))}"
                f" / {mib(at.get('allocated_bytes.all.current'))}), so "
                f"{mib(pool.get('free_reserve_bytes'))} of free reserve, but no hole takes the "
                f"{mib(t['requested_bytes'])} request"
                if v == "fragmentation" else f"not shown (verdict {v})")
    if n == "vary_shapes_expandable":
        return ("expandable_segments:True removes it: the run completes" if t["exit"] == 0
                else f"the remedy fails (exit {t['exit']})")
    if n == "empty_cache":
        return (f"holds: {t['frees']} segments released with cudaFree" if t["frees"]
                else "does not hold: nothing released")
    return "–"


def kib(n):
    return "–" if n is None else f"{n / 1024.0:,.1f} KiB"


def render_torch(torch, names, w):
    """The rows measured with real PyTorch, each beside its trainer row."""
    row = {n: i for i, n in enumerate(names, 1)}
    order = sorted(torch.values(), key=lambda t: (row.get(t["beside"], 99), t["name"]))
    w("")
    w("## Measured with real PyTorch")
    w("")
    w("The same claims measured with PyTorch's own CUDA build (its caching allocator) on the "
      "simulated T4 (`ctest -L pytorch`, `tests/pytorch/`; PyTorch "
      f"{order[0].get('torch') if order else '–'}). No kernel runs: the scripts allocate with "
      "`torch.empty` in a training step's order. Peaks read *vramtrace / PyTorch* "
      "(`memory_stats()`'s `allocated_bytes.all.peak`, `reserved_bytes.all.peak`); with the "
      "default allocator vramtrace sees PyTorch's segments, so its peak allocated is the "
      "segments' bytes; with `--torch-tensors` (backend:cudaMallocAsync) it sees each tensor.")
    w("")
    w("| # | seed | claim (quoted) | beside row | script (environment) | peak allocated | "
      "peak reserved | cudaMalloc calls | vramtrace verdict | does the seed's claim hold? | "
      "test |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, t in enumerate(order, 1):
        w("| " + " | ".join(md_escape(x) for x in (
            f"P{i}", t["seed"]["file"], "“" + t["seed"]["claim"] + "”",
            f"{row.get(t['beside'], '–')} ({t['beside']})",
            f"**torch_{t['name']}**: `{t['script']}`" + (f" ({t['environment']})"
                                                         if t["environment"] else ""),
            f"{mib(t['peak_allocated_bytes'])} / {mib(t['torch_allocated_peak'])}",
            f"{mib(t['peak_reserved_bytes'])} / {mib(t['torch_reserved_peak'])}",
            t["cudamalloc_calls"], t.get("verdict") or "no OOM", _torch_holds(t),
            "pass" if t["passed"] else "**FAIL**")) + " |")


def holds_cell(r):
    f = HOLDS.get(r["name"])
    return f(r) if f else "–"


def md_escape(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def load_torch(results_dir):
    """tests/pytorch/run_scenario.py --results NAME.json files, by name."""
    out = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path) as f:
            t = json.load(f)
        for k in ("name", "seed", "beside", "script", "exit", "passed", "peak_reserved_bytes"):
            if k not in t:
                raise ValueError(f"{path}: no '{k}'")
        out[t["name"]] = t
    return out


def load(results_dir):
    out = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path) as f:
            r = json.load(f)
        for k in ("name", "seed", "question", "with", "checks", "passed"):
            if k not in r:
                raise ValueError(f"{path}: no '{k}'")
        out[r["name"]] = r
    return out


def check_quotes(results, seeds_dir):
    bad = []
    norm = lambda s: re.sub(r"\s+", " ", s).strip()
    for r in results.values():
        path = os.path.join(seeds_dir, r["seed"]["file"])
        try:
            with open(path, encoding="utf-8") as f:
                text = norm(f.read())
        except OSError as e:
            bad.append(f"{r['name']}: {e}")
            continue
        if norm(r["seed"]["claim"]) not in text:
            bad.append(f"{r['name']}: quote not found in {r['seed']['file']}")
    return bad


def render(results, torch=None):
    names = [n for n in ORDER if n in results] + sorted(n for n in results if n not in ORDER)
    out = []
    w = out.append
    w("# Scenarios: what the seeds' remedies really do to device memory")
    w("")
    w("Generated by `scripts/gen_scenarios_md.py` from the JSON written by the scenario suite "
      "(`ctest -L scenarios`, `tests/scenarios/scenarios.py`); do not edit by hand. Each row is "
      "one claim of a seed document (the user questions in `seeds/`), reproduced with the DCGAN "
      "trainer (`build/bin/train`) recorded by vramtrace on the simulated device. Cells read "
      "*without → with* the flag or remedy named in the row; the numbers are vramtrace's "
      "(`totals.peak_allocated_bytes`, `totals.peak_reserved_bytes`, `totals.allocations` = "
      "successful cudaMalloc calls, median duration of the `train_step` NVTX ranges). "
      "*Does the seed's claim hold?* is judged from the row's numbers by the rule in "
      "`scripts/gen_scenarios_md.py` (`HOLDS`): a claimed large saving (“significantly”, "
      f"“dramatically”) holds when peak allocated drops by at least {BIG:.0%}; a claimed OOM "
      "or growth holds when the run shows it.")
    w("")
    w("Time per step: runs marked *memory-only* replay every allocation and free but skip the "
      "arithmetic, so their time is bookkeeping only; the checkpointing row uses real arithmetic "
      "(CPU backend). Times are measured on a shared 2-core CI machine and recorded, never "
      "asserted.")
    w("")
    w("Data: every row trains on `--synthetic` images. Each claim here is about memory or time "
      "per step, which the pixel values cannot change: `scenario_synthetic_data_is_sound` runs "
      "the same real training on Debian's Fashion-MNIST and on synthetic data and requires the "
      "same allocations, frees and peaks from both reports.")
    w("")
    w("| # | seed | claim (quoted) | runs (without → with) | peak allocated | peak reserved | "
      "cudaMalloc calls | time per step | vramtrace verdict | does the seed's claim hold? | "
      "suite |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, n in enumerate(names, 1):
        r = results[n]
        a, b = r.get("without"), r.get("with") or {}
        runs = f"{a['label']} → {b.get('label')}" if a else b.get("label", "")
        w("| " + " | ".join(md_escape(x) for x in (
            i,
            r["seed"]["file"],
            "“" + r["seed"]["claim"] + "”",
            f"**{n}**: {runs}",
            pair(r, "peak_allocated_bytes", mib),
            pair(r, "peak_reserved_bytes", mib),
            pair(r, "cudamalloc_calls", lambda v: "–" if v is None else str(v)),
            pair(r, "time_per_step_s", secs),
            verdict_cell(r),
            holds_cell(r),
            "pass" if r["passed"] else "**FAIL**",
        )) + " |")
    if torch:
        render_torch(torch, names, w)
    w("")
    w("## Details")
    for n in names:
        r = results[n]
        w("")
        w(f"### {n}")
        w("")
        w(f"{r['question']}  ")
        w(f"Seed `{r['seed']['file']}`: “{r['seed']['claim']}”")
        w("")
        for side in ("without", "with"):
            run = r.get(side)
            if not run:
                continue
            mode = "memory-only" if "--memory-only" in run["train_args"] else "real arithmetic"
            w(f"* {side}: **{run['label']}** — `train {' '.join(run['train_args'])}` "
              f"({run['environment']}, {mode}): exit {run['exit']}, peak allocated "
              f"{mib(run['peak_allocated_bytes'])}, peak reserved {mib(run['peak_reserved_bytes'])}, "
              f"{run['cudamalloc_calls']} cudaMalloc, {run['failed_allocations']} failed, "
              f"reserved after the last step {mib(run.get('reserved_between_steps_bytes'))}, "
              f"{run['steps_completed']} complete steps, {secs(run['time_per_step_s'])}/step"
              + (f", OOM in train_step {run['oom_iteration']}: verdict **{run['verdict']}** — "
                 f"{md_escape(run['oom']['explanation'])}" if run.get("oom") else ""))
        if r.get("notes"):
            w(f"* notes: {md_escape(r['notes'])}")
        failed = [c["what"] for c in r["checks"] if not c["ok"]]
        w(f"* expectations: {sum(c['ok'] for c in r['checks'])} of {len(r['checks'])} hold"
          + ("; failing:" if failed else ""))
        for f in failed:
            w(f"  * {md_escape(f)}")
    w("")
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--seeds")
    ap.add_argument("--expect", nargs="*", default=[])
    ap.add_argument("--torch-results", help="tests/pytorch results: a second table")
    ap.add_argument("--expect-torch", nargs="*", default=[],
                    help="names that must have a --torch-results result")
    o = ap.parse_args(argv)
    if o.expect_torch and not os.path.isdir(o.torch_results or ""):
        print(f"gen_scenarios_md: no {o.torch_results} (PyTorch tests skipped)", file=sys.stderr)
        return 77
    try:
        results = load(o.results)
        torch = load_torch(o.torch_results) if o.torch_results else {}
    except (OSError, ValueError) as e:
        print(f"gen_scenarios_md: {e}", file=sys.stderr)
        return 1
    missing = [n for n in o.expect if n not in results]
    problems = [f"no result for scenario {n}" for n in missing]
    problems += [f"no PyTorch result for {n}" for n in o.expect_torch if n not in torch]
    if o.seeds:
        problems += check_quotes(results, o.seeds) + check_quotes(torch, o.seeds)
    if not results:
        problems.append(f"no results in {o.results}")
    for p in problems:
        print(f"gen_scenarios_md: {p}", file=sys.stderr)
    if problems:
        return 1
    with open(o.output, "w", encoding="utf-8") as f:
        f.write(relative_paths(render(results, torch)))
    print(f"gen_scenarios_md: {len(results)} scenarios -> {o.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
