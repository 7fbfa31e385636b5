#!/usr/bin/env python3
"""Cross-language check of the golden bodies (ctest cli.golden_numpy).

Every fixtures/bodies/NAME.body (with the options of NAME.args) is spliced and decoded here
independently of syncroll -- its own byte scan for packed blobs and integer arrays, the standard
library's base64 and json, and numpy for the arrays -- following skyrl.md section 3 and the
check order of lib/sr_envelope.h. The result is compared with `syncroll check-body --json` on the
same body: for a valid body every entry (path, field, kind, shape, dtype, bytes, canonical, min,
max, spliced, sidecar) and the counts; for an invalid one the dotted error name.

A body of another engine dialect (fixtures/bodies/dialect_*.body, check-body's "dialect" is not
skyrl) has its routes decoded here as that stack's own clients decode them (np.load of the
base64 .npy, np.frombuffer of sglang's int32, the nrlre1 split, np.array of the nested lists,
dynamo's object) and compared with check-body's route entries (shape, dtype, bytes, min, max);
an invalid one must be refused by check-body with the named error of its .expected.

Usage: golden_numpy.py SYNCROLL SOURCE_DIR. Exit 0 all agree, 1 a mismatch, 77 (ctest's skip
code) with a printed reason when numpy cannot be imported (`make deps` installs python3-numpy).
"""
import base64
import json
import os
import re
import subprocess
import sys

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: numpy is not available to {sys.executable} ({e}); "
          "install python3-numpy (make deps)")
    sys.exit(77)

ANCHOR = b':{"data":"'
B64 = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
ROUTE_DTYPES = ["uint8", "int16", "int32"]
DTYPES = {"bool": "?", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2",
          "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
          "float16": "<f2", "float32": "<f4", "float64": "<f8"}


