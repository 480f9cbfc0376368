#!/bin/sh
# report_vs_ledger.sh: render TRACE with `vramtrace report --json` and hold its
# "accounting" section against the sim's LEDGER (check_ledger.py). For the
# integration tests whose own expectations come first: a report without
# "accounting" (a build before contract B) or a run without a ledger (not on
# the sim) is skipped with a note; a mismatch fails (exit 1).
#
# usage: report_vs_ledger.sh VRAMTRACE TRACE LEDGER OUTJSON [--pid P]
set -u
tool=$1 trace=$2 ledger=$3 json=$4
shift 4
checker=$(dirname "$0")/check_ledger.py
if [ ! -s "$ledger" ]; then
    echo "report_vs_ledger: no sim ledger at $ledger, not checked"
    exit 0
fi
"$tool" report "$trace" --json "$json" --quiet >"$json.txt" 2>&1 ||
    { cat "$json.txt" >&2; echo "report_vs_ledger: FAIL: vramtrace report failed" >&2; exit 1; }
if ! grep -q '"accounting"' "$json"; then
    echo "report_vs_ledger: the report has no accounting section, not checked"
    exit 0
fi
python3 "$checker" --ledger "$ledger" --report "$json" "$@"
