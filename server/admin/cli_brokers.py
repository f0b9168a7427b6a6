"""`pulsard admin brokers|broker-stats|clusters ...`: pulsar-admin's commands of these
groups that map to endpoints pulsard serves (server/admin/brokers.py, clusters.py), with
pulsar-admin's names and output: `healthcheck` prints ok, `version` the bare version, lists one
name a line, `get-runtime-config` "key    value" lines, documents as JSON.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from .cli_requests import CommandTable, Request

BROKERS_PATH = "/admin/v2/brokers"
BROKER_STATS_PATH = "/admin/v2/broker-stats"
CLUSTERS_PATH = "/admin/v2/clusters"


def _key_value_lines(config: Any) -> str:
    """A map as pulsar-admin prints one: a line per entry, key and value four spaces apart."""
    return "\n".join(f"{key}    {value}" for key, value in config.items())


BROKERS: CommandTable = {
    "healthcheck": ("run a health check against the broker (prints ok)",
                    [(("-tv", "--topic-version"), {"choices": ("V1", "V2"), "dest": "topic_version"})],
                    lambda a: Request("GET", f"{BROKERS_PATH}/health", query=None if a.topic_version is None
                                      else {"topicVersion": a.topic_version})),
    "list": ("list the active brokers of the cluster (this broker's by default)",
             [(("cluster",), {"nargs": "?"})],
             lambda a: Request("GET", BROKERS_PATH + ("" if a.cluster is None else f"/{quote(a.cluster, safe='')}"))),
    "leader-broker": ("show the leader broker", [], lambda a: Request("GET", f"{BROKERS_PATH}/leaderBroker")),
    "get-runtime-config": ("show the configuration in force", [],
                           lambda a: Request("GET", f"{BROKERS_PATH}/configuration/runtime", show=_key_value_lines)),
    "version": ("show the broker's version", [], lambda a: Request("GET", f"{BROKERS_PATH}/version")),
}

BROKER_STATS: CommandTable = {
    "load-report": ("show the broker's load report (cluster mode)", [],
                    lambda a: Request("GET", f"{BROKER_STATS_PATH}/load-report")),
    "topics": ("show the broker's topics by namespace and bundle, with their stats (cluster mode)", [],
               lambda a: Request("GET", f"{BROKER_STATS_PATH}/topics")),
}

CLUSTERS: CommandTable = {
    "list": ("list the clusters", [], lambda a: Request("GET", CLUSTERS_PATH)),
    "get": ("show a cluster's configuration data", [(("cluster",), {})],
            lambda a: Request("GET", f"{CLUSTERS_PATH}/{quote(a.cluster, safe='')}")),
}
