"""run(): results.json read into objects (verdicts, checks, evidence, repro)."""

import json
import os

import pytest

import syncroll

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def test_passing_run(tmp_path):
    r = syncroll.run(os.path.join(ROOT, "scenarios", "examples", "minimal.json"), seed=5,
                     out=tmp_path)
    assert r.passed and r.exit_code == 0 and not r.partial
    s = r.scenario("example-minimal")
    assert s.verdict == "pass" and s.seed == 5 and s.checks == []
    assert s.repro.startswith("syncroll run ") and "--seed 5" in s.repro
    assert r.totals["pass"] == 1 and os.path.isfile(os.path.join(r.run_dir, "results.json"))


def test_failing_run_names_its_check_and_evidence(tmp_path):
    # The all-zero capture example without its "expect": the run must fail, naming the check.
    doc = json.load(open(os.path.join(ROOT, "scenarios", "examples", "expected-failure.json")))
    del doc["expect"]
    path = tmp_path / "zeros.json"
    path.write_text(json.dumps(doc))
    r = syncroll.run(path, out=tmp_path / "out")
    assert not r.passed and r.exit_code == 1
    [s] = r.failures()
    assert s.id == "all-zero-capture" and s.verdict == "fail"
    assert "trace.row_mismatch" in s.fired
    first = s.checks[0]
    assert first.name == "trace.row_mismatch" and first.classification == "all_zero_capture"
    assert first.where["turn"] == 1 and first.where["layer"] is not None
    assert first.evidence and os.path.isfile(first.evidence)
    assert str(path) in s.repro


def test_usage_error_raises_the_named_class(tmp_path):
    with pytest.raises(syncroll.UsageError) as info:
        syncroll.run(tmp_path / "missing.json", out=tmp_path)
    assert info.value.name == "python.no_results"
    assert "missing.json" in info.value.message


def test_options_become_flags(tmp_path):
    r = syncroll.run(os.path.join(ROOT, "scenarios", "examples"), tags=["example"],
                     exclude_tags=["bug"], out=tmp_path, report="json")
    assert r.passed
    assert all("bug" not in s.raw["tags"] for s in r.scenarios) and r.scenarios
    assert not os.path.exists(os.path.join(r.run_dir, "report.html"))


def test_probe_results_are_parsed(tmp_path):
    """probe(): syncroll probe's results.json read the same way as run's."""
    with syncroll.serve() as eng:
        clean = syncroll.probe(eng.url, out=tmp_path / "clean", seed=1, budget=60)
    assert clean.passed and clean.exit_code == 0
    assert clean.scenarios and all(s.verdict in ("pass", "skip") for s in clean.scenarios)
    with syncroll.serve(faults=[{"kind": "routes_all_zero"}]) as eng:
        bad = syncroll.probe(eng.url, out=tmp_path / "bad", seed=1, budget=60)
    assert not bad.passed and bad.exit_code == 1
    fired = set()
    for s in bad.failures():
        fired.update(s.fired)
    assert "meta.value_sanity" in fired, fired
    with pytest.raises(syncroll.UsageError) as info:
        syncroll.probe("not-a-url", out=tmp_path / "usage")
    assert info.value.name == "python.no_results"
