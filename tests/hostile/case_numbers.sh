# Hostile numbers: every numeric option of every command, and every number of an artifact's
# manifest.txt, given values a careless or hostile user would try. Each must be refused with
# exit 2 and a message naming the option (or the manifest line), before anything runs; none
# may crash (`kiln bench --threads 100000` once crashed in the OpenMP runtime, `threads
# 100000` in a manifest too).

mlp_fixture # $tmp/mlp.kiln (x: f32[batch,4]) and $tmp/x.npy (f32[2,4])
m=$tmp/mlp.kiln

# Values no integer option takes (whatever its range), and none a float option takes.
bad_ints=(99999999999999999999999 -99999999999999999999999 -7 NaN nan inf -inf abc ""
  1e3 0x10 " 5" "5 " 5abc 2.5 "+-3" $'5\n' 9223372036854775808)
bad_floats=(NaN nan inf -inf Infinity -1 -1e-9 abc "" 1e999 -1e999 " 1" "1 " 0x1p3q 1,5)

# check_values CMD OPTION VALUE... -- ARGS...: every value refused with exit 2 naming the option
# (the arguments in $post come after it).
post=()
check_values() {
  local cmd=$1 opt=$2 vals=() v; shift 2
  while [ "$1" != "--" ]; do vals+=("$1"); shift; done
  shift
  for v in "${vals[@]}"; do
    expect 2 "$cmd $opt '$v'" "$kiln" "$cmd" "$@" "$opt" "$v" "${post[@]}"
    expect_err "${opt#--}" "$cmd $opt '$v' names the option"
  done
}
# check_int CMD OPTION [ARGS...]: every bad integer, given both as "--opt value" and as
# "--opt=value", and the option without a value.
check_int() {
  local cmd=$1 opt=$2; shift 2
  check_values "$cmd" "$opt" "${bad_ints[@]}" -- "$@"
  expect 2 "$cmd $opt=99999999999999999999999" "$kiln" "$cmd" "$@" \
    "$opt=99999999999999999999999" "${post[@]}"
  expect 2 "$cmd $opt without a value" "$kiln" "$cmd" "$@" "$opt"
}
check_float() { check_values "$1" "$2" "${bad_floats[@]}" -- "${@:3}"; }

# every --threads: one range, 1..1024
for cmd in run bench compile verify fuzz; do
  case $cmd in
  run) args=("$m" --input x="$tmp/x.npy" --backend cpu) ;;
  bench) args=("$m" --dim batch=2 --iters 1 --warmup 0) ;;
  compile) args=("$m" --dim batch=2) ;;
  verify) args=("$m" --dim batch=2 --backend cpu) ;;
  fuzz) args=(--backend cpu --count 1) ;;
  esac
  for v in 100000 1025 0 -0; do
    expect 2 "$cmd --threads $v" "$kiln" $cmd "${args[@]}" --threads "$v"
    expect_err "1\.\.1024" "$cmd --threads $v states the range"
  done
done

# run
check_int run --threads "$m" --input x="$tmp/x.npy" --backend cpu
expect 2 "run --threads -0" "$kiln" run "$m" --input x="$tmp/x.npy" --threads -0
expect 2 "run --threads 1025" "$kiln" run "$m" --input x="$tmp/x.npy" --threads 1025
expect_err "1\.\.1024" "the thread range is stated"
check_float run --rtol "$m" --input x="$tmp/x.npy"
check_float run --atol "$m" --input x="$tmp/x.npy"
expect 0 "run --rtol 0 --atol 0 is fine" "$kiln" run "$m" --input x="$tmp/x.npy" --rtol 0 --atol 0

# bench: --threads 100000 crashed in libgomp; every command has one thread range
check_int bench --threads "$m" --dim batch=2 --iters 1 --warmup 0
check_int bench --iters "$m" --dim batch=2
check_int bench --warmup "$m" --dim batch=2 --iters 1
check_int bench --seed "$m" --dim batch=2 --iters 1 --warmup 0
expect 2 "bench --iters -0" "$kiln" bench "$m" --dim batch=2 --iters -0
for v in "${bad_ints[@]}"; do
  expect 2 "bench --dim batch='$v'" "$kiln" bench "$m" --dim "batch=$v" --iters 1 --warmup 0
done
expect 2 "bench --dim given twice" "$kiln" bench "$m" --dim batch=2 --dim batch=3 --iters 1
expect 2 "bench --dim of a symbol the model lacks" "$kiln" bench "$m" --dim batch=2 --dim nosuch=3 --iters 1
expect_err "nosuch" "the unknown dim is named"
expect 0 "bench --threads 1024 is in range" "$kiln" bench "$m" --dim batch=2 --iters 1 --warmup 0 --threads 1024

# compile
check_int compile --threads "$m" --dim batch=2
check_int compile --block-threads "$m" --dim batch=2 --target cuda
for v in "${bad_ints[@]}" "-0x1"; do
  expect 2 "compile --dim batch='$v'" "$kiln" compile "$m" --dim "batch=$v"
