#!/usr/bin/env bash
# Runs one hostile-input test script: tests/hostile/run_hostile.sh NAME KILN WORKDIR
# (relative paths, also in $PYTHON, are taken from the current folder: the scripts change it).
set -u
name=$1 kiln=$(realpath "$2") work=$(realpath -m "$3")
case "${PYTHON:-}" in */*) PYTHON=$(realpath -s "$PYTHON"); export PYTHON ;; esac
here=$(cd "$(dirname "$0")" && pwd)
exec bash -c 'source "$0/lib.sh" "$1" "$2"; source "$0/$3.sh"; hostile_done' "$here" "$kiln" "$work" "$name"
