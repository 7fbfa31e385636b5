#!/usr/bin/env python3
"""Extra packed fields in every engine dialect, decoded with numpy (ctest cli.fields_numpy).

An engine config emits two fields from their definitions beside the routes (lib/sr_gen_extra.h):
side_ids (int16, 3-D, token rows) and, where the wire carries floats, tok_scores (float32, 1-D);
and two fields with a declared shape and range, topk_logits (float16 [T, 8] in [-2, 2]) and
topk_ids (int32 [T, 8] in [0, 255]), whose skyrl arrays must have that shape and those values.
For every dialect of harness/spec/dialect.h, `syncroll serve` runs that config with the
dialect's `dialect` key, a generate request is POSTed in the dialect's request shape, and each
field is decoded the way that stack's clients decode its routes (scenarios/FORMAT.md 5b):

  skyrl      choices[0].f: np.frombuffer(b64decode(o["data"]), o["dtype"]).reshape(o["shape"])
  vllm       choices[0].f: np.load(io.BytesIO(b64decode(s)), allow_pickle=False)
  vllm-json  choices[0].f: np.array(lists)
  sglang     meta_info.f: np.frombuffer(b64decode(s), <the field's one dtype>) (flat)
  dynamo     nvext.engine_data.f: as skyrl
  nemo-rl    choices[0].message.f: "nrlre1:<dtype>:<SxLxK>:<base64>"

Every dialect must give the values skyrl gives for the same request (same seed, prompt and
generated tokens). A dialect that cannot carry a field (sglang: one dtype only is fine here;
nemo-rl: 3-D integers only; vllm-json: integers only) refuses it: the config is
engine.invalid_config naming dialect.field_unsupported.

Usage: fields_numpy.py SYNCROLL. Exit 0 all hold, 1 a failure, 77 when numpy is missing.
"""
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: numpy is not available to {sys.executable} ({e}); install python3-numpy")
    sys.exit(77)

SIDE = {"name": "side_ids", "dtypes": ["int16"], "ndim": 3, "token_rows": True}
SCORES = {"name": "tok_scores", "dtypes": ["float32"], "ndim": 1, "token_rows": True}
# Declared shapes and ranges (lib/sr_fields.h "shape", "range"): the engine emits [T, 8] with
# every value in the range, and every wire that carries the field decodes to exactly that.
TOPK = {"name": "topk_logits", "dtypes": ["float16"], "shape": ["T", 8], "range": [-2, 2]}
TOPK_IDS = {"name": "topk_ids", "dtypes": ["int32"], "shape": ["T", 8], "range": [0, 255]}
FLOATS = {"skyrl", "vllm", "dynamo"}  # the wires that carry a float field of two dtypes
PROMPT = [5, 6, 7, 8]


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def request(dialect):
    """(path, body) of the dialect's generate request: 4 tokens, routes from row 0."""
    native = {"sampling_params": {"max_tokens": 4, "ignore_eos": True,
                                  "routed_experts_prompt_start": 0},
              "model": "default", "token_ids": PROMPT}
    return {
        "skyrl": ("/skyrl/v1/generate", native),
        "vllm": ("/inference/v1/generate", native),
        "vllm-json": ("/inference/v1/generate",
                      {"sampling_params": {"max_tokens": 4, "ignore_eos": True},
                       "model": "default", "token_ids": PROMPT}),
        "sglang": ("/generate", {"sampling_params": {"max_new_tokens": 4, "ignore_eos": True},
                                 "routed_experts_start_len": 0, "return_routed_experts": True,
                                 "input_ids": PROMPT}),
        "dynamo": ("/v1/completions", {"max_tokens": 4, "ignore_eos": True,
                                       "routed_experts_prompt_start": 0, "model": "default",
                                       "prompt": PROMPT}),
        "nemo-rl": ("/v1/chat/completions", {"max_tokens": 4, "ignore_eos": True,
                                             "model": "default", "prompt_token_ids": PROMPT}),
    }[dialect]


def envelope(o):
    return np.frombuffer(base64.b64decode(o["data"], validate=True),
                         o["dtype"]).reshape(o["shape"])


def decode(dialect, body, name, dtype):
    if dialect == "skyrl":
        return envelope(body["choices"][0][name])
    if dialect == "vllm":
        s = body["choices"][0][name]
        return np.load(io.BytesIO(base64.b64decode(s, validate=True)), allow_pickle=False)
    if dialect == "vllm-json":
        return np.array(body["choices"][0][name])
    if dialect == "sglang":
        return np.frombuffer(base64.b64decode(body["meta_info"][name], validate=True), dtype)
    if dialect == "dynamo":
        return envelope(body["nvext"]["engine_data"][name])
    tag, dt, shape, b64 = body["choices"][0]["message"][name].split(":", 3)
    check(tag == "nrlre1", f"nemo-rl: {name} does not start with nrlre1")
    return np.frombuffer(base64.b64decode(b64, validate=True),
                         dt).reshape([int(x) for x in shape.split("x")])


