"""Running scenarios (``syncroll run``) and reading the verdicts from results.json."""

import glob
import json
import os
import tempfile

from . import _binary
from .errors import SyncrollError, UsageError


class Check:
    """One check that fired: its name, message, location and evidence."""

    def __init__(self, d, artifacts):
        self.name = d.get("name")
        self.message = d.get("message")
        self.expected = bool(d.get("expected"))
        self.classification = d.get("classification")
        self.where = d.get("where") or {}
        ev = d.get("evidence")
        # results.json gives evidence relative to the scenario's artifacts folder.
        self.evidence = os.path.join(artifacts, ev) if ev and artifacts else None

    def __repr__(self):
        return f"Check({self.name!r}, where={self.where!r})"


class Scenario:
    """The result of one scenario execution (results.json's SCENARIO object)."""

    def __init__(self, d, cwd):
        self.raw = d
        self.id = d.get("id")
        self.file = d.get("file")
        self.verdict = d.get("verdict")
        self.reason = d.get("reason")
        self.seed = d.get("seed")
        self.repro = d.get("repro")
        art = d.get("artifacts")
        # Relative paths in results.json are relative to the folder the run was started in.
        self.artifacts = os.path.join(cwd, art) if art and not os.path.isabs(art) else art
        art = self.artifacts
        self.checks = [Check(c, art) for c in d.get("checks", [])]
        self.fired = dict(d.get("fired", {}))
        self.skipped_checks = list(d.get("skipped_checks", []))

    @property
    def passed(self):
        return self.verdict == "pass"

    def __repr__(self):
        return f"Scenario({self.id!r}, {self.verdict!r}, fired={sorted(self.fired)!r})"


class RunResult:
    """A whole run: ``exit_code``, ``scenarios`` (Scenario objects), ``totals``, ``run_dir`` and
    ``raw`` (the parsed results.json). ``passed`` is true when the binary exited 0."""

    def __init__(self, exit_code, run_dir, raw, stdout, stderr):
        self.exit_code = exit_code
        self.run_dir = run_dir
        self.raw = raw
        self.totals = raw.get("totals", {})
        self.partial = bool(raw.get("partial"))
        self.scenarios = [Scenario(s, os.getcwd()) for s in raw.get("scenarios", [])]
        self.stdout = stdout
        self.stderr = stderr

    @property
    def passed(self):
        return self.exit_code == 0

    def scenario(self, scenario_id):
        """The first execution of the scenario ``scenario_id``."""
        for s in self.scenarios:
            if s.id == scenario_id:
                return s
        raise KeyError(scenario_id)

    def failures(self):
        """The executions whose verdict is fail or error."""
        return [s for s in self.scenarios if s.verdict in ("fail", "error")]

    def __repr__(self):
        return f"RunResult(exit={self.exit_code}, totals={self.totals!r})"


def _option_args(options):
    """--name value pairs from keyword options (seed=3 -> --seed 3; tags=[..] repeats --tag)."""
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if key in ("tags", "exclude_tags"):
            for v in value:
                args += ["--" + key[:-1].replace("_", "-"), str(v)]
        elif value is True:
            args.append(flag)
        else:
            args += [flag, str(value)]
    return args


def _load_run(proc, out_dir):
    # run writes a run folder under --out; probe writes its reports into --out itself.
    found = sorted(glob.glob(os.path.join(out_dir, "*", "results.json")), key=os.path.getmtime)
    if os.path.isfile(os.path.join(out_dir, "results.json")):
        found.append(os.path.join(out_dir, "results.json"))
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    if not found:
        cls = UsageError if proc.returncode == 2 else SyncrollError
        raise cls("python.no_results",
                  f"exit {proc.returncode}, no results.json under {out_dir}: {stderr.strip()}",
                  output=stderr)
    with open(found[-1], "rb") as f:
        raw = json.loads(f.read())
    return RunResult(proc.returncode, os.path.dirname(found[-1]), raw, stdout, stderr)


def run(paths, out=None, timeout=None, **options):
    """Runs ``syncroll run`` on ``paths`` (a path or a list) and returns a RunResult.

    Keyword options become flags (``seed=3`` is ``--seed 3``, ``tags=["nightly"]`` repeats
    ``--tag``, ``keep=True`` is ``--keep``). The run folder goes under ``out`` (default: a new
    temporary folder that is kept, so evidence paths stay valid). A usage error (exit 2 with no
    report) raises UsageError; failing scenarios do not raise: read ``passed``/``failures()``.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = os.fspath(out) if out else tempfile.mkdtemp(prefix="syncroll-run-")
    args = ["run", "--out", out, *_option_args(options), *[os.fspath(p) for p in paths]]
    return _load_run(_binary.call(args, timeout=timeout), out)


def probe(url, out=None, timeout=None, **options):
    """Runs ``syncroll probe`` against ``url`` (an engine someone else runs) and returns a
    RunResult read from its results.json. Options as ``run`` (``dialect="vllm"``,
    ``budget=200``, ``seed=1``)."""
    out = os.fspath(out) if out else tempfile.mkdtemp(prefix="syncroll-probe-")
    args = ["probe", "--out", out, *_option_args(options), url]
    return _load_run(_binary.call(args, timeout=timeout), out)


def replay(capture, out=None, timeout=None, **options):
    """Judges a capture of ``syncroll proxy --record`` with ``syncroll replay`` (no engine:
    every session is re-read by syncroll's own client and verifier) and returns a RunResult read
    from its results.json. Options as ``run`` (``dialect="vllm"``). A damaged capture raises
    UsageError (the binary names it: capture.truncated, capture.corrupt, ...) through
    ``python.no_results`` with the binary's message."""
    out = os.fspath(out) if out else tempfile.mkdtemp(prefix="syncroll-replay-")
    args = ["replay", "--out", out, *_option_args(options), os.fspath(capture)]
    return _load_run(_binary.call(args, timeout=timeout), out)

