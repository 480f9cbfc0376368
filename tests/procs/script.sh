#!/bin/bash
# script.sh PROGRAM ARGS...: a shell script that does some shell work
# (subshells, basename, env) and then runs a CUDA program.
name=$(basename "$1")
here=$(env | grep -c '^PATH=')
[ -n "$name" ] && [ "$here" -ge 0 ] || exit 9
"$@"
