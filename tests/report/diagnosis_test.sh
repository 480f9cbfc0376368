#!/bin/sh
# diagnosis_test.sh VRAMTRACE TRAIN README: the preload's OOM diagnosis of
# the README's quick start (interpose/diagnose.c): one block for the fatal
# failure (not one per retried attempt), at most 12 lines, the request and
# every site named as function (file:line), the request's as the report
# names that line; its size is the report's fatal failure's. The checker is also shown rejecting the old output (one block
# per attempt, sites as train+0x1dcbc).
set -eu
VT=$1
TRAIN=$2
README=$3
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# The quick start's program arguments, as the README gives them.
args=$(sed -n 's|^ *build/bin/train \(--memory-only .*--steps [0-9]*\)$|\1|p' "$README" | head -1)
[ -n "$args" ] || fail "no quick start command in $README"
"$VT" run --sim=t4 -o "$D/oom.vtrace" -- "$TRAIN" $args >"$D/out" 2>&1 && fail "no OOM"
"$VT" report "$D/oom.vtrace" --json "$D/oom.json" >/dev/null
fatal=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1])); o = [x for x in r["ooms"] if x.get("fatal")] or r["ooms"][-1:]
print(o[0]["requested_bytes"])' "$D/oom.json")

# check FILE: the diagnosis block of a stderr
check() {
    python3 - "$1" "$fatal" "$D/oom.json" <<'EOF'
import json, os, re, sys
lines = open(sys.argv[1]).read().splitlines()
fatal = int(sys.argv[2])
heads = [i for i, l in enumerate(lines) if re.match(r"vramtrace: (OUT OF MEMORY: )?\S+ of .* failed", l)]
if len(heads) != 1:
    sys.exit(f"{len(heads)} diagnosis blocks, want 1")
block = [lines[heads[0]]]
for l in lines[heads[0] + 1:]:
    if not l.startswith("vramtrace:   "):
        break
    block.append(l)
if len(block) > 12:
    sys.exit(f"{len(block)} lines, want at most 12")
size = re.search(r" of ([0-9.]+) (MiB|GiB) failed", block[0])
units = {"MiB": 1 << 20, "GiB": 1 << 30}
if not size or abs(float(size.group(1)) * units[size.group(2)] - fatal) > 0.05 * fatal:
    sys.exit(f"not the fatal failure's size ({fatal}): {block[0]}")
sites = [l for l in block if re.match(r"vramtrace:   (requested at|\d+\. )", l)]
named = re.compile(r"(at|allocations? at) \w+ \([\w.-]+\.c:\d+\)")
bad = [l for l in sites if not named.search(l)]
if not sites or bad:
    sys.exit(f"sites not named as function (file:line): {bad or 'none'}")
# the request's site names a line with the function the report names there
# (an inlined function's line with that function, not the one it was
# inlined into: "bn_block_forward (nets.c:167)", the report's frame)
rep = json.load(open(sys.argv[3]))
o = ([x for x in rep["ooms"] if x.get("fatal")] or rep["ooms"][-1:])[0]
at = {(os.path.basename(f["file"]), f["line"]): f["function"] for f in o["stack"]}
req = re.search(r"requested at (\w+) \(([\w.-]+):(\d+)\)", "\n".join(block))
if not req or at.get((req.group(2), int(req.group(3)))) != req.group(1):
    sys.exit(f"the request's site {req and req.group(0)}: the report names "
             f"{req and at.get((req.group(2), int(req.group(3))))} there")
print(f"diagnosis: ok: {len(block)} lines, {len(sites)} sites")
print("\n".join(block))
EOF
}
check "$D/out" || fail "the quick start's diagnosis: $(grep '^vramtrace' "$D/out" | head -20)"

# The old output (6 blocks of 7 lines, sites as module+offset) is rejected.
for size in 1.0 2.0 4.0 4.0 4.0 4.0; do
    printf 'vramtrace: cudaMalloc of %s GiB failed with error 2 on device 0\n' "$size"
    printf 'vramtrace:   device free 1.9 GiB of 15.0 GiB total\n'
    printf 'vramtrace:   1. 4.1 GiB in 2 allocations at train+0x1dcbc\n'
done >"$D/old"
if check "$D/old" >/dev/null 2>&1; then fail "the checker accepted the old output"; fi
head -3 "$D/old" | sed -n 1p >"$D/one" && printf 'vramtrace:   1. 4.1 GiB in 2 allocations at train+0x1dcbc\n' >>"$D/one"
if check "$D/one" >/dev/null 2>&1; then fail "the checker accepted unnamed sites"; fi
echo "diagnosis: ok"
