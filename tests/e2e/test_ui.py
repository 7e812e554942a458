"""The live picture (`tinykube up --ui-port`) in a real headless browser: Debian's chromium and chromium-driver,
driven by Selenium, against a netns sandbox of two nodes with a Deployment and its Service.

Screenshots go to each test's tmp dir; with TINYKUBE_UI_SCREENSHOT=<path> the Service panel's is saved there too
(how the README's picture was made)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RunningCluster
from tests.e2e.test_netns_dataplane import netns_cluster

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service as DriverService  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the netns dataplane needs root"),
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
        reason="needs Debian's chromium and chromium-driver",
    ),
]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    name = f"ui{os.getpid()}"
    with netns_cluster(tmp_path_factory, name, "--nodes", "2", "--controllers", "*", "--ui-port", "0") as running:
        yield running


@pytest.fixture(scope="module")
def ui(sandbox: RunningCluster) -> str:
    state = json.loads((sandbox.data_dir / "cluster.json").read_text())
    address: str = state["ui"]
    assert address.startswith("http://127.0.0.1:")
    return address


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.add_argument("--window-size=1600,1100")
    driver = webdriver.Chrome(service=DriverService(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def web(sandbox: RunningCluster) -> dict[str, Any]:
    """A Deployment of one `python3 -m http.server` (ready 2 s after it starts) and a NodePort Service for it."""
    container = {
        "name": "web",
        "image": "python",
        "command": ["python3", "-m", "http.server", "8080"],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 2, "periodSeconds": 1},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        },
    }
    sandbox.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment, service]})
    )
    created: dict[str, Any] = sandbox.kubectl_json("get", "service", "web")
    return created


def wait(browser: Any, probe: Any, what: str, timeout: float = 60) -> Any:
    """Poll `probe` until it is truthy. The page redraws what changed as it changes, so an element just found may
    be gone at the next step: a probe that meets one is tried again (`StaleElementReferenceException`)."""
    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(browser, timeout, poll_frequency=0.1, ignored_exceptions=ignored).until(
        lambda _: probe(), message=what
    )


def click(browser: Any, selector: str, what: str) -> None:
    """Click the element `selector` finds, found afresh until a click lands (a redraw may replace it)."""

    def clicked() -> bool:
        browser.find_element(By.CSS_SELECTOR, selector).click()
        return True

    wait(browser, clicked, what)


def pods(browser: Any, ready: str | None = None) -> list[Any]:
    selector = 'g.pod[data-id^="pod/default/web-"]' + (f'[data-ready="{ready}"]' if ready else "")
    return list(browser.find_elements(By.CSS_SELECTOR, selector))


def test_the_page_needs_the_token(sandbox: RunningCluster, ui: str) -> None:
    assert httpx.get(ui).status_code == 401
    assert httpx.get(ui + "events").status_code == 401
    assert httpx.get(ui + "?token=wrong").status_code == 401
    assert httpx.get(ui, headers={"Authorization": f"Bearer {sandbox.token}"}).status_code == 200
    answer = httpx.get(f"{ui}?token={sandbox.token}")  # sets the cookie, and the address loses the token
    assert answer.status_code == 303 and answer.headers["location"] == ui
    assert httpx.get(ui, cookies=answer.cookies).status_code == 200


def test_the_picture_shows_the_sandbox_and_follows_readiness(
    sandbox: RunningCluster, ui: str, web: dict[str, Any], browser: Any, tmp_path: Path
) -> None:
    browser.get(f"{ui}?token={sandbox.token}")
    wait(browser, lambda: browser.find_element(By.ID, "status").get_attribute("data-state") == "live", "live")
    # every read is a probe of `wait`: a live page may redraw an element between finding and reading it
    nodes = wait(
        browser,
        lambda: sorted(n.get_attribute("data-id") for n in browser.find_elements(By.CSS_SELECTOR, "g.node")),
        "nodes",
    )
    assert nodes == ["node/node-1", "node/node-2"]
    assert "LAN br0 172.20.0.0/16" in wait(browser, lambda: browser.find_element(By.CSS_SELECTOR, "g.lan").text, "LAN")
    service = wait(
        browser, lambda: browser.find_element(By.CSS_SELECTOR, 'g.svc[data-id="svc/default/web"]').text, "web"
    )
    node_port = web["spec"]["ports"][0]["nodePort"]
    assert web["spec"]["clusterIP"] in service and f":{node_port}" in service
    assert browser.find_elements(By.CSS_SELECTOR, 'g.svc[data-id="svc/kube-system/kube-dns"]')
    wait(browser, lambda: len(pods(browser, "true")) == 1, "the first pod ready")
    wait(
        browser,
        lambda: browser.find_elements(By.CSS_SELECTOR, 'path.edge[data-id^="edge/default/web/default/web-"]'),
        "its edge",
    )
    browser.save_screenshot(str(tmp_path / "one-pod.png"))

    browser.execute_script("window.stillThisPage = true")  # the page must follow without being reloaded
    sandbox.kubectl("scale", "deployment/web", "--replicas=2")
    wait(browser, lambda: len(pods(browser)) == 2, "the new pod drawn")
    wait(browser, lambda: len(pods(browser, "false")) == 1, "the new pod drawn not ready (its probe waits 2 s)")
    browser.save_screenshot(str(tmp_path / "new-pod-not-ready.png"))
    wait(browser, lambda: len(pods(browser, "true")) == 2, "the new pod ready")
    edges = wait(
        browser,
        lambda: (
            len(found := browser.find_elements(By.CSS_SELECTOR, 'path.edge[data-id^="edge/default/web/"]')) == 2
            and [e.get_attribute("class") for e in found]
        ),
        "two endpoint edges",
    )
    assert not any("notready" in (c or "") for c in edges)
    assert browser.execute_script("return window.stillThisPage") is True
    browser.save_screenshot(str(tmp_path / "two-pods.png"))
    placed = wait(browser, lambda: {p.get_attribute("data-id") for p in pods(browser)}, "the pods' names")
    listed = sandbox.kubectl_json("get", "pods", "-l", "app=web")["items"]
    assert {f"pod/default/{p['metadata']['name']}" for p in listed} == placed


def test_clicking_a_service_shows_dns_env_and_rules(
    sandbox: RunningCluster, ui: str, web: dict[str, Any], browser: Any, tmp_path: Path
) -> None:
    browser.get(f"{ui}?token={sandbox.token}")
    wait(browser, lambda: browser.find_elements(By.CSS_SELECTOR, 'g.svc[data-id="svc/default/web"]'), "web")
    wait(browser, lambda: pods(browser, "true"), "a ready pod")
    click(browser, 'g.svc[data-id="svc/default/web"]', "the web Service")
    panel = browser.find_element(By.ID, "panel")
    wait(
        browser,
        lambda: panel.is_displayed() and "default/web" in browser.find_element(By.ID, "svc-title").text,
        "panel",
    )
    cluster_ip = web["spec"]["clusterIP"]
    dns = wait(
        browser, lambda: (text := browser.find_element(By.ID, "dns").text) and "web.default.svc" in text and text, "DNS"
    )
    assert f"web.default.svc.cluster.local. 5 IN A {cluster_ip}" in " ".join(dns.split())
    assert (
        "_http._tcp.web.default.svc.cluster.local" in dns
        and "SRV 0 100 80 web.default.svc.cluster.local." in " ".join(dns.split())
    )
    env = wait(browser, lambda: browser.find_element(By.ID, "env").text, "the environment")
    assert f"WEB_SERVICE_HOST {cluster_ip}" in env and f"WEB_PORT_80_TCP tcp://{cluster_ip}:80" in env
    click(browser, "#env summary", "the other variables")  # every variable of a pod there, kubernetes' too
    assert "KUBERNETES_SERVICE_HOST 10.96.0.1" in wait(
        browser, lambda: browser.find_element(By.CSS_SELECTOR, "#env .all").text, "every variable"
    )
    click(browser, "#env summary", "the other variables")

    def marked() -> list[str]:
        return [e.get_attribute("textContent") for e in browser.find_elements(By.CSS_SELECTOR, "#rules pre span.hit")]

    hits = wait(browser, marked, "rules with the Service's lines marked")
    command = wait(browser, lambda: browser.find_element(By.CSS_SELECTOR, "#rules .command").text, "the command")
    assert "nft list table ip kube-proxy" in command
    assert any(cluster_ip in line for line in hits)
    node_port = web["spec"]["ports"][0]["nodePort"]
    assert any(str(node_port) in line for line in hits)
    all_lines = wait(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#rules pre span")), "the rules")
    assert all_lines > len(hits)  # the whole table, the Service's part marked
    browser.save_screenshot(str(tmp_path / "service-panel.png"))
    if os.environ.get("TINYKUBE_UI_SCREENSHOT"):
        browser.save_screenshot(os.environ["TINYKUBE_UI_SCREENSHOT"])

    wait(browser, lambda: Select(browser.find_element(By.ID, "rules-node")).select_by_value("node-2") or True, "node-2")
    wait(
        browser,
        lambda: "tk-" in (c := browser.find_element(By.CSS_SELECTOR, "#rules .command").text) and ".node-2 " in c,
        "node-2's rules",
    )
    wait(browser, lambda: any(cluster_ip in line for line in marked()), "node-2's rules marked")


def test_a_trace_from_the_external_client_is_drawn(
    sandbox: RunningCluster, ui: str, web: dict[str, Any], browser: Any, tmp_path: Path
) -> None:
    from tinykube.ui.server import trace_available

    if not trace_available():
        pytest.skip("tinykube trace is not there yet")
    browser.get(f"{ui}?token={sandbox.token}")
    wait(browser, lambda: pods(browser, "true"), "a ready pod")
    click(browser, 'g.svc[data-id="svc/default/web"]', "the web Service")
    wait(browser, lambda: browser.find_element(By.ID, "trace").is_displayed(), "trace")
    target = f"172.20.0.2:{web['spec']['ports'][0]['nodePort']}"
    options = "#trace-to option"
    wait(
        browser,
        lambda: target in [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, options)],
        "targets",
    )
    wait(browser, lambda: Select(browser.find_element(By.ID, "trace-from")).select_by_value("external") or True, "from")
    wait(browser, lambda: Select(browser.find_element(By.ID, "trace-to")).select_by_value(target) or True, "to")
    click(browser, "#trace-run", "trace")

    def finished() -> tuple[str, str] | None:
        out = browser.find_element(By.ID, "trace-out")
        outcome = out.get_attribute("data-outcome")
        return (outcome, out.text) if outcome else None

    outcome, text = wait(browser, finished, "the trace's outcome", timeout=90)
    assert text.startswith(f"trace external (172.20.0.250) -> {target}"), text
    hops = wait(
        browser,
        lambda: [c.get_attribute("data-id") for c in browser.find_elements(By.CSS_SELECTOR, "circle.trace-hop")],
        "the path drawn",
    )
    assert hops[:2] == ["external", "svc/default/web"], hops
    assert browser.find_elements(By.CSS_SELECTOR, "path.trace-path")
    if outcome == "answered":
        assert len(hops) == 3 and hops[2].startswith("pod/default/web-"), hops
    browser.save_screenshot(str(tmp_path / "trace.png"))
    if os.environ.get("TINYKUBE_UI_SCREENSHOT"):
        browser.save_screenshot(os.environ["TINYKUBE_UI_SCREENSHOT"].replace(".png", "-trace.png"))
