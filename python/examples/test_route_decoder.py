"""Example: test your own client's route decoding against the engine's true routes.

The decoder below stands for the one in your trainer: it reads the routed_experts envelope of a
skyrl reply into a numpy array. The test compares what it decoded with the rows the engine's
oracle gives for the same tokens (Engines.oracle_routes), on a clean engine and on one whose
route fault repeats every other output row: there the decoded rows must differ from the truth,
which no fault reaches.

Run: PYTHONPATH=python python3 -m pytest -p syncroll.pytest_plugin python/examples
"""

import base64
import json
import urllib.request

import numpy as np
import pytest

PROMPT = [5, 6, 7, 8]
START = 1


def generate(url, prompt, max_tokens, start):
    """A minimal generate client: the reply's first choice."""
    req = {"model": "default", "token_ids": prompt,
           "sampling_params": {"max_tokens": max_tokens, "ignore_eos": True,
                               "routed_experts_prompt_start": start}}
    with urllib.request.urlopen(urllib.request.Request(
            url + "/skyrl/v1/generate", data=json.dumps(req).encode(),
            headers={"Content-Type": "application/json"}), timeout=30) as resp:
        return json.loads(resp.read())["choices"][0]


def decode_routes(choice):
    """Your decoder: the envelope's base64 bytes as an array of its dtype and shape."""
    env = choice["routed_experts"]
    dtype = np.dtype(env["dtype"]).newbyteorder("<")  # the wire is little-endian
    raw = np.frombuffer(base64.b64decode(env["data"]), dtype=dtype)
    return raw.reshape(env["shape"])


def test_decoder_reads_the_true_routes(syncroll_engine):
    choice = generate(syncroll_engine.url, PROMPT, 6, START)
    truth = syncroll_engine.oracle_routes(PROMPT + choice["token_ids"], start=START)
    assert np.array_equal(decode_routes(choice), truth)


@pytest.mark.syncroll(faults=[{"kind": "duplicated_output_rows"}])
def test_a_route_fault_shows_against_the_truth(syncroll_engine):
    choice = generate(syncroll_engine.url, PROMPT, 6, START)
    truth = syncroll_engine.oracle_routes(PROMPT + choice["token_ids"], start=START)
    decoded = decode_routes(choice)
    assert decoded.shape == truth.shape and not np.array_equal(decoded, truth)
