"""Example: test your own generate client against an engine that cuts a response short.

The client below stands for the one in your trainer: it posts a generate request and retries
when the body arrives incomplete. The test asks syncroll for a mock engine whose first answer is
cut after 100 bytes while announcing its full length (a `truncate` fault with keep_length, once)
and checks that the client retried and that the routes it finally got decode to the shape the
request implies.

Run: PYTHONPATH=python python3 -m pytest -p syncroll.pytest_plugin python/examples
"""

import http.client
import json
import urllib.request

import pytest

import syncroll


def generate(url, prompt, max_tokens, attempts=3):
    """A minimal generate client with retries: returns (body bytes, attempts used)."""
    req = {"sampling_params": {"max_tokens": max_tokens, "temperature": 0},
           "model": "default", "token_ids": prompt}
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(urllib.request.Request(
                    url + "/skyrl/v1/generate", data=json.dumps(req).encode(),
                    headers={"Content-Type": "application/json"}), timeout=30) as resp:
                return resp.read(), attempt
        except (http.client.IncompleteRead, ConnectionError):
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


@pytest.mark.syncroll(faults=[{"kind": "truncate", "bytes": 100, "keep_length": True,
                                  "count": 1, "id": "cut"}])
def test_client_retries_a_cut_body(syncroll_engine):
    body, attempts = generate(syncroll_engine.url, prompt=[1, 2, 3, 4], max_tokens=5)

    assert attempts == 2                                  # the first answer was cut, once
    assert syncroll_engine.fault_counts("cut") == (2, 1)  # seen twice, fired once
    routes = syncroll.check_body(body).arrays["choices[0].routed_experts"]
    assert routes.shape[0] == 4 + 5 - 1                   # one row per token but the last
