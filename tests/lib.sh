# tests/lib.sh: the preamble the shell tests share, sourced after they read
# their arguments: `set -u`, a scratch folder $T (/tmp/vt<test>.XXXXXX)
# removed at exit, failures counted in $fails (fail MESSAGE prints
# "FAIL: MESSAGE"), and contains FILE PATTERN (a failure when FILE lacks the
# grep pattern; binary files read as text). Each test ends with its own
# summary and `exit $((fails > 0))`.
set -u
T=$(mktemp -d "/tmp/vt$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
contains() { grep -aq -- "$2" "$1" || fail "$1 lacks '$2'"; }
