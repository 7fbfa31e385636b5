#!/usr/bin/env python3
"""The engine's dialects, decoded the way each stack's clients decode them (ctest cli.dialects_numpy).

For every dialect of harness/spec/dialect.h, `syncroll serve --dialect D` is started on an engine
config (real child processes, real HTTP over loopback), a generate request is POSTed in the
dialect's own request shape (urllib), and the routes are decoded as that stack's clients do:

  vllm       np.load(io.BytesIO(base64.b64decode(s)), allow_pickle=False)
  vllm-json  np.array(prompt_routed_experts) and np.array(choices[0].routed_experts)
  sglang     np.frombuffer(base64.b64decode(s), np.int32).reshape(-1, L, K), from meta_info
             (/generate) and from sglext (/v1/completions)
  dynamo     np.frombuffer(base64.b64decode(o["data"]), o["dtype"]).reshape(o["shape"])
  nemo-rl    s.split(":", 3) -> nrlre1, dtype, SxLxK, base64 (validate=True) -> np.frombuffer

and compared exactly with the oracle's rows, which `serve_oracle_check --rows` recomputes from
the prompt and the generated tokens (the rows rule of each dialect: scenarios/FORMAT.md §5b).
Two models run: 16 experts (vllm uint8, nemo-rl int8) and 300 (vllm uint16, nemo-rl int16).
The first reply of each dialect (16 experts) must equal fixtures/dialects/<dialect>.body byte
for byte (`--update` rewrites those files), and vllm's decoded bytes must be exactly what
np.save writes for the array. A model fault (routes_all_zero) acts in a dialect given by the
config's `dialect` key. Bad dialect names are named errors.

Usage: dialects_numpy.py SYNCROLL ORACLE_CHECK SOURCE_DIR [--update]. Exit 0 all hold, 1 a
failure, 77 (ctest's skip code) when numpy cannot be imported.
"""
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: numpy is not available to {sys.executable} ({e}); "
          "install python3-numpy (make deps)")
    sys.exit(77)

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6]
MAX_TOKENS = 6
START = 3
L, K = 3, 4


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def oracle(oc, cfg, lo, hi, tokens):
    out = subprocess.run([oc, "--rows", cfg, str(lo), str(hi)] + [str(t) for t in tokens],
                         capture_output=True, text=True, check=False)
    check(out.returncode == 0, f"serve_oracle_check --rows: {out.stderr.strip()}")
    return np.array(json.loads(out.stdout)["rows"], dtype=np.int64).reshape(hi - lo, L, K)


def same(got, want, what):
    check(got.shape == want.shape, f"{what}: shape {got.shape}, the oracle's {want.shape}")
    diff = np.argwhere(got.astype(np.int64) != want)
    check(len(diff) == 0, f"{what}: differs from the oracle first at {diff[:1].tolist()}")


# ---- one function per dialect: request, then decode and compare; returns the body bytes ----

