"""The web console in a real browser (Debian's headless Chromium, driven by Selenium) against a
real pulsard, with topics produced by the official client: the pages show the broker's numbers
and the produced payloads, an action confirmed in the page changes the broker's state, a role
without permission is refused, and pulsardWebConsoleEnabled=false takes the console away."""

from __future__ import annotations

import base64
import json
import secrets

import jwt
import pulsar
import pytest
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from compat_tests.admin_http import AdminHttp
from compat_tests.browser import start_driver
from compat_tests.helpers import full_name, subscribe_earliest, unique_topic

WAIT_S = 30   # a loaded 2-core machine renders slowly; a page that is right returns at once
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
SECRET = secrets.token_bytes(32)


@pytest.fixture(scope="module")
def driver(chromium, tmp_path_factory):
    """One browser for the module's tests."""
    browser = start_driver(chromium, tmp_path_factory.mktemp("browser"))
    yield browser
    browser.quit()


def wait_for(driver, css: str, text: str | None = None, containing: str = ""):
    """The first element at `css` once it exists (and, with `text`, once its text is that; with
    `containing`, once its text contains that)."""
    def found(_):
        elements = driver.find_elements(By.CSS_SELECTOR, css)
        if not elements or (text is not None and elements[0].text != text) or containing not in elements[0].text:
            return False
        return elements[0]
    try:   # the pages re-render as they poll: an element may go stale between two looks
        return WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(found)
    except TimeoutException:
        shown = [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]
        raise AssertionError(f"{css} never showed {text!r} (shows {shown}); page:\n"
                             f"{driver.find_element(By.TAG_NAME, 'main').text}") from None


def open_page(driver, broker, fragment: str = "") -> None:
    driver.get(f"{broker.web_url}/{fragment}")


def topic_fragment(topic: str) -> str:
    return "#/topic/" + full_name(topic).replace("://", "/")


def stats(admin: AdminHttp, topic: str) -> dict:
    response = admin.get(f"/admin/v2/persistent/public/default/{topic}/stats")
    assert response.status_code == 200, response.text
    return response.json()


def test_overview_shows_topics_with_their_backlogs(broker, connect, driver):
    client, admin = connect(broker), AdminHttp(broker.web_url)
    topic = unique_topic("console-overview")
    subscribe_earliest(client, topic, "audit").close()
    consumer = subscribe_earliest(client, topic, "live")
    producer = client.create_producer(topic)
    for i in range(7):
        producer.send(f"m-{i}".encode())
    consumer.acknowledge(consumer.receive(5000))
    open_page(driver, broker)
    row = f'tr[data-topic="{full_name(topic)}"]'
    wait_for(driver, f"{row} td.backlog", "13")   # 7 on audit + 6 on live
    expected = stats(admin, topic)
    assert sum(sub["msgBacklog"] for sub in expected["subscriptions"].values()) == 13
    assert driver.find_element(By.CSS_SELECTOR, f"{row} td.subscriptions").text == "2"
    assert driver.find_element(By.CSS_SELECTOR, f"{row} td.consumers").text == "1"
    assert driver.find_element(By.CSS_SELECTOR, f"{row} td.producers").text == "1"
    broker_row = wait_for(driver, f'tr[data-broker="127.0.0.1:{broker.web_port}"]')
    assert int(broker_row.find_element(By.CSS_SELECTOR, "td.topics").text) >= 1


def test_topic_page_shows_subscriptions_consumers_and_peeked_payloads(broker, connect, driver):
    client, admin = connect(broker), AdminHttp(broker.web_url)
    topic = unique_topic("console-peek")
    consumer = subscribe_earliest(client, topic, "reader", receiver_queue_size=5)
    producer = client.create_producer(topic)
    document = {"order": 42, "item": "book"}
    sent = [producer.send(b"plain text"), producer.send(json.dumps(document).encode(), partition_key="customer-7",
                                                                   properties={"source": "shop"}),
            producer.send(bytes([0, 1, 2, 255]))]
    batched = client.create_producer(topic, batching_enabled=True, batching_max_messages=3,
                                     batching_max_publish_delay_ms=5000)
    for i in range(3):
        batched.send_async(f"batched-{i}".encode(), None)
    batched.flush()
    consumer.receive(5000)   # received, not acknowledged: one unacked message

    open_page(driver, broker, topic_fragment(topic))
    subscription = 'tbody[data-subscription="reader"]'
    expected = stats(admin, topic)["subscriptions"]["reader"]
    wait_for(driver, f"{subscription} td.backlog", str(expected["msgBacklog"]))
    assert driver.find_element(By.CSS_SELECTOR, f"{subscription} td.type").text == "Exclusive"
    consumer_stats = expected["consumers"][0]
    assert driver.find_element(By.CSS_SELECTOR, f"{subscription} td.permits").text == \
        str(consumer_stats["availablePermits"])
    assert driver.find_element(By.CSS_SELECTOR, f"{subscription} td.unacked").text == \
        str(consumer_stats["unackedMessages"])

    driver.find_element(By.CSS_SELECTOR, "#peek input[name=count]").clear()
    driver.find_element(By.CSS_SELECTOR, "#peek input[name=count]").send_keys("10")
    driver.find_element(By.CSS_SELECTOR, "#peek button[type=submit]").click()
    wait_for(driver, "#peek .status", "6 messages")   # 4 entries, the last a batch of 3
    cards = driver.find_elements(By.CSS_SELECTOR, "article.message")
    shown = [card.find_element(By.CSS_SELECTOR, "pre.payload") for card in cards]
    assert shown[0].text == "plain text" and shown[0].get_attribute("data-view") == "text"
    assert json.loads(shown[1].text) == document and shown[1].get_attribute("data-view") == "json"
    assert cards[1].find_element(By.CSS_SELECTOR, "dd.key").text == "customer-7"
    assert cards[1].find_element(By.CSS_SELECTOR, "dd.properties").text == "source=shop"
    assert shown[2].get_attribute("data-view") == "hex" and "00 01 02 ff" in shown[2].text
    assert [s.text for s in shown[3:]] == ["batched-0", "batched-1", "batched-2"]

    message_id = sent[1]
    field = driver.find_element(By.CSS_SELECTOR, "#message-by-id input[name=id]")
    field.send_keys(f"{message_id.ledger_id()}:{message_id.entry_id()}")
    driver.find_element(By.CSS_SELECTOR, "#message-by-id button[type=submit]").click()
    wait_for(driver, "#message-by-id .status", "found")
    card = wait_for(driver, "article.message")
    assert card.find_element(By.CSS_SELECTOR, "dd.id").text == f"{message_id.ledger_id()}:{message_id.entry_id()}"
    assert json.loads(card.find_element(By.CSS_SELECTOR, "pre.payload").text) == document


