"""`pulsard` command line: `pulsard standalone` runs a broker with embedded storage;
`pulsard broker` one broker of a cluster;
`pulsard admin ...` administers a running one over its REST API; `pulsard client` and
`pulsard perf` produce and consume through the official Python client; `pulsard tokens ...` makes
and checks JWTs for the token provider."""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import sys
from pathlib import Path

import uvloop

from managed_ledger.errors import DataDirError

from .config import BrokerConfig, read_conf_file
from .errors import BrokerError
from .version import broker_version

SERVER_COMMANDS = ("standalone", "broker", "namespace-policies")
#: The Python client reports credentials the broker refused as a timeout (against Apache Pulsar
#: too): the one line says where the reason is.
TIMEOUT_HINT = ("no answer within the client's operation timeout; a broker that refuses the "
                "credentials is reported so too, and its log says why")
#: The tools' modules and parsers (admin's has hundreds of sub-parsers; tokens loads PyJWT and
#: cryptography) are loaded only for their own command: a broker starts without them.
TOOL_PARSERS = {
    "admin": (".admin.cli", "add_admin_parser"),
    "client": (".tools.client_cli", "add_client_parser"),
    "perf": (".tools.perf", "add_perf_parser"),
    "tokens": (".security.tokens_cli", "add_tokens_parser"),
}


class _VersionAction(argparse.Action):
    """--version, looked up only when given (reading the package's metadata takes some 15 ms
    that a broker's start need not spend)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"pulsard {broker_version()}")
        parser.exit()


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of `command` (the first argument); every command's for anything else (None,
    --help, a typo), so the top-level usage lists them all."""
    parser = argparse.ArgumentParser(prog="pulsard", description="A broker speaking Apache Pulsar's protocol")
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True)
    standalone = commands.add_parser("standalone", help="run a broker with its embedded storage")
    standalone.add_argument("--config", type=Path, help="a standalone.conf style file (Pulsar key names)")
    standalone.add_argument("--broker-port", type=int, help="binary protocol port (default 6650)")
    standalone.add_argument("--web-port", type=int, help="HTTP port for admin, lookup and /metrics (default 8080)")
    standalone.add_argument("--bind-address", help="address to listen on (default 127.0.0.1)")
    standalone.add_argument("--data-dir", help="where storage lives (default ./data)")
    standalone.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    broker = commands.add_parser("broker", help="run a broker of a cluster (ZooKeeper + BookKeeper)")
    broker.add_argument("--config", type=Path, required=True,
                        help="a broker.conf style file with clusterName, metadataStoreUrl, bookkeeperMetadataServiceUri")
    broker.add_argument("--broker-port", type=int, help="binary protocol port (default 6650)")
    broker.add_argument("--web-port", type=int, help="HTTP port for admin, lookup and /metrics (default 8080)")
    broker.add_argument("--bind-address", help="address to listen on (default 127.0.0.1)")
    broker.add_argument("--data-dir", help="holds this broker's lock only (default ./data)")
    broker.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    policies = commands.add_parser(
        "namespace-policies", help="show or set a namespace's policies (Pulsar's Policies JSON field names)")
    policies.add_argument("action", choices=("get", "set"))
    policies.add_argument("namespace", help="tenant/namespace")
    policies.add_argument("fields", nargs="*", metavar="FIELD=JSON",
                          help='e.g. deduplicationEnabled=true; FIELD=null clears a field')
    policies.add_argument("--config", type=Path, help="a standalone.conf style file (for dataDir)")
    policies.add_argument("--data-dir", help="the broker's data directory (default ./data)")
    policies.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR")
    for tool, (module, add_parser) in TOOL_PARSERS.items():
        if command == tool or command not in (*SERVER_COMMANDS, *TOOL_PARSERS):
            getattr(importlib.import_module(module, __package__), add_parser)(commands)
    return parser


def build_config(args: argparse.Namespace) -> BrokerConfig:
    """Defaults, then the config file, then command-line flags."""
    config = BrokerConfig()
    if args.config is not None:
        config = config.with_settings(read_conf_file(args.config))
    flags = {
        "brokerServicePort": getattr(args, "broker_port", None),
        "webServicePort": getattr(args, "web_port", None),
        "bindAddress": getattr(args, "bind_address", None),
        "dataDir": args.data_dir,
    }
    return config.with_settings({key: str(value) for key, value in flags.items() if value is not None})


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv[0] if argv else None).parse_args(argv)
    if args.command != "standalone":
        gc.enable()   # off while loading (__main__.py); standalone turns it on once it serves
    if args.command == "admin":
        from .admin.cli import run_admin
        sys.exit(run_admin(args))
    if args.command in ("client", "perf"):
        import pulsar   # only these two commands load the client library
        try:
            sys.exit(args.run(args))
        except pulsar.Timeout as exc:
            sys.exit(f"pulsard {args.command}: {exc} ({TIMEOUT_HINT})")
        except (OSError, ValueError, pulsar.PulsarException) as exc:
            sys.exit(f"pulsard {args.command}: {exc}")
    if args.command == "tokens":
        from .security.tokens_cli import run_tokens
        sys.exit(run_tokens(args))
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        config = build_config(args)
    except (OSError, ValueError) as exc:
        sys.exit(f"pulsard: {exc}")
    try:
        if args.command == "namespace-policies":   # each server command imports what it runs, and
            from .policies.namespace_policies_cli import namespace_policies_command   # the tools none of it
            print(uvloop.run(namespace_policies_command(config, args.action, args.namespace, args.fields)))
        elif args.command == "broker":
            from .cluster.broker import run_broker   # cluster mode (kazoo, the BookKeeper client) only here
            uvloop.run(run_broker(config))
        else:
            from .standalone import run_standalone
            uvloop.run(run_standalone(config))
    except (OSError, ValueError, BrokerError, DataDirError) as exc:
        sys.exit(f"pulsard: {exc}")
