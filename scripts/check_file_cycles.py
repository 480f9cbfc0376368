#!/usr/bin/env python3
"""Fail on circles of source files that call each other (docs/architecture.md, "No circles").

    scripts/check_file_cycles.py BUILD_DIR [--source DIR] [--skip PATH]... [--unused]

Reads BUILD_DIR/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS, on in the top-level
CMakeLists.txt) and, for each target (the objects under one CMakeFiles/<target>.dir), builds the
graph "file A uses a global symbol that file B of the same target defines" from `nm -P` of the
objects: functions and data (T, D, B, R, ...) count; static (local) symbols never do; a strong
definition wins over a weak one, as at link time. Tarjan's algorithm finds the strongly connected
components; each one of more than one file is a circle. For each it prints the files, one
concrete cycle, and every edge inside it with one witness symbol (the first by name).

Files are named by their path relative to the source directory (a generated source, relative
to the build directory). --skip PATH leaves that file, or every file under that folder, out of
the graph (one whose circle is still being removed); every other file is checked. What the
ctest skips is one CMake list, VRAMTRACE_CYCLES_PENDING (tests/repo/CMakeLists.txt).

--unused also prints, per target, the global (strong) functions and data defined in it that no
object of the whole build uses (candidates for dead code: the CUDA entry points a library exports
are among them by design, so this is a list to read, and it never changes the exit status).

Exit 0 no circle, 1 at least one circle, 2 bad arguments or unreadable build (no compile
database, nm failed). Python 3.9+ standard library and binutils' nm only.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

# nm's type letters (binutils nm(1)): defined globals, and uses.
DEFINED = set("TDBRGSCVWiu")
WEAK = set("VW")
UNDEFINED = set("Uwv")
TARGET_DIR = re.compile(r"(?:^|/)CMakeFiles/([^/]+)\.dir/")


def fail(msg):
    print(f"check_file_cycles: {msg}", file=sys.stderr)
    sys.exit(2)


def source_dir_of(build):
    """The source directory recorded in BUILD/CMakeCache.txt (CMAKE_HOME_DIRECTORY)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def relative_name(path, source, build):
    """The file's name from the source root (or 'build:' + its name from the build root)."""
    path = os.path.realpath(path)
    for root, prefix in ((build, "build:"), (source, "")):
        root = os.path.realpath(root)
        if path.startswith(root + os.sep):
            return prefix + os.path.relpath(path, root)
    return path


def skipped(name, skip):
    """Whether file `name` ('sim/driver.c', 'build:sim/x.c') is, or is under, a path of skip."""
    name = name.split(":", 1)[-1]
    return any(name == p or name.startswith(p.rstrip("/") + "/") for p in skip)


def output_of(entry):
    """The object a compile command writes: the word after -o (Ninja's database has no 'output')."""
    words = entry.get("arguments") or shlex.split(entry.get("command", ""))
    for opt, value in zip(words, words[1:]):
        if opt == "-o":
            return value
    return None


def targets_from(build, source):
    """{target: [(file name, object path)]} from the compile database."""
    db_path = os.path.join(build, "compile_commands.json")
    try:
        with open(db_path, encoding="utf-8") as f:
            db = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {db_path}: {e} (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)")
    targets = collections.defaultdict(list)
    for entry in db:
        out = entry.get("output") or output_of(entry)
        if out is None:
            fail(f"{db_path}: an entry for {entry.get('file')} names no object (-o)")
        obj = os.path.join(entry["directory"], out)
        m = TARGET_DIR.search(out)
        tgt = m.group(1) if m else "?"
        src = os.path.join(entry["directory"], entry["file"])
        targets[tgt].append((relative_name(src, source, build), obj))
    return targets


def symbols(obj):
    """(defined {name: weak?}, used {name}) of one object file, from `nm -P`."""
    r = subprocess.run(["nm", "-P", obj], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"nm {obj}: {r.stderr.strip() or 'failed'} (build the tree first)")
    defined, used = {}, set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in UNDEFINED:
            used.add(name)
        elif kind in DEFINED:
            defined[name] = kind in WEAK
    return defined, used


def graph_of(files):
    """Edges {a: {b: witness}} between the files [(name, defined, used)] of one target."""
    owner = {}
    for name, defined, _ in files:
        for sym, weak in defined.items():
            if sym not in owner or (owner[sym][1] and not weak):
                owner[sym] = (name, weak)
    edges = collections.defaultdict(dict)
    for name, _, used in files:
        for sym in sorted(used):
            if sym in owner and owner[sym][0] != name:
                edges[name].setdefault(owner[sym][0], sym)
    return edges


def strongly_connected(nodes, edges):
    """Tarjan's strongly connected components (iterative), those of more than one node."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def one_cycle(comp, edges):
    """A shortest cycle through the component's first file (breadth first, inside it)."""
    start, inside = comp[0], set(comp)
    parent, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(edges.get(v, {})):
            if w == start:
                path = [v]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return list(reversed(path)) + [start]
            if w in inside and w not in parent:
                parent[w] = v
                queue.append(w)
    return [start]


def report_cycles(tgt, edges, comps):
    for comp in comps:
        print(f"circle in target {tgt}: {len(comp)} files: {' '.join(comp)}")
        cycle = one_cycle(comp, edges)
        steps = [f"{a} -({edges[a][b]})-> " for a, b in zip(cycle, cycle[1:])]
        print("  cycle: " + "".join(steps) + cycle[-1])
        for a in comp:
            for b, sym in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print(f"  edge: {a} -> {b} (uses {sym})")


def report_unused(tgt, files, used_anywhere):
    for name, defined, _ in files:
        for sym, weak in sorted(defined.items()):
            if not weak and sym not in used_anywhere:
                print(f"unused in target {tgt}: {name}: {sym}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="the build directory (with compile_commands.json)")
    ap.add_argument("--source", help="the source directory (default: from CMakeCache.txt)")
    ap.add_argument("--skip", action="append", default=[], metavar="PATH",
                    help="leave this file, or this folder's files, out (repeatable)")
    ap.add_argument("--unused", action="store_true",
                    help="also list globals no object of the build uses")
    args = ap.parse_args()
    source = args.source or source_dir_of(args.build)
    if not source:
        fail(f"no --source and no CMAKE_HOME_DIRECTORY in {args.build}/CMakeCache.txt")
    targets = targets_from(args.build, source)
    per_target, used_anywhere = {}, set()
    all_objs = [obj for objs in targets.values() for _, obj in objs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        syms = dict(zip(all_objs, pool.map(symbols, all_objs)))
    for tgt, objs in sorted(targets.items()):
        files = [(name, *syms[obj]) for name, obj in sorted(objs)]
        for _, _, used in files:
            used_anywhere |= used
        per_target[tgt] = [f for f in files if not skipped(f[0], args.skip)]
    circles = 0
    for tgt, files in per_target.items():
        edges = graph_of(files)
        comps = strongly_connected([f[0] for f in files], edges)
        report_cycles(tgt, edges, comps)
        circles += len(comps)
        if args.unused:
            report_unused(tgt, files, used_anywhere)
    nfiles = sum(len(f) for f in per_target.values())
    skips = f", skipped: {' '.join(args.skip)}" if args.skip else ""
    print(f"check_file_cycles: {len(per_target)} targets, {nfiles} files, "
          f"{circles} circle(s){skips}")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
