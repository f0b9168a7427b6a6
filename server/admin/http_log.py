"""HTTP requests aiohttp cannot parse are the client's fault, not the broker's.

aiohttp logs each one at ERROR with a traceback ("Error handling request"); this filter turns
such a record into one INFO line naming the peer and the parser's complaint. Every other
aiohttp record passes unchanged.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

AIOHTTP_SERVER_LOGGER = "aiohttp.server"


class ClientErrorFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            complaint = " ".join(str(exc.message).split())[:200]
            record.msg, record.args = "%s (status %d): %s", (record.getMessage(), exc.code, complaint)
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info = record.exc_text = None
        return True


def quiet_client_errors() -> None:
    """Install the filter once on aiohttp's server logger."""
    logger = logging.getLogger(AIOHTTP_SERVER_LOGGER)
    if not any(isinstance(f, ClientErrorFilter) for f in logger.filters):
        logger.addFilter(ClientErrorFilter())
