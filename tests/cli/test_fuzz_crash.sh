#!/usr/bin/env bash
# kiln fuzz: a verification that dies in its child process is a finding of its own
# ("crash|-|SIGKILL"), and its case names the layer the child was in when it died. Here the C
# compiler (a wrapper as $CC) builds kernel units whose library kills its process when it is
# loaded (SIGKILL: no sanitizer's handler turns it into an exit status): the child dies in the
# cpu layer, the campaign goes on, and case.txt says so.
#   tests/cli/test_fuzz_crash.sh KILN
kiln=$1 passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }
cat >"$tmp/boom.h" <<'H'
#include <signal.h>
__attribute__((constructor)) static void kiln_test_boom(void) { raise(SIGKILL); }
H
cat >"$tmp/cc" <<SH
#!/bin/sh
for a in "\$@"; do
  case "\$a" in
  *unit*.c) exec ${CC:-cc} -include "$tmp/boom.h" "\$@" ;;
  esac
done
exec ${CC:-cc} "\$@"
SH
chmod +x "$tmp/cc"
CC="$tmp/cc" "$kiln" fuzz --seed 3 --count 8 --cpu-every 1 --no-grid --sweep 0 --max-nodes 4 \
  -q --out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
[ "$rc" = 1 ] && ok || { bad "exit $rc, expected 1 (a finding)"; cat "$tmp/stderr"; }
case_txt=$(ls "$tmp"/out/*/case.txt 2>/dev/null | head -n 1)
if [ -z "$case_txt" ]; then
  bad "no case folder written"
else
  grep -q '^signature: crash|-|SIGKILL$' "$case_txt" && ok || bad "signature: $(grep '^signature' "$case_txt")"
  grep -q '^layer: cpu.*, crash$' "$case_txt" && ok || bad "layer: $(grep '^layer' "$case_txt")"
  grep -q "^message: .*SIGKILL in the layer 'cpu" "$case_txt" && ok || bad "message: $(grep '^message' "$case_txt")"
fi
grep -q 'crash|-|SIGKILL' "$tmp/stdout" && ok || bad "the summary does not list the crash"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
