"""The symptom index of the built site lists every error and warning the probes and the examples printed.

(What each caching and DDP page measured is asserted by the page itself: a wrong value fails its build.)"""

from __future__ import annotations

import ast
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


def any_class(text: str, names: set[str]) -> re.Pattern:
    """``text`` as a pattern in which each name of ``names`` (the classes of the code that ran) is any name."""
    pattern = re.escape(text)
    for name in sorted(names, key=len, reverse=True):
        pattern = re.sub(rf"(?<![\w.]){re.escape(re.escape(name))}(?!\w)", r"\\w+", pattern)
    return re.compile(pattern)


def items_with(items: list[tuple[str, list[str]]], text: str, names: set[str]) -> list[list[str]]:
    """The links of every symptom index entry that shows ``text``, its class names any names."""
    found = any_class(text, names)
    return [hrefs for item_text, hrefs in items if found.search(item_text)]


def test_symptom_index_lists_every_probe_error_with_its_fix(site):
    items = symptom_items(site)
    errors = [r for r in probe_document(site)["records"] if r["error_type"]]
    assert errors, "the probes recorded no error at all"
    for record in errors:
        pattern = registry().get(record["pattern"])
        text = f"{record['error_type']}: {record['error_message']}"
        hrefs = items_with(items, text, {pattern.probe_class})
        assert len(hrefs) == 1, f"the symptom index lists the probe error of {record['pattern']} {len(hrefs)} times"
        assert any(h.split("#")[0].endswith(pattern.example + ".html") for h in hrefs[0]), (record["pattern"], hrefs)


def shape(text: str) -> str:
    """A symptom's text without the names Lightning quotes for the user's class (independent of the extension): a
    name qualifying a call, and a name in backticks before "implements"."""
    text = re.sub(r"[\w.<>]+\.(?=\w+\(\))", "{class}.", text)
    return re.sub(r"`\w+` implements", "`{class}` implements", text)


def test_symptom_index_has_one_entry_per_error_with_one_fix_per_owner(site):
    """The same error raised for another class name is the same entry; each entry links one fix page, or one per
    owner (a LightningModule's and a Callback's hook may raise the same text)."""
    page = site.page("reference/symptoms")
    entries = []
    for listing in re.findall(r'<ul class="symptom-index[^"]*">(.*?)</ul>', page, flags=re.S):
        for item in re.findall(r"<li>(.*?)</li>", listing, flags=re.S):
            first = text_of(re.search(r"<pre>(.*?)</pre>", item, flags=re.S).group(1)).strip()
            fix = re.search(r'<p class="symptom-fix">(.*?)</p>', item, flags=re.S).group(1)
            links = re.findall(r'href="([^"#]+)', fix)
            owners = re.findall(r"in a (LightningModule|Callback), <a", fix)
            assert len(links) == 1 or sorted(owners) == ["Callback", "LightningModule"], text_of(fix)
            assert len(set(links)) == len(links), text_of(fix)
            entries.append(shape(first))
    assert len(entries) >= 20
    repeated = sorted({entry for entry in entries if entries.count(entry) > 1})
    assert repeated == [], repeated


def test_symptom_index_lists_every_error_an_example_printed(site):
    items = symptom_items(site)
    gallery = Path(site.tree, "gallery")
    printed = 0
    for script in sorted(gallery.rglob("*.py")):
        docname = "examples/" + script.relative_to(gallery).with_suffix("").as_posix()
        tree = ast.parse(script.read_text(encoding="utf-8"))
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        probed = {registry().get(r["pattern"]).example for r in probe_document(site)["records"]}
        for line in SYMPTOM.findall(outputs(site, docname)):
            printed += 1
            names_here = names | {p.probe_class for p in registry().PATTERNS}
            hrefs = items_with(items, line.strip(), names_here)
            assert len(hrefs) == 1, f"the symptom index lists {line!r} printed by {docname} {len(hrefs)} times"
            # its own page, or (the same text as a probe's) the fix page of the old hook
            pages = {h.split("#")[0].rsplit("/", 1)[-1].removesuffix(".html") for h in hrefs[0]}
            assert Path(docname).name in pages or pages <= {Path(p).name for p in probed}, (line, hrefs)
    assert printed >= 4  # at least the errors and the warning of this branch's pages


def test_symptom_index_links_resolve(site):
    page_dir = site.outdir / "reference"
    hrefs = [h for _, item_hrefs in symptom_items(site) for h in item_hrefs]
    assert hrefs
    for href in hrefs:
        assert (page_dir / href.split("#")[0]).resolve().is_file(), href
