#!/usr/bin/env python3
"""Drives the web UI in headless Chromium (Debian's chromium and
chromium-driver, through Selenium 4) against a running `mempalace serve`:
the token form, the palace map, a room's drawers, search with the score
breakdown, a result opened, edited, deleted and restored, an entity's facts
and timeline, the duplicates view, the jobs view and an error's detail.

Each step saves a screenshot (NN-step.png in --out) and prints
`SCREENSHOT <path> <bytes>`; the page's content is asserted after each
step, and every write is checked again through the REST API. Prints PASS
at the end; any failure raises (non-zero exit). Run by
crates/mempalace/tests/it/web_ui.rs.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--window-size=1280,800",
    "--force-device-scale-factor=1",
    "--lang=en-US",
]


class Rest:
    """The REST API through urllib, for checking what the UI did."""

    def __init__(self, base, token):
        self.base = base.rstrip("/") + "/api/v1"
        self.token = token

    def call(self, method, path, body=None, headers=None, token=True):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if token and self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw.decode(errors="replace")

    def get(self, path):
        status, body = self.call("GET", path)
        assert status == 200, f"GET {path}: {status} {body}"
        return body


class Ui:
    def __init__(self, driver, out):
        self.driver = driver
        self.out = out
        self.step = 0

    def wait(self, condition, what, timeout=30):
        try:
            # A view re-rendered between finding an element and reading it
            # leaves a stale reference: look again.
            ignored = (NoSuchElementException, StaleElementReferenceException)
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1, ignored_exceptions=ignored).until(condition)
        except TimeoutException:
            self.shot("timeout")
            raise AssertionError(f"timed out waiting for {what}; page text:\n{self.text()[:3000]}") from None

    def css(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector, what=None):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, selector)), what or selector)

    def tid(self, testid):
        return f'[data-testid="{testid}"]'

    def view(self, name):
        """Waits until the view `name` has rendered (not loading)."""
        self.wait(
            lambda d: d.execute_script(
                "const v = document.getElementById('view');"
                "return v.dataset.view === arguments[0] && !v.hasAttribute('aria-busy');",
                name,
            ),
            f"the {name} view",
        )

    def keys(self, *keys):
        """Types into whatever has the focus, as a person would."""
        chain = ActionChains(self.driver)
        for key in keys:
            chain.send_keys(key)
        chain.perform()

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def active(self):
        return self.driver.switch_to.active_element

    def shot(self, name):
        self.step += 1
        path = os.path.join(self.out, f"{self.step:02d}-{name}.png")
        # Let fonts and layout settle.
        self.driver.execute_script("return document.fonts ? document.fonts.ready.then(() => true) : true")
        time.sleep(0.2)
        assert self.driver.save_screenshot(path), f"screenshot {path} failed"
        print(f"SCREENSHOT {path} {os.path.getsize(path)}", flush=True)
        return path


def run(driver, args):
    rest = Rest(args.url, args.token)
    ui = Ui(driver, args.out)
    drawer_id = args.drawer
    entity = args.entity

    # Without the token the API refuses; the page itself is public.
    if args.token:
        status, _ = rest.call("GET", "/health", token=False)
        assert status == 401, f"no token: {status}"

    # 1. The page asks for the token (401), keeps it in the tab only.
    driver.get(args.url + "/")
    if args.token:
        ui.one(ui.tid("token-panel"), "the token form")
        assert driver.switch_to.active_element.get_attribute("id") == "token-input", "the token field has the focus"
        ui.keys(args.token)
        ui.shot("token")
        ui.keys(Keys.ENTER)
        ui.wait(EC.invisibility_of_element_located((By.ID, "token-panel")), "the token form to close")
        stored = driver.execute_script("return sessionStorage.getItem('mempalace.token')")
        assert stored == args.token, "the token is kept in sessionStorage"
        assert driver.execute_script("return localStorage.length") == 0, "nothing in localStorage"
        assert args.token not in driver.current_url, "the token never goes into a URL"

    # 2. The palace map: wings, rooms, counts as the API has them.
    ui.view("map")
    assert driver.current_url.endswith("#/map"), driver.current_url
    taxonomy = rest.get("/taxonomy")
    for wing in taxonomy["wings"]:
        card = ui.one(ui.tid(f"wing-{wing['wing']}"))
        assert card.find_element(By.CSS_SELECTOR, ui.tid("wing-count")).text == str(wing["drawers"]), wing
        for room in wing["rooms"]:
            link = card.find_element(By.CSS_SELECTOR, ui.tid(f"room-{wing['wing']}-{room['room']}"))
            assert link.find_element(By.CSS_SELECTOR, ui.tid("room-count")).text == str(room["drawers"]), room
    summary = ui.one(ui.tid("map-summary")).text
    assert f"{taxonomy['total_drawers']} drawers" in summary, summary
    names = [el.text.split("\n")[0] for el in ui.css(ui.tid("kg-entity"))]
    assert entity in names, f"{entity} in the map's entity list: {names}"
    health = ui.one(ui.tid("health")).text
    assert "local @ default" in health, health
    ui.shot("map")

    # 3. A room's drawers, reached with the keyboard (j to the room, Enter).
    target = f"#/drawers?wing={args.wing}&room={args.room}"
    for _ in range(40):
        ui.keys("j")
        if (ui.active().get_attribute("href") or "").endswith(target):
            break
    else:
        raise AssertionError(f"j never reached the room {args.wing}/{args.room}")
    ui.keys(Keys.ENTER)
    ui.view("drawers")
    rows = ui.css(ui.tid("drawer-row"))
    listed = rest.get(f"/drawers?wing={args.wing}&room={args.room}")
    assert [r.get_attribute("data-id") for r in rows] == [d["id"] for d in listed["drawers"]], "the room's drawers"
    assert drawer_id in [r.get_attribute("data-id") for r in rows]
    ui.shot("drawers")

    # 4. Search: "/" focuses the box; each result shows its score breakdown.
    ui.keys("/")
    assert ui.active().get_attribute("id") == "search-input", "/ focuses the search box"
    ui.keys(args.query, Keys.ENTER)
    ui.view("search")
    ui.one(ui.tid("results"))
    found = rest.get("/search?" + urllib.parse.urlencode({"q": args.query}))
    shown = [el.get_attribute("data-id") for el in ui.css(ui.tid("result"))]
    assert shown == [r["drawer"]["id"] for r in found["results"]], f"results {shown} vs the API"
    assert drawer_id in shown, f"{drawer_id} found by {args.query!r}: {shown}"
    result = ui.one(f'{ui.tid("result")}[data-id="{drawer_id}"]')
    expected = next(r for r in found["results"] if r["drawer"]["id"] == drawer_id)
    score = result.find_element(By.CSS_SELECTOR, ui.tid("result-score")).text
    assert score == f"{expected['score']:.3f}", f"score {score} vs {expected['score']}"
    breakdown = result.find_element(By.CSS_SELECTOR, ui.tid("breakdown"))
    for row in ("vector", "lexical", "graph", "base", "score"):
        assert breakdown.find_elements(By.CSS_SELECTOR, ui.tid(f"bd-{row}")), f"breakdown row {row}"
    vector = breakdown.find_element(By.CSS_SELECTOR, ui.tid("bd-vector")).text
    assert f"{expected['breakdown']['vector']:.3f}" in vector, f"vector {vector} vs {expected['breakdown']}"
    final = breakdown.find_element(By.CSS_SELECTOR, ui.tid("bd-score")).text
    assert score in final, final
    summary = ui.one(ui.tid("search-summary")).text
    assert found["mode"] in summary, summary
    ui.shot("search")

    # 5. Open the result with the keyboard (the results have the focus).
    assert ui.active().get_attribute("id") == "view-title", "after a search the focus leaves the box"
    for _ in range(20):
        ui.keys("j")
        if (ui.active().get_attribute("href") or "").endswith(f"#/drawer/{drawer_id}"):
            break
    else:
        raise AssertionError("j never reached the result")
    ui.keys(Keys.ENTER)
    ui.view("drawer")
    ui.wait(lambda d: ui.one(ui.tid("drawer")).get_attribute("data-id") == drawer_id, "the drawer page")
    original = rest.get(f"/drawers/{drawer_id}")
    assert ui.one(ui.tid("drawer-content")).text == original["content"].strip(), "the drawer's text"
    assert ui.one(ui.tid("drawer-status")).text == "active"
    for name in ("wing", "room", "state", "pipeline_tier", "filed_at", "added_by", "memory_type"):
        value = ui.one(ui.tid(f"field-{name}")).text
        want = "—" if original[name] is None else str(original[name])
        assert value == want, f"field {name}: {value!r} vs {want!r}"
    linked = [el.get_attribute("data-entity") for el in ui.css(ui.tid("entity-link"))]
    assert entity in linked, f"{entity} linked from the drawer: {linked}"
    ui.shot("drawer")

    # 6. Edit: e opens the editor, Ctrl+Enter saves (PATCH); the id stays.
    ui.keys("e")
    editor = ui.one(ui.tid("edit-content"), "the editor")
    assert ui.active().get_attribute("id") == "edit-content", "e focuses the editor"
    editor.send_keys(Keys.CONTROL, "a")
    editor.send_keys(Keys.DELETE)
    editor.send_keys(args.edited)
    ui.shot("edit")
    ActionChains(driver).key_down(Keys.CONTROL).send_keys(Keys.ENTER).key_up(Keys.CONTROL).perform()
    ui.wait(
        lambda d: d.find_element(By.ID, "drawer-content").is_displayed()
        and d.find_element(By.ID, "drawer-content").text == args.edited,
        "the edited text",
    )
    assert "Saved" in ui.one(ui.tid("notice")).text
    ui.shot("edited")
    after = rest.get(f"/drawers/{drawer_id}")
    assert after["content"] == args.edited, f"PATCH stored: {after['content']!r}"
    assert after["id"] == drawer_id

    # 7. Delete (soft): asks first, then shows the drawer invalidated.
    driver.find_element(By.ID, "delete-button").click()
    ui.one(ui.tid("delete-confirm"), "the delete confirmation")
    driver.find_element(By.ID, "delete-reason").send_keys("checked by the web UI test")
    ui.shot("delete-confirm")
    driver.find_element(By.ID, "delete-confirm-button").click()
    ui.wait(lambda d: d.find_element(By.ID, "view").find_elements(By.CSS_SELECTOR, ui.tid("restore-button")), "restore")
    assert ui.one(ui.tid("drawer-status")).text == "invalidated"
    assert "checked by the web UI test" in ui.one(ui.tid("status-reason")).text
    ui.shot("deleted")
    deleted = rest.get(f"/drawers/{drawer_id}")
    assert deleted["status"] == "invalidated", deleted["status"]
    active = rest.get(f"/drawers?wing={args.wing}&room={args.room}")
    assert drawer_id not in [d["id"] for d in active["drawers"]], "a deleted drawer leaves the listing"
    hidden = rest.get(f"/drawers?wing={args.wing}&room={args.room}&status=hidden")
    assert drawer_id in [d["id"] for d in hidden["drawers"]], "and is listed as hidden"

    # The room's listing leaves it out; its second tab lists it; back to it.
    driver.find_element(By.CSS_SELECTOR, f'{ui.tid("breadcrumbs")} a[href$="room={args.room}"]').click()
    ui.view("drawers")
    assert drawer_id not in [r.get_attribute("data-id") for r in ui.css(ui.tid("drawer-row"))]
    driver.find_element(By.ID, "tab-hidden").click()
    row = ui.one(f'{ui.tid("drawer-row")}[data-id="{drawer_id}"]', "the deleted drawer under the hidden tab")
    assert "invalidated" in row.text, row.text
    ui.shot("hidden")
    row.click()
    ui.view("drawer")
    ui.one(ui.tid("restore-button"))

    # 8. Restore (POST with X-Requested-With): active again.
    driver.find_element(By.ID, "restore-button").click()
    ui.wait(lambda d: d.find_element(By.CSS_SELECTOR, ui.tid("drawer-status")).text == "active", "active again")
    assert ui.css(ui.tid("delete-button")), "delete is offered again"
    assert ui.one(ui.tid("drawer-content")).text == args.edited
    ui.shot("restored")
    restored = rest.get(f"/drawers/{drawer_id}")
    assert restored["status"] == "active" and restored["content"] == args.edited, restored

    # 9. Follow the entity to its facts and timeline.
    link = ui.one(f'{ui.tid("entity-link")}[data-entity="{entity}"]')
    link.click()
    ui.view("entity")
    assert ui.one(ui.tid("entity-name")).text == entity
    facts = rest.get("/kg/entities/" + urllib.parse.quote(entity))["facts"]
    rows = [r.text for r in ui.css(ui.tid("fact"))]
    assert len(rows) == len(facts) and facts, f"facts {rows} vs {facts}"
    for fact in facts:
        assert any(fact["subject"] in r and fact["object"] in r for r in rows), f"fact {fact} shown in {rows}"
    subject, predicate, obj = args.fact.split("|")
    assert any(subject in r and predicate in r and obj in r for r in rows), f"{args.fact!r} in {rows}"
    timeline = rest.get("/kg/timeline?entity=" + urllib.parse.quote(entity))["facts"]
    items = [el.text for el in ui.css(ui.tid("timeline-item"))]
    assert len(items) == len(timeline), f"timeline {items} vs {timeline}"
    for item, fact in zip(items, timeline):
        assert fact["subject"] in item and fact["object"] in item, f"timeline order: {item!r} vs {fact}"
        if fact["valid_from"]:
            assert fact["valid_from"][:10] in item, f"{item!r} dated {fact['valid_from']}"
    ui.shot("entity")

    # g s: back to the last search, the box focused; Esc leaves it.
    ui.keys("g", "s")
    ui.view("search")
    ui.wait(lambda d: ui.active().get_attribute("id") == "search-input", "g s to focus the search box")
    assert ui.active().get_attribute("value") == args.query
    ui.keys(Keys.ESCAPE)
    assert ui.active().get_attribute("id") != "search-input", "Esc leaves the search box"

    # 10. Duplicates and conflicts (g c).
    ui.keys("g", "c")
    ui.view("conflicts")
    conflicts = rest.get("/conflicts")
    assert len(ui.css(ui.tid("conflict-pair"))) == len(conflicts["merged"]) + len(conflicts["superseded"])
    if args.expect_merged:
        assert conflicts["merged"], "the test palace has a merged near-duplicate"
        assert ui.css(f'{ui.tid("merged")} {ui.tid("pair-kept")}'), "the merged pair shows the drawer kept"
    ui.shot("conflicts")

    # 11. Jobs (g j): the cold path's counts.
    ui.keys("g", "j")
    ui.view("jobs")
    jobs = rest.get("/jobs")
    for state, count in jobs["by_state"].items():
        row = ui.one(ui.tid(f"jobs-state-{state}")).text
        assert row.endswith(str(count)), f"{state}: {row!r} vs {count}"
    for run_ in jobs["last_runs"]:
        assert ui.css(ui.tid(f"run-{run_['job']}")), f"last run of {run_['job']}"
    ui.shot("jobs")

    # 12. An error shows the problem's detail.
    missing = "drawer_nowhere_none_000000000000000000000000"
    status, problem = rest.call("GET", f"/drawers/{missing}")
    assert status in (400, 404) and isinstance(problem, dict) and problem.get("detail"), (status, problem)
    driver.execute_script("location.hash = arguments[0]", f"#/drawer/{missing}")
    ui.view("error")
    detail = ui.one(ui.tid("view-error-detail")).text
    assert detail == problem["detail"], f"{detail!r} vs {problem['detail']!r}"
    ui.shot("error")

    # 13. Help (?) and Esc; Esc in a view goes back.
    ui.keys("?")
    ui.one(ui.tid("help-panel"))
    ui.keys(Keys.ESCAPE)
    ui.wait(EC.invisibility_of_element_located((By.ID, "help-panel")), "help to close")
    ui.keys(Keys.ESCAPE)
    ui.view("jobs")

    # The page broke no rule of its content security policy and threw nothing.
    problems = []
    for entry in driver.get_log("browser"):
        message = entry.get("message", "")
        if "Failed to load resource" in message:
            continue  # the 401 and the missing drawer above
        if entry.get("level") in ("SEVERE", "WARNING") or "Content Security Policy" in message:
            problems.append(message)
    assert not problems, "browser console:\n" + "\n".join(problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:7878")
    parser.add_argument("--out", required=True, help="folder for the screenshots")
    parser.add_argument("--token", default="", help="the server's token (the UI must ask for it)")
    parser.add_argument("--drawer", required=True, help="the drawer the search finds and the test edits")
    parser.add_argument("--wing", required=True)
    parser.add_argument("--room", required=True)
    parser.add_argument("--query", required=True, help="the search that finds --drawer")
    parser.add_argument("--edited", required=True, help="the drawer's new text")
    parser.add_argument("--entity", required=True, help="an entity the drawer mentions, with facts")
    parser.add_argument("--fact", required=True, help="SUBJECT|RELATION|OBJECT of a fact the entity page shows")
    parser.add_argument("--expect-merged", action="store_true")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    profile = tempfile.mkdtemp(prefix="mempalace-ui-")
    options = Options()
    options.binary_location = args.chromium
    for argument in CHROMIUM_ARGS:
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(args.chromedriver), options=options)
    try:
        driver.set_page_load_timeout(60)
        run(driver, args)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print("PASS", flush=True)


if __name__ == "__main__":
    sys.exit(main())
