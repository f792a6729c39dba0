"""/ui in a real browser: Debian's Chromium, headless, driven by Playwright for Python.

The browser comes from the system (`chromium` package, installed by .ci/run), never from
`playwright install`. A missing browser fails the test: it must not pass by skipping.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import time
import zlib
from pathlib import Path

import openai
import pytest

from .helpers import base_config, searxng_engine

ADMIN = "ui-admin-key-0001"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def chromium_path() -> str:
    for candidate in (os.environ.get("SEARCHHUB_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("Chromium is missing: install Debian's 'chromium' package (.ci/run does)", pytrace=False)


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        path = chromium_path()
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
        try:
            # The system browser, not one Playwright downloaded: same major version as `chromium --version`.
            assert b.version.split(".")[0] in subprocess.run([path, "--version"], capture_output=True,
                                                             text=True, timeout=30).stdout
            yield b
        finally:
            b.close()


def search_then_answer(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Rust 1.91.0 is out [1]."}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}


def distinct_colours(png: bytes) -> int:
    """How many different pixel values a PNG screenshot has (8-bit RGB/RGBA, non-interlaced)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and ctype in (2, 6)
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[bytes] = set()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        if y % 4 == 0:
            for x in range(0, stride, bpp * 4):
                colours.add(bytes(line[x:x + 3]))
        prev = line
    return len(colours)


def test_ui_shows_a_search_request_and_its_trace(gateway, fake_model, search_fakes, browser, tmp_path) -> None:
    cfg = base_config(fake_model.url)
    cfg["server"]["adminKeys"] = [ADMIN]
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
    gw = gateway(cfg)
    fake_model.default = search_then_answer

    # Without the admin key the page does not load: the browser gets the 401 and its Basic challenge.
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect

    anonymous = browser.new_context()
    statuses: list[int] = []
    page = anonymous.new_page()
    page.on("response", lambda r: statuses.append(r.status))
    with pytest.raises(PlaywrightError, match="AUTH"):
        page.goto(gw.url + "/ui")
    assert statuses == [401]
    wrong = browser.new_context(http_credentials={"username": "operator", "password": "not-the-key"})
    refused = wrong.new_page().goto(gw.url + "/ui")
    assert refused.status == 401 and "searchhub admin" not in refused.text()
    anonymous.close()
    wrong.close()

    ctx = browser.new_context(http_credentials={"username": "operator", "password": ADMIN},
                              viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    assert page.goto(gw.url + "/ui").status == 200
    expect(page.locator("#cfg-hash")).to_have_text(re.compile(r"^[0-9a-f]{12}$"), timeout=10_000)

    started = time.monotonic()
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
    row = page.locator("#requests tbody tr", has_text="1 call")
    row.wait_for(timeout=10_000)
    assert time.monotonic() - started < 5  # polling once a second: seen within about a second
    assert "searxng" in row.inner_text() and "openai-sdk" in row.inner_text()

    row.click()
    trace = page.locator("#trace")
    trace.get_by_text("latest rust release").wait_for(timeout=10_000)
    text = trace.inner_text()
    assert "search intent" in text and "en-hard" in text  # why it searched
    assert "searxng" in text and "default" in text  # which engine, chosen how
    assert "local.m" in text
    link = trace.locator("a[href='https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/']")
    assert link.count() == 1  # the citation's source

    expect(page.locator("#engines tbody tr", has_text="searxng")).to_contain_text("100%", timeout=10_000)
    expect(page.locator("#chart-searches rect:not([height='0'])")).to_have_count(1, timeout=10_000)
    assert page.locator("#routes .badge").first.inner_text() == "ok"

    shot = tmp_path / "ui.png"
    png = page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert distinct_colours(png) > 20, "the screenshot is blank"
    assert errors == []
    ctx.close()


def admin_gateway(gateway, fake_model, search_fakes, **trace):
    cfg = base_config(fake_model.url)
    cfg["server"]["adminKeys"] = [ADMIN]
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
    if trace:
        cfg["trace"] = trace
    return gateway(cfg)


def watch_errors(page) -> list[str]:
    """Page errors and console errors, as text, collected while the page runs."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def test_ui_opened_with_credentials_in_the_url_fills_its_panels(gateway, fake_model, search_fakes, browser) -> None:
    """`http://user:key@host/ui`: the page's own requests must not carry the URL's credentials (fetch
    refuses such a URL) and must still be authenticated, by the browser's Basic auth."""
    from playwright.sync_api import expect

    gw = admin_gateway(gateway, fake_model, search_fakes)
    fake_model.default = search_then_answer
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])

    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    errors = watch_errors(page)
    with_credentials = gw.url.replace("http://", f"http://operator:{ADMIN}@", 1) + "/ui"
    assert page.goto(with_credentials).status == 200
    expect(page.locator("#cfg-hash")).to_have_text(re.compile(r"^[0-9a-f]{12}$"), timeout=10_000)
    expect(page.locator("#routes tbody tr")).to_have_count(1, timeout=10_000)
    expect(page.locator("#routes .badge")).to_have_text("ok")
    expect(page.locator("#engines tbody tr", has_text="searxng")).to_contain_text("100%", timeout=10_000)
    row = page.locator("#requests tbody tr", has_text="1 call")
    row.wait_for(timeout=10_000)
    row.click()
    page.locator("#trace").get_by_text("latest rust release").wait_for(timeout=10_000)
    assert "⚠" not in page.locator("#conn").inner_text()  # no poll failed
    assert not [e for e in errors if "credentials" in e.lower()], errors
    assert errors == []
    ctx.close()


