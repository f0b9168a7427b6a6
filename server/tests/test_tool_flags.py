"""`pulsard client` and `pulsard perf` flag parsing, without a broker."""

import pytest

from server.cli import _parser
from server.tools.client_cli import _properties
from server.tools.perf import percentiles


def test_client_produce_flags():
    args = _parser().parse_args(["client", "--url", "pulsar://h:1", "produce", "t", "-m", "a", "-m", "b", "-f", "x.bin",
                                 "-n", "3", "-k", "key", "-p", "a=1", "--properties", "b=2=3"])
    assert (args.url, args.topic, args.messages, args.files, args.num_produce, args.key) == (
        "pulsar://h:1", "t", ["a", "b"], ["x.bin"], 3, "key")
    assert _properties(args.properties) == {"a": "1", "b": "2=3"}
    with pytest.raises(ValueError):
        _properties(["novalue"])


def test_client_consume_flags():
    args = _parser().parse_args(["client", "consume", "t", "-s", "sub", "-t", "Key_Shared", "-p", "Earliest", "-n", "0"])
    assert (args.subscription_name, args.subscription_type, args.subscription_position, args.num_messages) == (
        "sub", "Key_Shared", "Earliest", 0)
    with pytest.raises(SystemExit):
        _parser().parse_args(["client", "consume", "t", "-s", "sub", "-t", "Sometimes"])


def test_perf_flags_and_percentiles():
    args = _parser().parse_args(["perf", "produce", "t", "-r", "500", "-s", "128", "-n", "1000", "--time", "10"])
    assert (args.rate, args.size, args.num_messages, args.time) == (500, 128, 1000, 10)
    assert percentiles([]) == "-"
    assert percentiles([float(n) for n in range(1, 101)]) == "p50=51.00 p95=96.00 p99=100.00 p99.9=100.00 max=100.00"
