"""The symptom index of the built site lists every error and warning the probes and the examples printed.

(What each caching and DDP page measured is asserted by the page itself: a wrong value fails its build.)"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from test_site import script_outputs

#: A printed error or warning line, as the symptom index defines it (independent copy of its rule).
SYMPTOM = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Warning|Exception|Interrupt): .+)$", re.M)


def registry():
    """The project's registry module."""
    from lightning_migrate import registry as module

    return module


def outputs(site, docname: str) -> str:
    return "\n".join(script_outputs(site.page(docname)))


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def symptom_items(site) -> list[tuple[str, list[str]]]:
    """``(text, hrefs)`` of every entry of the symptom index page."""
    page = site.page("reference/symptoms")
    items = []
    for listing in re.findall(r'<ul class="symptom-index[^"]*">(.*?)</ul>', page, flags=re.S):
        for item in re.findall(r"<li>(.*?)</li>", listing, flags=re.S):
            items.append((text_of(item), re.findall(r'href="([^"]+)"', item)))
    return items


def probe_document(site) -> dict:
    path = site.outdir / ".doctrees" / "probe-records.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_symptom_index_lists_every_probe_error_with_its_fix(site):
    items = symptom_items(site)
    errors = [r for r in probe_document(site)["records"] if r["error_type"]]
    assert errors, "the probes recorded no error at all"
    for record in errors:
        text = f"{record['error_type']}: {record['error_message']}"
        hrefs = [hrefs for item_text, hrefs in items if text in item_text]
        assert hrefs, f"the symptom index misses the probe error of {record['pattern']}: {text}"
        expected = registry().get(record["pattern"]).example + ".html"
        assert any(h.split("#")[0].endswith(expected) for h in hrefs[0]), (record["pattern"], hrefs)


def test_symptom_index_lists_every_error_an_example_printed(site):
    items = symptom_items(site)
    gallery = Path(site.tree, "gallery")
    printed = 0
    for script in sorted(gallery.rglob("*.py")):
        docname = "examples/" + script.relative_to(gallery).with_suffix("").as_posix()
        for line in SYMPTOM.findall(outputs(site, docname)):
            printed += 1
            hrefs = [hrefs for item_text, hrefs in items if line.strip() in item_text]
            assert hrefs, f"the symptom index misses {line!r} printed by {docname}"
            assert any(h.split("#")[0].endswith(f"{Path(docname).name}.html") for h in hrefs[0]), (line, hrefs)
    assert printed >= 4  # at least the errors and the warning of this branch's pages


def test_symptom_index_links_resolve(site):
    page_dir = site.outdir / "reference"
    hrefs = [h for _, item_hrefs in symptom_items(site) for h in item_hrefs]
    assert hrefs
    for href in hrefs:
        assert (page_dir / href.split("#")[0]).resolve().is_file(), href
