"""``python -m bookkeeper.cluster_kit [--bookies N] [--dir PATH]``: start ZooKeeper and N bookies
on loopback, print the settings pulsard needs, and run until Ctrl-C (then stop everything)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .cluster import LocalCluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookkeeper.cluster_kit", description=__doc__)
    parser.add_argument("--bookies", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None,
                        help="keep data and logs here (default: a temporary folder, removed at exit)")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    cluster = LocalCluster(bookies=args.bookies, root=args.dir, progress=say)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with cluster:
        print(f"metadataStoreUrl={cluster.metadata_store_url}")
        print(f"configurationMetadataStoreUrl={cluster.metadata_store_url}")
        print(f"bookkeeperMetadataServiceUri={cluster.metadata_service_uri}")
        spare = args.bookies >= 3
        ensemble = min(args.bookies - 1, 3) if spare else args.bookies
        quorum = min(2, args.bookies)
        print("# one bookie to spare: writes go on when a bookie is lost" if spare else
              "# no bookie to spare: a lost bookie stops writes until it is back")
        print(f"managedLedgerDefaultEnsembleSize={ensemble}\n"
              f"managedLedgerDefaultWriteQuorum={quorum}\nmanagedLedgerDefaultAckQuorum={quorum}")
        print(f"# logs: {cluster.root / 'logs'}; Ctrl-C stops the cluster", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        say("stopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
