"""Driving the console in the browser tests: explicit waits (polling a condition of the page until
it holds or a deadline passes), scripts, clicks, and the rows of its tables."""

from __future__ import annotations

import time


def wait(condition, timeout_s: float = 15.0, what: str = "the page"):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def js(browser, script: str, *args):
    return browser.execute_script(script, *args)


def open_console(browser, server) -> None:
    browser.get(server.base_url + "/")
    wait(lambda: js(browser, "return document.body.getAttribute('data-ready') === 'true'"), what="the console to start")


def set_editor(browser, editor_id: str, text: str) -> None:
    js(browser, "document.getElementById(arguments[0]).cm.setValue(arguments[1])", editor_id, text)


def click(browser, element_id: str) -> None:
    js(browser, "document.getElementById(arguments[0]).click()", element_id)


def table_rows(browser, selector: str) -> list[list[str]]:
    return js(browser, """return Array.from(document.querySelectorAll(arguments[0])).map(
        row => Array.from(row.cells).map(cell => cell.textContent))""", selector)
