"""A tiny ONNX TensorProto writer and reader with no dependency but numpy.

Used where the `onnx` package is not available (Debian's python with
python3-torch). Only the fields Kiln's tests need are written:

  TensorProto.dims      = 1  (repeated int64, packed)
  TensorProto.data_type = 2  (int32, ONNX TensorProto.DataType)
  TensorProto.name      = 8  (string)
  TensorProto.raw_data  = 9  (bytes, little-endian)
"""

import numpy as np

# numpy dtype -> ONNX TensorProto.DataType
ONNX_DTYPES = {
    np.dtype("float32"): 1,
    np.dtype("uint8"): 2,
    np.dtype("int8"): 3,
    np.dtype("uint16"): 4,
    np.dtype("int16"): 5,
    np.dtype("int32"): 6,
    np.dtype("int64"): 7,
    np.dtype("bool"): 9,
    np.dtype("float16"): 10,
    np.dtype("float64"): 11,
    np.dtype("uint32"): 12,
    np.dtype("uint64"): 13,
}
NUMPY_DTYPES = {v: k for k, v in ONNX_DTYPES.items()}


def varint(n):
    """Encodes a non-negative int (or a negative int64 as its two's complement)."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire_type):
    return varint((field << 3) | wire_type)


def len_field(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def encode_tensor(array, name=""):
    """Returns the bytes of a TensorProto holding `array`."""
    array = np.asarray(array)
    if array.dtype not in ONNX_DTYPES:
        raise ValueError("unsupported dtype %s" % array.dtype)
    out = bytearray()
    if array.ndim:
        out += len_field(1, b"".join(varint(int(d)) for d in array.shape))
    out += key(2, 0) + varint(ONNX_DTYPES[array.dtype])
    if name:
        out += len_field(8, name.encode("utf-8"))
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
    out += len_field(9, data.tobytes())
    return bytes(out)


def write_tensor(path, array, name=""):
    with open(path, "wb") as f:
        f.write(encode_tensor(array, name))


def _read_varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def decode_tensor(buf):
    """Reads back what encode_tensor wrote (dims, data_type, name, raw_data)."""
    dims, dtype, name, raw = [], 0, "", b""
    pos = 0
    while pos < len(buf):
        k, pos = _read_varint(buf, pos)
        field, wt = k >> 3, k & 7
        if wt == 0:
            v, pos = _read_varint(buf, pos)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wt == 2:
            n, pos = _read_varint(buf, pos)
            payload = buf[pos : pos + n]
            pos += n
            if field == 1:
                p = 0
                while p < len(payload):
                    v, p = _read_varint(payload, p)
                    dims.append(v)
            elif field == 8:
                name = payload.decode("utf-8")
            elif field == 9:
                raw = payload
        else:
            raise ValueError("unexpected wire type %d" % wt)
    arr = np.frombuffer(raw, dtype=NUMPY_DTYPES[dtype].newbyteorder("<")).reshape(dims)
    return name, arr
