"""Decoding a captured generate body: ``syncroll check-body`` with its arrays as numpy."""

import json
import os
import tempfile

import numpy as np

from . import _binary
from .errors import SyncrollError, from_report


class BodyResult:
    """What check-body found in a valid body.

    ``arrays`` maps each JSON path ("choices[0].routed_experts") to its decoded numpy array (None
    for a field that was null); ``entries`` is check-body's list of entries (path, field, kind,
    dtype, shape, min, max, canonical, ...), ``dialect`` the dialect it read the body as and
    ``report`` the whole ``--json`` object.
    """

    def __init__(self, report, arrays):
        self.report = report
        self.entries = report.get("entries", [])
        self.dialect = report.get("dialect")
        self.arrays = arrays

    def __repr__(self):
        return f"BodyResult(dialect={self.dialect!r}, arrays={sorted(self.arrays)!r})"


def check_body(body, dialect=None, registry=None, fields=None, expected_length=None, stack=None):
    """Splices and validates ``body`` (bytes, or a path to a file holding them) as syncroll's
    client does, and returns a BodyResult.

    ``dialect`` forces the wire (default: told from the body's keys), ``registry`` is a field
    registry file (--field-registry), ``fields`` a list of names to splice (--fields),
    ``expected_length`` the announced Content-Length, ``stack`` the SkyRL contract to check
    against ("2079" or "2086", --stack). An invalid body raises the exception of its
    error's class (ProtocolError, TransientError, UsageError, ...) with ``.name`` the error name.
    """
    args = ["check-body", "--json"]
    if dialect:
        args += ["--dialect", dialect]
    if registry:
        args += ["--field-registry", os.fspath(registry)]
    if fields:
        args += ["--fields", ",".join(fields)]
    if expected_length is not None:
        args += ["--expected-length", str(int(expected_length))]
    if stack:
        args += ["--stack", str(stack)]
    data = None
    if isinstance(body, (bytes, bytearray, memoryview)):
        data = bytes(body)
    with tempfile.TemporaryDirectory(prefix="syncroll-body-") as npy_dir:
        args += ["--npy-dir", npy_dir, "-" if data is not None else os.fspath(body)]
        proc = _binary.call(args, input_bytes=data)
        text = proc.stdout.decode("utf-8", "replace")
        try:
            report = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
        except ValueError:
            report = None
        if report is None:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise SyncrollError("python.no_answer",
                                f"check-body exited {proc.returncode} with no JSON: {err}",
                                output=err)
        if not report.get("valid"):
            raise from_report(report.get("error", {}), proc.stderr.decode("utf-8", "replace"))
        arrays = {}
        for e in report.get("entries", []):
            name = e.get("npy")
            arrays[e["path"]] = np.load(os.path.join(npy_dir, name)) if name else None
    return BodyResult(report, arrays)
