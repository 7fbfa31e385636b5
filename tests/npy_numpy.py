#!/usr/bin/env python3
"""Cross-checks lib/sr_npy against NumPy: for random shapes and dtypes, np.save's header must
parse to the same dtype and shape, and sr_npy_write_header must reproduce it byte for byte.
Headers NumPy's reader refuses for a route array (big-endian, Fortran order) must be refused
with their named error. Usage: npy_numpy.py NPY_XCHECK [CASES]. Exit 77 without numpy."""
import io
import random
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy not installed: skipped")
    sys.exit(77)

DTYPES = ["uint8", "uint16", "int16", "int32", "int8", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "bool"]


def header_of(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    raw = buf.getvalue()
    hlen = raw[8] | raw[9] << 8
    return raw[:10 + hlen]


def main():
    exe = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    rng = random.Random(20261202)
    want, lines = [], []
    for _ in range(cases):
        ndim = rng.randint(0, 8)
        # Mostly small dims (real arrays), some huge ones through a zero-stride view so no
        # memory is used: the header of a broadcast view is what np.save writes for its shape.
        big = rng.random() < 0.3
        shape = tuple(rng.randint(0, 10 ** rng.randint(1, 12) if big else 6)
                      for _ in range(ndim))
        dtype = rng.choice(DTYPES)
        if big:
            # np.save builds exactly this dict (format.header_data_from_array_1_0) and hands it
            # to the same writer; writing it directly allows shapes no memory could hold.
            out = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                out, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                      "fortran_order": False, "shape": shape})
            hdr = out.getvalue()
            if 0 in shape:
                continue  # the zero-size overflow rule is the envelope's (unit.envelope)
            size = np.dtype(dtype).itemsize
            for d in shape:
                size *= d
            if size >= 2 ** 63:  # numpy: the byte size must fit in intp
                want.append((None, "overflow", hdr))
                lines.append(hdr.hex())
                continue
        else:
            hdr = header_of(np.zeros(shape, dtype))
        want.append((dtype, shape, hdr))
        lines.append(hdr.hex())
    for order in (">", "fortran"):
        arr = np.zeros((3, 2, 2), "uint16")
        arr = arr.astype(">u2") if order == ">" else np.asfortranarray(arr)
        want.append((None, order, header_of(arr)))
        lines.append(want[-1][2].hex())
    res = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(res) == len(want), (len(res), len(want))
    bad = 0
    for (dtype, shape, hdr), got in zip(want, res):
        f = got.split()
        if dtype is None:
            expect = {">": "npy.byte_order", "fortran": "npy.fortran_order",
                      "overflow": "envelope.shape_overflow"}[shape]
            if f != ["error", expect]:
                print(f"FAIL {shape}: want error {expect}, got {got}")
                bad += 1
            continue
        if f[0] == "error":
            print(f"FAIL {dtype}{shape}: refused ({got}) header {hdr!r}")
            bad += 1
            continue
        gshape = tuple(int(x) for x in f[2:2 + int(f[1])])
        if f[0] != dtype or gshape != shape:
            print(f"FAIL {dtype}{shape}: parsed as {f[0]}{gshape}")
            bad += 1
        if bytes.fromhex(f[-1]) != hdr:
            print(f"FAIL {dtype}{shape}: writer differs:\n  numpy {hdr!r}\n  ours  "
                  f"{bytes.fromhex(f[-1])!r}")
            bad += 1
    print(f"npy cross-check: {len(want)} headers, {bad} mismatch(es) (numpy {np.__version__})")
    sys.exit(1 if bad else 0)


main()