class Fail(Exception):
    """A splice or validation error, named as syncroll names it."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


def builtins():
    return [
        {"name": "routed_experts", "kind": "packed", "dtypes": ROUTE_DTYPES, "ndim": 3,
         "canonical": True, "nullable": True},
        {"name": "rollout_sample_support", "kind": "packed", "dtypes": ["int32"], "ndim": 2,
         "canonical": False, "nullable": True},
        {"name": "token_ids", "kind": "ints", "min": 0, "max": 2**31 - 1},
    ]


def load_registry(args, src):
    reg = builtins()
    words = args.split()
    # --stack S reads fixtures/fields/sample_support_S.json, the registry the executable applies
    # (harness/spec/stack.h), unless a --field-registry defines rollout_sample_support itself.
    if "--stack" in words:
        at = words.index("--stack")
        stack = words[at + 1]
        del words[at:at + 2]
        own = [json.load(open(os.path.join(src, words[j + 1])))
               for j in range(len(words) - 1) if words[j] == "--field-registry"]
        if not any(f["name"] == "rollout_sample_support" for d in own for f in d.get("fields", [])):
            words += ["--field-registry", f"fixtures/fields/sample_support_{stack}.json"]
    i = 0
    narrow = None
    while i < len(words):
        if words[i] == "--field-registry":
            doc = json.load(open(os.path.join(src, words[i + 1])))
            for f in doc.get("fields", []):
                reg = [r for r in reg if r["name"] != f["name"]]  # replaces a built-in
                reg.append({"name": f["name"], "kind": "packed", "dtypes": f["dtypes"],
                            "ndim": f.get("ndim", len(f.get("shape", []))),
                            "canonical": f.get("canonical", False),
                            "nullable": f.get("nullable", True), "shape": f.get("shape"),
                            "range": f.get("range"), "finite": f.get("finite", False)})
            for f in doc.get("int_arrays", []):
                reg = [r for r in reg if r["name"] != f["name"]]
                reg.append({"name": f["name"], "kind": "ints", "min": f.get("min", 0),
                            "max": f.get("max", 2**31 - 1)})
            i += 2
        elif words[i] == "--fields":
            narrow = words[i + 1].split(",")
            i += 2
        else:
            raise SystemExit(f"golden_numpy.py: unsupported option {words[i]}")
    if narrow is not None:
        reg = [f for f in reg if f["name"] in narrow]
    return reg


def key_before(raw, end, name):
    """Whether `"name"` ends at raw[end], and whether its opening quote is escaped."""
    k = b'"' + name.encode() + b'"'
    start = end - len(k)
    if start < 0 or raw[start:end] != k:
        return None
    n = 0
    while start - n - 1 >= 0 and raw[start - n - 1] == ord("\\"):
        n += 1
    return n % 2 == 1


def scan(raw, reg):
    """The byte scan: cuts blobs and integer arrays out, returns (text, blobs, ints)."""
    packed = [f for f in reg if f["kind"] == "packed"]
    ints = [f for f in reg if f["kind"] == "ints"]
    out, blobs, arrays = bytearray(), [], []
    pos = 0
    while True:
        a = raw.find(ANCHOR, pos)
        b = raw.find(b":[", pos) if ints else -1
        cands = [x for x in (a, b) if x >= 0]
        if not cands:
            out += raw[pos:]
            return bytes(out), blobs, arrays
        j = min(cands)
        if j == b and j != a:
            hit = next((f for f in ints if key_before(raw, j, f["name"]) is False), None)
            if hit is None:
                out += raw[pos:j + 1]
                pos = j + 1
                continue
            close = raw.find(b"]", j + 2)
            if close < 0:
                raise Fail("splice.truncated")
            out += raw[pos:j + 1] + b"{}"
            arrays.append((hit, raw[j + 2:close]))
            pos = close + 1
            continue
        hit = None
        for f in packed:
            esc = key_before(raw, j, f["name"])
            if esc is not None:
                hit = (f, esc)
                break
        start = j + len(ANCHOR)
        if hit is None:
            out += raw[pos:start]
            pos = start
            continue
        close = raw.find(b'"', start)
        if close < 0:
            raise Fail("splice.unterminated")
        out += raw[pos:start]
        blobs.append({"field": hit[0], "escaped": hit[1], "chars": raw[start:close],
                      "at": start})
        pos = close


def parse_ints(text, f):
    vals = []
    for tok in text.split(b","):
        tok = tok.strip()
        if not re.fullmatch(rb"-?(0|[1-9][0-9]*)", tok):
            raise Fail("intarray.syntax")
        v = int(tok)
        if v < f["min"] or v > f["max"]:
            raise Fail("intarray.stricter_than_reference")
        vals.append(v)
    return vals


def b64decode_strict(chars):
    if any(c not in B64 and c != ord("=") for c in chars):
        raise Fail("base64.invalid_char")
    if len(chars) % 4:
        raise Fail("base64.bad_length")
    body = chars.rstrip(b"=")
    pad = len(chars) - len(body)
    if pad > 2 or b"=" in body:
        raise Fail("base64.bad_padding")
    # Like pybase64's validate=True (the reference): non-zero trailing bits are dropped, and
    # the text is then not what an encoder writes (check-body's b64_noncanonical note).
    data = base64.b64decode(chars, validate=True)
    return data, base64.b64encode(data) != chars


def key_path(path, key):
    if key and not key[0].isdigit() and re.fullmatch(r"[A-Za-z0-9_]+", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


class Walker:
    def __init__(self, reg, blobs, arrays):
        self.reg = {f["name"]: f for f in reg}
        self.blobs = blobs
        self.arrays = arrays
        self.used = set()
        self.used_ints = set()
        self.entries = []

    def pop_blob(self, field):
        """The field's next blob in body order; blobs cut at escaped keys have no home."""
        for i, x in enumerate(self.blobs):
            if i not in self.used and x["field"]["name"] == field["name"] and not x["escaped"]:
                self.used.add(i)
                return i
        return None

    def pop_ints(self, field):
        for i, (f, _) in enumerate(self.arrays):
            if i not in self.used_ints and f["name"] == field["name"]:
                self.used_ints.add(i)
                return i
        return None

    def walk(self, node, path):
        if isinstance(node, list):
            for i, x in enumerate(node):
                self.walk(x, f"{path}[{i}]")
        elif isinstance(node, Obj):
            for key, val in node.pairs:
                p = key_path(path, key)
                f = self.reg.get(key)
                if f is None:
                    self.walk(val, p)
                    continue
                self.member(f, val, p)

    def member(self, f, val, p):
        if f["kind"] == "packed":
            if isinstance(val, Obj) and "data" in val.d:
                bi = self.pop_blob(f)
                if bi is None or val.d["data"] != "":
                    raise Fail("splice.layout_drift")
                self.entries.append(("envelope", f, p, val, bi))
                return
            self.entries.append(("null" if val is None else "bad", f, p, val, None))
            self.walk(val, p)
            return
        if isinstance(val, Obj) and not val.pairs:
            ii = self.pop_ints(f)
            if ii is None:
                raise Fail("intarray.syntax")
            self.entries.append(("ints", f, p, val, ii))
        elif isinstance(val, list):
            self.entries.append(("ints_doc", f, p, val, None))
        else:
            self.walk(val, p)

    def orphans(self):
        for i, b in enumerate(self.blobs):
            if i not in self.used or b["escaped"]:
                raise Fail("splice.orphan_blob")
        if len(self.used_ints) != len(self.arrays):
            raise Fail("splice.orphan_blob")


