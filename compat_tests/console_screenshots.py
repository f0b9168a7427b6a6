"""The docs' screenshots of the web console (docs/images/console-*.png): a pulsard of its own with
a few topics written by the official client, shown in the tests' headless Chromium.

    python -m compat_tests.console_screenshots [OUTPUT_DIR]     # default: docs/images
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import pulsar
from selenium.webdriver.common.by import By

from compat_tests.broker import REPO_ROOT, Broker
from compat_tests.browser import WINDOW, install_chromium, start_driver

CHART_SECONDS = 14   # the live chart's samples gathered before its screenshot


def _fill(client: pulsar.Client) -> None:
    """Orders in JSON with keys and properties, batched log lines, a binary topic."""
    billing = client.subscribe("orders", "billing", initial_position=pulsar.InitialPosition.Earliest)
    client.subscribe("orders", "analytics", initial_position=pulsar.InitialPosition.Earliest).close()
    orders = client.create_producer("orders")
    for i in range(25):
        orders.send(json.dumps({"order": 1000 + i, "item": ["book", "lamp", "pen"][i % 3], "quantity": i % 4 + 1})
                    .encode(), partition_key=f"customer-{i % 5}", properties={"source": "web-shop"})
    for _ in range(10):
        billing.acknowledge(billing.receive(5000))
    client.subscribe("logs", "archiver", initial_position=pulsar.InitialPosition.Earliest).close()
    logs = client.create_producer("logs", batching_enabled=True, batching_max_messages=20,
                                  batching_max_publish_delay_ms=50)
    for i in range(60):
        logs.send_async(f"GET /index.html 200 {i} ms".encode(), None)
    logs.flush()
    client.subscribe("sensor-readings", "dashboard").close()
    client.create_producer("sensor-readings").send(bytes(range(48)))


def _traffic(client: pulsar.Client, stop: threading.Event) -> None:
    """A steady trickle in and out of `payments`, for the live chart."""
    consumer = client.subscribe("payments", "settlement", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer("payments")
    sent = 0
    while not stop.is_set():
        producer.send(json.dumps({"payment": sent, "amount": sent % 50 + 0.99}).encode())
        sent += 1
        if sent % 3:   # a third stays unacknowledged: the backlog grows
            consumer.acknowledge(consumer.receive(5000))
        time.sleep(0.04 + 0.03 * ((sent // 40) % 2))


def _shoot(driver, path: Path, wait_s: float = 2.0) -> None:
    time.sleep(wait_s)
    driver.save_screenshot(str(path))
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


def main(output: Path) -> None:
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work, Broker(Path(work)) as broker:
        client = pulsar.Client(broker.service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        stop = threading.Event()
        driver = start_driver(install_chromium(print), Path(work))
        width, height = WINDOW   # the page itself, not the window around it
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        try:
            _fill(client)
            traffic = threading.Thread(target=_traffic, args=(client, stop), daemon=True)
            traffic.start()
            time.sleep(3)
            driver.get(f"{broker.web_url}/")
            _shoot(driver, output / "console-overview.png")
            driver.get(f"{broker.web_url}/#/topic/persistent/public/default/payments")
            _shoot(driver, output / "console-topic.png", CHART_SECONDS)
            driver.get(f"{broker.web_url}/#/topic/persistent/public/default/orders")
            time.sleep(1.5)
            driver.find_element(By.CSS_SELECTOR, "#peek input[name=count]").clear()
            driver.find_element(By.CSS_SELECTOR, "#peek input[name=count]").send_keys("3")
            driver.find_element(By.CSS_SELECTOR, "#peek button[type=submit]").click()
            time.sleep(1.5)
            driver.execute_script("document.querySelector('.messages').parentElement.scrollIntoView()")
            _shoot(driver, output / "console-messages.png", 0.5)
            driver.get(f"{broker.web_url}/#/namespace/public/default")
            _shoot(driver, output / "console-namespace.png")
        finally:
            stop.set()
            driver.quit()
            client.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO_ROOT / "docs" / "images")