def vllm(url, oc, cfg, experts):
    bodies = []
    for path, req in (("/inference/v1/generate",
                       {"token_ids": PROMPT, "sampling_params": {
                           "max_tokens": MAX_TOKENS, "routed_experts_prompt_start": START}}),
                      ("/v1/completions",
                       {"model": "default", "prompt": PROMPT, "max_tokens": MAX_TOKENS,
                        "routed_experts_prompt_start": START, "return_token_ids": True})):
        raw = post(url + path, req)
        d = json.loads(raw)
        ch = d["choices"][0]
        blob = base64.b64decode(ch["routed_experts"])
        arr = np.load(io.BytesIO(blob), allow_pickle=False)
        saved = io.BytesIO()
        np.save(saved, arr)  # vLLM calls np.save with its default arguments
        check(saved.getvalue() == blob, f"vllm {path}: the bytes are not what np.save writes")
        want_dt = np.uint8 if experts <= 256 else np.uint16
        check(arr.dtype == want_dt, f"vllm {path}: dtype {arr.dtype}, want {np.dtype(want_dt)}")
        toks = PROMPT + ch["token_ids"]
        n = len(toks)
        check(arr.shape == (n - 1 - START, L, K), f"vllm {path}: shape {arr.shape}")
        same(arr, oracle(oc, cfg, START, n - 1, toks), f"vllm {path}")
        bodies.append(raw)
    # vLLM's OpenAI routes return the sampled token ids only when return_token_ids is set.
    d = json.loads(post(url + "/v1/completions", {"prompt": PROMPT, "max_tokens": 2}))
    check("token_ids" not in d["choices"][0], "vllm /v1/completions: token_ids without the switch")
    # Their logprobs are OpenAI's CompletionLogProbs, not the chat form's content list.
    d = json.loads(post(url + "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS,
                                                  "logprobs": 0, "return_token_ids": True}))
    ch = d["choices"][0]
    lp = ch["logprobs"]
    g = len(ch["token_ids"])
    check(sorted(lp) == ["text_offset", "token_logprobs", "tokens", "top_logprobs"],
          f"vllm /v1/completions logprobs keys {sorted(lp)}")
    check(len(lp["token_logprobs"]) == g and all(isinstance(x, float) and x <= 0
                                                 for x in lp["token_logprobs"]),
          f"vllm /v1/completions token_logprobs {lp['token_logprobs']}")
    check(lp["tokens"] == [f"token_id:{t}" for t in ch["token_ids"]] and
          lp["text_offset"] == [0] * g and lp["top_logprobs"] == [None] * g,
          f"vllm /v1/completions logprobs {lp}")
    return bodies[0]


def vllm_json(url, oc, cfg, experts):
    raw = post(url + "/v1/completions", {"prompt": PROMPT, "max_tokens": MAX_TOKENS,
                                         "return_token_ids": True})
    d = json.loads(raw)
    ch = d["choices"][0]
    prompt = np.array(d["prompt_routed_experts"], dtype=np.int64)
    gen = np.array(ch["routed_experts"], dtype=np.int64)
    toks = PROMPT + ch["token_ids"]
    check(prompt.shape == (len(PROMPT), L, K), f"vllm-json prompt shape {prompt.shape}")
    check(gen.shape == (len(ch["token_ids"]), L, K), f"vllm-json gen shape {gen.shape}")
    same(np.concatenate([prompt, gen]), oracle(oc, cfg, 0, len(toks), toks), "vllm-json P+G")
    return raw


def sglang(url, oc, cfg, experts):
    raw = post(url + "/generate", {"input_ids": PROMPT, "return_routed_experts": True,
                                   "routed_experts_start_len": START,
                                   "sampling_params": {"max_new_tokens": MAX_TOKENS}})
    d = json.loads(raw)
    mi = d["meta_info"]
    arr = np.frombuffer(base64.b64decode(mi["routed_experts"]), np.int32).reshape(-1, L, K)
    toks = PROMPT + d["output_ids"]
    same(arr, oracle(oc, cfg, START, len(toks) - 1, toks), "sglang")
    check(mi["prompt_tokens"] == len(PROMPT), "sglang prompt_tokens")
    # Without return_routed_experts the key is left out, as SGLang leaves it out.
    d2 = json.loads(post(url + "/generate", {"input_ids": PROMPT,
                                             "sampling_params": {"max_new_tokens": 2}}))
    check("routed_experts" not in d2["meta_info"], "sglang: routes without the switch")
    # SGLang's OpenAI completions route: the same rows in the response-level sglext object
    # (CompletionResponse.sglext.routed_experts), token ids with return_token_ids.
    d3 = json.loads(post(url + "/v1/completions", {
        "model": "default", "prompt": PROMPT, "max_tokens": MAX_TOKENS,
        "return_routed_experts": True, "routed_experts_start_len": START,
        "return_token_ids": True}))
    ch = d3["choices"][0]
    arr3 = np.frombuffer(base64.b64decode(d3["sglext"]["routed_experts"]),
                         np.int32).reshape(-1, L, K)
    toks3 = PROMPT + ch["token_ids"]
    same(arr3, oracle(oc, cfg, START, len(toks3) - 1, toks3), "sglang /v1/completions")
    check("routed_experts" not in ch, "sglang /v1/completions: routes inside the choice")
    d4 = json.loads(post(url + "/v1/completions", {"prompt": PROMPT, "max_tokens": 2}))
    check("sglext" not in d4 and "token_ids" not in d4["choices"][0],
          "sglang /v1/completions: sglext or token_ids without their switches")
    return raw


