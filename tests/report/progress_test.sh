#!/usr/bin/env bash
# progress_test.sh VRAMTRACE VT_GEN: the replay's progress bar on stderr.
# On a pseudo-terminal (util-linux script) the bar appears, is redrawn as the
# percentage grows, and is wiped at the end (the report's first line starts
# at column 0, not after the bar); without a terminal no progress text at
# all. A 15M-event trace runs with the real 2 s delay (whether the bar shows
# then depends on the machine's speed: only a clean end is asserted) and
# with VRAMTRACE_PROGRESS_AFTER_MS=1, where it must show.
set -u
VT=$1
GEN=$2
. "$(dirname "$0")/../lib.sh"

"$GEN" big 15000000 "$T/big.vtrace" || fail "generate the big trace"
"$GEN" basic "$T/basic.vtrace" || fail "generate basic"

# tty OUT ENV... : vramtrace report on a pseudo-terminal, everything it
# writes (stdout and stderr) captured in OUT.
tty() {
    local out=$1
    shift
    env "$@" script -qec "'$VT' report --top 1 '$T/big.vtrace'; echo \"rc=\$?\"" /dev/null \
        </dev/null >"$out" 2>&1
}

# The bar must be wiped before the report: the output, split at carriage
# returns, has no chunk where "replaying [" and the report's first line meet.
clean_end() { # clean_end FILE WHAT
    grep -q 'rc=0' "$1" || fail "$2: report failed: $(tail -c 300 "$1")"
    tr '\r' '\n' <"$1" | grep -q '^== vramtrace report' || fail "$2: report not at column 0"
    tr '\r' '\n' <"$1" | grep -q 'replaying \[.*== vramtrace' && fail "$2: bar and report on one line"
    # the last bar is followed by a line of spaces and a carriage return
    if grep -q 'replaying \[' "$1"; then
        tail=$(tr '\r' '\n' <"$1" | grep -n 'replaying \[' | tail -1 | cut -d: -f1)
        next=$(tr '\r' '\n' <"$1" | sed -n "$((tail + 1))p")
        [ -n "$next" ] && [ -z "${next// /}" ] || fail "$2: last bar not wiped: '$next'"
    fi
}

tty "$T/fast.out" VRAMTRACE_PROGRESS_AFTER_MS=1
grep -q 'replaying \[' "$T/fast.out" || fail "no progress bar on a terminal"
n=$(tr '\r' '\n' <"$T/fast.out" | grep -c 'replaying \[')
[ "$n" -ge 5 ] || fail "the bar was drawn $n times, expected it to follow the replay"
[ "$n" -le 101 ] || fail "the bar was drawn $n times: redrawn without a change"
clean_end "$T/fast.out" "progress after 1 ms"

tty "$T/default.out"
clean_end "$T/default.out" "default delay"

# A small file ends before the delay: no bar at all.
env script -qec "'$VT' report -q '$T/basic.vtrace'" /dev/null </dev/null >"$T/small.out" 2>&1
grep -q 'replaying' "$T/small.out" && fail "a bar for a file that takes no time"

# Not a terminal: nothing on stderr.
VRAMTRACE_PROGRESS_AFTER_MS=1 "$VT" report -q "$T/big.vtrace" 2>"$T/pipe.err" | cat >/dev/null
[ -s "$T/pipe.err" ] && fail "stderr not a terminal, yet: $(head -c 200 "$T/pipe.err")"

[ $fails -eq 0 ] && echo "progress bar: shown on a terminal, wiped at the end, silent on a pipe"
exit $((fails > 0))
