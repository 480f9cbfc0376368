#!/bin/sh
# sanitize.sh SRC BUILD SANITIZER "TARGETS" REGEX: configure BUILD with
# -DVRAMTRACE_SANITIZE=SANITIZER, build TARGETS, run the ctest tests matching
# REGEX there. Any sanitizer report fails the test (halt_on_error, LSan on).
set -u
src=$1 build=$2 san=$3 targets=$4 regex=$5
start=$(date +%s)
cmake -S "$src" -B "$build" -G Ninja -DVRAMTRACE_SANITIZE="$san" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" --target $targets >"$build.build.log" 2>&1 || {
    tail -50 "$build.build.log"
    exit 1
}
built=$(date +%s)
# The programs' own fatal signals are the preload's business (as without a
# sanitizer): ASan leaves SIGSEGV/SIGBUS/SIGFPE alone.
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0 \
    TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
    ctest --test-dir "$build" -R "$regex" -j2 --output-on-failure --no-tests=error
rc=$?
end=$(date +%s)
echo "sanitize $san: build $((built - start)) s, tests $((end - built)) s"
exit $rc
