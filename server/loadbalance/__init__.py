"""Load management of a cluster, as Apache Pulsar's ModularLoadManagerImpl does it: one leader
broker (elected in ZooKeeper) places unowned bundles from the load every broker reports, splits
bundles grown too big and sheds bundles off overloaded brokers. The modules here know bundles
and brokers by name only; server/cluster wires them to ownership and lookups."""
