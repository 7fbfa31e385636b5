"""serve(): readiness without a sleep, state, faults, and no engine left behind."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

import syncroll

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _wait_group_gone(pgid, seconds=20.0):
    # Reaping by init can lag the exit a little; the bound only limits a broken run.
    end = time.monotonic() + seconds
    while _group_alive(pgid) and time.monotonic() < end:
        time.sleep(0.05)
    return not _group_alive(pgid)


def test_serve_starts_answers_and_stops():
    with syncroll.serve(os.path.join(ROOT, "scenarios", "examples", "minimal.json")) as eng:
        assert len(eng.urls) == 1 and eng.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(eng.url + "/health", timeout=10) as r:
            assert r.status == 200
        state = eng.state()
        assert state["id"] == "engine-0" if "id" in state else True
        pgid = eng.pgid
        assert _group_alive(pgid)
    assert _wait_group_gone(pgid)


def test_faults_and_counts_reach_the_engine():
    faults = [{"kind": "http_503_json", "id": "down", "count": 1}]
    with syncroll.serve(faults=faults) as eng:
        assert eng.fault_counts("down") == (0, 0)
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(urllib.request.Request(
                eng.url + "/skyrl/v1/generate", data=json.dumps(
                    {"sampling_params": {"max_tokens": 2}, "model": "default",
                     "token_ids": [1, 2, 3]}).encode(),
                headers={"Content-Type": "application/json"}), timeout=10)
        assert info.value.code == 503
        assert eng.fault_counts("down") == (1, 1)
        with pytest.raises(syncroll.UsageError) as missing:
            eng.fault_counts("nope")
        assert missing.value.name == "python.no_fault"


def test_bad_scenario_is_a_named_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x", "description": "d", "steps": [{"kind": "rollout"}],'
                   ' "engines": {"count": "two"}}')
    with pytest.raises(syncroll.UsageError) as info:
        with syncroll.serve(bad):
            pass
    assert info.value.name == "json.schema"  # the binary's own error name
    assert "bad.json:1:77: 'count' must be an integer" in info.value.message


def test_no_engine_left_after_a_failing_test(pytester):
    pgid_file = pytester.path / "pgid"
    pytester.makepyfile(test_fails=f"""
        import pytest

        @pytest.mark.syncroll(faults=[{{"kind": "http_503_json", "nth": 1, "id": "down"}}])
        def test_fails(syncroll_engine):
            open({str(pgid_file)!r}, "w").write(str(syncroll_engine.pgid))
            assert False, "the user's assertion"
    """)
    result = pytester.runpytest_subprocess("-p", "syncroll.pytest_plugin")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*syncroll engines: faults*",
                                 "engine 0: fault 'down' (http_503_json): seen 0, fired 0",
                                 "*syncroll engines: log tail*", "*syncroll serve*"])
    assert _wait_group_gone(int(pgid_file.read_text()))


def test_no_engine_left_after_keyboard_interrupt(tmp_path):
    pgid_file = tmp_path / "pgid"
    script = textwrap.dedent(f"""
        import sys, time
        import syncroll
        with syncroll.serve() as eng:
            open({str(pgid_file)!r}, "w").write(str(eng.pgid))
            sys.stdout.write("up\\n"); sys.stdout.flush()
            time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    assert child.stdout.readline() == b"up\n"  # serve is up: the handshake, not a sleep
    pgid = int(pgid_file.read_text())
    assert _group_alive(pgid)
    child.send_signal(signal.SIGINT)  # KeyboardInterrupt inside the with block
    child.wait(60)
    assert child.returncode != 0
    assert _wait_group_gone(pgid)


def test_dialect_marker_runs_once_per_dialect(pytester):
    names = syncroll.dialects()
    assert "skyrl" in names and "sglang" in names
    pytester.makepyfile(test_dialects="""
        import json, pytest, urllib.request

        @pytest.mark.syncroll_dialects()
        def test_each(syncroll_engine, syncroll_dialect):
            with urllib.request.urlopen(syncroll_engine.url + "/syncroll/v1/state") as r:
                state = json.loads(r.read())
            assert state["dialect"] == syncroll_dialect

        @pytest.mark.syncroll_dialects("vllm", "sglang")
        def test_two(syncroll_dialect):
            assert syncroll_dialect in ("vllm", "sglang")
    """)
    result = pytester.runpytest_subprocess("-p", "syncroll.pytest_plugin", "-v")
    result.assert_outcomes(passed=len(names) + 2)
    for n in names:
        result.stdout.fnmatch_lines([f"*test_each?{n}? PASSED*"])


def test_parametrized_faults_reach_the_fixture(pytester):
    pytester.makepyfile(test_param="""
        import pytest

        @pytest.mark.parametrize("syncroll_engine", [
            {"faults": [{"kind": "latency", "ms": 1, "id": "slow"}]},
            {"faults": [{"kind": "http_429", "id": "busy"}]},
        ], indirect=True)
        def test_param(syncroll_engine):
            ids = [f["id"] for f in syncroll_engine.state()["faults"]]
            assert ids in (["slow"], ["busy"])

        @pytest.mark.syncroll(faults=[{"kind": "reset", "id": "gone"}])
        def test_marker(syncroll_engine):
            assert [f["id"] for f in syncroll_engine.state()["faults"]] == ["gone"]
    """)
    result = pytester.runpytest_subprocess("-p", "syncroll.pytest_plugin")
    result.assert_outcomes(passed=3)
