#!/usr/bin/env bash
# Runs one hostile-input test script: tests/hostile/run_hostile.sh NAME KILN WORKDIR
set -u
name=$1 kiln=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
exec bash -c 'source "$0/lib.sh" "$1" "$2"; source "$0/$3.sh"; hostile_done' "$here" "$kiln" "$work" "$name"
