#!/usr/bin/env python3
"""pulsard's command line in front of a reference Apache Pulsar standalone (for checking the tests).

    pulsar_shim.py standalone --broker-port P --web-port W [--bind-address H] --data-dir D [--config F]

Writes a broker/bookie config (standalone.conf keys; F's keys override them) into D and execs
PulsarStandaloneStarter from the jars in lib/ (see README.md), so that SIGTERM and SIGKILL reach
the JVM itself.
"""

import argparse
import os
import socket
from pathlib import Path

LIB = Path(__file__).resolve().parent / "lib"
JVM_OPTIONS = [
    "-Xmx512m", "-XX:MaxDirectMemorySize=512m", "-XX:+UseG1GC",
    "--add-opens", "java.base/jdk.internal.platform=ALL-UNNAMED",
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settings(args, bookie_port: int) -> dict:
    values = {
        "clusterName": "standalone", "brokerServicePort": args.broker_port,
        "webServicePort": args.web_port, "bindAddress": args.bind_address,
        "advertisedAddress": args.bind_address, "bookiePort": bookie_port, "allowLoopback": "true",
        "managedLedgerDefaultEnsembleSize": 1, "managedLedgerDefaultWriteQuorum": 1,
        "managedLedgerDefaultAckQuorum": 1, "journalSyncData": "true",
        "httpServerEnabled": "false",   # the bookie's HTTP server
        "functionsWorkerEnabled": "false", "brokerDeleteInactiveTopicsEnabled": "false",
        "loadBalancerEnabled": "false", "loadBalancerOverrideBrokerNicSpeedGbps": 10,
        "dbStorage_writeCacheMaxSizeMb": 32, "dbStorage_readAheadCacheMaxSizeMb": 32,
        "dbStorage_rocksDB_blockCacheSize": 33554432,
    }
    if args.config:
        for line in Path(args.config).read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, value = line.split("=", 1)
                values[key.strip()] = value.strip()
    return values


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["standalone"])
    parser.add_argument("--broker-port", type=int, required=True)
    parser.add_argument("--web-port", type=int, required=True)
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--config")
    args = parser.parse_args()

    data = Path(args.data_dir).resolve()
    data.mkdir(parents=True, exist_ok=True)
    port_file = data / "bookie.port"   # the same bookie port across restarts
    if not port_file.exists():
        port_file.write_text(str(free_port()))
    bookie_port = int(port_file.read_text())
    conf = data / "pulsar.conf"
    conf.write_text("".join(f"{k}={v}\n" for k, v in settings(args, bookie_port).items()))

    os.chdir(data)
    os.execvp("java", [
        "java", *JVM_OPTIONS, "-cp", f"{LIB}/*", "org.apache.pulsar.PulsarStandaloneStarter",
        "--config", str(conf), "--no-functions-worker", "--no-stream-storage",
        "--bookkeeper-port", str(bookie_port), "--metadata-dir", str(data / "metadata"),
        "--bookkeeper-dir", str(data / "bookkeeper"),
    ])


if __name__ == "__main__":
    main()
