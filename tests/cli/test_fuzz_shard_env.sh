#!/usr/bin/env bash
# kiln fuzz --shard env: the shard from KILN_SHARD, else a Slurm job array, else a Kubernetes
# Indexed Job, each selecting the same graphs as the explicit --shard i/N; none set, or values
# out of range: exit 2 naming the variables.
#   tests/cli/test_fuzz_shard_env.sh KILN
kiln=$1 passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }
vars=(KILN_SHARD KILN_SHARDS SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_COUNT
      SLURM_ARRAY_TASK_STEP SLURM_ARRAY_TASK_MAX JOB_COMPLETION_INDEX)
clean=(env); for v in "${vars[@]}"; do clean+=(-u "$v"); done
# run NAME ENV... -- ARGS...: a short campaign; its fingerprint (the summary without the timing
# line: ops, op pairs and passes seen depend on which graphs ran) goes to $tmp/NAME.txt
run() {
  local name=$1; shift
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  "${clean[@]}" "${envs[@]}" "$kiln" fuzz --seed 3 --count 6 --backend none -q --max-nodes 6 \
    --out "$tmp/$name" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local rc=$?
  tail -n +2 "$tmp/$name.out" | grep -v "^files written" >"$tmp/$name.txt"
  return $rc
}
for i in 0 1 2; do run "explicit$i" -- --shard "$i/3" || bad "--shard $i/3"; done
cmp -s "$tmp/explicit1.txt" "$tmp/explicit2.txt" && bad "shards 1 and 2 look alike: the check cannot tell" || ok
same() { # same NAME I: NAME's graphs are those of --shard I/3
  cmp -s "$tmp/$1.txt" "$tmp/explicit$2.txt" &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d['shard']==$2 and d['shards']==3))" \
      "$tmp/$1/fuzz.json" && ok || { bad "$1 is not shard $2 of 3"; cat "$tmp/$1.err"; diff "$tmp/$1.txt" "$tmp/explicit$2.txt"; }
}
run kiln KILN_SHARD=1/3 -- --shard env && same kiln 1
run slurm SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 -- --shard env && same slurm 2
run slurm0 SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_STEP=1 -- --shard env && same slurm0 0
run k8s JOB_COMPLETION_INDEX=1 KILN_SHARDS=3 -- --shard env && same k8s 1
run first KILN_SHARD=2/3 SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3 -- --shard env && same first 2

refused() { # refused NAME PATTERN ENV...: exit 2 and stderr names PATTERN
  local name=$1 pat=$2; shift 2
  run "$name" "$@" -- --shard env
  local rc=$?
  [ $rc = 2 ] && grep -q -- "$pat" "$tmp/$name.err" && ok || { bad "$name: exit $rc"; cat "$tmp/$name.err"; }
}
refused none "KILN_SHARD=i/N, or SLURM_ARRAY_TASK_ID"
grep -q "JOB_COMPLETION_INDEX" "$tmp/none.err" && ok || bad "the usage error does not name JOB_COMPLETION_INDEX"
refused k8s_no_n KILN_SHARDS JOB_COMPLETION_INDEX=1
refused k8s_out "not in 0..2" JOB_COMPLETION_INDEX=3 KILN_SHARDS=3
refused slurm_no_count SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=0
refused slurm_step "step 2" SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_STEP=2
refused slurm_below "not in 0..2" SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3
refused kiln_bad "KILN_SHARD's i" KILN_SHARD=3/3
refused kiln_form "KILN_SHARD is '2'" KILN_SHARD=2
refused kiln_text "JOB_COMPLETION_INDEX" JOB_COMPLETION_INDEX=x KILN_SHARDS=3

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
