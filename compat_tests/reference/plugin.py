"""pytest plugin for runs against the reference Pulsar: healthy is not yet ready there.

Pulsar standalone answers its health check before it has created the public/default namespace;
this waits for that namespace too.  Use: ``-p compat_tests.reference.plugin``.
"""

import json
import time

from compat_tests import broker as _broker

NAMESPACE_WAIT_S = 60
_wait_ready = _broker.Broker.wait_ready


def _wait_ready_and_namespace(self, timeout=_broker.READY_TIMEOUT_S):
    waited = _wait_ready(self, timeout)
    deadline = time.monotonic() + NAMESPACE_WAIT_S
    while time.monotonic() < deadline:
        try:
            with _broker._HTTP.open(f"{self.web_url}/admin/v2/namespaces/public", timeout=2) as resp:
                if "public/default" in json.loads(resp.read()):
                    return waited
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise _broker.BrokerError(f"public/default not created within {NAMESPACE_WAIT_S}s")


_broker.Broker.wait_ready = _wait_ready_and_namespace
