"""`pulsard` command line: `pulsard standalone` runs a broker with embedded storage."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

import uvloop

from .config import BrokerConfig, read_conf_file
from .standalone import run_standalone


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pulsard", description="A broker speaking Apache Pulsar's protocol")
    commands = parser.add_subparsers(dest="command", required=True)
    standalone = commands.add_parser("standalone", help="run a broker with its embedded storage")
    standalone.add_argument("--config", type=Path, help="a standalone.conf style file (Pulsar key names)")
    standalone.add_argument("--broker-port", type=int, help="binary protocol port (default 6650)")
    standalone.add_argument("--web-port", type=int, help="HTTP port for admin, lookup and /metrics (default 8080)")
    standalone.add_argument("--bind-address", help="address to listen on (default 127.0.0.1)")
    standalone.add_argument("--data-dir", help="where storage lives (default ./data)")
    standalone.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    return parser


def build_config(args: argparse.Namespace) -> BrokerConfig:
    """Defaults, then the config file, then command-line flags."""
    config = BrokerConfig()
    if args.config is not None:
        config.apply(read_conf_file(args.config))
    overrides = {
        "broker_service_port": args.broker_port,
        "web_service_port": args.web_port,
        "bind_address": args.bind_address,
        "data_dir": args.data_dir,
    }
    for field_name, value in overrides.items():
        if value is not None:
            setattr(config, field_name, value)
    return config


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        config = build_config(args)
    except (OSError, ValueError) as exc:
        sys.exit(f"pulsard: {exc}")
    try:
        uvloop.run(run_standalone(config))
    except OSError as exc:
        sys.exit(f"pulsard: {exc}")
