"""The built site's link checker finds a link to a missing page, to a missing anchor and an absolute
path, and passes a site whose links all resolve."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _checker():
    spec = importlib.util.spec_from_file_location("check_links", ROOT / "docs" / "check_links.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(tmp_path: Path, links: str) -> Path:
    (tmp_path / "en" / "guide").mkdir(parents=True)
    (tmp_path / "zh").mkdir()
    (tmp_path / "en" / "guide" / "budgets.html").write_text('<h1 id="budgets">B</h1>', encoding="utf-8")
    (tmp_path / "zh" / "index.html").write_text("<p>zh</p>", encoding="utf-8")
    (tmp_path / "en" / "index.html").write_text(links, encoding="utf-8")
    return tmp_path


def test_a_site_whose_links_resolve_passes(tmp_path: Path):
    site = _site(
        tmp_path,
        '<a href="guide/budgets.html#budgets">b</a><a href="../zh/index.html">中文</a>'
        '<a href="https://example.com/x">out</a><a href="#top" id="top">top</a><a href="guide/">dir</a>',
    )
    (site / "en" / "guide" / "index.html").write_text("<p>guide</p>", encoding="utf-8")
    assert _checker().broken_links(site) == []


def test_a_link_to_a_missing_page_fails(tmp_path: Path):
    problems = _checker().broken_links(_site(tmp_path, '<a href="guide/usage.html">u</a>'))
    assert problems == ["en/index.html: guide/usage.html (no such file)"]


def test_a_link_to_a_missing_anchor_fails(tmp_path: Path):
    problems = _checker().broken_links(_site(tmp_path, '<a href="guide/budgets.html#limits">l</a>'))
    assert problems == ["en/index.html: guide/budgets.html#limits (no such anchor)"]


def test_an_absolute_link_fails(tmp_path: Path):
    problems = _checker().broken_links(_site(tmp_path, '<img src="/static/x.png">'))
    assert problems == ["en/index.html: /static/x.png (absolute path: the site must be relocatable)"]