LONG = "x" * 4000  # one word of 4,000 characters: nothing to break it at


def long_search_then_answer(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Answer: " + LONG + " [1]"}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust " + "y" * 300}}]}


OVERFLOW = """() => {
  // Every element's right edge as the user can see it: clipped by any ancestor that scrolls or clips.
  const width = window.innerWidth, out = [];
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    let right = r.right;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") right = Math.min(right, a.getBoundingClientRect().right);
    }
    if (right > width + 0.5) out.push(e.tagName + (e.id ? "#" + e.id : "") + " right=" + Math.round(right));
  }
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: width, overflowing: out.slice(0, 10)};
}"""

FULLY_SHOWN = """(cell) => {
  // The cell lies inside the viewport and inside every ancestor that would clip it, and its text is not cut.
  const r = cell.getBoundingClientRect();
  if (r.right > window.innerWidth + 0.5 || r.left < -0.5) return false;
  for (let a = cell.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflowX === "visible") continue;
    const b = a.getBoundingClientRect();
    if (r.right > b.right + 0.5 || r.left < b.left - 0.5) return false;
  }
  return cell.scrollWidth <= cell.clientWidth + 1;
}"""


def test_ui_layout_fits_the_window_with_a_long_trace_body(gateway, fake_model, search_fakes, browser) -> None:
    """At 1400 and 1920 px wide, nothing reaches past the window's right edge, every panel's last
    column shows in full, and a body of thousands of unbroken characters wraps inside its own box."""
    gw = admin_gateway(gateway, fake_model, search_fakes, bodies=True)
    fake_model.default = long_search_then_answer
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for " + "z" * 3000}])

    ctx = browser.new_context(http_credentials={"username": "operator", "password": ADMIN},
                              viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    errors = watch_errors(page)
    assert page.goto(gw.url + "/ui").status == 200
    page.locator("#engines tbody tr", has_text="searxng").wait_for(timeout=10_000)
    row = page.locator("#requests tbody tr", has_text="1 call")
    row.wait_for(timeout=10_000)
    row.click()
    body = page.locator("#trace pre")
    body.wait_for(timeout=10_000)
    assert LONG in body.inner_text()

    for width in (1400, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        found = page.evaluate(OVERFLOW)
        assert found["scrollWidth"] <= found["innerWidth"], found
        assert found["overflowing"] == [], found
        for panel in ("#routes", "#engines", "#requests", "#trace"):  # the right-hand columns included
            cells = page.locator(panel + " tr").first.locator("th")
            for i in range(cells.count()):
                assert cells.nth(i).evaluate(FULLY_SHOWN), f"{panel}: '{cells.nth(i).inner_text()}' at {width} px"
        for panel in page.locator("main > section").all():  # every panel inside the window
            box = panel.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, (width, box)
        pre = body.bounding_box()  # the long body wraps in a bounded box of its own
        assert pre["height"] <= 600 and pre["x"] + pre["width"] <= width, pre
        assert body.evaluate("(e) => e.scrollHeight > e.clientHeight && getComputedStyle(e).overflowY === 'auto'")

    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(100)
    page.screenshot(path="/tmp/ui-1400.png", full_page=True)
    assert errors == []
    ctx.close()


def test_ui_shows_the_pages_read_after_a_search(gateway, fake_model, search_fakes, site, browser) -> None:
    from .test_read_pages import QUESTION, config, search_then_answer, teasers

    cfg = config(fake_model.url, search_fakes, site)
    cfg["server"]["adminKeys"] = [ADMIN]
    gw = gateway(cfg)
    search_fakes.script("searxng", teasers(site, "/deep", "/image.png"))
    search_then_answer(fake_model)
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}])
    ctx = browser.new_context(http_credentials={"username": "operator", "password": ADMIN})
    page = ctx.new_page()
    errors = watch_errors(page)
    assert page.goto(gw.url + "/ui").status == 200
    row = page.locator("#requests tbody tr", has_text="1 call")
    row.wait_for(timeout=10_000)
    row.click()
    trace = page.locator("#trace")
    trace.get_by_text("Pages read for passages").wait_for(timeout=10_000)
    text = trace.inner_text()
    assert site.origin + "/deep" in text and "ok" in text and "skipped" in text
    assert errors == []
    ctx.close()
