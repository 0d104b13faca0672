"""Importing an .ipynb someone else made, in headless Chromium (the playground served by
`gpulab serve`): a malformed output is skipped and the note says which, instead of refusing
the whole file; a notebook too big for the page's storage keeps the storage-full warning
instead of "Imported". The import needs no Python, so the page is used as soon as its notebook
is shown (Pyodide may still be loading)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect


@pytest.fixture(scope="module")
def served():
    from gpulab.server import start

    srv = start("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture()
def playground(browser, served: str):
    """A fresh context (its own, empty localStorage) showing the playground's notebook."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    page.goto(served + "/?backend=cpu")
    expect(page.locator("body")).to_have_attribute("data-notebook", re.compile("."))
    yield page
    ctx.close()


def _ipynb(cells: list[dict]) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


def _code(source: str, outputs: object) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": outputs}


def _import(page: Page, path: Path) -> None:
    page.get_by_label("Import .ipynb").set_input_files(str(path))


def _source(page: Page, n: int) -> str | None:
    return page.evaluate("(n) => globalThis.gpulabNotebook?.cells[n - 1]?.source() ?? null", n)


def test_a_malformed_output_is_skipped_and_named(playground: Page, tmp_path: Path) -> None:
    path = tmp_path / "mixed.ipynb"
    stream = {"output_type": "stream", "name": "stdout", "text": ["fine\n"]}
    path.write_text(
        _ipynb(
            [
                _code("print('fine')", [stream]),
                _code(
                    "1 / 0",
                    [{"output_type": "error", "ename": "E", "evalue": "v", "traceback": "text"}],
                ),
                _code("x = 3", {"output_type": "stream", "name": "stdout", "text": "x"}),
                {"cell_type": "markdown", "metadata": {}, "source": "# kept"},
            ]
        )
    )
    _import(playground, path)
    note = playground.get_by_label("Notebook status")
    expect(note).to_contain_text("Imported mixed.ipynb as a new notebook.")
    expect(note).to_contain_text("2 malformed parts were skipped")
    expect(note).to_contain_text("cell 2, output 1: an error whose traceback is not a list")
    expect(note).to_contain_text("cell 3: its outputs are not a list")
    out1 = playground.get_by_role("region", name="Output of cell 1", exact=True)
    expect(out1.locator(".stream.stdout")).to_have_text("fine\n")
    assert [_source(playground, n) for n in (1, 2, 3)] == ["print('fine')", "1 / 0", "x = 3"]


@pytest.mark.parametrize(
    ("big", "words"),
    [
        ("output", "but storage is full: it was saved without its outputs"),
        ("source", "Opened big.ipynb as a new notebook, but storage is full: it was not saved"),
    ],
)
def test_a_notebook_past_the_storage_keeps_the_warning(
    playground: Page, tmp_path: Path, big: str, words: str
) -> None:
    blob = "x" * (12 * 1024 * 1024)  # 12 MB: past Chromium's localStorage quota
    cell = (
        _code(
            "print('x' * 12_000_000)", [{"output_type": "stream", "name": "stdout", "text": blob}]
        )
        if big == "output"
        else _code(f"# {blob}", [])
    )
    path = tmp_path / "big.ipynb"
    path.write_text(_ipynb([cell]))
    _import(playground, path)
    note = playground.get_by_label("Notebook status")
    expect(note).to_contain_text(words, timeout=60_000)
    expect(note).not_to_contain_text("Imported big.ipynb as a new notebook.")