class Obj:
    """A JSON object that keeps its members' order and duplicates."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.d = dict(pairs)
        if len(self.d) != len(pairs):
            # syncroll fails closed where the reference's parser keeps the last silently.
            raise Fail("json.duplicate_key")


def stats(arr, dtype):
    """check-body's statistics (docs/reference/check-body.md "--json output"): exact integer min/max, bools as
    0/1 with a count of non-canonical bytes, floats over the finite values with NaN/inf counts;
    min/max null when there is no value to take them over."""
    out = {}
    flat = arr.reshape(-1)
    if arr.dtype.kind == "f":
        fin = flat[np.isfinite(flat)]
        out["min"] = float(fin.min()) if fin.size else None
        out["max"] = float(fin.max()) if fin.size else None
        out["nan"] = int(np.isnan(flat).sum())
        out["posinf"] = int(np.isposinf(flat).sum())
        out["neginf"] = int(np.isneginf(flat).sum())
        return out, None
    if dtype == "bool":
        raw = flat.view(np.uint8)
        out["min"] = int((raw != 0).min()) if raw.size else None
        out["max"] = int((raw != 0).max()) if raw.size else None
        out["noncanonical_bool"] = int((raw > 1).sum())
        return out, None
    lo = int(flat.min()) if flat.size else None
    hi = int(flat.max()) if flat.size else None
    out["min"], out["max"] = lo, hi
    canon = None
    if (lo or 0) >= 0:
        top = hi or 0
        want = "uint8" if top < 256 else "int16" if top < 32768 else "int32" if top < 2**31 else ""
        canon = want == dtype
    return out, canon


def envelope(f, val, blob):
    d = val.d
    if not isinstance(d.get("shape"), list) or not isinstance(d.get("dtype"), str):
        raise Fail("envelope.invalid")
    data, noncanon = b64decode_strict(blob["chars"])
    dtype = d["dtype"]
    if dtype not in f["dtypes"]:
        raise Fail("envelope.dtype")
    shape = d["shape"]
    if len(shape) != f["ndim"] or any(
            isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in shape):
        raise Fail("envelope.shape")
    arr = np.frombuffer(data, dtype=np.dtype(DTYPES[dtype])) if dtype in DTYPES else None
    if arr is None:
        raise Fail("envelope.dtype")
    try:
        if 0 in shape:
            np.empty(0, dtype=arr.dtype).reshape(shape)
    except ValueError:  # numpy: "array is too big", even for an empty array
        raise Fail("envelope.shape_overflow")
    numel = 1
    for x in shape:
        numel *= x
    if numel * arr.itemsize >= 2**63:
        raise Fail("envelope.shape_overflow")
    if arr.size != numel or len(data) != numel * arr.itemsize:
        raise Fail("envelope.byte_count")
    arr = arr.reshape(shape)
    st, canon = stats(arr, dtype)
    if f["canonical"]:
        if arr.size and st["min"] < 0:
            raise Fail("routes.negative")
        if canon is False:
            raise Fail("envelope.non_canonical")
    side = {k: v for k, v in val.pairs if k not in ("data", "shape", "dtype")}
    e = {"kind": "envelope", "shape": list(shape), "dtype": dtype, "bytes": len(data),
         "canonical": canon, **st, "spliced": True, "sidecar": plain(side)}
    if noncanon:  # the character before the padding holds the dropped bits
        e["b64_noncanonical"] = blob["at"] + len(blob["chars"].rstrip(b"=")) - 1
    e["_array"] = arr
    return e


def declared(f, arr):
    """A definition's "shape" (fixed lengths; "T" and "*" free here), "range" and "finite"."""
    want = f.get("shape")
    if want is not None and (arr.ndim != len(want) or any(
            isinstance(w, int) and w != n for w, n in zip(want, arr.shape))):
        raise Fail("fields.shape_mismatch")
    floats = arr.dtype.kind == "f"
    v = arr.astype(np.float64) if floats else arr.astype(object)
    if floats and (f.get("finite") or f.get("range")) and not np.all(np.isfinite(v)):
        raise Fail("fields.out_of_range")
    lo_hi = f.get("range")
    if lo_hi and arr.size and (min(v.flat) < lo_hi[0] or max(v.flat) > lo_hi[1]):
        raise Fail("fields.out_of_range")


