"""`pulsard admin ...`: pulsar-admin's commands (tenants, namespaces, topics, schemas here; brokers
and clusters in cli_brokers.py; the policies of namespaces and topics, and topicPolicies, in
cli_policies.py) over the admin REST API of a running broker (--admin-url,
default http://127.0.0.1:8080).

The flags are pulsar-admin's (sizes like 100M, times like 1h: units.py, policy_flags.py); the
admin URL defaults to client.conf's webServiceUrl (client_conf.py). Output is readable: lists one
item a line, documents as indented JSON, an unset policy as null, peeked messages as their
headers and payload. Exit code 0 on success, 1 when the broker refuses (its reason goes to
stderr) or cannot be reached, and 1 on a usage error too (with the sub-command's usage), as
pulsar-admin.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode

from server.errors import InvalidTopicName
from server.loadbalance.config import SPLIT_ALGORITHMS
from server.security.client_credentials import ClientCredentials
from server.topics.topic_name import TopicName

from .cli_brokers import BROKER_STATS, BROKERS, CLUSTERS
from .cli_policies import NAMESPACE_POLICY_COMMANDS, TOPIC_POLICY_COMMANDS
from .cli_requests import AdminCallError, CommandTable, Request, namespace_path, topic_path
from .client_conf import load_client_conf
from .units import parse_relative_time

PEEK_SEPARATOR = "-" * 72


def schema_path(name: str) -> str:
    topic = TopicName.parse(name)
    return f"/admin/v2/schemas/{topic.tenant}/{topic.namespace_local}/{quote(topic.local_name, safe='')}/schema"


def _message_id(text: str) -> dict[str, int]:
    if text in ("earliest", "latest"):
        edge = -1 if text == "earliest" else 2**63 - 1
        return {"ledgerId": edge, "entryId": edge}
    ledger, sep, entry = text.partition(":")
    if not sep or not ledger.lstrip("-").isdigit() or not entry.lstrip("-").isdigit():
        raise AdminCallError(f"expected earliest, latest or LEDGER:ENTRY, got {text!r}")
    return {"ledgerId": int(ledger), "entryId": int(entry)}


def _split(text: str | None) -> list[str]:
    return [item for item in (text or "").split(",") if item]


def _tenant_info(args: argparse.Namespace) -> dict[str, list[str]]:
    return {"adminRoles": _split(args.admin_roles), "allowedClusters": _split(args.allowed_clusters)}


def _peek(a: argparse.Namespace) -> list[Request]:
    base = f"{topic_path(a.topic)}/subscription/{quote(a.subscription, safe='')}/position"
    return [Request("GET", f"{base}/{n}", raw=True, optional=n > 1) for n in range(1, a.count + 1)]


#: group -> its commands
COMMANDS: dict[str, CommandTable] = {
    "tenants": {
        "list": ("list tenants", [], lambda a: Request("GET", "/admin/v2/tenants")),
        "get": ("show a tenant", [(("tenant",), {})], lambda a: Request("GET", f"/admin/v2/tenants/{a.tenant}")),
        "create": ("create a tenant", [(("tenant",), {}), (("-r", "--admin-roles"), {}),
                                       (("-c", "--allowed-clusters"), {"default": "standalone"})],
                   lambda a: Request("PUT", f"/admin/v2/tenants/{a.tenant}", _tenant_info(a))),
        "update": ("update a tenant", [(("tenant",), {}), (("-r", "--admin-roles"), {}),
                                       (("-c", "--allowed-clusters"), {"default": "standalone"})],
                   lambda a: Request("POST", f"/admin/v2/tenants/{a.tenant}", _tenant_info(a))),
        "delete": ("delete a tenant", [(("tenant",), {})],
                   lambda a: Request("DELETE", f"/admin/v2/tenants/{a.tenant}")),
    },
    "namespaces": {
        "list": ("list a tenant's namespaces", [(("tenant",), {})],
                 lambda a: Request("GET", f"/admin/v2/namespaces/{a.tenant}")),
        "create": ("create a namespace", [(("namespace",), {})], lambda a: Request("PUT", namespace_path(a.namespace))),
        "delete": ("delete a namespace", [(("namespace",), {}), (("-f", "--force"), {"action": "store_true"})],
                   lambda a: Request("DELETE", namespace_path(a.namespace), query={"force": str(a.force).lower()})),
        "policies": ("show a namespace's policies", [(("namespace",), {})],
                     lambda a: Request("GET", namespace_path(a.namespace))),
        "topics": ("list a namespace's topics", [(("namespace",), {})],
                   lambda a: Request("GET", namespace_path(a.namespace) + "/topics", query={"mode": "ALL"})),
        "unload": ("unload every topic of a namespace (-b: of one bundle)",
                   [(("namespace",), {}), (("-b", "--bundle"), {})],
                   lambda a: Request("PUT", namespace_path(a.namespace) + (f"/{a.bundle}" if a.bundle else "")
                                     + "/unload")),
        "bundles": ("list a namespace's bundle boundaries (cluster mode)", [(("namespace",), {})],
                    lambda a: Request("GET", namespace_path(a.namespace) + "/bundles")),
        "split-bundle": (
            "split a bundle in two (cluster mode); -u: unload both halves",
            [(("namespace",), {}), (("-b", "--bundle"), {"required": True}),
             (("-u", "--unload"), {"action": "store_true"}),
             (("-san", "--split-algorithm-name"), {"dest": "algorithm", "choices": SPLIT_ALGORITHMS})],
            lambda a: Request("PUT", f"{namespace_path(a.namespace)}/{a.bundle}/split",
                              query={"unload": str(a.unload).lower(),
                                     **({"splitAlgorithmName": a.algorithm} if a.algorithm else {})})),
        "clear-backlog": ("clear the backlog of every subscription", [(("namespace",), {})],
                          lambda a: Request("POST", namespace_path(a.namespace) + "/clearBacklog")),
        "permissions": ("show permissions", [(("namespace",), {})],
                        lambda a: Request("GET", namespace_path(a.namespace) + "/permissions")),
        "grant-permission": (
            "grant a role actions", [(("namespace",), {}), (("--role",), {"required": True}),
                                     (("--actions",), {"required": True})],
            lambda a: Request("POST", f"{namespace_path(a.namespace)}/permissions/{a.role}", _split(a.actions))),
        "revoke-permission": ("revoke a role", [(("namespace",), {}), (("--role",), {"required": True})],
                              lambda a: Request("DELETE", f"{namespace_path(a.namespace)}/permissions/{a.role}")),
        "grant-subscription-permission": (
            "only these roles may consume the subscription",
            [(("namespace",), {}), (("--subscription",), {"required": True}), (("--roles",), {"required": True})],
            lambda a: Request("POST", f"{namespace_path(a.namespace)}/permissions/subscription/"
                                      f"{quote(a.subscription, safe='')}", _split(a.roles))),
        "revoke-subscription-permission": (
            "take a role off a subscription's list",
            [(("namespace",), {}), (("--subscription",), {"required": True}), (("--role",), {"required": True})],
            lambda a: Request("DELETE", f"{namespace_path(a.namespace)}/permissions/"
                                        f"{quote(a.subscription, safe='')}/{a.role}")),
    },
    "topics": {
        "permissions": ("show a topic's permissions", [(("topic",), {})],
                        lambda a: Request("GET", topic_path(a.topic) + "/permissions")),
        "grant-permission": (
            "grant a role actions on a topic", [(("topic",), {}), (("--role",), {"required": True}),
                                                (("--actions",), {"required": True})],
            lambda a: Request("POST", f"{topic_path(a.topic)}/permissions/{a.role}", _split(a.actions))),
        "revoke-permission": ("revoke a role's topic permissions", [(("topic",), {}), (("--role",), {"required": True})],
                              lambda a: Request("DELETE", f"{topic_path(a.topic)}/permissions/{a.role}")),
        "list": ("list a namespace's topics", [(("namespace",), {})],
                 lambda a: Request("GET", namespace_path(a.namespace).replace("namespaces", "persistent"))),
        "list-partitioned-topics": (
            "list partitioned topics", [(("namespace",), {})],
            lambda a: Request("GET", namespace_path(a.namespace).replace("namespaces", "persistent") + "/partitioned")),
        "create": ("create a non-partitioned topic", [(("topic",), {})], lambda a: Request("PUT", topic_path(a.topic))),
        "create-partitioned-topic": (
            "create a partitioned topic", [(("topic",), {}), (("-p", "--partitions"), {"type": int, "required": True})],
            lambda a: Request("PUT", topic_path(a.topic) + "/partitions", a.partitions)),
        "update-partitioned-topic": (
            "add partitions", [(("topic",), {}), (("-p", "--partitions"), {"type": int, "required": True})],
            lambda a: Request("POST", topic_path(a.topic) + "/partitions", a.partitions)),
        "get-partitioned-topic-metadata": ("show the partition count", [(("topic",), {})],
                                           lambda a: Request("GET", topic_path(a.topic) + "/partitions")),
        "delete": ("delete a topic", [(("topic",), {}), (("-f", "--force"), {"action": "store_true"})],
                   lambda a: Request("DELETE", topic_path(a.topic), query={"force": str(a.force).lower()})),
        "delete-partitioned-topic": (
            "delete a partitioned topic", [(("topic",), {}), (("-f", "--force"), {"action": "store_true"})],
            lambda a: Request("DELETE", topic_path(a.topic) + "/partitions", query={"force": str(a.force).lower()})),
        "stats": ("show stats", [(("topic",), {})], lambda a: Request("GET", topic_path(a.topic) + "/stats")),
        "partitioned-stats": (
            "show a partitioned topic's stats", [(("topic",), {}), (("--per-partition",), {"action": "store_true"})],
            lambda a: Request("GET", topic_path(a.topic) + "/partitioned-stats",
                              query={"perPartition": str(a.per_partition).lower()})),
        "stats-internal": ("show ledgers and cursors", [(("topic",), {})],
                           lambda a: Request("GET", topic_path(a.topic) + "/internalStats")),
        "last-message-id": ("show the last message id", [(("topic",), {})],
                            lambda a: Request("GET", topic_path(a.topic) + "/lastMessageId")),
        "unload": ("unload a topic", [(("topic",), {})], lambda a: Request("PUT", topic_path(a.topic) + "/unload")),
        "terminate": ("end a topic for good: no more messages, consumers reach its end", [(("topic",), {})],
                      lambda a: Request("POST", topic_path(a.topic) + "/terminate")),
        "partitioned-terminate": ("terminate every partition of a partitioned topic", [(("topic",), {})],
                                  lambda a: Request("POST", topic_path(a.topic) + "/terminate/partitions")),
        "subscriptions": ("list subscriptions", [(("topic",), {})],
                          lambda a: Request("GET", topic_path(a.topic) + "/subscriptions")),
        "create-subscription": (
            "create a subscription", [(("topic",), {}), (("-s", "--subscription"), {"required": True}),
                                      (("-m", "--messageId"), {"default": "latest", "dest": "message_id"})],
            lambda a: Request("PUT", f"{topic_path(a.topic)}/subscription/{quote(a.subscription, safe='')}",
                              _message_id(a.message_id))),
        "unsubscribe": (
            "delete a subscription", [(("topic",), {}), (("-s", "--subscription"), {"required": True}),
                                      (("-f", "--force"), {"action": "store_true"})],
            lambda a: Request("DELETE", f"{topic_path(a.topic)}/subscription/{quote(a.subscription, safe='')}",
                              query={"force": str(a.force).lower()})),
        "skip": ("skip messages", [(("topic",), {}), (("-s", "--subscription"), {"required": True}),
                                   (("-n", "--count"), {"type": int, "required": True})],
                 lambda a: Request("POST", f"{topic_path(a.topic)}/subscription/{quote(a.subscription, safe='')}"
                                           f"/skip/{a.count}")),
        "clear-backlog": ("skip every message", [(("topic",), {}), (("-s", "--subscription"), {"required": True})],
                          lambda a: Request("POST", f"{topic_path(a.topic)}/subscription/"
                                                    f"{quote(a.subscription, safe='')}/skip_all")),
        "expire-messages": (
            "acknowledge messages older than -t (seconds, or 10m, 1h ...)",
            [(("topic",), {}), (("-s", "--subscription"), {"required": True}),
             (("-t", "--expireTime"), {"required": True, "dest": "expire_time"})],
            lambda a: Request("POST", f"{topic_path(a.topic)}/subscription/{quote(a.subscription, safe='')}"
                                      f"/expireMessages/{parse_relative_time(a.expire_time)}")),
        "reset-cursor": (
            "move a subscription back by a time (-t 10m, 1h ...: to messages published since) or to a message id (-m)",
            [(("topic",), {}), (("-s", "--subscription"), {"required": True}), (("-t", "--time"), {}),
             (("-m", "--messageId"), {"dest": "message_id"})],
            lambda a: _reset_cursor(a)),
        "peek-messages": (
            "show the first -n unacknowledged messages", [(("topic",), {}),
                                                          (("-s", "--subscription"), {"required": True}),
                                                          (("-n", "--count"), {"type": int, "default": 1})],
            _peek),
        "examine-message": (
            "show a message by position", [(("topic",), {}), (("-i", "--initialPosition"),
                                                              {"default": "latest", "dest": "initial"}),
                                           (("-m", "--messagePosition"), {"type": int, "default": 1, "dest": "pos"})],
            lambda a: Request("GET", topic_path(a.topic) + "/examinemessage",
                              query={"initialPosition": a.initial, "messagePosition": str(a.pos)}, raw=True)),
    },
    "schemas": {
        "get": ("show a topic's schema", [(("topic",), {}), (("-v", "--version"), {"type": int})],
                lambda a: Request("GET", schema_path(a.topic) + ("" if a.version is None else f"/{a.version}"))),
        "upload": ("upload a schema (a JSON file {type, schema, properties})",
                   [(("topic",), {}), (("-f", "--filename"), {"required": True})],
                   lambda a: Request("POST", schema_path(a.topic), _read_json_file(a.filename))),
        "delete": ("delete a topic's schema (-f: every version)",
                   [(("topic",), {}), (("-f", "--force"), {"action": "store_true"})],
                   lambda a: Request("DELETE", schema_path(a.topic), query={"force": str(a.force).lower()})),
    },
    "topicPolicies": TOPIC_POLICY_COMMANDS,
    "brokers": BROKERS,
    "broker-stats": BROKER_STATS,
    "clusters": CLUSTERS,
}
COMMANDS["namespaces"].update(NAMESPACE_POLICY_COMMANDS)
COMMANDS["topics"].update(TOPIC_POLICY_COMMANDS)

def _reset_cursor(a: argparse.Namespace) -> Request:
    """-t is relative, as pulsar-admin's: back to the messages published in the last -t."""
    base = f"{topic_path(a.topic)}/subscription/{quote(a.subscription, safe='')}/resetcursor"
    if (a.time is None) == (a.message_id is None):
        raise AdminCallError("give exactly one of -t TIME (e.g. 10m) and -m LEDGER:ENTRY")
    if a.time is not None:
        return Request("POST", f"{base}/{int(time.time() * 1000) - parse_relative_time(a.time) * 1000}")
    return Request("POST", base, _message_id(a.message_id))


