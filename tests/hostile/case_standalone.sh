# The standalone C program (`kiln compile --emit-c`): it takes only the input files it was
# built for (dtype with byte order, C order, shape, exact size: .npy versions 1-3 or raw),
# verifies its weights file, and writes outputs only inside -o, named as
# `kiln run --output-dir` names them. Every bad input is exit 2, every failed run exit 1, and
# neither writes a file.
CC=${CC:-cc}
sa=$tmp/sa run=$tmp/run in=$tmp/in
mkdir -p "$in" "$run/o/a/b"
model io "$tmp/io.onnx" && model inputs "$in" || { bad "models.py io/inputs failed"; return; }
expect 0 "compile --emit-c" "$kiln" compile "$tmp/io.onnx" --emit-c "$sa"
if ! (cd "$sa" && $CC -std=c11 -O1 main.c model.c -lm -o prog) >"$tmp/out" 2>&1; then
  bad "the standalone C does not build"; cat "$tmp/out"; return
fi
prog=$sa/prog o=$run/o/a/b
# the outputs land in -o under their encoded names, and match the reference interpreter
for good in good.npy v2.npy v3.npy raw.bin; do
  rm -f "$o"/*
  expect 0 "standalone runs on $good" "$prog" -w "$sa/model.bin" -o "$o" "$in/$good"
  mapfile -d '' args < <(model expect-args "$tmp/io.onnx" "$o" "$in/good.npy")
  expect 0 "standalone outputs of $good match the interpreter" "$kiln" run "$tmp/io.onnx" \
    "${args[@]}" --rtol 1e-6 --atol 1e-6
done
expect_file "$o/%2E.%2F..%2Fx.npy" "output '../../x' is written as its encoded name"
expect_file "$o/sub%2F..%2Fy.npy" "output 'sub/../y' is written as its encoded name"
[ "$(ls -A "$o" | wc -l)" -eq 2 ] && ok || { bad "-o holds other files: $(ls -A "$o")"; }
expect 0 "standalone runs without input files" "$prog" -w "$sa/model.bin"
expect_out "sum" "the outputs are summarized"
# bad input files: exit 2, a message naming what is wrong, no output written
rm -f "$o"/*
check_bad() { # FILE REGEX
  expect 2 "standalone rejects $1" "$prog" -w "$sa/model.bin" -o "$o" "$in/$1"
  expect_err "$2" "the message for $1"
  [ -z "$(ls -A "$o")" ] && ok || bad "$1: files written: $(ls -A "$o")"
}
check_bad i32.npy "'<i4' data, the input needs '<f4'"
check_bad f64half.npy "'<f8' data"
check_bad fortran.npy "fortran order"
check_bad bigendian.npy "big-endian"
check_bad shape.npy "shape \[4,2\]"
check_bad flat.npy "shape \[8\]"
check_bad rank3.npy "shape \[1,2,4\]"
check_bad trunc.npy "28 bytes of .npy data, the input needs 32"
check_bad extra.npy "more than the 32 bytes"
check_bad rawshort.bin "31 bytes of raw data"
check_bad rawlong.bin "more than the 32 bytes"
check_bad empty.bin "0 bytes of raw data"
check_bad v4.npy "version 4"
check_bad headcut.npy "truncated .npy header"
check_bad magiconly.npy "truncated .npy header"
check_bad hugehead.npy "header of [0-9]+ bytes"
check_bad nodescr.npy "malformed .npy header"
check_bad dupkey.npy "malformed .npy header"
check_bad badshape.npy "malformed .npy header"
check_bad bigdim.npy "malformed .npy header"
check_bad structured.npy "malformed .npy header"
expect 2 "a missing input file" "$prog" -w "$sa/model.bin" -o "$o" "$in/nosuch.npy"
expect_err "nosuch.npy: no such file" "the message names the missing file"
expect 2 "a folder as input" "$prog" -w "$sa/model.bin" "$in"
expect 2 "two files for one input" "$prog" -w "$sa/model.bin" "$in/good.npy" "$in/good.npy"
expect_err "takes 1 inputs, 2 files" "the message counts the files"
expect 2 "-o without a value" "$prog" "$in/good.npy" -o
expect 2 "-w without a value" "$prog" -w
# the weights file: corrupted, truncated, extended, foreign or missing is exit 1
cp "$sa/model.bin" "$tmp/w.bin"
size=$(stat -c %s "$tmp/w.bin")
check_weights() { # DESCRIPTION REGEX
  expect 1 "$1" "$prog" -w "$tmp/w2.bin" -o "$o" "$in/good.npy"
  expect_err "$2" "the message for $1"
  [ -z "$(ls -A "$o")" ] && ok || bad "$1: files written: $(ls -A "$o")"
}
"$PYTHON" -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[-5] ^= 1
open(sys.argv[2], 'wb').write(b)" "$tmp/w.bin" "$tmp/w2.bin"
check_weights "a corrupted model.bin" "corrupted"
head -c $((size - 4)) "$tmp/w.bin" >"$tmp/w2.bin"
check_weights "a truncated model.bin" "truncated"
head -c 20 "$tmp/w.bin" >"$tmp/w2.bin"
check_weights "a model.bin cut in its header" "not the weights file of this model"
{ cat "$tmp/w.bin"; printf x; } >"$tmp/w2.bin"
check_weights "a model.bin with bytes after the weights" "bytes after the weights"
printf 'KILNWTS1\0\0\0\0\0\0\0\0' >"$tmp/w2.bin"
check_weights "a weights file of the old format" "not a Kiln weights file"
"$PYTHON" -c "import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[16] ^= 1
open(sys.argv[2], 'wb').write(b)" "$tmp/w.bin" "$tmp/w2.bin"
check_weights "a model.bin whose checksum field was changed" "not the weights file of this model"
rm -f "$tmp/w2.bin"
check_weights "a missing model.bin" "cannot open"
# -o that is not a folder: exit 1 and nothing written
expect 1 "-o into a missing folder" "$prog" -w "$sa/model.bin" -o "$run/nosuch" "$in/good.npy"
expect_no_file "$run/nosuch" "-o into a missing folder creates nothing"
# a link planted where the temporary file goes is replaced, not followed
rm -f "$o"/*
ln -s "$run/victim" "$o/.sub%2F..%2Fy.npy.tmp"
expect 0 "standalone with a link at its temporary file" "$prog" -w "$sa/model.bin" -o "$o" "$in/good.npy"
expect_no_file "$run/victim" "the link's target was not written"
expect_file "$o/sub%2F..%2Fy.npy" "the output was written"
# an output whose place is taken by a folder, -o that is a file: exit 1
rm -f "$o"/*
mkdir "$o/sub%2F..%2Fy.npy"
expect 1 "an output whose file name is a folder" "$prog" -w "$sa/model.bin" -o "$o" "$in/good.npy"
expect_err "sub%2F..%2Fy.npy: is a directory" "the message names the output file"
rm -rf "$o"/* "$o"/.[!.]*
: >"$tmp/afile"
expect 1 "-o that is a file" "$prog" -w "$sa/model.bin" -o "$tmp/afile" "$in/good.npy"
# nothing was ever written outside -o: only o/a/b and its two outputs
find "$run" -mindepth 1 | sort >"$tmp/found"
printf '%s\n' "$run/o" "$run/o/a" "$run/o/a/b" | sort >"$tmp/want"
cmp -s "$tmp/found" "$tmp/want" && ok || { bad "files outside -o:"; diff "$tmp/want" "$tmp/found" | head; }
expect_no_file "$run/o/x.npy" "no output escaped the folder"