def unregistered(node, path, registered, out):
    """Paths of envelope-shaped objects no entry read, in document order (not descended into)."""
    if isinstance(node, Obj):
        d = node.d
        if (isinstance(d.get("data"), str) and isinstance(d.get("shape"), list)
                and isinstance(d.get("dtype"), str) and path not in registered):
            out.append(path or "$")
            return
        for key, val in node.pairs:
            unregistered(val, f"{path}.{key}" if path else key, registered, out)
    elif isinstance(node, list):
        for i, x in enumerate(node):
            unregistered(x, f"{path}[{i}]", registered, out)


def plain(v):
    if isinstance(v, Obj):
        return {k: plain(x) for k, x in v.pairs}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def int_entry(vals, f, spliced):
    wide = f["min"] < -2**31 or f["max"] > 2**31 - 1
    arr = np.array(vals, dtype=np.int64 if wide else np.int32)
    return {"kind": "int_array", "shape": [len(vals)], "dtype": "int64" if wide else "int32",
            "bytes": int(arr.nbytes), "canonical": None,
            "min": int(arr.min()) if arr.size else None,
            "max": int(arr.max()) if arr.size else None, "spliced": spliced}


def depth(text):
    """Deepest nesting of arrays and objects outside strings."""
    d = top = 0
    in_str = esc = False
    for c in text:
        if in_str:
            esc, in_str = (False, in_str) if esc else (c == 0x5C, c != 0x22)
        elif c == 0x22:
            in_str = True
        elif c in b"[{":
            d += 1
            top = max(top, d)
        elif c in b"]}":
            d -= 1
    return top


def splice(raw, reg):
    text, blobs, arrays = scan(raw, reg)
    if depth(text) > 1000:  # the reference crashes (RecursionError); syncroll names it
        raise Fail("json.too_deep")
    try:
        doc = json.loads(text.decode("utf-8"), object_pairs_hook=Obj)
    except json.JSONDecodeError as e:
        raise Fail("splice.truncated" if e.pos >= len(text.rstrip()) else "splice.invalid_json")
    w = Walker(reg, blobs, arrays)
    w.walk(doc, "")
    w.orphans()
    entries = []
    for kind, f, p, val, ref in w.entries:
        e = {"path": p, "field": f["name"]}
        if kind == "null":
            if not f["nullable"]:
                raise Fail("envelope.not_object")
            e["kind"] = "null"
        elif kind == "bad":
            raise Fail("envelope.not_object" if not isinstance(val, Obj) else "envelope.invalid")
        elif kind == "envelope":
            e.update(envelope(f, val, blobs[ref]))
        elif kind == "ints":
            e.update(int_entry(parse_ints(arrays[ref][1], f), f, True))
        else:
            if any(isinstance(x, bool) or not isinstance(x, int) for x in val):
                raise Fail("intarray.syntax")
            e.update(int_entry(val, f, False))
        entries.append(e)
    for e, (kind, f, *_rest) in zip(entries, w.entries):
        arr = e.pop("_array", None)
        if arr is not None:
            declared(f, arr)
    out = {"valid": True, "body_bytes": len(raw), "blobs": len(blobs),
           "int_arrays": len(arrays), "entries": entries}
    loose = []
    unregistered(doc, "", {e["path"] for e in entries if e.get("kind") == "envelope"}, loose)
    if loose:  # check-body --json names them (at most 16) and counts them
        out["unregistered_envelopes"] = loose[:16]
        out["unregistered_envelopes_total"] = len(loose)
    return out


