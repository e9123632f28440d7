"""The HTML review report: self-contained, and working in a real headless Chromium."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from audit.cli import main
from tests.paths import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = ROOT / "build" / "test-artifacts"


def write_report(built_examples: dict[str, Path], name: str, out: Path) -> str:
    assert main(["show", str(built_examples[name]), "--html", str(out)]) == 0
    return out.read_text()


def test_the_report_is_self_contained_and_deterministic(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = write_report(built_examples, "gx10-full-infra-error", tmp_path / "a.html")
    again = write_report(built_examples, "gx10-full-infra-error", tmp_path / "b.html")
    capsys.readouterr()
    assert html == again
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", html)
    assert "url(" not in html
    assert '<header id="verdict" class="verdict INFRA_ERROR">' in html
    assert '<tr class="outside">' in html  # the non-loopback attempt, highlighted
    assert '<span id="signature">signature unsigned</span>' in html


@pytest.mark.skipif(
    shutil.which(str(CHROMIUM)) is None or shutil.which(str(CHROMEDRIVER)) is None,
    reason="chromium and chromium-driver are installed by make test (Debian packages)",
)
def test_the_report_in_headless_chromium(
    built_examples: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from selenium import webdriver  # noqa: PLC0415 - a dev dependency, for this test
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415
    from selenium.webdriver.common.by import By  # noqa: PLC0415
    from selenium.webdriver.support.ui import Select  # noqa: PLC0415

    report = tmp_path / "report.html"
    write_report(built_examples, "gx10-full-infra-error", report)
    capsys.readouterr()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,1400"]
    arguments += ["--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}"]
    for argument in arguments:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.get(report.as_uri())
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "review-report.png"))
        banner = driver.find_element(By.ID, "verdict")
        assert banner.is_displayed()
        assert banner.text.startswith("INFRA_ERROR")
        assert driver.find_element(By.ID, "signature").text == "signature unsigned"
        gates = driver.find_elements(By.CSS_SELECTOR, "#gates-table tr.gate")
        assert len(gates) == 16
        assert all(row.is_displayed() for row in gates)
        infra = [r.text for r in gates if r.get_attribute("data-status") == "infra"]
        assert infra and infra[0].startswith("network_isolation")

        def shown() -> list[str]:
            rows = driver.find_elements(By.CSS_SELECTOR, "#transport-table tr.exchange")
            return [r.find_element(By.TAG_NAME, "td").text for r in rows if r.is_displayed()]

        assert shown() == [str(i) for i in range(24)]
        search = driver.find_element(By.ID, "transport-search")
        search.send_keys("/v1/models")
        assert shown() == ["0"]
        assert driver.find_element(By.ID, "transport-count").text == "1 of 24 exchanges shown"
        search.clear()
        Select(driver.find_element(By.ID, "transport-filter")).select_by_value("stream")
        assert shown() == [str(i) for i in range(4, 24)]  # the 20 streamed requests
        assert driver.save_screenshot(str(ARTIFACTS / "review-report-filtered.png"))
    finally:
        driver.quit()


def test_the_exchanges_the_harness_left_have_a_filter_of_their_own() -> None:
    """An exchange whose harness went before the whole answer (a client's time-out) is marked,
    and the transport table's filter shows those alone; an error of another kind is not one."""
    from bundle_schema.models import TransportExchange  # noqa: PLC0415
    from bundle_schema.models.records import GONE_BEFORE_THE_ANSWER  # noqa: PLC0415
    from verify.report_html import _transport  # noqa: PLC0415

    def exchange(n: int, error: str | None) -> TransportExchange:
        return TransportExchange(schema_version=1, id=n, started=float(n), ended=n + 0.5,
                                 method="POST", path="/v1/chat/completions", status=200,
                                 error=error)  # fmt: skip

    html = _transport([exchange(0, None), exchange(1, GONE_BEFORE_THE_ANSWER),
                       exchange(2, "upstream: ConnectionResetError")], None)  # fmt: skip
    flags = re.findall(r'<tr class="exchange" id="exchange-(\d)" [^>]*data-abandoned="(\d)"', html)
    assert flags == [("0", "0"), ("1", "1"), ("2", "0")]
    assert '<option value="abandoned">the harness gone before the answer</option>' in html
