#!/bin/sh
# run_py.sh: record a Python script under the preload on the simulated
# device, render text, JSON, HTML, folded and Chrome, and check the Python
# frames with check_pyframes.py; the report's accounting is also held against
# the sim's own ledger (tests/ledger/report_vs_ledger.sh). In check arguments @TAG stands for the line
# the script printed as "site: TAG LINE" (the script finds its own lines).
# VT_REPORT_ARGS: extra options for vramtrace report (e.g. --native).
# usage: run_py.sh VRAMTRACE PRELOAD SIMDIR OUTDIR PYTHON SCRIPT [ARG...] -- CHECK-ARG...
set -u
tool=$1 preload=$2 simdir=$3 out=$4 py=$5 script=$6
shift 6
here=$(dirname "$0")
rm -rf "$out" && mkdir -p "$out" || exit 2
args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do args="$args $1"; shift; done
[ $# -gt 0 ] && shift
# shellcheck disable=SC2086
VRAMTRACE_SIM_LEDGER="$out/ledger" VRAMTRACE_OUTPUT="$out/t.vtrace" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$simdir" \
    "$py" "$script" $args >"$out/stdout" 2>"$out/stderr" ||
    { cat "$out/stdout" "$out/stderr"; echo "FAIL: $script failed under the preload"; exit 1; }
# shellcheck disable=SC2086
"$tool" report ${VT_REPORT_ARGS:-} "$out/t.vtrace" --json "$out/r.json" --html "$out/r.html" \
    --folded "$out/r.folded" --chrome "$out/r.chrome.json" >"$out/report.txt" ||
    { echo "FAIL: vramtrace report failed"; exit 1; }
sed -n '/^-- Leaks/,/^-- Growth/p' "$out/report.txt"
cat "$out/r.folded"
sed -n 's/^site: \([A-Z_]*\) \([0-9]*\)$/s|@\1|\2|g/p' "$out/stdout" >"$out/lines.sed"
checks=""
for a in "$@"; do
    a=$(printf '%s' "$a" | sed -f "$out/lines.sed")
    case $a in
    *@*) echo "FAIL: the script printed no line for $a"; exit 1 ;;
    esac
    checks="$checks $a"
done
# shellcheck disable=SC2086
python3 "$here/check_pyframes.py" --json "$out/r.json" --html "$out/r.html" \
    --folded "$out/r.folded" --chrome "$out/r.chrome.json" --script "$script" $checks || exit 1
"$here/../../ledger/report_vs_ledger.sh" "$tool" "$out/t.vtrace" "$out/ledger" "$out/acct.json"
