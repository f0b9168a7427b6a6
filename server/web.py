"""The HTTP side of the broker: health, Prometheus metrics and HTTP lookup.

aiohttp serves it in the broker's own event loop: a well-kept async HTTP server with routing,
keep-alive and request limits that would otherwise be hand-written here.
"""

from __future__ import annotations

import logging

from aiohttp import web

from .broker_service import BrokerService
from .errors import BrokerError, InvalidTopicName, TopicNotFound
from .metrics import render
from .topic_name import TopicName

log = logging.getLogger(__name__)

_STATUS = {InvalidTopicName: 412, TopicNotFound: 404}


def _error(exc: Exception) -> web.Response:
    status = next((code for kind, code in _STATUS.items() if isinstance(exc, kind)), 500)
    if status == 500 and not isinstance(exc, BrokerError):
        log.exception("admin request failed", exc_info=exc)
    return web.json_response({"reason": str(exc)}, status=status)


def _topic(request: web.Request) -> TopicName:
    info = request.match_info
    return TopicName.parse(f"{info['domain']}://{info['tenant']}/{info['namespace']}/{info['topic']}")


def build_app(broker: BrokerService) -> web.Application:
    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def metrics(request: web.Request) -> web.Response:
        body = render(broker.config.cluster_name, broker.topics)
        return web.Response(text=body, content_type="text/plain", charset="utf-8")

    async def lookup(request: web.Request) -> web.Response:
        try:
            url = await broker.lookup(_topic(request))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON reason
            return _error(exc)
        return web.json_response({"brokerUrl": url, "brokerUrlTls": "", "httpUrl": f"http://{request.host}",
                                  "nativeUrl": url})

    async def partitions(request: web.Request) -> web.Response:
        try:
            count = await broker.partitions_of(_topic(request))
        except Exception as exc:  # noqa: BLE001
            return _error(exc)
        return web.json_response({"partitions": count})

    app = web.Application()
    topic_path = "{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
    app.add_routes([
        web.get("/admin/v2/brokers/health", health),
        web.get("/metrics", metrics),
        web.get("/metrics/", metrics),
        web.get(f"/lookup/v2/topic/{topic_path}", lookup),
        web.get(f"/admin/v2/{topic_path}/partitions", partitions),
    ])
    return app


async def start_web(broker: BrokerService, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(build_app(broker), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, reuse_address=True).start()
    return runner


