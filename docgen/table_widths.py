"""List every table and code block of the built documentation site that is wider than the space it is shown in.

The site is built with ``mkdocs build`` (or read from ``--site``), and each page is opened in headless
Chromium (Debian's ``chromium``) at ``--width`` x ``--height`` pixels. A script added to a copy of each
page measures, once the page's own scripts have run, every table and every code block (``pre``) of the
article: its full width (``scrollWidth``) against the width it is shown in (the narrowest of the element,
its scrolling wrapper and the article). One wider than that by more than a pixel hides part of itself
behind a sideways scroll; each is printed as ``PAGE: table N (first header cells): FULL px in VISIBLE px``
or ``PAGE: code block N (its first line): ...``. Exit status 1 when any is too wide, 0 when none is, 2 for
a bad argument (no Chromium, no site).

``--screenshot PAGE=PNG`` also saves the first screen of a page (its path under the site, e.g.
``which-negatives/index.html``) at the same size, to look at what a reader sees before scrolling.

    python -m docgen --table-widths                       # build into a temporary folder, check every page
    python -m docgen --table-widths --site site --screenshot which-negatives/index.html=first.png
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from docgen.pages import ROOT

MARK = "qt-table-check"
# Runs after the page's scripts (the theme wraps tables in scrolling containers when it loads).
PROBE = (
    """<script>