def serve(syncroll, cfg):
    p = subprocess.Popen([syncroll, "serve", "--stop-grace", "5", cfg],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line:
        err = p.stderr.read()
        p.wait()
        raise Fail(f"serve {cfg} printed no line: {err.strip()}")
    return p, json.loads(line)["engines"][0]["url"]


def write_config(tmp, dialect, fields):
    path = os.path.join(tmp, f"{dialect}.json")
    with open(path, "w") as f:
        json.dump({"count": 1, "seed": 5, "dialect": dialect,
                   "model": {"vocab": 1000, "layers": 2, "experts": 16, "topk": 4},
                   "fields": ["routed_experts"] + fields}, f)
    return path


def one_dialect(syncroll, tmp, dialect):
    fields = [SIDE] + ([SCORES] if dialect in FLOATS else [])
    fields += [TOPK] if dialect in FLOATS | {"sglang"} else []  # one dtype: sglang's raw too
    fields += [TOPK_IDS] if dialect != "nemo-rl" else []  # nrlre1 strings are 3-D only
    p, url = serve(syncroll, write_config(tmp, dialect, fields))
    try:
        path, req = request(dialect)
        body = post(url + path, req)
        return {f["name"]: decode(dialect, body, f["name"], f["dtypes"][0]) for f in fields}
    finally:
        p.terminate()
        p.wait(timeout=30)


def refused(syncroll, tmp, dialect, field):
    cfg = write_config(tmp, dialect, [field])
    out = subprocess.run([syncroll, "serve", cfg], capture_output=True, text=True, check=False)
    check(out.returncode != 0 and "engine.invalid_config" in out.stderr and
          "dialect.field_unsupported" in out.stderr and field["name"] in out.stderr,
          f"{dialect} with {field['name']}: exit {out.returncode}: {out.stderr.strip()}")


def main():
    syncroll = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            want = one_dialect(syncroll, tmp, "skyrl")
            check(want["side_ids"].dtype == np.int16 and want["side_ids"].shape[0] == 4,
                  f"skyrl side_ids: {want['side_ids'].dtype} {want['side_ids'].shape}")
            t, ids = want["topk_logits"], want["topk_ids"]
            check(t.dtype == np.float16 and t.shape == (4, 8) and np.all(np.isfinite(t)) and
                  t.min() >= -2 and t.max() <= 2,
                  f"skyrl topk_logits: {t.dtype}{list(t.shape)} in [{t.min()}, {t.max()}], "
                  "declared float16 [T, 8] in [-2, 2] (T = 4 tokens)")
            check(ids.dtype == np.int32 and ids.shape == (4, 8) and ids.min() >= 0 and
                  ids.max() <= 255 and len(np.unique(ids)) > 1,
                  f"skyrl topk_ids: {ids.dtype}{list(ids.shape)} in [{ids.min()}, {ids.max()}], "
                  "declared int32 [T, 8] in [0, 255]")
            print("ok: skyrl emits topk_logits float16 [4, 8] in [-2, 2] and topk_ids int32 "
                  "[4, 8] in [0, 255] as declared")
        except Fail as e:
            print(f"FAIL: skyrl: {e}")
            return 1
        for d in ["vllm", "vllm-json", "sglang", "dynamo", "nemo-rl"]:
            try:
                got = one_dialect(syncroll, tmp, d)
                for name, arr in got.items():
                    ref = want[name]
                    if d == "sglang":  # flat: the reader reshapes
                        check(arr.size == ref.size, f"{name}: {arr.size} flat elements, "
                              f"skyrl's {list(ref.shape)} holds {ref.size}")
                        arr = arr.reshape(ref.shape)
                    check(arr.shape == ref.shape and np.array_equal(arr, ref) and
                          (d == "vllm-json" or arr.dtype == ref.dtype),
                          f"{name}: {arr.dtype}{list(arr.shape)} is not skyrl's "
                          f"{ref.dtype}{list(ref.shape)}")
                print(f"ok: {d} carries {', '.join(sorted(got))} with skyrl's values")
            except Fail as e:
                print(f"FAIL: {d}: {e}")
                failures += 1
        for d, field in [("nemo-rl", SCORES), ("vllm-json", SCORES),
                         ("sglang", dict(SIDE, dtypes=["int16", "int32"]))]:
            try:
                refused(syncroll, tmp, d, field)
                print(f"ok: {d} refuses {field['name']} {field['dtypes']} "
                      "(dialect.field_unsupported)")
            except Fail as e:
                print(f"FAIL: {e}")
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
