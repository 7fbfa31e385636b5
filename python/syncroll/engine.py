"""Mock engines for a test: ``syncroll serve`` as a context manager."""

import contextlib
import json
import os
import re
import selectors
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np

from . import _binary
from .errors import SyncrollError, UsageError, from_name

# Seconds a stopping serve gets before its process group is killed (serve itself gives its
# engines --stop-grace, default 5 s, then SIGKILL).
_STOP_WAIT = 15.0


class Engines:
    """The running engines of one ``serve``: their URLs, state, true routes and log.

    ``engines`` is the list serve printed (dicts with id, index, url, pid); ``urls`` their URLs
    in index order. ``pgid`` is the process group that holds serve and every engine.
    """

    def __init__(self, proc, engines, log_path, scenario_path, scenario_text):
        self._proc = proc
        self.engines = engines
        self.urls = [e["url"] for e in engines]
        self.pgid = proc.pid
        self.log_path = log_path
        self.scenario_path = scenario_path
        self.scenario_text = scenario_text

    @property
    def url(self):
        """The first engine's URL."""
        return self.urls[0]

    def state(self, index=0, tensors=False):
        """The engine's ``GET /syncroll/v1/state`` as a dict (counters, versions, faults)."""
        url = self.urls[index] + "/syncroll/v1/state" + ("?tensors=1" if tensors else "")
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    def oracle_routes(self, token_ids, start=0, end=None, index=0, with_version=False):
        """The true route rows of ``token_ids`` under the weights engine ``index`` holds now, as
        an int32 numpy array of shape [rows, layers, top_k] (``POST /syncroll/v1/oracle``,
        docs/reference/engine.md "The oracle route").

        ``token_ids`` is the sequence: usually the prompt followed by the token ids a generate
        returned. Row i is the forward pass on token i; the rows are [start, end), ``end``
        defaulting to len(token_ids) - 1, the rows a generate that returned this sequence
        computed. So a skyrl, vllm, sglang or dynamo reply with prompt start s compares with
        ``oracle_routes(prompt + response, start=s)``, and vllm-json's prompt and output routes,
        concatenated, with ``end=len(token_ids)``. No fault reaches this route: it stays the
        truth while a route fault corrupts what generate returns. With ``with_version`` the
        result is (array, the weight version the engine reports).

        A refusal raises the exception of its error's class with ``.name`` the engine's error
        name: ``ProtocolError`` ``oracle.invalid_token`` (a token id outside the vocabulary) or
        ``engine.bad_request`` (a bad range, an answer over the engine's max_response_bytes),
        ``ResourceError`` ``resource.limit`` (a body over max_body_bytes).
        """
        body = {"token_ids": [int(t) for t in token_ids], "row_start": int(start)}
        if end is not None:
            body["row_end"] = int(end)
        req = urllib.request.Request(self.urls[index] + "/syncroll/v1/oracle",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise _engine_error(e, "POST /syncroll/v1/oracle") from None
        routes = np.asarray(answer["routes"], dtype=np.int32).reshape(answer["shape"])
        return (routes, answer["weight_version"]) if with_version else routes

    def fault_counts(self, fault_id, index=0):
        """(seen, fired) of the fault ``fault_id`` on engine ``index``."""
        for f in self.state(index).get("faults", []):
            if f.get("id") == fault_id:
                return f.get("seen", 0), f.get("fired", 0)
        raise UsageError("python.no_fault", f"engine {index} has no fault with id {fault_id!r}")

    def log_tail(self, max_bytes=4096):
        """The last ``max_bytes`` of what serve and its engines wrote to standard error."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - max_bytes))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def repro(self):
        """The shell commands that start the same engines by hand (the scenario written out, since
        the one serve read lives in a folder removed when the block exits)."""
        return ("cat > scenario.json <<'EOF'\n" + self.scenario_text.rstrip("\n") +
                "\nEOF\nsyncroll serve " + " ".join(self._args[2:-1] + ["scenario.json"]))

    def alive(self):
        """True while serve runs."""
        return self._proc.poll() is None


def _engine_error(e, what):
    """The exception for an engine's error answer: its ``check`` name and message, of the class
    ``syncroll errors`` gives that name; SyncrollError ``python.http_error`` when it names none."""
    text = e.read().decode("utf-8", "replace")
    try:
        err = json.loads(text).get("error", {})
    except (ValueError, AttributeError):
        err = {}
    name = err.get("check") if isinstance(err, dict) else None
    if not name:
        return SyncrollError("python.http_error", f"{what}: HTTP {e.code}: {text[:500]}",
                             output=text)
    return from_name(name, f"{what}: HTTP {e.code}: {err.get('message', '')}",
                     _binary.error_class(name), output=text)


def _scenario_file(scenario, dialect, sync_dialect, faults, seed, workdir):
    """The scenario file serve gets: ``scenario`` itself when nothing is overridden, else a copy
    with the overrides written into ``workdir``."""
    if scenario is None:
        doc = {"id": "python-serve", "description": "engines started by syncroll.serve",
               "steps": [{"kind": "rollout"}]}
    elif isinstance(scenario, dict):
        doc = json.loads(json.dumps(scenario))
    else:
        if not faults and seed is None:
            return os.fspath(scenario)
        with open(scenario, "rb") as f:
            doc = json.loads(f.read())
    engines = doc.setdefault("engines", {})
    if faults:
        engines["faults"] = list(engines.get("faults", [])) + list(faults)
    if seed is not None:
        doc["seed"] = seed
    del dialect, sync_dialect  # passed on the command line, where serve documents them
    path = os.path.join(workdir, "scenario.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def _read_ready_line(proc, deadline):
    """The first line serve prints (its engines), or None if it exits or the deadline passes."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return None
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            buf += chunk
    finally:
        sel.close()
    return buf.split(b"\n", 1)[0]


def _stop(proc):
    """SIGTERM to serve (it stops its engines), then SIGKILL to the whole group if needed."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(_STOP_WAIT)
        except subprocess.TimeoutExpired:
            pass
    # Whatever is left of the group (an engine serve could not stop) goes too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(_STOP_WAIT)
    if proc.stdout:
        proc.stdout.close()


def _start(args, work, command, ready_timeout):
    """Starts ``syncroll COMMAND`` (args) in its own process group with its standard error in
    ``work``; returns (proc, the first line it printed, the log path) once it printed it, else
    stops it and raises the error it named on standard error ("syncroll COMMAND: NAME: message"),
    UsageError when it exited 2."""
    log_path = os.path.join(work, command + ".log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        line = _read_ready_line(proc, time.monotonic() + ready_timeout)
    except BaseException:
        _stop(proc)
        raise
    if line is not None:
        return proc, line, log_path
    _stop(proc)
    with open(log_path, "rb") as f:
        tail = f.read()[-4096:].decode("utf-8", "replace")
    named = re.findall(rf"^syncroll {command}: ([a-z_]+\.[a-z_.]+): (.*)$", tail, re.M)
    name, msg = named[-1] if named else (f"python.{command}_failed", tail.strip())
    cls = UsageError if proc.returncode == 2 else SyncrollError
    raise cls(name, f"syncroll {command} did not start (exit {proc.returncode}): {msg}",
              output=tail)


@contextlib.contextmanager
def serve(scenario=None, dialect=None, sync_dialect=None, faults=None, seed=None,
          ready_timeout=30.0, extra_args=()):
    """Starts the scenario's mock engines, yields an Engines, and stops them on exit.

    ``scenario`` is a path, a dict (a scenario document) or None (one engine, all defaults);
    ``faults`` are fault objects appended to its ``engines.faults`` (scenarios/FORMAT.md);
    ``dialect`` and ``sync_dialect`` are serve's --dialect and --sync-dialect. Readiness is the
    line serve prints once every engine listens; no sleep is involved. The engines are stopped
    when the block exits, whether it returns, raises or is interrupted (KeyboardInterrupt): serve
    runs in its own process group, which is killed if serve does not stop by itself.

    Raises UsageError or SyncrollError("python.serve_failed") with serve's log when the engines
    do not come up.
    """
    with tempfile.TemporaryDirectory(prefix="syncroll-py-") as work:
        path = _scenario_file(scenario, dialect, sync_dialect, faults, seed, work)
        args = [_binary.binary(), "serve"]
        if dialect:
            args += ["--dialect", dialect]
        if sync_dialect:
            args += ["--sync-dialect", sync_dialect]
        args += [*extra_args, path]
        proc, line, log_path = _start(args, work, "serve", ready_timeout)
        try:
            engines = json.loads(line)["engines"]
            with open(path, "r", encoding="utf-8", errors="replace") as f:
                text = f.read()
            eng = Engines(proc, engines, log_path, path, text)
            eng._args = args
            yield eng
        finally:
            _stop(proc)