def dynamo(url, oc, cfg, experts):
    raw = post(url + "/v1/completions", {"model": "default", "prompt": PROMPT,
                                         "max_tokens": MAX_TOKENS,
                                         "routed_experts_prompt_start": START,
                                         "nvext": {"extra_fields": ["engine_data"]}})
    d = json.loads(raw)
    o = d["nvext"]["engine_data"]["routed_experts"]
    check(list(o.keys()) == ["data", "shape", "start", "dtype"], f"dynamo keys {list(o)}")
    check(o["start"] == START, f"dynamo start {o['start']}")
    check(o["dtype"] == ("uint8" if experts <= 256 else "uint16"), f"dynamo dtype {o['dtype']}")
    arr = np.frombuffer(base64.b64decode(o["data"]), dtype=o["dtype"]).reshape(o["shape"])
    toks = PROMPT + d["choices"][0]["token_ids"]
    same(arr, oracle(oc, cfg, START, len(toks) - 1, toks), "dynamo")
    return raw


def nemo_rl(url, oc, cfg, experts):
    raw = post(url + "/v1/chat/completions",
               {"model": "default", "messages": [{"role": "user", "content": "x"}],
                "prompt_token_ids": PROMPT, "max_tokens": MAX_TOKENS})
    d = json.loads(raw)
    ch = d["choices"][0]
    magic, dtype, shape, b64 = ch["message"]["routed_experts"].split(":", 3)
    check(magic == "nrlre1", f"nemo-rl magic {magic}")
    check(dtype == ("int8" if experts <= 128 else "int16"), f"nemo-rl dtype {dtype}")
    dims = [int(x) for x in shape.split("x")]
    arr = np.frombuffer(base64.b64decode(b64, validate=True), dtype=np.dtype(dtype)).reshape(dims)
    toks = PROMPT + ch["token_ids"]
    check(arr.shape[0] == len(toks), f"nemo-rl rows {arr.shape[0]}, want P+G = {len(toks)}")
    same(arr[:-1], oracle(oc, cfg, 0, len(toks) - 1, toks), "nemo-rl rows [0, P+G-1)")
    same(arr[-1], np.tile(np.arange(K, dtype=np.int64), (L, 1)), "nemo-rl filler row")
    return raw


DIALECTS = {"vllm": vllm, "vllm-json": vllm_json, "sglang": sglang, "dynamo": dynamo,
            "nemo-rl": nemo_rl}


def model_fault(syncroll, oc, tmp):
    """A model fault acts on the same oracle rows in a dialect: routes_all_zero under sglang."""
    path = os.path.join(tmp, "fault.json")
    with open(path, "w") as f:
        json.dump({"count": 1, "seed": 5, "fields": ["routed_experts"], "dialect": "sglang",
                   "model": {"vocab": 1000, "layers": L, "experts": 16, "topk": K, "eos_id": -1},
                   "faults": [{"kind": "routes_all_zero"}]}, f)
    p, url = serve(syncroll, [path])
    try:
        d = json.loads(post(url + "/generate", {"input_ids": PROMPT, "return_routed_experts": True,
                                                "sampling_params": {"max_new_tokens": 4}}))
        arr = np.frombuffer(base64.b64decode(d["meta_info"]["routed_experts"]), np.int32)
        check(arr.size == (len(PROMPT) + 3) * L * K and not arr.any(),
              f"routes_all_zero under sglang: {arr.size} values, max {arr.max(initial=0)}")
        check(d["syncroll"].get("faults") == ["routes_all_zero"], f"faults: {d['syncroll']}")
    finally:
        stop(p)


