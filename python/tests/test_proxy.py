"""proxy(): traffic forwarded byte for byte, faults applied with the engine's rules, recorded."""

import http.client
import json
import os
import urllib.request

import pytest

import syncroll

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
REQ = {"sampling_params": {"max_tokens": 4}, "model": "default", "token_ids": [5, 6, 7]}


def post(url, session="s1", body=REQ):
    req = urllib.request.Request(url + "/skyrl/v1/generate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "X-Session-ID": session})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, r.read()


def test_forwards_unchanged_and_records(tmp_path):
    cap = tmp_path / "cap"
    # Two engines of the same scenario and seed answer the same request with the same bytes:
    # one is asked directly, the other through the proxy.
    with syncroll.serve(seed=4) as eng, syncroll.serve(seed=4) as twin:
        direct = post(twin.url, session="s")[1]
        with syncroll.proxy(eng.url, record=cap) as px:
            status, via = post(px.url, session="s")
            assert status == 200 and via == direct
            assert px.state()["exchanges"] == 1
        xs = syncroll.check_body(via).arrays["choices[0].routed_experts"]
        assert xs.shape[0] == 3 + 4 - 1
    listing = json.loads(syncroll._binary.call(["replay", "--list", "--json", str(cap)]).stdout)
    assert listing["verified"] and len(listing["exchanges"]) == 1
    x = listing["exchanges"][0]
    assert x["session"] == "s" and x["status"] == 200 and x["complete"]
    assert x["response_bytes"] == len(via) and x["endpoint"] == "generate"


def test_truncate_in_blob_fires_on_the_second_turn_only():
    fault = {"kind": "truncate_in_blob", "keep_length": True, "turn": [2], "id": "cut"}
    with syncroll.serve() as eng, syncroll.proxy(eng.url, faults=[fault]) as px:
        assert post(px.url, session="a")[0] == 200
        with pytest.raises(http.client.IncompleteRead):
            post(px.url, session="a")
        assert post(px.url, session="b")[0] == 200  # turn 1 of another session
        assert px.fault_counts("cut") == (1, 1)
        assert eng.state()["requests"]["generate"] == 3  # every request reached the engine


def test_http_fault_is_answered_by_the_proxy():
    with syncroll.serve() as eng, \
            syncroll.proxy(eng.url, faults=[{"kind": "http_503_json", "count": 1}]) as px:
        with pytest.raises(urllib.error.HTTPError) as info:
            post(px.url)
        assert info.value.code == 503
        assert post(px.url)[0] == 200
        assert eng.state()["requests"]["generate"] == 1


def test_unreachable_upstream_is_a_named_502(tmp_path):
    with syncroll.proxy("http://127.0.0.1:9") as px:  # the discard port: nothing listens
        with pytest.raises(urllib.error.HTTPError) as info:
            post(px.url)
        assert info.value.code == 502
        assert json.loads(info.value.read())["error"]["check"] == "proxy.upstream"


def test_route_fault_rewrites_the_answer():
    """A route fault of the grammar is applied to the engine's answer: its routes come back all
    zero, in the same shape and dtype, and the rest of the answer is the engine's."""
    with syncroll.serve(seed=4) as eng, syncroll.serve(seed=4) as twin:
        direct = json.loads(post(twin.url, session="s")[1])["choices"][0]
        with syncroll.proxy(eng.url, faults=[{"kind": "routes_all_zero", "id": "z"}]) as px:
            status, via = post(px.url, session="s")
            assert px.fault_counts("z") == (1, 1)
    zeros = syncroll.check_body(via).arrays["choices[0].routed_experts"]
    assert status == 200 and zeros.shape[0] == 3 + 4 - 1 and not zeros.any()
    choice = json.loads(via)["choices"][0]
    routes, want = choice.pop("routed_experts"), direct.pop("routed_experts")
    assert choice == direct and routes["dtype"] == want["dtype"]


def test_route_faults_that_need_the_engine_are_refused_with_their_name():
    with pytest.raises(syncroll.UsageError) as info:
        with syncroll.proxy("http://127.0.0.1:9", faults=[{"kind": "stale_prefix_cache"}]):
            pass
    assert info.value.name == "fault.invalid_spec"
    assert "other weights" in info.value.message


def test_redacted_capture_keeps_no_prompt(tmp_path):
    cap = tmp_path / "cap"
    with syncroll.serve() as eng:
        with syncroll.proxy(eng.url, record=cap, redact_prompts=True) as px:
            status, answer = post(px.url)
        # The capture is whole once the proxy has stopped (a line is written as an exchange
        # ends, which may be after its client has read the answer).
        [x] = px.exchanges()
    assert json.loads(open(cap / "capture.jsonl").readline())["redacted"] is True
    body = syncroll._binary.call(["replay", "--body", f"{x['seq']}:req", str(cap)])
    assert body.returncode == 0
    assert json.loads(body.stdout)["token_ids"] == [0, 0, 0]  # the engine got [5, 6, 7]
    resp = syncroll._binary.call(["replay", "--body", f"{x['seq']}:resp", str(cap)])
    assert resp.stdout == answer
    bad = syncroll._binary.call(["replay", "--body", "99:resp", str(cap)])
    assert bad.returncode == 2 and b"usage.invalid_argument" in bad.stderr


def test_a_recorded_rollout_is_judged_by_replay(tmp_path):
    """proxy(record=) then replay(): the capture of syncroll's own run is judged with no engine,
    clean, and with the engine's all-zero routes recorded, failing with the live run's check."""
    scenario = {"id": "py-replay", "description": "a rollout recorded through the proxy",
                "steps": [{"kind": "rollout", "batch": 2, "turns": 2}]}
    for faults, want_pass in (([], True), ([{"kind": "routes_all_zero"}], False)):
        cap = tmp_path / ("zero" if faults else "clean")
        with syncroll.serve(scenario, faults=faults) as eng:
            with syncroll.proxy(eng.url, record=cap) as px:
                live = dict(scenario, engines={"urls": [px.url]})
                path = tmp_path / "live.json"
                path.write_text(json.dumps(live))
                ran = syncroll.run(path, out=tmp_path / "runs")
        judged = syncroll.replay(cap, out=tmp_path / ("judged-" + cap.name))
        assert judged.passed is want_pass and ran.passed is want_pass
        if not want_pass:
            live_checks = {c for s in ran.failures() for c in s.fired}
            replay_checks = {c for s in judged.failures() for c in s.fired}
            assert live_checks & replay_checks, (live_checks, replay_checks)


def test_a_capture_that_loses_a_body_is_not_a_green_exit(tmp_path):
    """The traffic goes through, but a body the capture could not write is counted, the exchange
    is marked incomplete and the proxy exits 1: a capture is never silently short."""
    import shutil
    cap = tmp_path / "cap"
    with syncroll.serve() as eng:
        with syncroll.proxy(eng.url, record=cap) as px:
            assert post(px.url)[0] == 200
            shutil.rmtree(cap / "bodies")  # nothing can be created in it any more
            assert post(px.url)[0] == 200  # the client is not held up
            assert px.state()["capture_errors"] >= 1
        assert px.returncode == 1
    lines = [json.loads(l) for l in open(cap / "capture.jsonl").read().splitlines()[1:]]
    assert [x["complete"] for x in sorted(lines, key=lambda x: x["seq"])] == [True, False]


def test_a_clean_capture_exits_0(tmp_path):
    with syncroll.serve() as eng:
        with syncroll.proxy(eng.url, record=tmp_path / "cap") as px:
            post(px.url)
            assert px.state()["capture_errors"] == 0
        assert px.returncode == 0
