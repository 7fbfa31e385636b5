"""``syncroll proxy`` as a context manager: faults and recording between a client and an engine."""

import contextlib
import json
import os
import tempfile
import urllib.request

from . import _binary
from .engine import _start, _stop
from .errors import SyncrollError, UsageError


class Proxy:
    """A running proxy: ``url`` to send to, ``upstream``, ``record`` (the capture folder or None),
    ``state()`` (its GET /syncroll/v1/proxy), ``fault_counts(id)`` and, after the block,
    ``returncode``."""

    def __init__(self, proc, info, log_path):
        self._proc = proc
        self.url = info["url"]
        self.upstream = info["upstream"]
        self.record = info.get("record")
        self.pgid = proc.pid
        self.log_path = log_path

    @property
    def returncode(self):
        """The proxy's exit status once the block has exited (None while it runs): 0, or 1 when
        the capture could not record an exchange whole."""
        return self._proc.returncode

    def state(self):
        with urllib.request.urlopen(self.url + "/syncroll/v1/proxy", timeout=10) as resp:
            return json.loads(resp.read())

    def fault_counts(self, fault_id):
        """(seen, fired) of the proxy fault ``fault_id``."""
        for f in self.state().get("faults", []):
            if f.get("id") == fault_id:
                return f.get("seen", 0), f.get("fired", 0)
        raise UsageError("python.no_fault", f"the proxy has no fault with id {fault_id!r}")

    def exchanges(self):
        """The recorded exchanges so far (``syncroll replay --list --json``), each a dict."""
        if not self.record:
            raise UsageError("python.no_capture", "this proxy records nothing (record=None)")
        proc = _binary.call(["replay", "--list", "--json", self.record])
        if proc.returncode != 0:
            raise SyncrollError("python.replay_failed", proc.stderr.decode("utf-8", "replace"))
        return json.loads(proc.stdout)["exchanges"]


@contextlib.contextmanager
def proxy(upstream, faults=None, record=None, redact_prompts=False, seed=None,
          ready_timeout=30.0, dialect=None):
    """Starts ``syncroll proxy --upstream UPSTREAM`` and yields a Proxy; stops it on exit.

    ``faults`` are fault objects of the delay, http or transport layer, or route faults of the
    fault grammar (scenarios/FORMAT.md); ``record`` a folder for the capture (it must not hold
    one yet); ``dialect`` the upstream's generate wire (``--dialect``). A proxy the binary
    refuses raises UsageError whose ``.name`` is the binary's error name (e.g.
    fault.invalid_spec).
    """
    args = [_binary.binary(), "proxy", "--upstream", upstream]
    for f in faults or []:
        args += ["--fault", json.dumps(f)]
    if record:
        args += ["--record", os.fspath(record)]
    if redact_prompts:
        args.append("--redact-prompts")
    if seed is not None:
        args += ["--seed", str(int(seed))]
    if dialect:
        args += ["--dialect", dialect]
    with tempfile.TemporaryDirectory(prefix="syncroll-proxy-") as work:
        proc, line, log_path = _start(args, work, "proxy", ready_timeout)
        try:
            yield Proxy(proc, json.loads(line)["proxy"], log_path)
        finally:
            _stop(proc)