def same(a, b):
    """Equal JSON values, numbers compared by value (1 == 1.0), key order ignored."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def dialect_routes(raw, dialect):
    """{path: numpy array} of the routes, decoded as the dialect's clients do."""
    doc = json.loads(raw)
    if dialect == "vllm":
        s = doc["choices"][0]["routed_experts"]
        import io
        return {"choices[0].routed_experts":
                np.load(io.BytesIO(base64.b64decode(s, validate=True)), allow_pickle=False)}
    if dialect == "vllm-json":
        return {"choices[0].routed_experts": np.array(doc["choices"][0]["routed_experts"]),
                "prompt_routed_experts": np.array(doc["prompt_routed_experts"])}
    if dialect == "sglang":
        # /generate: meta_info; the OpenAI routes: the response-level sglext object.
        where = "sglext" if "sglext" in doc else "meta_info"
        s = doc[where]["routed_experts"]
        return {where + ".routed_experts":
                np.frombuffer(base64.b64decode(s, validate=True), np.int32)}
    if dialect == "dynamo":
        o = doc["nvext"]["engine_data"]["routed_experts"]
        a = np.frombuffer(base64.b64decode(o["data"], validate=True), o["dtype"])
        return {"nvext.engine_data.routed_experts": a.reshape(o["shape"])}
    if dialect == "nemo-rl":
        tag, dt, shape, b64 = doc["choices"][0]["message"]["routed_experts"].split(":", 3)
        assert tag == "nrlre1"
        a = np.frombuffer(base64.b64decode(b64, validate=True), np.dtype(dt).newbyteorder("<"))
        return {"choices[0].message.routed_experts":
                a.reshape([int(x) for x in shape.split("x")])}
    raise ValueError(dialect)


def check_dialect(name, base, theirs, want_dialect):
    """None when check-body's reading of a dialect body agrees with the stack's decode."""
    if not theirs["valid"]:
        want = open(base + ".expected").read().split("\n")[1]
        got = "error " + theirs["error"]["name"]
        return None if got == want else f"check-body says {got}, {base}.expected {want}"
    if theirs["dialect"] != want_dialect:
        return f"check-body read it as {theirs['dialect']}, not {want_dialect}"
    routes = dialect_routes(open(base + ".body", "rb").read(), want_dialect)
    entries = {e["path"]: e for e in theirs["entries"]}
    for path, a in routes.items():
        e = entries.get(path)
        if e is None:
            return f"check-body has no entry {path}"
        # vllm-json's lists carry no dtype: syncroll reads them as int32.
        dtype = "int32" if want_dialect == "vllm-json" else str(a.dtype)
        mine = {"shape": list(a.shape), "dtype": dtype, "bytes": int(a.size) * np.dtype(dtype).itemsize,
                "min": int(a.min()) if a.size else None, "max": int(a.max()) if a.size else None}
        got = {k: e.get(k) for k in mine}
        if mine != got:
            return f"{path}: numpy {mine}, syncroll {got}"
    return None


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: golden_numpy.py SYNCROLL SOURCE_DIR")
    syncroll, src = sys.argv[1], sys.argv[2]
    bodies_dir = os.path.join(src, "fixtures", "bodies")
    names = sorted(n[:-5] for n in os.listdir(bodies_dir) if n.endswith(".body"))
    failed = 0
    for name in names:
        base = os.path.join(bodies_dir, name)
        args = open(base + ".args").read().strip() if os.path.exists(base + ".args") else ""
        raw = open(base + ".body", "rb").read()
        if name.startswith("dialect_"):
            run = subprocess.run([syncroll, "check-body", "--json", *args.split(), base + ".body"],
                                 cwd=src, capture_output=True, text=True)
            theirs = json.loads(run.stdout)
            want = name[len("dialect_"):]
            want = next((d for d in ("vllm-json", "vllm", "sglang", "dynamo", "nemo-rl")
                         if want == d or want.startswith(d + "_")), "ambiguous")
            why = check_dialect(name, base, theirs, want)
            if why:
                failed += 1
            ok_text = ("the stack decodes what syncroll reads" if theirs["valid"]
                       else "refused with " + theirs["error"]["name"] + " as .expected says")
            print(f"{'FAIL' if why else 'ok'}: {name} ({why or ok_text})")
            continue
        try:
            mine = splice(raw, load_registry(args, src))
        except Fail as e:
            mine = {"valid": False, "error": e.name}
        run = subprocess.run([syncroll, "check-body", "--json", *args.split(), base + ".body"],
                             cwd=src, capture_output=True, text=True)
        theirs = json.loads(run.stdout)
        if not theirs["valid"]:
            theirs = {"valid": False, "error": theirs["error"]["name"]}
        elif theirs.pop("dialect") != "skyrl" or theirs.pop("dialect_source") == "given":
            theirs["dialect"] = "not skyrl"  # a skyrl golden body read as another dialect
        if same(mine, theirs):
            print(f"ok: {name} ({'valid' if mine['valid'] else mine['error']})")
        else:
            failed += 1
            print(f"FAIL: {name}\n  numpy:    {json.dumps(mine)}\n  syncroll: {json.dumps(theirs)}")
    print(f"{len(names) - failed} of {len(names)} golden bodies agree")
    return 1 if failed or not names else 0


if __name__ == "__main__":
    sys.exit(main())
