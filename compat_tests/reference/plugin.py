"""pytest plugin for runs against the reference Pulsar: healthy is not yet ready there.

Pulsar standalone answers its health check before it has created the public/default namespace;
this waits for that namespace too. With authentication on, its admin API answers an anonymous
caller 401 or 403 and, with authorization on, nothing creates public/default at all: a fixed
grace period then stands in for the wait.  Use: ``-p compat_tests.reference.plugin``.

Pulsar's jars (~280, into lib/) are fetched by the suite's build step before the first test.
"""

import time
import urllib.error
from pathlib import Path

from compat_tests import broker as _broker
from compat_tests.prerequisites import PREREQUISITES, Prerequisite
from compat_tests.toolchains import Say, copy_dependencies, require_tools, run_build

HERE = Path(__file__).resolve().parent
LIB = HERE / "lib"
COMPLETE = LIB / ".complete"     # written last: an interrupted download is fetched again

NAMESPACE_WAIT_S = 60
SECURED_GRACE_S = 10
_wait_ready = _broker.Broker.wait_ready


def _secured(broker) -> bool:
    try:
        with _broker._HTTP.open(f"{broker.web_url}/admin/v2/brokers/health", timeout=5):
            return False
    except urllib.error.HTTPError as exc:
        return exc.code in (401, 403)


def _wait_ready_and_namespace(self, timeout=_broker.READY_TIMEOUT_S):
    waited = _wait_ready(self, timeout)
    if _secured(self):
        time.sleep(SECURED_GRACE_S)
    else:
        self.wait_for_namespace("public/default", NAMESPACE_WAIT_S)
    return waited


def _fetch_jars(say: Say) -> Path:
    if not COMPLETE.exists():
        require_tools("java", "mvn")
        run_build(["mvn", "-B", *copy_dependencies(str(LIB))], HERE, "Maven copy of Pulsar 3.0.7's jars", say)
        COMPLETE.touch()
    return LIB


_broker.Broker.wait_ready = _wait_ready_and_namespace
PREREQUISITES.append(Prerequisite("reference Pulsar jars", _fetch_jars, marker="compat"))
