#!/usr/bin/env bash
# sizes_test.sh VRAMTRACE VT_GEN DEVICE_QUERY SIMDIR: one size grammar
# (size/vsize.h) everywhere: the simulated device's VRAMTRACE_SIM_MEMORY
# and `vramtrace check --max-peak` accept and refuse the same strings, and
# the sim's capacity is the bytes the grammar says (computed here apart).
set -u
VT=$1 GEN=$2 QUERY=$3 SIMDIR=$4
. "$(dirname "$0")/../lib.sh"

"$GEN" basic "$T/basic.vtrace" || fail "generate"
# The device's memory when VRAMTRACE_SIM_MEMORY=$1 (T4 profile: 15360 MiB).
sim_mem() {
    VRAMTRACE_SIM_MEMORY=$1 VRAMTRACE_SIM_DEVICE=t4 LD_LIBRARY_PATH=$SIMDIR "$QUERY" \
        2>"$T/sim.err" | sed -n 's/^device 0 .* mem \([0-9]*\)$/\1/p'
}
profile=$((15360 << 20))

# size, its bytes by arithmetic (no parser of the project involved)
while IFS="|" read -r s want; do
    got=$(sim_mem "$s")
    [ "$got" = "$want" ] || fail "sim: VRAMTRACE_SIM_MEMORY=$s gives $got bytes, want $want"
    grep -q ignoring "$T/sim.err" && fail "sim: '$s' refused: $(cat "$T/sim.err")"
    "$VT" check "$T/basic.vtrace" --max-peak "$s" >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -le 1 ] || fail "check: --max-peak '$s' refused (exit $rc): $(cat "$T/err")"
done <<EOF2
1.5GiB|$((3 << 29))
16g|$((16 << 30))
512MiB|$((512 << 20))
512 MiB|$((512 << 20))
3000MB|3000000000
0.75T|$((3 << 38))
2147483648|2147483648
EOF2

for s in 1.5 2.5B garbage 1e3 -1GiB 1XB; do
    got=$(sim_mem "$s")
    [ "$got" = "$profile" ] || fail "sim: VRAMTRACE_SIM_MEMORY=$s gives $got, want the profile's $profile"
    grep -q "ignoring VRAMTRACE_SIM_MEMORY='$s'" "$T/sim.err" || fail "sim: '$s' not refused aloud"
    "$VT" check "$T/basic.vtrace" --max-peak "$s" >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "check: --max-peak '$s' exits $rc, want 2"
    grep -q "bad size '$s'" "$T/err" || fail "check: no reason for '$s': $(cat "$T/err")"
done

# The checker can fail: a capacity it did not ask for is noticed.
[ "$(sim_mem 1GiB)" != "$((1 << 31))" ] || fail "sim_mem cannot tell 1 GiB from 2 GiB"

[ "$fails" -eq 0 ] && echo "sizes: ok"
exit $((fails > 0))
