"""The countdown's browser module in a real headless Chromium: it ticks on its own and turns
"expired" on time with no change from the model (so no kernel message is needed)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from zarrlake.ui.widgets import COUNTDOWN_JS

pytestmark = pytest.mark.browser

ORIGIN = "http://zarrlake.test"

# A minimal anywidget model: get/on/off over a plain object; `set` (used by the tests only)
# fires change events as the kernel's messages would. `window.changes` counts them.
HARNESS = """<!doctype html><html><body><div id="root"></div>
<script>
window.timers = new Set();
const si = window.setInterval, ci = window.clearInterval;
window.setInterval = (f, t) => { const id = si(f, t); window.timers.add(id); return id; };
window.clearInterval = (id) => { window.timers.delete(id); ci(id); };
</script>
<script type="module">
import widget from "./countdown.js";
const data = { expires_at: Date.now() / 1000 + %(ahead)s, status: "open" };
const handlers = {};
window.changes = 0;
window.model = {
  get: (k) => data[k],
  on: (ev, f) => { (handlers[ev] ||= []).push(f); },
  off: (ev, f) => { handlers[ev] = (handlers[ev] || []).filter((g) => g !== f); },
  set: (k, v) => { data[k] = v; window.changes += 1; (handlers["change:" + k] || []).forEach((f) => f()); },
  handlers,
};
window.cleanup = widget.render({ model: window.model, el: document.getElementById("root") });
window.ready = true;
</script></body></html>"""


def _page(browser: Any, ahead: float) -> Any:
    page = browser.new_page()
    js = COUNTDOWN_JS.read_text()
    page.route(
        f"{ORIGIN}/countdown.js",
        lambda route: route.fulfill(body=js, content_type="text/javascript"),
    )
    page.route(
        f"{ORIGIN}/",
        lambda route: route.fulfill(body=HARNESS % {"ahead": ahead}, content_type="text/html"),
    )
    page.goto(f"{ORIGIN}/")
    page.wait_for_function("window.ready === true")
    return page


def test_countdown_turns_expired_on_time_without_model_changes(browser: Any) -> None:
    page = _page(browser, ahead=3)
    span = page.locator(".zl-countdown")
    assert span.get_attribute("data-state") == "open"
    assert re.fullmatch(r"expires in [1-3] s", span.inner_text())
    page.wait_for_selector('.zl-countdown[data-state="expired"]', timeout=15_000)
    assert span.inner_text() == "expired"
    assert page.evaluate("window.changes") == 0
    page.screenshot(path="/tmp/zl-countdown-expired.png")
    page.close()


def test_countdown_follows_extend_and_close(browser: Any) -> None:
    page = _page(browser, ahead=-5)
    span = page.locator(".zl-countdown")
    assert span.get_attribute("data-state") == "expired"
    page.evaluate("window.model.set('expires_at', Date.now() / 1000 + 3 * 3600 + 125)")
    assert span.get_attribute("data-state") == "open"
    assert span.inner_text() == "expires in 3 h 2 min"
    page.evaluate("window.model.set('status', 'abandoned')")
    assert span.get_attribute("data-state") == "closed"
    assert span.inner_text() == "abandoned"
    page.close()


def test_cleanup_stops_the_timer_and_the_listeners(browser: Any) -> None:
    page = _page(browser, ahead=60)
    assert page.evaluate("window.model.handlers['change:status'].length") == 1
    assert page.evaluate("window.timers.size") == 1
    page.evaluate("window.cleanup()")
    assert page.evaluate("window.timers.size") == 0
    assert page.evaluate("window.model.handlers['change:status'].length") == 0
    assert page.evaluate("window.model.handlers['change:expires_at'].length") == 0
    assert page.locator(".zl-countdown").count() == 0
    page.close()