done
expect 2 "compile --dim given twice" "$kiln" compile "$m" --dim batch=2 --dim batch=3
expect 2 "compile --dim of a symbol the model lacks" "$kiln" compile "$m" --dim batch=2 --dim Batch=2
expect_err "Batch" "the misspelt dim is named"
for v in "${bad_ints[@]}"; do
  expect 2 "compile --pass-limit='$v'" "$kiln" compile "$m" --dim batch=2 "--pass-limit=$v"
  expect_err "pass-limit" "compile --pass-limit='$v' names the option"
done

# print, verify, reduce, fuzz, test-onnx
check_int print --elide "$m"
for v in "${bad_ints[@]}"; do
  expect 2 "print --pass-limit='$v'" "$kiln" print "$m" "--pass-limit=$v"
done
check_int verify --threads "$m" --dim batch=2 --backend none
check_int verify --seed "$m" --dim batch=2 --backend none
for v in "${bad_ints[@]}"; do
  expect 2 "verify --dim batch='$v'" "$kiln" verify "$m" --dim "batch=$v" --backend none
done
mkdir -p "$tmp/case"
check_int reduce --max-tests "$tmp/case"
check_float reduce --time "$tmp/case"
check_int fuzz --count --backend none
check_int fuzz --max-nodes --backend none --count 1
check_int fuzz --threads --backend none --count 1
check_int fuzz --cpu-every --backend none --count 1
check_int fuzz --seed --backend none --count 1
check_float fuzz --time --backend none
for v in 1/1 -1/2 2/2 0/0 0/-1 abc 0/abc 0/99999999999999999999999 99999999999999999999999/2 " 0/2" \
  "0/2 " 0/ /2 0//2; do
  expect 2 "fuzz --shard '$v'" "$kiln" fuzz --backend none --count 1 --shard "$v"
done
post=("$tmp/case") # test-onnx reads its case folders as it meets them
check_int test-onnx --jobs
check_int test-onnx --timeout
check_float test-onnx --rtol
check_float test-onnx --atol
post=()

# ---- numbers in an artifact's manifest.txt ----
expect 0 "compile an artifact" "$kiln" compile "$m" --dim batch=2 --threads 2 -o "$tmp/art"
cp "$tmp/art/manifest.txt" "$tmp/manifest.good"
# with_manifest DESC STATUS: runs the artifact with the manifest in $tmp/art/manifest.txt
run_art() { expect "$1" "$2" "$kiln" run "$tmp/art" --input x="$tmp/x.npy"; }
set_line() { # set_line KEY LINE: replaces the KEY line of the good manifest with LINE
  grep -v "^$1 " "$tmp/manifest.good" >"$tmp/art/manifest.txt"
  printf '%s\n' "$2" >>"$tmp/art/manifest.txt"
}
for v in 100000 1025 -7 -1 abc "" 99999999999999999999999 1e3 0x10 " 2" "2 " NaN 2.5; do
  set_line threads "threads $v"
  run_art 2 "manifest 'threads $v'"
  expect_err "threads" "manifest 'threads $v' names the field"
done
for v in -1 99999999999999999999999 9223372036854775808 abc 1e3 0x10 ""; do
  set_line dim "dim batch $v"
  run_art 2 "manifest 'dim batch $v'"
done
set_line dim "dim nosuch 2"
run_art 2 "manifest with a dim the model lacks"
expect_err "nosuch" "the unknown dim is named"
printf 'dim batch 2\ndim batch 3\n' >>"$tmp/art/manifest.txt"
run_art 2 "manifest with a dim given twice"
set_line threads "force-fallback Relu,NoSuchOp"
run_art 2 "manifest force-fallback with an unknown op"
expect_err "NoSuchOp" "the unknown op is named"
set_line threads "frobnicate 3"
run_art 2 "manifest with an unknown key"
expect_err "frobnicate" "the unknown key is named"
set_line model "model ../../../etc/passwd"
run_art 2 "manifest model outside the artifact"
cp "$tmp/manifest.good" "$tmp/art/manifest.txt"
printf 'threads 3\n' >>"$tmp/art/manifest.txt"
run_art 2 "manifest with threads given twice"
# blank lines: allowed, and an error names the right line
{ printf '\n\n'; sed 's/$/\n/' "$tmp/manifest.good"; printf 'bogus 1\n'; } >"$tmp/art/manifest.txt"
want=$(grep -c '' "$tmp/art/manifest.txt")
run_art 2 "manifest with blank lines and a bad last line"
expect_err "line $want" "the error names line $want, counting blank lines"
sed 's/$/\n/' "$tmp/manifest.good" >"$tmp/art/manifest.txt"
run_art 0 "manifest with blank lines runs"
sed 's/$/\r/' "$tmp/manifest.good" >"$tmp/art/manifest.txt"
run_art 0 "manifest with CRLF line ends runs"
printf 'threads 100000\r\n' >"$tmp/art/manifest.txt"
run_art 2 "CRLF manifest with a bad thread count"
cp "$tmp/manifest.good" "$tmp/art/manifest.txt"
run_art 0 "the restored manifest runs"