def _read_json_file(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise AdminCallError(f"{path}: {exc}") from None


class UsageExit1Parser(argparse.ArgumentParser):
    """pulsar-admin exits 1 on a usage error (after the sub-command's usage), not argparse's 2."""

    def error(self, message: str) -> None:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        """Unknown flags are this sub-command's error (its usage), not the top parser's."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def add_admin_parser(commands: argparse._SubParsersAction) -> None:
    admin = commands.add_parser("admin", help="administer a running broker over its REST API (as pulsar-admin)")
    admin.add_argument("--admin-url", help="the web port's URL (default: webServiceUrl of the client.conf "
                                           "named by PULSAR_CLIENT_CONF, else http://127.0.0.1:8080)")
    admin.add_argument("--auth-plugin", help="e.g. org.apache.pulsar.client.impl.auth.AuthenticationToken "
                                             "(default: client.conf's authPlugin)")
    admin.add_argument("--auth-params", help="the plugin's parameters, in Pulsar's format (default: client.conf's)")
    admin.add_argument("--token", help="a JWT (the same as AuthenticationToken with token:...)")
    admin.add_argument("--tls-trust-cert-path",
                       help="CA certificates for an https admin URL (default: client.conf's tlsTrustCertsFilePath)")
    admin.add_argument("--tls-allow-insecure", action="store_true",
                       help="do not verify the broker's certificate (default: client.conf's tlsAllowInsecureConnection)")
    groups = admin.add_subparsers(dest="group", required=True, parser_class=UsageExit1Parser)
    for group, table in COMMANDS.items():
        group_parser = groups.add_parser(group).add_subparsers(dest="action", required=True,
                                                               parser_class=UsageExit1Parser)
        for action, (help_text, arguments, build) in table.items():
            parser = group_parser.add_parser(action, help=help_text)
            for flags, options in arguments:
                parser.add_argument(*flags, **options)
            parser.set_defaults(build=build)


#: Admin URLs are usually local: never through a proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(admin_url: str, request: Request, auth: ClientCredentials = ClientCredentials(),
         context: ssl.SSLContext | None = None) -> tuple[int, bytes, dict[str, str]]:
    url = admin_url.rstrip("/") + request.path + (f"?{urlencode(request.query)}" if request.query else "")
    data = None if request.body is None else json.dumps(request.body).encode()
    http_request = urllib.request.Request(url, data=data, method=request.method,
                                          headers={"Content-Type": "application/json", **auth.headers})
    opener = _NO_PROXY if context is None else urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(http_request, timeout=30) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            reason = json.loads(body)["reason"]
        except (ValueError, KeyError, TypeError):
            reason = body.decode(errors="replace") or exc.reason
        raise AdminCallError(f"{exc.code}: {reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise AdminCallError(f"cannot reach {admin_url}: {getattr(exc, 'reason', exc)}") from None


def render(request: Request, body: bytes, headers: dict[str, str]) -> str:
    if request.raw:
        shown = [f"{k}: {v}" for k, v in headers.items() if k.lower().startswith("x-pulsar")]
        return "\n".join(shown + ["", body.decode(errors="replace")])
    if not body:   # 204: an unset policy, which pulsar-admin prints as null
        return "null" if request.method == "GET" else ""
    try:
        value = json.loads(body)
    except ValueError:
        return body.decode(errors="replace")
    if request.show is not None:
        return request.show(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return json.dumps(value, indent=2)


def run_admin(args: argparse.Namespace) -> int:
    try:
        conf = load_client_conf()
        admin_url = args.admin_url or conf.web_service_url
        auth = conf.credentials(args.auth_plugin, args.auth_params, args.token)
        context = None
        if admin_url.startswith("https:"):
            context = auth.ssl_context(args.tls_trust_cert_path or conf.tls_trust_certs_file_path or None,
                                       args.tls_allow_insecure or conf.tls_allow_insecure_connection)
        built = args.build(args)
        requests = built if isinstance(built, list) else [built]
        outputs = []
        for request in requests:
            if request.notice:
                print(f"pulsard admin: {request.notice}", file=sys.stderr)
            try:
                _, body, headers = call(admin_url, request, auth, context)
            except AdminCallError as exc:
                if request.optional and str(exc).startswith("404"):
                    break
                raise
            outputs.append(render(request, body, headers))
    except (AdminCallError, InvalidTopicName, ValueError, OSError, ssl.SSLError) as exc:
        print(f"pulsard admin: {exc}", file=sys.stderr)
        return 1
    output = f"\n{PEEK_SEPARATOR}\n".join(text for text in outputs if text)
    if output:
        print(output)
    return 0
