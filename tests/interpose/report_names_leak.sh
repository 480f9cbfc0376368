#!/bin/sh
# report_names_leak.sh: the trace of t_leak, rendered by `vramtrace report`,
# names the leaking function with its file:line.
# usage: report_names_leak.sh VRAMTRACE PRELOAD SIMDIR OUTDIR T_LEAK
set -u
tool=$1 preload=$2 simdir=$3 outdir=$4 prog=$5
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
VRAMTRACE_SIM_LEDGER="$outdir/ledger.jsonl" \
    VRAMTRACE_OUTPUT="$outdir/trace.vtrace" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$simdir" \
    "$prog" >"$outdir/stdout" || { echo "FAIL: t_leak failed" >&2; exit 1; }
site=$(sed -n 's/^leak_site: //p' "$outdir/stdout" | head -n 1)
func=${site% *}
fileline=${site#* }
"$tool" report "$outdir/trace.vtrace" >"$outdir/report.txt" 2>&1 ||
    { cat "$outdir/report.txt" >&2; echo "FAIL: vramtrace report failed" >&2; exit 1; }
cat "$outdir/report.txt"
grep -q "$func" "$outdir/report.txt" || { echo "FAIL: $func not in the report" >&2; exit 1; }
grep -q "$fileline" "$outdir/report.txt" || { echo "FAIL: $fileline not in the report" >&2; exit 1; }
sh "$(dirname "$0")/../ledger/report_vs_ledger.sh" "$tool" "$outdir/trace.vtrace" \
    "$outdir/ledger.jsonl" "$outdir/report.json" ||
    { echo "FAIL: the report does not match the sim's ledger" >&2; exit 1; }
echo "report_names_leak: ok ($func at $fileline)"
