"""A tiny generic protobuf wire-format tree, for building malformed ONNX files.

parse(buf, "Model") turns bytes into a list of fields [num, wire_type, value],
where value is an int (varint, fixed32, fixed64), bytes (length-delimited), or,
for fields that SCHEMA names as submessages, a nested list of fields.
emit(fields) writes them back. A field may also be a bare `bytes` object,
emitted verbatim: that is how raw corruption is spliced in anywhere.
"""

import struct

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5

# message type -> {field number: submessage type}; other LEN fields stay bytes.
SCHEMA = {
    "Model": {7: "Graph", 8: "OpsetId", 14: "StrStr", 25: "Function"},
    "Graph": {1: "Node", 5: "Tensor", 11: "ValueInfo", 12: "ValueInfo", 13: "ValueInfo",
              15: "SparseTensor"},
    "Node": {5: "Attribute"},
    "Attribute": {5: "Tensor", 6: "Graph", 10: "Tensor", 11: "Graph", 14: "Type"},
    "Tensor": {13: "StrStr"},
    "SparseTensor": {1: "Tensor", 2: "Tensor"},
    "ValueInfo": {2: "Type"},
    "Type": {1: "TensorType", 4: "SequenceType", 9: "OptionalType"},
    "SequenceType": {1: "Type"},
    "OptionalType": {1: "Type"},
    "TensorType": {2: "Shape"},
    "Shape": {1: "Dim"},
    "Function": {3: "Node", 7: "OpsetId"},
}


def varint(n):
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


def key(num, wt):
    return varint((num << 3) | wt)


def read_varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos
        if shift >= 70:
            raise ValueError("varint too long")


def parse(buf, typ="Model"):
    fields, pos = [], 0
    subs = SCHEMA.get(typ, {})
    while pos < len(buf):
        k, pos = read_varint(buf, pos)
        num, wt = k >> 3, k & 7
        if wt == VARINT:
            v, pos = read_varint(buf, pos)
        elif wt == I64:
            v = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wt == I32:
            v = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        elif wt == LEN:
            n, pos = read_varint(buf, pos)
            v = bytes(buf[pos : pos + n])
            pos += n
            if num in subs:
                v = parse(v, subs[num])
        else:
            raise ValueError("wire type %d" % wt)
        fields.append([num, wt, v])
    return fields


def emit(fields):
    out = bytearray()
    for f in fields:
        if isinstance(f, (bytes, bytearray)):
            out += f
            continue
        num, wt, v = f
        out += key(num, wt)
        if wt == VARINT:
            out += varint(v)
        elif wt == I64:
            out += struct.pack("<Q", v & (2**64 - 1))
        elif wt == I32:
            out += struct.pack("<I", v & (2**32 - 1))
        elif wt == LEN:
            payload = emit(v) if isinstance(v, list) else v
            out += varint(len(payload)) + payload
        # groups and invalid wire types: only the key
    return bytes(out)


def top_level_boundaries(buf):
    """Offsets at which the top-level message could end cleanly."""
    offsets, pos = {0}, 0
    while pos < len(buf):
        k, pos = read_varint(buf, pos)
        wt = k & 7
        if wt == VARINT:
            _, pos = read_varint(buf, pos)
        elif wt == I64:
            pos += 8
        elif wt == I32:
            pos += 4
        elif wt == LEN:
            n, pos = read_varint(buf, pos)
            pos += n
        offsets.add(pos)
    return offsets


def find(fields, num, index=0):
    """The index-th field with number num (a [num, wt, value] list, mutable)."""
    hits = [f for f in fields if not isinstance(f, (bytes, bytearray)) and f[0] == num]
    return hits[index]


def path(fields, *steps):
    """Follows (num, index) steps through nested messages; returns the last field."""
    f = None
    for num, index in steps:
        f = find(fields, num, index)
        fields = f[2]
    return f
