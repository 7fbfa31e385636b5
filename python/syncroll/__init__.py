"""syncroll from Python: mock engines for tests, body decoding and scenario verdicts.

The package drives the ``syncroll`` binary ($SYNCROLL_BIN, the checkout's build/, or PATH); it
never decodes the wire itself. See docs/guide/python.md.
"""

from ._binary import binary, dialects
from .body import BodyResult, check_body
from .engine import Engines, serve
from .proxy import Proxy, proxy
from .errors import (InternalError, ProtocolError, ResourceError, SyncrollError, TransientError,
                     UsageError)
from .results import Check, RunResult, Scenario, probe, replay, run

__all__ = [
    "BodyResult", "Check", "Engines", "InternalError", "ProtocolError", "Proxy", "ResourceError",
    "RunResult", "Scenario", "SyncrollError", "TransientError", "UsageError", "binary",
    "check_body", "dialects", "probe", "proxy", "replay", "run", "serve",
]
__version__ = "0.1.0"