window.addEventListener("load", function () { setTimeout(function () {
  var out = [], article = document.querySelector("article") || document.body;
  article.querySelectorAll("table").forEach(function (t, i) {
    var wrap = t.closest(".md-typeset__scrollwrap") || t.parentElement;
    var visible = Math.min(t.clientWidth || Infinity, wrap.clientWidth || Infinity, article.clientWidth);
    var head = Array.from(t.querySelectorAll("th")).slice(0, 3).map(function (c) { return c.textContent.trim(); });
    out.push({kind: "table", index: i + 1, full: t.scrollWidth, visible: visible, head: head});
  });
  article.querySelectorAll("pre").forEach(function (p, i) {
    var c = p.querySelector("code") || p;
    var visible = Math.min(c.clientWidth || Infinity, p.clientWidth || Infinity, article.clientWidth);
    var first = c.textContent.trim().split("\\n")[0].slice(0, 60);
    out.push({kind: "code block", index: i + 1, full: Math.max(c.scrollWidth, p.scrollWidth), visible: visible,
              head: [first]});
  });
  var pre = document.createElement("pre");
  pre.id = "%s";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 200); });
</script>"""
    % MARK
)
RESULT = re.compile(rf'<pre id="{MARK}">(.*?)</pre>', re.S)


class CheckError(Exception):
    """A bad argument or a missing tool: one line, exit status 2."""


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise CheckError("no chromium on PATH (Debian: apt-get install -y chromium)")


def build_site(out: Path, root: Path = ROOT) -> Path:
    """``mkdocs build`` of the checkout ``root`` into ``out``."""
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--quiet", "-d", str(out)]
    done = subprocess.run(mkdocs, cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise CheckError(f"mkdocs build failed: {done.stderr.strip().splitlines()[-1:]}")
    return out


def chromium_args(chromium: str, width: int, height: int) -> list[str]:
    return [
        chromium,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        "--virtual-time-budget=10000",
    ]


def measure(page: Path, args: list[str]) -> list[dict]:
    """The probe's rows for one page: each table's and code block's full and visible widths."""
    return _run_probe(page, PROBE, args)


def positions(page: Path, selector: str, args: list[str]) -> list[dict]:
    """The text and the top and bottom (px from the top of the page, unscrolled) of every element of
    ``page`` that matches the CSS ``selector``, once the page's scripts have run."""
    probe = """<script>window.addEventListener("load", function () { setTimeout(function () {
  var out = Array.from(document.querySelectorAll(%s)).map(function (e) {
    var r = e.getBoundingClientRect();
    return {text: e.textContent.trim(), top: r.top + window.scrollY, bottom: r.bottom + window.scrollY};
  });
  var pre = document.createElement("pre"); pre.id = "%s"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 200); });</script>""" % (json.dumps(selector), MARK)
    return _run_probe(page, probe, args)


def _run_probe(page: Path, probe: str, args: list[str]) -> list[dict]:
    """Run ``probe`` (a script that writes JSON into ``<pre id=MARK>``) on a copy of ``page`` beside it
    (so that relative links resolve) and return that JSON."""
    probed = page.with_name(f".{MARK}.{page.name}")
    html = page.read_text(encoding="utf-8")
    probed.write_text(html.replace("</body>", probe + "</body>", 1), encoding="utf-8")
    try:
        done = subprocess.run([*args, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    finally:
        probed.unlink()
    found = RESULT.search(done.stdout)
    if not found:
        raise CheckError(f"{page}: the page did not report its tables (chromium: {done.stderr.strip()[-200:]})")
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)


def pages(site: Path) -> list[Path]:
    """Every page of the built site with an article (search index, 404 and assets left out)."""
    return sorted(p for p in site.rglob("*.html") if p.name == "index.html" and "assets" not in p.parts)


def check(site: Path, width: int, height: int, jobs: int) -> tuple[list[str], int]:
    """One line per table wider than its container, over every page; and the number of pages."""
    args = chromium_args(find_chromium(), width, height)
    found = pages(site)
    if not found:
        raise CheckError(f"{site}: no pages (index.html) in it")
    with ThreadPoolExecutor(jobs) as pool:
        measured = list(pool.map(lambda p: measure(p, args), found))
    wide = []
    for page, tables in zip(found, measured):
        for t in tables:
            if t["full"] > t["visible"] + 1:
                head = " | ".join(t["head"])
                rel = page.relative_to(site).as_posix()
                kind = t.get("kind", "table")
                wide.append(f"{rel}: {kind} {t['index']} ({head}): {t['full']} px in {t['visible']} px")
    return wide, len(found)


def screenshot(site: Path, page: str, png: Path, width: int, height: int) -> None:
    path = site / page
    if not path.is_file():
        raise CheckError(f"--screenshot: no page {page} in {site}")
    args = chromium_args(find_chromium(), width, height)
    subprocess.run([*args, f"--screenshot={png.resolve()}", path.as_uri()], capture_output=True, timeout=120)
    if not png.is_file():
        raise CheckError(f"--screenshot: chromium wrote no {png}")


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    """``python -m docgen --table-widths [options]``: ``argv`` holds the options after ``--table-widths``."""
    ap = argparse.ArgumentParser(prog="python -m docgen --table-widths", description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=None, help="a built site (default: mkdocs build into a temporary folder)")
    ap.add_argument("--width", type=int, default=1280, help="window width in px (default 1280)")
    ap.add_argument("--height", type=int, default=900, help="window height in px (default 900)")
    ap.add_argument("--jobs", type=int, default=2, help="pages measured at once (default 2)")
    ap.add_argument("--screenshot", action="append", default=[], metavar="PAGE=PNG", help="save a page's first screen")
    args = ap.parse_args(argv)
    try:
        shots = []
        for item in args.screenshot:
            page, sep, png = item.partition("=")
            if not sep or not png:
                raise CheckError(f"--screenshot {item}: give PAGE=PNG")
            shots.append((page, Path(png)))
        find_chromium()
        with tempfile.TemporaryDirectory(prefix="qt-site-") as tmp:
            site = Path(args.site) if args.site else build_site(Path(tmp) / "site", root)
            if not site.is_dir():
                raise CheckError(f"--site {site}: not a folder")
            for page, png in shots:
                screenshot(site, page, png, args.width, args.height)
                print(f"screenshot: {png}")
            wide, n = check(site, args.width, args.height, max(1, args.jobs))
    except CheckError as err:
        print(f"table widths: error: {err}", file=sys.stderr)
        return 2
    for line in wide:
        print(line)
    print(f"{len(wide)} table(s) or code block(s) wider than their container at {args.width} px ({n} pages)")
    return 1 if wide else 0
