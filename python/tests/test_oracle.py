"""Engines.oracle_routes: the engine's true route rows against what a client decodes."""

import json
import urllib.request

import numpy as np
import pytest

import syncroll

PROMPT = [5, 6, 7, 8, 9, 10]
START = 2
MODEL = {"vocab": 1000, "layers": 2, "experts": 40, "topk": 4, "eos_id": -1}


def _scenario(**engines):
    return {"id": "python-oracle", "description": "oracle routes", "seed": 3,
            "steps": [{"kind": "rollout"}], "model": MODEL, "engines": engines}


def _post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def _generate(eng, path="/skyrl/v1/generate"):
    """One generate with prompt start START; returns (the whole sequence, the reply's bytes)."""
    body = _post(eng.url, path, {
        "token_ids": PROMPT, "model": "default",
        "sampling_params": {"max_tokens": 8, "routed_experts_prompt_start": START}})
    tokens = json.loads(body)["choices"][0]["token_ids"]
    return PROMPT + tokens, body


@pytest.mark.parametrize("dialect,path", [("skyrl", "/skyrl/v1/generate"),
                                          ("vllm", "/inference/v1/generate")])
def test_oracle_routes_equal_a_clean_generate(dialect, path):
    with syncroll.serve(_scenario(), dialect=dialect) as eng:
        seq, body = _generate(eng, path)
        decoded = syncroll.check_body(body, dialect=dialect).arrays["choices[0].routed_experts"]
        truth, version = eng.oracle_routes(seq, start=START, with_version=True)
    assert truth.dtype == np.int32 and version == 0
    assert truth.shape == (len(seq) - 1 - START, 2, 4)
    assert np.array_equal(truth, decoded)


def test_oracle_routes_stay_true_under_a_route_fault():
    fault = {"kind": "duplicated_output_rows", "id": "dup"}
    with syncroll.serve(_scenario(faults=[fault])) as eng:
        seq, body = _generate(eng)
        faulty = syncroll.check_body(body).arrays["choices[0].routed_experts"]
        truth = eng.oracle_routes(seq, start=START)
        assert eng.fault_counts("dup") == (1, 1)
    with syncroll.serve(_scenario()) as clean:
        clean_seq, clean_body = _generate(clean)
        clean_routes = syncroll.check_body(clean_body).arrays["choices[0].routed_experts"]
    assert clean_seq == seq
    assert faulty.shape == truth.shape and not np.array_equal(faulty, truth)
    assert np.array_equal(truth, clean_routes)
    # The fault repeats rows: where the faulty reply differs, it holds the row before.
    differ = [i for i in range(len(truth)) if not np.array_equal(faulty[i], truth[i])]
    assert differ and all(np.array_equal(faulty[i], faulty[i - 1]) for i in differ)


def test_oracle_routes_follow_a_weight_sync():
    with syncroll.serve(_scenario()) as eng:
        seq, _ = _generate(eng)
        before, v0 = eng.oracle_routes(seq, with_version=True)
        _post(eng.url, "/update_weights", {"update_info": {"target_version": 1}})
        after, v1 = eng.oracle_routes(seq, with_version=True)
        seq1, body1 = _generate(eng)
        decoded = syncroll.check_body(body1).arrays["choices[0].routed_experts"]
        truth1 = eng.oracle_routes(seq1, start=START)
    assert (v0, v1) == (0, 1) and before.shape == after.shape == (len(seq) - 1, 2, 4)
    assert not np.array_equal(before, after)
    assert np.array_equal(truth1, decoded)


def test_oracle_routes_refusals_are_named():
    with syncroll.serve(_scenario(server={"max_body_bytes": 1024})) as eng:
        with pytest.raises(syncroll.ProtocolError) as bad_token:
            eng.oracle_routes([1, 2, 1000])
        assert bad_token.value.name == "oracle.invalid_token"
        assert "outside the model's vocabulary" in bad_token.value.message
        with pytest.raises(syncroll.ProtocolError) as bad_range:
            eng.oracle_routes([1, 2], start=3)
        assert bad_range.value.name == "engine.bad_request"
        with pytest.raises(syncroll.ResourceError) as too_large:
            eng.oracle_routes([1] * 600)
        assert too_large.value.name == "resource.limit"
        empty = eng.oracle_routes([1, 2], start=2, end=2)
        assert empty.shape == (0, 2, 4) and empty.dtype == np.int32
        # Counted per endpoint, as every route is; the 413 is refused before it is counted.
        assert eng.state()["requests"]["oracle"] == 3
