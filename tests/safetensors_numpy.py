#!/usr/bin/env python3
"""Cross-checks lib/sr_safetensors against an independent reader and writer written here from the
format's description alone (struct, json, numpy; there is no safetensors package on this machine).
1. A checkpoint written by C (st_xcheck write, one file and three shards) is read here:
   struct.unpack('<Q'), json.loads of the header, numpy.frombuffer of each tensor, and the values
   must be the ones st_xcheck.c wrote.
2. Random files written here (random dtypes, shapes, key order, data order unlike name order,
   metadata, space padding of any length or none) are read by C (st_xcheck dump) and every
   tensor's bytes must equal numpy's tobytes().
3. Malformed files written here are refused by C with the named error.
Usage: safetensors_numpy.py ST_XCHECK [CASES]. Exit 77 without numpy."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy not installed: skipped")
    sys.exit(77)

NP = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
      "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32, "F64": np.float64,
      "I64": np.int64, "U64": np.uint64}


def read_file(path):
    """Independent reader: {name: (dtype, shape, raw bytes)}, metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 1 == 0 and (8 + n) % 8 == 0, "header not padded to 8"
    head = json.loads(raw[8:8 + n].decode("utf-8"))
    buf = raw[8 + n:]
    meta = head.pop("__metadata__", {})
    out, at = {}, 0
    for name, e in sorted(head.items(), key=lambda kv: kv[1]["data_offsets"]):
        b, end = e["data_offsets"]
        assert b == at, (name, b, at)
        out[name] = (e["dtype"], tuple(e["shape"]), buf[b:end])
        at = end
    assert at == len(buf)
    return out, meta


def read_folder(d):
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    tensors, meta = {}, None
    for f in files:
        t, m = read_file(os.path.join(d, f))
        assert not set(t) & set(tensors)
        tensors.update(t)
        meta = meta if meta is not None else m
    return files, tensors, meta


def bf16(raw):
    return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)


def check_c_written(exe, tmp):
    for shards in (1, 3):
        d = os.path.join(tmp, "c%d" % shards)
        subprocess.run([exe, "write", d, str(shards)], check=True)
        files, t, meta = read_folder(d)
        want_files = (["model.safetensors"] if shards == 1 else
                      ["model-%05d-of-%05d.safetensors" % (i, shards) for i in (1, 2, 3)])
        assert files == want_files, files
        assert meta == {"format": "pt", "syncroll_version": "7"}, meta

        def arr(name):
            dt, shape, raw = t[name]
            a = bf16(raw) if dt == "BF16" else np.frombuffer(raw, NP[dt])
            return dt, shape, a.reshape(shape)
        dt, sh, a = arr("model.layers.0.mlp.weight")
        assert dt == "F32" and sh == (2, 3)
        assert (a == np.array([[-1, -0.5, 0], [0.5, 1, 1.5]], np.float32)).all()
        dt, sh, a = arr("b.half")
        assert dt == "F16" and (a == np.array([1, 2, -2, 0.5, 0], np.float16)).all()
        dt, sh, a = arr('c.bf16/with "quote"')
        assert dt == "BF16" and (a == np.array([[1, 2], [-1, 0]], np.float32)).all()
        dt, sh, a = arr("scalar")
        assert dt == "I64" and sh == () and a == -123456789012345
        dt, sh, a = arr("empty")
        assert dt == "U8" and sh == (0, 4) and a.size == 0
        dt, sh, a = arr("ints")
        assert sh == (3, 1) and (a.ravel() == [-1, 0, 2147483647]).all()
        dt, sh, a = arr("doubles")
        assert (a == [3.25, -1e300]).all()
        assert len(t) == 7


def random_file(rng, path):
    names = set()
    while len(names) < rng.randint(0, 6):
        names.add(rng.choice(["w", "layers.%d.x" % rng.randint(0, 20), "é.ü", "a/b", "emb"]) +
                  str(rng.randint(0, 99)))
    arrays = {}
    for n in names:
        dt = rng.choice(sorted(NP))
        shape = tuple(rng.randint(0, 4) for _ in range(rng.randint(0, 3)))
        a = (np.frombuffer(bytes(rng.getrandbits(8) for _ in range(int(np.prod(shape)) *
                                                                   np.dtype(NP[dt]).itemsize)),
                           np.uint8).view(NP[dt]).reshape(shape)
             if dt != "BOOL" else
             np.array([rng.random() < 0.5 for _ in range(int(np.prod(shape)))],
                      np.bool_).reshape(shape))
        arrays[n] = (dt, a)
    order = list(arrays)
    rng.shuffle(order)  # data order unlike name order
    head, body, at = {}, b"", 0
    for n in order:
        dt, a = arrays[n]
        raw = a.tobytes()
        head[n] = {"shape": list(a.shape), "dtype": dt, "data_offsets": [at, at + len(raw)]}
        body += raw
        at += len(raw)
    if rng.random() < 0.5:
        head["__metadata__"] = {"format": "np", "k%d" % rng.randint(0, 9): "v"}
    keys = list(head)
    rng.shuffle(keys)
    text = json.dumps({k: head[k] for k in keys}, separators=(",", ":") if rng.random() < 0.5
                      else None, ensure_ascii=rng.random() < 0.5).encode("utf-8")
    text += b" " * rng.randint(0, 9)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)
    return arrays, head.get("__metadata__", {})


def dump(exe, d):
    out = subprocess.run([exe, "dump", d], check=True, capture_output=True).stdout.decode()
    return out.splitlines()


def check_py_written(exe, tmp, cases):
    rng = random.Random(20261202)
    for i in range(cases):
        d = os.path.join(tmp, "p%d" % i)
        os.mkdir(d)
        arrays, meta = random_file(rng, os.path.join(d, "model.safetensors"))
        lines = dump(exe, d)
        want = []
        for n in sorted(arrays, key=lambda s: s.encode("utf-8")):
            dt, a = arrays[n]
            raw = a.tobytes()
            want.append("%s %s %s %s" % (n, dt, ",".join(map(str, a.shape)) or "-",
                                         raw.hex() or "-"))
        want += ["meta %s %s" % kv for kv in meta.items()]
        assert lines == want, (i, lines, want)


BAD = [
    ("st.offsets", {"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                    "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, 3),
    ("st.offsets", {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                    "b": {"dtype": "U8", "shape": [1], "data_offsets": [2, 3]}}, 3),
    ("st.dtype", {"a": {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}}, 1),
    ("st.byte_count", {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, 4),
    ("st.buffer_size", {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, 2),
    ("st.metadata", {"__metadata__": {"n": 1}}, 0),
]


def check_refused(exe, tmp):
    for i, (code, head, buffer) in enumerate(BAD):
        d = os.path.join(tmp, "bad%d" % i)
        os.mkdir(d)
        text = json.dumps(head).encode()
        with open(os.path.join(d, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"\0" * buffer)
        assert dump(exe, d) == ["error " + code], (code, dump(exe, d))


def main():
    exe = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    tmp = tempfile.mkdtemp(prefix="sr_st_numpy_")
    try:
        check_c_written(exe, tmp)
        check_py_written(exe, tmp, cases)
        check_refused(exe, tmp)
    finally:
        shutil.rmtree(tmp)
    print("safetensors: C-written checkpoints read by numpy, %d numpy-written files read by C, "
          "%d malformed files refused by name" % (cases, len(BAD)))


if __name__ == "__main__":
    main()
