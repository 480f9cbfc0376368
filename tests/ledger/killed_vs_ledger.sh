#!/bin/sh
# killed_vs_ledger.sh: a program killed by SIGKILL (as the out-of-memory killer
# and a notebook's restart send it; CORPUS_END=kill) right after its last CUDA
# call, so that it never closes its trace. What the preload recorded since its last flush is then only
# in the trace's spill file (trace/spill.h). Held against the sim's ledger:
#   1. the trace as the process left it does NOT match the ledger (the
#      checker sees the lost tail: the test can fail);
#   2. `vramtrace recover` appends the spill file's records and removes it,
#      and the trace then matches the ledger (check_ledger.py --devices);
#   3. a second recover finds nothing and changes nothing (and the report of
#      the trace as left names the spill file);
#   4. under `vramtrace run` the same happens by itself, and the trace gets
#      the end of process from the wait status (killed by signal 9), read
#      back from the report's JSON;
#   5. a killed grandchild (under a launcher) is recovered too, without an
#      end of process (its wait status is the launcher's to know).
#
# usage: killed_vs_ledger.sh VRAMTRACE PRELOAD SIMDIR CHECKER OUTDIR -- PROGRAM ARGS...
set -u
tool=$1 preload=$2 simdir=$3 checker=$4 outdir=$5 end=kill want_rc=137
shift 5
[ "${1:-}" = "--" ] && shift
fail() { echo "killed_vs_ledger: FAIL: $*" >&2; exit 1; }
# The spill file a trace still has, as the report names it (trace/spill.h
# is the naming rule's one definition); empty when it has none.
spill_of() {
    "$tool" report "$1" 2>/dev/null |
        sed -n 's/^  note: \(.*\) holds what the process recorded after its last flush.*/\1/p'
}
# The writer keeps its buffers in ordinary memory where /dev/shm cannot be
# written: nothing survives a SIGKILL there, so nothing is to be checked.
[ -w /dev/shm ] || { echo "killed_vs_ledger: SKIP: /dev/shm is not writable"; exit 77; }
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
cd "$outdir" || exit 1

# -- the preload alone, then vramtrace recover
env CORPUS_END="$end" VRAMTRACE_SIM_LEDGER="$PWD/ledger.jsonl" VRAMTRACE_OUTPUT="$PWD/t.vtrace" \
    LD_PRELOAD="$preload" LD_LIBRARY_PATH="$simdir" "$@" >stdout 2>stderr
rc=$?
[ $rc -eq $want_rc ] || { cat stderr >&2; fail "the program exited with $rc, not $want_rc"; }
spill=$(spill_of t.vtrace)
[ -n "$spill" ] || fail "the report of the trace as left names no spill file"
[ -f "$spill" ] || fail "no spill file $spill after the program died"
# --allow-truncated: the kill may land while the writer is part way through
# a batch (the report then exits 1 for the cut; recover cuts it off and
# appends the spill file's records, which still hold that batch).
"$tool" report t.vtrace --json before.json --quiet --allow-truncated >before.txt 2>&1 ||
    { cat before.txt >&2; fail "vramtrace report failed on the trace as left"; }
python3 "$checker" --ledger ledger.jsonl --report before.json --devices >before.check 2>&1
[ $? -eq 1 ] || { cat before.check >&2; fail "the trace as left matches the ledger: nothing was lost, the test proves nothing"; }
"$tool" recover t.vtrace 2>recover.txt || { cat recover.txt >&2; fail "vramtrace recover failed"; }
grep -q "recovered [1-9][0-9]* bytes" recover.txt || { cat recover.txt >&2; fail "recover recovered nothing"; }
[ ! -e "$spill" ] || fail "recover left $spill"
"$tool" report t.vtrace --json after.json --quiet >after.txt 2>&1 ||
    { cat after.txt >&2; fail "vramtrace report failed on the recovered trace"; }
python3 "$checker" --ledger ledger.jsonl --report after.json --devices ||
    fail "the recovered trace does not match the ledger ($outdir)"
cp t.vtrace again.vtrace.orig
"$tool" recover t.vtrace 2>again.txt || fail "a second recover failed"
grep -q "nothing to recover" again.txt || { cat again.txt >&2; fail "a second recover did not say there was nothing"; }
cmp -s t.vtrace again.vtrace.orig || fail "a second recover changed the trace"

# -- vramtrace run: recovery and the end of process by itself
rm -f run-ledger.jsonl
env CORPUS_END="$end" VRAMTRACE_SIM_LEDGER="$PWD/run-ledger.jsonl" \
    "$tool" run --sim -o run.vtrace -- "$@" >run.stdout 2>run.stderr
rc=$?
[ $rc -eq $want_rc ] || { cat run.stderr >&2; fail "vramtrace run exited with $rc, not $want_rc"; }
grep -q "recovered [1-9][0-9]* bytes.*its end added" run.stderr ||
    { cat run.stderr >&2; fail "vramtrace run did not recover the trace and add its end"; }
[ -z "$(spill_of run.vtrace)" ] || fail "vramtrace run left the spill file"
"$tool" report run.vtrace --json run.json --quiet >run.txt 2>&1 ||
    { cat run.txt >&2; fail "vramtrace report failed on run's trace"; }
python3 "$checker" --ledger run-ledger.jsonl --report run.json --devices ||
    fail "run's recovered trace does not match the ledger ($outdir)"
python3 - run.json <<'PY' || fail "the end of process in run's trace is not signal 9"
import json, sys
ex = json.load(open(sys.argv[1]))["program"]["exit"]
got = (ex or {}).get("status"), (ex or {}).get("signal")
want = (0, 9)
print(f"killed_vs_ledger: exit {ex}")
sys.exit(0 if got == want else 1)
PY
# -- a killed grandchild (a launcher's child): recovered, but its end is not
# the launcher's, so none is invented
rm -f tree-ledger.jsonl
env CORPUS_END="$end" VRAMTRACE_SIM_LEDGER="$PWD/tree-ledger.jsonl" \
    "$tool" run --sim -o tree.vtrace -- sh -c '"$@"; exit 0' sh "$@" >tree.stdout 2>tree.stderr
rc=$?
[ $rc -eq 0 ] || { cat tree.stderr >&2; fail "vramtrace run of the launcher exited with $rc"; }
grep -q "recovered [1-9][0-9]* bytes" tree.stderr ||
    { cat tree.stderr >&2; fail "vramtrace run did not recover the grandchild's trace"; }
! grep -q "its end added" tree.stderr || fail "an end was invented for the grandchild"
"$tool" report tree.vtrace --json tree.json --quiet >tree.txt 2>&1 ||
    { cat tree.txt >&2; fail "vramtrace report failed on the grandchild's trace"; }
python3 "$checker" --ledger tree-ledger.jsonl --report tree.json --devices ||
    fail "the grandchild's recovered trace does not match the ledger ($outdir)"
echo "killed_vs_ledger: ok"
