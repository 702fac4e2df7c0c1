"""On a `basra` process's PYTHONPATH in a test: every TLS context it makes writes its session secrets to the file
SSLKEYLOGFILE names, as ssl.create_default_context does, so that the test's proxy can read the frames of the real
connection from outside it (tests/resilience/tls_frames.py).  Nothing else changes."""

import os
import ssl

_KEYLOG = os.environ.get("SSLKEYLOGFILE")
if _KEYLOG:
    _new_context = ssl.SSLContext.__new__

    def _logging_context(cls, *args, **kwargs):
        context = _new_context(cls, *args, **kwargs)
        context.keylog_filename = _KEYLOG
        return context

    ssl.SSLContext.__new__ = staticmethod(_logging_context)
