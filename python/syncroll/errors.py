"""Exceptions carrying syncroll's named errors.

Every error the binary reports has a dotted name ("splice.short_body") and a class (transient,
protocol, usage, resource, internal; `syncroll errors` lists them). The package raises the
subclass of SyncrollError that matches the class, so a test can catch a whole class or compare
``err.name`` with one error.
"""


class SyncrollError(Exception):
    """A named error from the syncroll binary (or from starting it)."""

    error_class = None

    def __init__(self, name, message, offset=None, output=""):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.offset = offset
        self.output = output


class TransientError(SyncrollError):
    """A failure that a retry may cure (a cut body, a reset connection)."""

    error_class = "transient"


class ProtocolError(SyncrollError):
    """The bytes broke the wire contract (bad base64, a shape that does not match)."""

    error_class = "protocol"


class UsageError(SyncrollError):
    """The call or its input was malformed (a bad option, an unreadable file)."""

    error_class = "usage"


class ResourceError(SyncrollError):
    """The machine refused (memory, a limit, a file that cannot be written)."""

    error_class = "resource"


class InternalError(SyncrollError):
    """A bug in syncroll itself."""

    error_class = "internal"


_BY_CLASS = {c.error_class: c for c in (TransientError, ProtocolError, UsageError,
                                         ResourceError, InternalError)}


def from_report(error, output=""):
    """The exception for the ``error`` object of a ``--json`` answer."""
    cls = _BY_CLASS.get(error.get("class"), SyncrollError)
    return cls(error.get("name", "internal.bug"), error.get("message", ""),
               error.get("offset"), output)


def from_name(name, message, error_class, output=""):
    """The exception for the error ``name`` of class ``error_class`` (None: SyncrollError)."""
    cls = _BY_CLASS.get(error_class, SyncrollError)
    return cls(name, message, None, output)