def test_confirmed_actions_change_the_broker(broker, connect, driver):
    client, admin = connect(broker), AdminHttp(broker.web_url)
    topic = unique_topic("console-actions")
    subscribe_earliest(client, topic, "batch-job").close()
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"m-{i}".encode())
    open_page(driver, broker, topic_fragment(topic))
    subscription = 'tbody[data-subscription="batch-job"]'
    wait_for(driver, f"{subscription} td.backlog", "5")

    driver.find_element(By.CSS_SELECTOR, f"{subscription} button.clear-backlog").click()
    wait_for(driver, "#confirm[open]")
    driver.find_element(By.ID, "confirm-cancel").click()
    assert stats(admin, topic)["subscriptions"]["batch-job"]["msgBacklog"] == 5   # cancelled: nothing done

    driver.find_element(By.CSS_SELECTOR, f"{subscription} button.clear-backlog").click()
    wait_for(driver, "#confirm[open]")
    driver.find_element(By.ID, "confirm-ok").click()
    wait_for(driver, f"{subscription} td.backlog", "0")   # the page, shown anew
    assert stats(admin, topic)["subscriptions"]["batch-job"]["msgBacklog"] == 0

    created = unique_topic("console-created")
    open_page(driver, broker, "#/namespace/public/default")
    wait_for(driver, "#create-topic input[name=topic]").send_keys(created)
    driver.find_element(By.CSS_SELECTOR, "#create-topic button[type=submit]").click()
    wait_for(driver, "h1", full_name(created))   # the new topic's page
    assert full_name(created) in admin.get("/admin/v2/persistent/public/default").json()

    ttl = driver.find_element(By.CSS_SELECTOR, "#set-ttl input[name=seconds]")
    ttl.clear()
    ttl.send_keys("3600")
    driver.find_element(By.CSS_SELECTOR, "#set-ttl button[type=submit]").click()
    wait_for(driver, "#set-ttl .status", "TTL set")
    assert admin.get(f"/admin/v2/persistent/public/default/{created}/messageTTL").json() == 3600


def token(role: str) -> str:
    return jwt.encode({"sub": role}, SECRET, algorithm="HS256")


def sign_in(driver, role: str) -> None:
    field = wait_for(driver, "#token")
    field.send_keys(token(role))
    driver.find_element(By.CSS_SELECTOR, "#sign-in button[type=submit]").click()


def test_a_role_without_permission_is_refused(make_broker, connect, driver):
    secured = make_broker({"authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
                           "tokenSecretKey": base64.b64encode(SECRET).decode(), "authorizationEnabled": "true",
                           "superUserRoles": "admin"})
    client = pulsar.Client(secured.service_url, authentication=pulsar.AuthenticationToken(token("admin")))
    try:
        topic = unique_topic("console-secured")
        subscribe_earliest(client, topic, "s").close()
        client.create_producer(topic).send(b"secret")
    finally:
        client.close()
    anonymous = AdminHttp(secured.web_url)
    assert anonymous.get("/").status_code == 200   # the console's files hold no data
    assert anonymous.get("/admin/v2/tenants").status_code == 401
    assert anonymous.get("/console/api/brokers").status_code == 401

    open_page(driver, secured)
    wait_for(driver, "section .refused", containing="Not authorized (401)")
    sign_in(driver, "intruder")
    for shown in ("brokers", "topics"):   # both sections of the overview
        wait_for(driver, f"section.{shown} .refused", containing="Not authorized (403)")
    assert driver.find_elements(By.CSS_SELECTOR, "tr[data-topic], tr[data-broker]") == []
    open_page(driver, secured, topic_fragment(topic))
    wait_for(driver, "main .refused", containing="Not authorized (403)")
    assert driver.find_elements(By.CSS_SELECTOR, "tbody[data-subscription], article.message") == []

    driver.find_element(By.ID, "sign-out").click()
    sign_in(driver, "admin")
    wait_for(driver, 'tbody[data-subscription="s"] td.backlog', "1")
    driver.execute_script("sessionStorage.clear()")


def test_the_console_can_be_turned_off(make_broker):
    off = AdminHttp(make_broker({"pulsardWebConsoleEnabled": "false"}).web_url)
    for path in ("/", "/console/", "/console/app.js", "/console/api/brokers"):
        assert off.get(path).status_code == 404, path
    assert off.get("/admin/v2/tenants").status_code == 200
