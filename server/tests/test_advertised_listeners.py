import pytest

from server.config import BrokerConfig
from server.connection.advertised_listeners import AdvertisedListeners, Listener
from server.errors import ServiceNotReady


def listeners(text: str, internal: str = "") -> AdvertisedListeners:
    return AdvertisedListeners.from_config(
        BrokerConfig(advertised_listeners=text, internal_listener_name=internal, broker_service_port=7000))


def test_without_listeners_lookups_get_the_service_url_and_names_fail():
    parsed = listeners("")
    assert parsed.listener("") == Listener("pulsar://127.0.0.1:7000")
    with pytest.raises(ServiceNotReady):
        parsed.listener("external")


def test_names_with_a_plain_and_a_tls_url_and_the_first_is_internal():
    parsed = listeners(" in:pulsar://10.0.0.1:6650 , out:pulsar://example.com:6650,out:pulsar+ssl://example.com:6651")
    assert parsed.listener("") == Listener("pulsar://10.0.0.1:6650")
    assert parsed.listener("out") == Listener("pulsar://example.com:6650", "pulsar+ssl://example.com:6651")
    assert listeners("a:pulsar+ssl://h:1,b:pulsar://h:2", internal="b").internal == Listener("pulsar://h:2")
    assert listeners("a:pulsar+ssl://h:1").internal == Listener(None, "pulsar+ssl://h:1")


@pytest.mark.parametrize("text, internal, message", [
    ("pulsar://h:1", "", "has no listener name"),
    (":pulsar://h:1", "", "has no listener name"),
    ("a:pulsar://h:1", "b", "internalListenerName: 'b' is not a listener"),
    ("a:pulsar://h:1,a:pulsar://h:2", "", "more than one pulsar:// URL"),
    ("a:pulsar+ssl://h:1,a:pulsar+ssl://h:2", "", "more than one pulsar\\+ssl:// URL"),
    ("a:pulsar://h:1,b:pulsar+ssl://h:1", "", "h:1 is given to two listeners"),
    ("a:http://h:1", "", "not a pulsar:// or pulsar\\+ssl:// URL"),
    ("a:pulsar://:1", "", "with a host"),
    ("a:pulsar://h:port", "", "not a pulsar://"),
])
def test_bad_configurations_name_the_key(text, internal, message):
    with pytest.raises(ValueError, match=message) as refused:
        listeners(text, internal)
    assert str(refused.value).startswith(("advertisedListeners: ", "internalListenerName: "))
