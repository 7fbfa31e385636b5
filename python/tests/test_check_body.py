"""check_body against the golden bodies: the same verdicts as the CLI, arrays that decode."""

import base64
import glob
import json
import os
import shlex

import numpy as np
import pytest

import syncroll

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
BODIES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "bodies", "*.body")))
CLASS_OF_EXIT = {2: syncroll.UsageError, 3: syncroll.ProtocolError, 4: syncroll.TransientError}


def _kwargs(body_path):
    args_path = body_path[:-len(".body")] + ".args"
    if not os.path.exists(args_path):
        return {}
    words = shlex.split(open(args_path).read())
    kw = {}
    for flag, value in zip(words[::2], words[1::2]):
        if flag == "--dialect":
            kw["dialect"] = value
        elif flag == "--fields":
            kw["fields"] = value.split(",")
        elif flag == "--field-registry":
            kw["registry"] = os.path.join(ROOT, value)
        elif flag == "--expected-length":
            kw["expected_length"] = int(value)
        elif flag == "--stack":
            kw["stack"] = value
        else:
            pytest.fail(f"{args_path}: option {flag} unknown to this test")
    return kw


def _expected(body_path):
    lines = open(body_path[:-len(".body")] + ".expected").read().splitlines()
    return int(lines[0].split()[1]), lines[1:]


@pytest.mark.parametrize("body_path", BODIES, ids=[os.path.basename(b) for b in BODIES])
def test_golden_body_matches_cli(body_path):
    code, rest = _expected(body_path)
    kw = _kwargs(body_path)
    if code != 0:
        name = rest[0].split()[1]
        with pytest.raises(syncroll.SyncrollError) as info:
            syncroll.check_body(body_path, **kw)
        assert info.value.name == name
        assert isinstance(info.value, CLASS_OF_EXIT[code])
        return
    result = syncroll.check_body(body_path, **kw)
    want = json.loads(rest[0])
    got = json.loads(json.dumps(result.report))
    for e in got["entries"]:
        e.pop("npy", None)
    assert got == want
    assert set(result.arrays) == {e["path"] for e in want["entries"]}
    for e in want["entries"]:
        a = result.arrays[e["path"]]
        if e["kind"] == "null":
            assert a is None
            continue
        assert str(a.dtype) == e["dtype"] and list(a.shape) == e["shape"]
        if a.size and a.dtype.kind in "iu":
            assert int(a.min()) == e["min"] and int(a.max()) == e["max"]


def test_bytes_and_path_give_the_same_arrays():
    path = os.path.join(ROOT, "fixtures", "bodies", "both_fields.body")
    from_path = syncroll.check_body(path)
    from_bytes = syncroll.check_body(open(path, "rb").read())
    assert from_path.arrays.keys() == from_bytes.arrays.keys()
    for k, v in from_path.arrays.items():
        np.testing.assert_array_equal(v, from_bytes.arrays[k])


def test_arrays_equal_an_independent_decode():
    """Cross-check with a decoder written here (test-only): base64 + numpy of the envelope."""
    path = os.path.join(ROOT, "fixtures", "bodies", "long_routes.body")
    doc = json.loads(open(path, "rb").read())
    env = doc["choices"][0]["routed_experts"]
    want = np.frombuffer(base64.b64decode(env["data"]), dtype=env["dtype"]).reshape(env["shape"])
    got = syncroll.check_body(path).arrays["choices[0].routed_experts"]
    np.testing.assert_array_equal(got, want)


def test_cut_body_is_a_transient_error_with_its_name():
    body = open(os.path.join(ROOT, "fixtures", "bodies", "both_fields.body"), "rb").read()
    with pytest.raises(syncroll.TransientError) as info:
        syncroll.check_body(body, expected_length=len(body) + 10)
    assert info.value.name == "splice.short_body"


def test_npy_dir_that_cannot_be_written_is_a_named_io_error(tmp_path):
    """check-body --npy-dir (what check_body uses) names the file it could not create."""
    body = os.path.join(ROOT, "fixtures", "bodies", "both_fields.body")
    proc = syncroll._binary.call(["check-body", "--json", "--npy-dir",
                                  str(tmp_path / "missing"), body])
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert report["valid"] is False and report["error"]["name"] == "io.error"
    assert "missing/0.npy" in report["error"]["message"]
