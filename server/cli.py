"""`pulsard` command line: `pulsard standalone` runs a broker with embedded storage;
`pulsard broker` one broker of a cluster;
`pulsard admin ...` administers a running one over its REST API; `pulsard client` and
`pulsard perf` produce and consume through the official Python client; `pulsard tokens ...` makes
and checks JWTs for the token provider."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import uvloop

from managed_ledger.errors import DataDirInUseError

from .admin.brokers import broker_version
from .admin.cli import add_admin_parser, run_admin
from .config import BrokerConfig, read_conf_file
from .errors import BrokerError
from .policies.namespace_policies import namespace_policies_command
from .security.tokens_cli import add_tokens_parser, run_tokens
from .standalone import run_standalone
from .tools.client_cli import add_client_parser
from .tools.perf import add_perf_parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pulsard", description="A broker speaking Apache Pulsar's protocol")
    parser.add_argument("--version", action="version", version=f"pulsard {broker_version()}")
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
    add_admin_parser(commands)
    add_client_parser(commands)
    add_perf_parser(commands)
    add_tokens_parser(commands)
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
    args = _parser().parse_args(argv)
    if args.command == "admin":
        sys.exit(run_admin(args))
    if args.command in ("client", "perf"):
        import pulsar   # only these two commands load the client library
        try:
            sys.exit(args.run(args))
        except (OSError, ValueError, pulsar.PulsarException) as exc:
            sys.exit(f"pulsard {args.command}: {exc}")
    if args.command == "tokens":
        sys.exit(run_tokens(args))
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        config = build_config(args)
    except (OSError, ValueError) as exc:
        sys.exit(f"pulsard: {exc}")
    try:
        if args.command == "namespace-policies":
            print(uvloop.run(namespace_policies_command(config, args.action, args.namespace, args.fields)))
        elif args.command == "broker":
            from .cluster.broker import run_broker   # cluster mode (kazoo, the BookKeeper client) only here
            uvloop.run(run_broker(config))
        else:
            uvloop.run(run_standalone(config))
    except (OSError, ValueError, BrokerError, DataDirInUseError) as exc:
        sys.exit(f"pulsard: {exc}")
