"""The broker's small HTTP/1.1 server, on h11 (python-hyper's sans-IO parser and serialiser):
the admin REST API, HTTP lookups, /metrics and health checks need routing, middlewares and
keep-alive, not a framework whose import alone cost the broker some 15 MiB and 0.16 s.

Handlers use it as `from server import web`: web.get(...), web.Request, web.json_response...
"""

from .application import Application, Middleware
from .messages import (HTTPException, HTTPNotFound, HTTPTemporaryRedirect, Request, Response, StreamedResponse,
                       json_response)
from .routing import Handler, RouteDef, delete, get, post, put, route

__all__ = ["Application", "Handler", "HTTPException", "HTTPNotFound", "HTTPTemporaryRedirect", "Middleware", "Request", "Response",
           "RouteDef", "StreamedResponse", "delete", "get", "json_response", "post", "put", "route"]
