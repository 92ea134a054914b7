"""The HTML migration report (`diff --html`): escaped, self-contained, and checked in a real headless Chromium.

The browser tests drive Debian's chromium (/usr/bin/chromium) with Playwright and skip when either is missing;
`.ci/run` installs both and sets DRAMIGRATE_REQUIRE_BROWSER=1 so that CI fails instead of skipping. The page's
screenshot is kept as build/html-report.png (a CI artifact).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import RunCli

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = REPO / "build" / "html-report.png"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Markup in a file's name and in a comment beside a device request: the page must show it as text.
WEIRD_NAME = "odd <i>name & 'quotes\".yaml"
HOSTILE = '<img src=x onerror="window.pwned=1"></td><script>window.pwned=2</script>'
WEIRD = f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: escape-check
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.example/app:1
        resources:
          limits:
            nvidia.com/gpu: 1  # {HOSTILE}
"""


# a name a contribution chooses: a workflow command at the start of a line for a CI job that prints the report
LINE_BREAK_NAME = "a\n::error file=x::pwned.yaml"


@pytest.fixture(scope="module")
def report(run_cli: RunCli, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `diff --html` run over the example manifests and a file with markup in its name and text."""
    work = tmp_path_factory.mktemp("html")
    shutil.copytree(REPO / "examples" / "manifests", work / "manifests")
    (work / "manifests" / WEIRD_NAME).write_text(WEIRD, encoding="utf-8")
    (work / "manifests" / LINE_BREAK_NAME).write_text(WEIRD, encoding="utf-8")
    before = {p.name: p.read_bytes() for p in (work / "manifests").iterdir()}
    args = ["diff", "manifests", "--classes-file", "classes.yaml", "--format", "json", "--output", "report.json"]
    code, out, err = run_cli([*args, "--html", "out/report.html"], cwd=work)
    assert code == 0, err
    assert {p.name: p.read_bytes() for p in (work / "manifests").iterdir()} == before  # diff writes only the report
    assert not (work / "classes.yaml").exists()
    return {
        "html": work / "out" / "report.html",
        "json": json.loads((work / "report.json").read_text(encoding="utf-8")),
        "diff": out,
    }


def test_input_is_escaped_and_nothing_is_fetched(report: dict[str, Any]) -> None:
    page = report["html"].read_text(encoding="utf-8")
    assert HOSTILE not in page and "<i>name" not in page
    assert "&lt;script&gt;window.pwned=2&lt;/script&gt;" in page
    assert page.count("<script") == 1  # the report's own, allowed by hash in the CSP
    assert "http://" not in page and "https://" not in page and " src=" not in page.replace(" src=x", "")
    assert "default-src &#39;none&#39;" in page  # the CSP: no fetch of any kind


def test_no_line_of_the_page_starts_with_a_line_of_input(report: dict[str, Any]) -> None:
    """A file named `a<newline>::error file=x::pwned.yaml` was written into the page with its line break, so
    `::error file=x::pwned.yaml` began a line of the HTML file: a workflow command for a CI job that prints or cats
    the report. A line break of input is a character reference there (`&#10;`, the same text to a browser)."""
    page = report["html"].read_text(encoding="utf-8")
    assert "pwned.yaml" in page
    assert [line for line in page.splitlines() if line.startswith("::")] == []


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb\nc\n", "a\nB\nc\nd\n"),
        ("".join(f"l{i}\n" for i in range(40)), "".join(f"l{i}\n" for i in range(40) if i not in (3, 30)) + "end"),
        ("x: 1\r\ny: 2\r\n", "x: 1\r\ny: 3\r\n"),
        ("a\n", "b\n"),
        ("", "new: file\n"),
    ],
)
def test_side_by_side_has_the_hunks_of_the_unified_diff(before: str, after: str) -> None:
    from dramigrate.report.diff import unified
    from dramigrate.report.html import side_by_side

    rows = side_by_side(before, after)
    unified_hunks = [line.rstrip("\n") for line in unified("f", before, after).splitlines() if line.startswith("@@")]
    assert [r.old for r in rows if r.kind == "hunk"] == unified_hunks
    assert [r.old for r in rows if r.old_no] == [
        before.splitlines()[r.old_no - 1] for r in rows if r.old_no
    ]  # each line beside its number
    added = [r.new for r in rows if r.kind in ("insert", "replace") and r.new_no]
    removed = [r.old for r in rows if r.kind in ("delete", "replace") and r.old_no]
    diff_lines = unified("f", before, after).splitlines()
    assert added == [
        line[1:].rstrip("\r") for line in diff_lines if line.startswith("+") and not line.startswith("+++")
    ]
    assert removed == [
        line[1:].rstrip("\r") for line in diff_lines if line.startswith("-") and not line.startswith("---")
    ]


def test_unwritable_html_path_is_bad_input_before_any_write(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    manifest = tmp_path / "inference.yaml"
    shutil.copy(REPO / "examples" / "manifests" / "inference.yaml", manifest)
    before = manifest.read_bytes()
    for target in (tmp_path / "a-file" / "r.html", tmp_path / "a-file" / "deeper" / "r.html", tmp_path):
        code, _, err = run_cli(["fix", manifest, "--html", target])
        assert code == 2, err
        assert str(target) in err and "Traceback" not in err and "internal error" not in err
        assert manifest.read_bytes() == before  # refused before fix rewrote anything


def test_fix_html_shows_what_was_written(run_cli: RunCli, tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "manifests", tmp_path / "m")
    code, _, err = run_cli(["fix", "m", "--format", "json", "--output", "r.json", "--html", "r.html"], cwd=tmp_path)
    assert code == 0, err
    summary = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["summary"]
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.count('<details class="udiff">') == summary["filesChanged"] > 0
    assert "rewritten in place" in page and "would fix" not in page
    assert f'data-summary="fixed">{summary["fixed"]}<' in page


def _expected(doc: dict[str, Any]) -> dict[str, Any]:
    """The summary figures, counted here from the JSON report alone."""
    requests = [
        f
        for f in doc["findings"]
        if f["podTemplatePath"]
        and f["rule"]
        in {
            "legacy-device-request",
            "extended-resource",
            "kustomize-patch",
            "report-only-kind",
            "shared-device",
            "invalid-count",
            "unknown-resource",
            "unknown-kind",
        }
    ]
    left = [f for f in requests if not (f["fixed"] or f["wouldFix"])]  # diff: would fix
    by_left = Counter(
        "report-only" if f["rule"] in {"report-only-kind", "shared-device", "extended-resource"} else "manual"
        for f in left
    )
    return {
        "workloads": len({(f["file"], f["kind"], f["namespace"], f["name"]) for f in requests}),
        "requests": len(requests),
        "fixed-requests": len(requests) - len(left),
        "manual-requests": by_left["manual"],
        "report-only-requests": by_left["report-only"],
        "byVendor": Counter(f["resource"].split("/")[0] for f in requests),
        "byKind": Counter(f["kind"] or "(not a Kubernetes object)" for f in requests),
        "byClass": Counter(f["deviceClass"] or "(no class)" for f in requests),
    }


@pytest.fixture(scope="module")
def browser_page(report: dict[str, Any]) -> Iterator[Any]:
    """The report opened from disk in headless Chromium, with the console messages and requests it made."""
    why = ""
    if not CHROMIUM.is_file():
        why = "Debian's chromium is not installed (/usr/bin/chromium; apt-get install chromium)"
    else:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            why = "playwright is not installed (pip install -e '.[test]')"
    if why:
        if os.environ.get("DRAMIGRATE_REQUIRE_BROWSER"):
            pytest.fail(f"the HTML report's browser test cannot run: {why}")
        pytest.skip(f"the HTML report's browser test needs a browser: {why}")
    with tempfile.TemporaryDirectory(prefix="dramigrate-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        page = context.new_page()
        seen: dict[str, list[str]] = {"console": [], "requests": []}
        page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: seen["console"].append(f"pageerror: {e}"))
        page.on("request", lambda r: seen["requests"].append(r.url))
        url = report["html"].resolve().as_uri()
        page.goto(url, wait_until="load")
        page.seen, page.url_loaded = seen, url  # type: ignore[attr-defined]
        yield page
        context.close()


def test_page_loads_cleanly_offline(browser_page: Any) -> None:
    assert browser_page.title().startswith("dramigrate diff")
    assert [m for m in browser_page.seen["console"] if m.startswith(("error", "pageerror", "warning"))] == []
    assert browser_page.seen["requests"] == [browser_page.url_loaded]  # the page itself, nothing else
    assert browser_page.evaluate("window.pwned") is None  # markup from the input never ran
    assert WEIRD_NAME in browser_page.inner_text("#findings-table")


def test_summary_numbers_equal_the_json_report(browser_page: Any, report: dict[str, Any]) -> None:
    doc = report["json"]
    shown = {
        el.get_attribute("data-summary"): int(el.inner_text())
        for el in browser_page.query_selector_all("[data-summary]")
    }
    assert shown == doc["summary"]
    expected = _expected(doc)
    for figure in ("workloads", "requests", "fixed-requests", "manual-requests", "report-only-requests"):
        assert int(browser_page.inner_text(f'[data-figure="{figure}"]')) == expected[figure], figure
    for chart in ("byVendor", "byKind", "byClass"):
        bars = browser_page.query_selector_all(f'[data-chart="{chart}"] [data-label]')
        assert {b.get_attribute("data-label"): int(b.get_attribute("data-count")) for b in bars} == expected[chart]
    segments = browser_page.query_selector_all('[data-chart="outcomes"] [data-label]')
    assert sum(int(s.get_attribute("data-count")) for s in segments) == expected["requests"]
    assert expected["requests"] > expected["fixed-requests"] > 0 and expected["report-only-requests"] > 0


def _visible_rows(page: Any) -> int:
    return int(page.evaluate("document.querySelectorAll('#findings-table tbody tr[data-rule]:not([hidden])').length"))


def test_filters_show_the_matching_findings(browser_page: Any, report: dict[str, Any]) -> None:
    findings = report["json"]["findings"]
    page = browser_page
    assert _visible_rows(page) == len(findings)
    page.select_option("select[name=severity]", "warning")
    warnings = [f for f in findings if f["severity"] == "warning"]
    assert 0 < _visible_rows(page) == len(warnings) < len(findings)
    assert page.inner_text("#shown-count") == str(len(warnings))
    page.select_option("select[name=severity]", "")
    page.select_option("select[name=file]", f"manifests/{WEIRD_NAME}")
    assert _visible_rows(page) == sum(1 for f in findings if f["file"] == f"manifests/{WEIRD_NAME}") == 1
    page.select_option("select[name=rule]", "shared-device")
    assert _visible_rows(page) == 0 and page.is_visible("#no-match")
    page.click("button[type=reset]")
    assert _visible_rows(page) == len(findings) and not page.is_visible("#no-match")
    page.fill("input[name=text]", "knative")
    assert _visible_rows(page) == sum(1 for f in findings if "knative" in json.dumps(f).lower())
    page.click("button[type=reset]")


def test_before_and_after_show_the_exact_diff(browser_page: Any, report: dict[str, Any]) -> None:
    page = browser_page
    diffs = page.query_selector_all("article.file details.udiff pre")
    assert len(diffs) == report["json"]["summary"]["filesChanged"]
    shown = "".join(d.text_content() for d in diffs)
    assert sorted(shown.splitlines(keepends=True)) == sorted(report["diff"].splitlines(keepends=True))
    article = page.query_selector('article.file[data-file$="inference.yaml"]')
    old = [c.text_content() for c in article.query_selector_all("tr.delete td.old, tr.replace td.old")]
    new = [c.text_content() for c in article.query_selector_all("tr.insert td.new, tr.replace td.new")]
    assert any("nvidia.com/gpu" in line for line in old) and not any("nvidia.com/gpu:" in line for line in new)
    assert any("resourceClaimTemplateName" in line for line in new)


def test_screenshot_is_kept(browser_page: Any) -> None:
    SCREENSHOT.parent.mkdir(exist_ok=True)
    browser_page.set_viewport_size({"width": 1280, "height": 900})
    browser_page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000
