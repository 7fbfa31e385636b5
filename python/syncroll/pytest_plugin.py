"""pytest plugin: mock engines as fixtures, one test per dialect.

Loaded by the ``pytest11`` entry point when the package is installed, or with
``pytest -p syncroll.pytest_plugin`` (or ``pytest_plugins = ["syncroll.pytest_plugin"]`` in a
conftest) when it is only on PYTHONPATH.

Fixtures:
  syncroll_engine         function scope: the Engines of ``syncroll.serve`` for this test
  syncroll_engine_module  module scope: one set of engines shared by a module's tests

Configure them with the marker ``@pytest.mark.syncroll(scenario=..., faults=[...],
dialect=..., sync_dialect=..., seed=...)`` (on the test, its class or module) or parametrize
them: ``@pytest.mark.parametrize("syncroll_engine", [{"faults": [...]}, ...], indirect=True)``.
``@pytest.mark.syncroll_dialects()`` runs the test once per dialect the binary serves (or once
per dialect named: ``syncroll_dialects("vllm", "sglang")``); the fixture ``syncroll_dialect``
holds the current one and the engines serve it.

When a test that used engines fails, its report gains a section with the engines' log tail and
the commands that start the same engines by hand.
"""

import pytest

from . import _binary
from .engine import serve

_ENGINES_KEY = pytest.StashKey() if hasattr(pytest, "StashKey") else None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "syncroll(scenario=None, faults=None, dialect=None, sync_dialect=None, "
        "seed=None): the engines the syncroll_engine fixtures start")
    config.addinivalue_line(
        "markers", "syncroll_dialects(*names): run the test once per engine dialect "
        "(all of them when no name is given); the syncroll_dialect fixture holds it")


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("syncroll_dialects")
    if marker is None:
        return
    names = list(marker.args) or _binary.dialects()
    metafunc.parametrize("syncroll_dialect", names, ids=names, scope="function")


@pytest.fixture
def syncroll_dialect(request):
    """The dialect of this run of a ``syncroll_dialects`` test (None without the marker)."""
    return getattr(request, "param", None)


def _settings(request, dialect):
    settings = {}
    for marker in reversed(list(request.node.iter_markers("syncroll"))):
        settings.update(marker.kwargs)  # the closest marker (the test's own) wins
    if getattr(request, "param", None) is not None:
        settings.update(request.param)
    if dialect is not None and "dialect" not in settings:
        settings["dialect"] = dialect
    unknown = set(settings) - {"scenario", "faults", "dialect", "sync_dialect", "seed",
                               "ready_timeout", "extra_args"}
    if unknown:
        raise pytest.UsageError(f"syncroll marker: unknown keys {sorted(unknown)}")
    return settings


def _remember(request, engines):
    if _ENGINES_KEY is not None:
        request.node.stash.setdefault(_ENGINES_KEY, []).append(engines)


@pytest.fixture
def syncroll_engine(request, syncroll_dialect):
    """The mock engines of this test (syncroll.Engines), stopped when it ends."""
    with serve(**_settings(request, syncroll_dialect)) as engines:
        _remember(request, engines)
        yield engines


@pytest.fixture(scope="module")
def syncroll_engine_module(request):
    """Mock engines shared by a module's tests, stopped after its last test."""
    with serve(**_settings(request, None)) as engines:
        yield engines


def _fault_lines(engines):
    """One line per engine and fault: what each fault saw and fired while the test ran (the
    engines are still up when the call's report is made), so a failure says which fault hit."""
    lines = []
    for i in range(len(engines.urls)):
        try:
            faults = engines.state(i).get("faults", [])
        except (OSError, ValueError) as e:  # an engine the test killed, or a broken answer
            lines.append(f"engine {i}: state unavailable ({e})")
            continue
        if not faults:
            lines.append(f"engine {i}: no faults")
        for f in faults:
            lines.append(f"engine {i}: fault {f.get('id')!r} ({f.get('kind')}): "
                         f"seen {f.get('seen', 0)}, fired {f.get('fired', 0)}")
    return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or _ENGINES_KEY is None:
        return
    for engines in item.stash.get(_ENGINES_KEY, []):
        report.sections.append(("syncroll engines: faults", _fault_lines(engines)))
        report.sections.append(("syncroll engines: log tail", engines.log_tail() or "(empty)"))
        report.sections.append(("syncroll engines: reproduce", engines.repro()))
