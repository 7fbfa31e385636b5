#!/usr/bin/python3
"""The Python baselines of the response-body splice (issue 12, item 2).

Usage: reference_splice.py BODY_FILE [REPS]

BODY_FILE is the reference body that bench/bench_splice writes (design.md §8: 16 choices,
122,880 tokens, [T, 48, 8] int16 routes, 121.3 MiB, `data` first, compact JSON). REPS (default
11, at least 11) repetitions of each path are timed after one warm-up call; every path ends with
the routes of every choice as NumPy arrays of the declared shape and dtype.

  reference  SkyRL's load_packed_body (docs/reference/skyrl.md section 3): find each
             `"<field>":{"data":"` anchor with bytes.find, cut the blob out (up to the next `"`),
             json.loads the joined rest, re-attach each blob to its envelope in document order,
             then decode: binascii.a2b_base64(strict_mode=True) + numpy.frombuffer + reshape, with
             the byte-count rule checked.
  naive      json.loads of the whole body (the blobs become Python strings), then the same decode.
  copy       numpy.copyto of the body into a warm buffer: the memcpy of this interpreter.

Prints one `bench:` line per path in bench_util.h's format; ratio is against the `copy` line
measured in this process. The standard library's json is used (Debian's python3 has no orjson),
so these baselines are slower than the orjson figures the reference PR reports (skyrl.md §3.4).
"""

import binascii
import json
import statistics
import sys
import time

import numpy as np

ANCHOR = b':{"data":"'
FIELDS = ("routed_experts", "rollout_sample_support")
NDIM = {"routed_experts": 3, "rollout_sample_support": 2}
DTYPES = {"uint8": 1, "int16": 2, "int32": 4}


def splice(raw, fields=FIELDS):
    """Returns the parsed body with each spliced envelope's `data` a memoryview into raw."""
    prefixes = [(f, b'"' + f.encode() + b'"' + ANCHOR) for f in fields]
    queues = {f: [] for f in fields}
    view = memoryview(raw)
    pieces = []
    scan = copied = 0
    while True:
        at = raw.find(ANCHOR, scan)
        if at < 0:
            break
        end_of_anchor = at + len(ANCHOR)
        field = None
        for name, prefix in prefixes:
            begin = end_of_anchor - len(prefix)
            if begin >= 0 and raw.startswith(prefix, begin):
                field = name
                break
        if field is None:
            scan = end_of_anchor
            continue
        start = end_of_anchor
        end = raw.find(b'"', start)
        if end < 0:
            raise ValueError("unterminated base64 data for %s in the response body" % field)
        pieces.append(view[copied:start])
        queues[field].append(view[start:end])
        copied = scan = end
    if copied == 0:
        return json.loads(raw)
    pieces.append(view[copied:])
    doc = json.loads(b"".join(pieces))
    for f in queues:
        queues[f].reverse()  # pop() from the end is O(1); document order is kept
    restore(doc, queues)
    left = {f: len(q) for f, q in queues.items() if q}
    if left:
        raise ValueError("spliced packed blobs found no envelope in the response body: %r" % left)
    return doc


def restore(node, queues):
    """Depth-first, document order: gives each registered envelope its blob."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in queues and isinstance(value, dict) and "data" in value:
                if not queues[key]:
                    raise ValueError(
                        "packed %s survived the scan unspliced; the response-body layout drifted"
                        % key)
                value["data"] = queues[key].pop()
            else:
                restore(value, queues)
    elif isinstance(node, list):
        for value in node:
            restore(value, queues)


def unpack(env, ndim):
    """The envelope's array: strict base64, byte count = prod(shape) * itemsize."""
    shape = env["shape"]
    dtype = env["dtype"]
    if len(shape) != ndim or dtype not in DTYPES:
        raise ValueError("bad envelope shape %r or dtype %r" % (shape, dtype))
    raw = binascii.a2b_base64(env["data"], strict_mode=True)
    count = 1
    for d in shape:
        count *= d
    if len(raw) != count * DTYPES[dtype]:
        raise ValueError("byte count %d != %d" % (len(raw), count * DTYPES[dtype]))
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def decode_all(doc):
    out = []
    for choice in doc["choices"]:
        for f in FIELDS:
            env = choice.get(f)
            if env is not None:
                out.append(unpack(env, NDIM[f]))
    return out


def path_reference(raw):
    return decode_all(splice(raw))


def path_naive(raw):
    return decode_all(json.loads(raw))


def measure(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times), max(times)


def report(name, stats, base, base_name):
    ratio = stats[0] / base[0] if base[0] > 0 else 0.0
    print("bench: %s median_ms=%.3f min_ms=%.3f max_ms=%.3f ratio=%.3f vs=%s"
          % (name, stats[0], stats[1], stats[2], ratio, base_name), flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: reference_splice.py BODY_FILE [REPS]")
    reps = max(11, int(sys.argv[2])) if len(sys.argv) > 2 else 11
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    # Both paths must agree before anything is timed.
    ref, naive = path_reference(raw), path_naive(raw)
    if len(ref) != len(naive) or any(not np.array_equal(a, b) for a, b in zip(ref, naive)):
        sys.exit("reference_splice: the reference and naive paths disagree")
    decoded = sum(a.nbytes for a in ref)
    print("# python %s, numpy %s: %d arrays, %d decoded bytes, body %d bytes, %d reps"
          % (sys.version.split()[0], np.__version__, len(ref), decoded, len(raw), reps),
          flush=True)
    src = np.frombuffer(raw, dtype=np.uint8)
    dst = np.empty_like(src)
    base = measure(lambda: np.copyto(dst, src), reps)
    report("pysplice.copy_body", base, base, "py.copy_body")
    report("pysplice.reference", measure(lambda: path_reference(raw), reps), base, "py.copy_body")
    report("pysplice.naive", measure(lambda: path_naive(raw), reps), base, "py.copy_body")


if __name__ == "__main__":
    main()
