"""The protocol layer's one exception.

It lives in its own module so that both the frame codec and the entry helpers can
raise it without importing each other.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """The peer sent bytes that break the Pulsar wire protocol.

    The message says what was wrong. The connection cannot be trusted to stay in
    sync after this, so the server answers (if it can) and closes it.
    """
