"""A tiny HTTP client for the admin tests: requests on a broker's web port, never via a proxy;
and the `pulsard admin` command line run against it."""

from __future__ import annotations

import subprocess
import sys

import requests

from compat_tests.broker import REPO_ROOT

TIMEOUT_S = 10


class AdminHttp:
    def __init__(self, web_url: str) -> None:
        self.base = web_url
        self.session = requests.Session()
        self.session.trust_env = False   # loopback only: ignore HTTP proxies from the environment

    def request(self, method: str, path: str, json=None, data=None, headers=None, **params) -> requests.Response:
        return self.session.request(method, self.base + path, json=json, data=data, headers=headers,
                                    params=params or None, timeout=TIMEOUT_S)

    def get(self, path: str, **params) -> requests.Response:
        return self.request("GET", path, **params)

    def put(self, path: str, json=None, data=None, headers=None) -> requests.Response:
        return self.request("PUT", path, json=json, data=data, headers=headers)

    def post(self, path: str, json=None, data=None) -> requests.Response:
        return self.request("POST", path, json=json, data=data)

    def delete(self, path: str, **params) -> requests.Response:
        return self.request("DELETE", path, **params)


def reason(response: requests.Response) -> str:
    return response.json()["reason"]


def admin(broker, *args: str) -> subprocess.CompletedProcess:
    """Run `pulsard admin ARGS` against the broker's web port."""
    return subprocess.run([sys.executable, "-m", "server", "admin", "--admin-url", broker.web_url, *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
