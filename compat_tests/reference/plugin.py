"""pytest plugin for runs against the reference Pulsar: healthy is not yet ready there.

Pulsar standalone answers its health check before it has created the public/default namespace;
this waits for that namespace too.  Use: ``-p compat_tests.reference.plugin``.
"""

from compat_tests import broker as _broker

NAMESPACE_WAIT_S = 60
_wait_ready = _broker.Broker.wait_ready


def _wait_ready_and_namespace(self, timeout=_broker.READY_TIMEOUT_S):
    waited = _wait_ready(self, timeout)
    self.wait_for_namespace("public/default", NAMESPACE_WAIT_S)
    return waited


_broker.Broker.wait_ready = _wait_ready_and_namespace
