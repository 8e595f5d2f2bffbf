#!/usr/bin/env bash
# Mutation score: does `kiln fuzz` catch the seeded bugs of docs/MUTANTS.md, and does it
# bisect each to the expected layer?
#
#   scripts/mutation.sh                      all mutants, 60 s each, nproc at a time
#   MUTANTS="1 5 7" MUTATION_SECONDS=30 scripts/mutation.sh
#
# Builds build-mutation (-DKILN_MUTATION=ON, Release), then runs for each mutant n
#   KILN_MUTANT=n build-mutation/kiln fuzz --time SECONDS --seed SEED --out WORK/m<n>
# (exit 1: a failure was found, the mutant is caught), reads the first case.txt it wrote
# (keys layer, pass, signature) and compares the layer with the expected one of
# docs/MUTANTS.md. A control run of the same budget with KILN_MUTANT unset must find nothing.
# Environment: MUTANTS, MUTATION_SECONDS (60), MUTATION_SEED (1), MUTATION_JOBS (nproc),
# MUTATION_BUILD (build-mutation), KILN (a kiln binary to use instead of building one),
# MUTATION_WORK (a folder to keep the runs in; default a temporary one), MUTATION_FLAGS
# (more `kiln fuzz` flags, to compare settings: "--cpu-every 8").
set -u
cd "$(dirname "$0")/.."
SECS=${MUTATION_SECONDS:-60}
SEED=${MUTATION_SEED:-1}
FLAGS=${MUTATION_FLAGS:-}
JOBS=${MUTATION_JOBS:-$(nproc 2>/dev/null || echo 2)}
BUILD=${MUTATION_BUILD:-build-mutation}
TABLE=docs/MUTANTS.md

if [ -z "${KILN:-}" ]; then
  cmake -S . -B "$BUILD" -DKILN_MUTATION=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 2
  cmake --build "$BUILD" -j "$JOBS" --target kiln_cli >/dev/null || exit 2
  KILN=$BUILD/kiln
fi
[ -x "$KILN" ] || { echo "mutation: no kiln binary at $KILN" >&2; exit 2; }
KILN=$(cd "$(dirname "$KILN")" && pwd)/$(basename "$KILN")
WORK=${MUTATION_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-mutation.XXXXXX")}
mkdir -p "$WORK"

# id -> expected layer, from the table rows "| id | file | function | bug | expected | ... |"
expected() {
  awk -F'|' -v id="$1" '$2 ~ "^ *"id" *$" { gsub(/^ +| +$/, "", $6); print $6; exit }' "$TABLE"
}
ALL=$(awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $2); print $2 }' "$TABLE")
IDS=${MUTANTS:-$ALL}
[ -n "$IDS" ] || { echo "mutation: no mutants listed in $TABLE" >&2; exit 2; }

# One fuzz campaign: $1 = mutant id, or "control" (KILN_MUTANT unset).
run_one() {
  local id=$1 dir=$WORK/m$1 rc start
  rm -rf "$dir"
  mkdir -p "$dir"
  start=$(date +%s)
  if [ "$id" = control ]; then
    env -u KILN_MUTANT KILN_CACHE_DIR="$dir/cache" timeout $((SECS + 300)) \
      "$KILN" fuzz --time "$SECS" --seed "$SEED" $FLAGS --out "$dir/out" >"$dir/log" 2>&1
  else
    KILN_MUTANT=$id KILN_CACHE_DIR="$dir/cache" timeout $((SECS + 300)) \
      "$KILN" fuzz --time "$SECS" --seed "$SEED" $FLAGS --out "$dir/out" >"$dir/log" 2>&1
  fi
  rc=$?
  echo "$rc $start" >"$dir/status"
}
export -f run_one
export WORK SECS SEED KILN FLAGS

printf '%s\n' $IDS control | xargs -P "$JOBS" -I{} bash -c 'run_one {}'

# key: value of the first case.txt (oldest) of a run
case_key() {
  local f=$1 k=$2
  sed -n "s/^$k: *//p" "$f" | head -n 1
}

caught=0 total=0 matched=0
printf '%-4s %-7s %9s  %-28s %-16s %s\n' id result first_s reported expected match
for id in $IDS; do
  total=$((total + 1))
  dir=$WORK/m$id
  read -r rc start <"$dir/status"
  exp=$(expected "$id")
  first=$(ls -tr "$dir"/out/*/case.txt 2>/dev/null | head -n 1)
  rep="-" secs="-" ok="-"
  if [ "$rc" = 1 ]; then
    caught=$((caught + 1))
    res=caught
    if [ -n "$first" ]; then
      layer=$(case_key "$first" layer)
      pass=$(case_key "$first" pass)
      rep="$layer${pass:+ $pass}"
      [ "$pass" = "-" ] && rep=$layer
      secs=$(($(stat -c %Y "$first") - start))
      [ "$secs" -lt 0 ] && secs=0
      case "$exp" in
      "pass "*) [ "${layer%% *}" = pass ] && [ "pass ${pass%% *}" = "$exp" ] && ok=yes || ok=no ;;
      # the layer's first word: "cpu (2 threads)" is the cpu layer run at two threads
      *) [ "${layer%% *}" = "$exp" ] && ok=yes || ok=no ;;
      esac
      [ "$ok" = yes ] && matched=$((matched + 1))
    fi
  elif [ "$rc" = 0 ]; then
    res=missed
  else
    res="error($rc)"
  fi
  printf '%-4s %-7s %9s  %-28s %-16s %s\n' "$id" "$res" "$secs" "$rep" "$exp" "$ok"
done
read -r crc _ <"$WORK/mcontrol/status"
case $crc in
0) echo "control (no mutant): nothing found in ${SECS}s" ;;
1) echo "control (no mutant): FAILURES FOUND (false alarms), see $WORK/mcontrol/out" ;;
*) echo "control (no mutant): kiln fuzz exited $crc, see $WORK/mcontrol/log" ;;
esac
awk -v k="$caught" -v n="$total" -v m="$matched" \
  'BEGIN { printf "mutation score: %d of %d caught (%.0f%%), %d bisected to the expected layer\n", k, n, n ? 100 * k / n : 0, m }'
echo "runs kept in $WORK"
[ "$crc" = 0 ]
