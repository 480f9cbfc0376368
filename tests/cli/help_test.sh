#!/usr/bin/env bash
# help_test.sh VRAMTRACE: every option each command's --help names is one
# its parser takes (both come from cli/'s tables), every output option of
# the main usage is in the command's --help, and the checker itself fails
# on an option the parser does not know.
set -u
VT=$1
. "$(dirname "$0")/../lib.sh"

# taken CMD OPTION: the parser of CMD accepts OPTION (given an argument
# when --help shows one); no operands, so nothing runs or is read.
taken() {
    local cmd=$1 opt=$2 arg=$3
    if [ -n "$arg" ]; then "$VT" "$cmd" "$opt" 1 >"$T/o" 2>"$T/e" </dev/null
    else "$VT" "$cmd" "$opt" >"$T/o" 2>"$T/e" </dev/null; fi
    ! grep -Eq "unrecognized option|invalid option|requires an argument" "$T/e"
}

for cmd in run report diff check; do
    "$VT" "$cmd" --help >"$T/help" || fail "$cmd --help exits non-zero"
    # "  --name ARG", "  -x, --name ARG", "  --name[=ARG]"
    grep -Eo '^  (-[a-z], )?--[a-z-]+(\[=[A-Z]+\]| [A-Z]+)?' "$T/help" >"$T/opts"
    n=$(wc -l <"$T/opts")
    [ "$n" -ge 3 ] || fail "$cmd --help lists $n options"
    while read -r line; do
        long=$(grep -Eo -- '--[a-z-]+' <<<"$line")
        arg=$(grep -Eo -- ' [A-Z]+$' <<<"$line" || true)
        [ "$long" = "--help" ] && continue
        taken "$cmd" "$long" "$arg" || fail "$cmd: --help lists $long but the parser refuses it: $(head -c 200 "$T/e")"
        short=$(grep -Eo -- '^  -[a-z],' <<<"$line" | tr -d ' ,' || true)
        if [ -n "$short" ]; then taken "$cmd" "$short" "$arg" || fail "$cmd: $short refused"; fi
    done <"$T/opts"
    # the checker can fail: an option no table has
    taken "$cmd" --no-such-option "" && fail "$cmd: --no-such-option was taken"
    # getopt's own message carries the command's prefix, as the others do
    grep -q "^vramtrace $cmd: unrecognized option" "$T/e" ||
        fail "$cmd: getopt's message lacks 'vramtrace $cmd:': $(head -c 200 "$T/e")"
done

# The main usage's output options of report and diff are in their --help.
"$VT" --help >"$T/main"
for cmd in report diff; do
    "$VT" "$cmd" --help >"$T/help"
    for o in $(grep -E "^  $cmd " "$T/main" | grep -Eo -- '--[a-z-]+ F' | cut -d' ' -f1); do
        grep -q -- "^  $o FILE" "$T/help" || fail "main usage shows $cmd $o, $cmd --help does not"
    done
done
grep -q -- "--memory-viz F" "$T/main" || fail "the main usage lacks report's --memory-viz"

[ "$fails" -eq 0 ] && echo "help: ok"
exit $((fails > 0))