def serve(syncroll, args):
    p = subprocess.Popen([syncroll, "serve", "--stop-grace", "5"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line:
        err = p.stderr.read()
        p.wait()
        raise Fail(f"serve {' '.join(args)} printed no line: {err.strip()}")
    return p, json.loads(line)["engines"][0]["url"]


def stop(p):
    p.terminate()
    p.wait(timeout=30)
    check(p.returncode == 0, f"serve exited {p.returncode} after SIGTERM")


def bad_names(syncroll, tmp, cfg_text):
    out = subprocess.run([syncroll, "serve", "--dialect", "sgl", cfg_text], capture_output=True,
                         text=True, check=False)
    check(out.returncode == 2 and "usage.invalid_argument: --dialect 'sgl' is not one of"
          in out.stderr, f"serve --dialect sgl: {out.returncode} {out.stderr.strip()}")
    # The same named error from every command that takes --dialect.
    for cmd in (["engine", "--config", cfg_text, "--dialect", "sgl"],
                ["check-body", "--dialect", "sgl", cfg_text],
                ["validate-field", "--dialect", "sgl", cfg_text]):
        out = subprocess.run([syncroll, *cmd], capture_output=True, text=True, check=False)
        check(out.returncode == 2 and f"syncroll {cmd[0]}: usage.invalid_argument: --dialect "
              "'sgl' is not one of skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl" in out.stderr,
              f"{cmd[0]} --dialect sgl: {out.returncode} {out.stderr.strip()}")
    out = subprocess.run([syncroll, "serve", "--port", "0", cfg_text], capture_output=True,
                         text=True, check=False)
    check(out.returncode == 2 and "unknown or incomplete option '--port'" in out.stderr,
          f"serve --port: {out.returncode} {out.stderr.strip()}")
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"dialect": "sgl"}\n')
    out = subprocess.run([syncroll, "serve", bad], capture_output=True, text=True, check=False)
    check(out.returncode != 0 and "engine.invalid_config" in out.stderr and
          "dialect must be one of" in out.stderr, f"dialect \"sgl\": {out.stderr.strip()}")


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    syncroll, oc, src = sys.argv[1:4]
    update = "--update" in sys.argv[4:]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        cfgs = {}
        for experts in (16, 300):
            path = os.path.join(tmp, f"e{experts}.json")
            with open(path, "w") as f:
                json.dump({"count": 1, "seed": 5, "fields": ["routed_experts"],
                           "model": {"vocab": 1000, "layers": L, "experts": experts,
                                     "topk": K, "eos_id": -1}}, f)
            cfgs[experts] = path
        try:
            bad_names(syncroll, tmp, cfgs[16])
            print("ok: bad dialect names are named errors")
        except Fail as e:
            print(f"FAIL: {e}")
            failed += 1
        try:
            model_fault(syncroll, oc, tmp)
            print("ok: a model fault under sglang (the dialect's config key, routes_all_zero)")
        except (Fail, urllib.error.URLError, KeyError, ValueError) as e:
            print(f"FAIL: model fault under sglang: {e}")
            failed += 1
        for name, fn in DIALECTS.items():
            for experts, cfg in cfgs.items():
                p = None
                try:
                    p, url = serve(syncroll, ["--dialect", name, cfg])
                    raw = fn(url, oc, cfg, experts)
                    stop(p)
                    p = None
                    if experts == 16:
                        golden = os.path.join(src, "fixtures", "dialects", name + ".body")
                        if update:
                            with open(golden, "wb") as f:
                                f.write(raw)
                        with open(golden, "rb") as f:
                            check(f.read() == raw, f"{name}: the reply differs from {golden}")
                    print(f"ok: {name}, {experts} experts")
                except (Fail, urllib.error.URLError, KeyError, ValueError) as e:
                    print(f"FAIL: {name}, {experts} experts: {type(e).__name__}: {e}")
                    failed += 1
                finally:
                    if p:
                        p.kill()
                        p.wait()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
