"""How a script that never closed its watcher or emulation ended, for the summary its atexit
handler writes: Python runs atexit handlers after an uncaught exception too, and only
sys.excepthook learns which one it was. The hook is wrapped once, the first time an observer
starts, and hands on to whatever hook was there."""

import os
import sys

from . import _sweep

_uncaught = None  # (type, message) of the exception that ended the script, if one did
_wrapped = None  # the hook that was in place; None until install()


def _hook(exc_type, exc, tb):
    global _uncaught
    _uncaught = (exc_type, str(exc))
    (_wrapped or sys.__excepthook__)(exc_type, exc, tb)


def install():
    """Wraps sys.excepthook once."""
    global _wrapped
    if sys.excepthook is not _hook:
        _wrapped = sys.excepthook
        sys.excepthook = _hook


def ending(closer):
    """(reason, finished) for a script that ended without calling ``closer``: in a sweep
    (precision-lab-cli sweep ... -- SCRIPT) a script that ran to its end finished its run (its
    exit status says whether it failed); elsewhere the summary says it was not closed."""
    if _uncaught is None and os.environ.get(_sweep.RUN_DIR):
        return "completed", True
    return reason(closer), False


def reason(closer):
    """Why the script ended without calling ``closer`` (close(), remove())."""
    if _uncaught is None:
        return f"the script ended without {closer}"
    exc_type, message = _uncaught
    if issubclass(exc_type, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    return f"stopped by {exc_type.__name__}: {message}"
