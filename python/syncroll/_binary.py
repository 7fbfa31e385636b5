"""Finding and calling the syncroll binary."""

import functools
import os
import shutil
import subprocess

from .errors import UsageError

# The repository's build folder, when the package is used from a checkout (PYTHONPATH=python).
_CHECKOUT_BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                "build", "harness", "syncroll")


def binary():
    """The syncroll executable: $SYNCROLL_BIN, else the checkout's build/, else PATH.

    Raises UsageError (name ``python.no_binary``) when none is found.
    """
    given = os.environ.get("SYNCROLL_BIN")
    if given:
        if not os.access(given, os.X_OK):
            raise UsageError("python.no_binary", f"SYNCROLL_BIN={given} is not executable")
        return given
    local = os.path.normpath(_CHECKOUT_BINARY)
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("syncroll")
    if found:
        return found
    raise UsageError("python.no_binary",
                     "no syncroll binary: build it (make build) or set SYNCROLL_BIN")


def call(args, timeout=None, input_bytes=None):
    """Runs ``syncroll ARGS``; returns the CompletedProcess (stdout and stderr as text)."""
    return subprocess.run([binary(), *args], input=input_bytes, capture_output=True,
                          timeout=timeout, check=False)


def dialects():
    """The engine dialects the binary serves, in its order (from ``syncroll serve --help``)."""
    out = call(["serve", "--help"]).stdout.decode()
    # "... one of\n    skyrl, vllm, vllm-json, sglang, dynamo, nemo-rl\n"
    marker = out.find("one of")
    if marker < 0:
        raise UsageError("python.help_format", "syncroll serve --help names no dialect list")
    line = out[marker + len("one of"):].strip().splitlines()[0]
    names = [n.strip(" .") for n in line.split(",") if n.strip(" .")]
    if not names:
        raise UsageError("python.help_format", "syncroll serve --help names no dialect list")
    return names


@functools.lru_cache(maxsize=None)
def _error_classes(path):
    """Every error name the binary at ``path`` knows, mapped to its class (``syncroll errors``)."""
    out = subprocess.run([path, "errors"], capture_output=True, timeout=60, check=False)
    classes = {}
    for line in out.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2 and "." in parts[0]:
            classes[parts[0]] = parts[1]
    return classes


def error_class(name):
    """The class ("protocol", "usage", ...) of the error ``name`` as ``syncroll errors`` lists
    it, or None for a name the binary does not know."""
    return _error_classes(binary()).get(name)
