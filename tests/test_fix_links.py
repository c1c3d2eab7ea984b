"""Every "fix" link of the built site lands on a page that shows the hook it is about.

The links: each registry pattern's ``example`` (which the checker's findings, the compatibility table and the pages
below link), the reference table's "Executed example", the symptom index's "Fix:" and the landing page's quoted
errors. The page must name the hook in its own text or code: the "If you saw this error" block that the build adds
to a fix page quotes the old signature, so it is left out of the check. Each fix page also shows, in that block,
every text the probes recorded for its patterns.
"""

from __future__ import annotations

import html
import json
import posixpath
import re

import pytest
from builds import GALLERY_CONF, GALLERY_EXTENSIONS, example_stubs, project, sphinx_build

from lightning_migrate import registry

#: The block a fix page gets from docs/_ext/guide/symptom_index.py (a container holding one <details> element).
FIX_BLOCK = re.compile(r'<div class="[^"]*symptoms-fixed-here[^"]*" id="if-you-saw-this-error">(.*?</details>)', re.S)


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def article(page: str) -> str:
    """The HTML of a page's ``<article>`` (its content, without the navigation)."""
    [content] = re.findall(r"<article[^>]*>(.*?)</article>", page, flags=re.S)
    return content


def own_text(page: str) -> str:
    """What the page itself says: its article's text without the generated "If you saw this error" block."""
    return text_of(FIX_BLOCK.sub("", article(page)))


def shows_hook(site, docname: str, hook: str) -> bool:
    return re.search(rf"\b{re.escape(hook)}\b", own_text(site.page(docname))) is not None


def linked_docname(source_docname: str, href: str) -> str:
    """The docname an ``href`` of the page ``source_docname`` points to (``../examples/x.html#a`` -> ``examples/x``)."""
    path = href.split("#")[0]
    return posixpath.normpath(posixpath.join(posixpath.dirname(source_docname), path)).removesuffix(".html")


def probe_document(site) -> dict:
    return json.loads((site.outdir / ".doctrees" / "probe-records.json").read_text(encoding="utf-8"))


def record_texts(record: dict) -> list[str]:
    texts = [f"{record['error_type']}: {record['error_message']}"] if record.get("error_type") else []
    return texts + [f"{w['category']}: {w['message']}" for w in record.get("warnings") or []]


@pytest.mark.parametrize("pattern", registry.PATTERNS, ids=lambda p: p.id)
def test_registry_example_shows_the_hook(site, pattern):
    assert shows_hook(site, pattern.example, pattern.hook), (
        f"{pattern.id}: {pattern.example} never mentions {pattern.hook} (fix `example` in registry.py)"
    )


def test_reference_table_links_pages_that_show_each_row_hook(site):
    page = site.page("reference/hooks")
    rows = re.findall(r"<tr[^>]*>.*?</tr>", page, flags=re.S)
    checked = 0
    for pattern in registry.PATTERNS:
        [row] = [r for r in rows if f'id="{pattern.id}"' in r]
        hrefs = re.findall(r'<a class="reference internal" href="([^"]+)"><span[^>]*>Executed example<', row)
        assert len(hrefs) == 1, f"{pattern.id}: {hrefs}"
        target = linked_docname("reference/hooks", hrefs[0])
        assert shows_hook(site, target, pattern.hook), f"{pattern.id}: {target} never mentions {pattern.hook}"
        checked += 1
    assert checked == len(registry.PATTERNS)


def test_symptom_index_fix_links_land_on_pages_that_show_the_hook(site):
    page = site.page("reference/symptoms")
    items = re.findall(r"<li>(.*?)</li>", page, flags=re.S)
    checked = 0
    for item in items:
        raised = re.search(r"raise it for (.*?)</p>", item, flags=re.S)
        if not raised:  # a text only an example printed: it links the page that printed it
            continue
        hooks = re.findall(r"(\w+)\.(\w+)\(", text_of(raised.group(1)))
        fix = re.search(r'<p class="symptom-fix">(.*?)</p>', item, flags=re.S).group(1)
        for href in re.findall(r'<a class="reference internal" href="([^"]+)"', fix):
            target = linked_docname("reference/symptoms", href)
            assert any(shows_hook(site, target, hook) for _, hook in hooks), f"{text_of(item)[:120]}: {target}"
            checked += 1
    errors = [r for r in probe_document(site)["records"] if r["outcome"] == "error"]
    assert checked >= 10 and errors


def test_landing_page_quotes_link_pages_that_show_the_hook(site):
    [listing] = re.findall(r'<ul class="symptom-quotes[^"]*">(.*?)</ul>', article(site.page("index")), flags=re.S)
    items = re.findall(r"<li>(.*?)</li>", listing, flags=re.S)
    assert len(items) >= 5
    for item in items:
        signature = text_of(re.search(r'<code class="docutils literal[^"]*">(.*?)</code>', item, flags=re.S).group(1))
        hook = signature.split("(")[0]
        [href] = re.findall(r'<a class="reference internal" href="([^"]+)"', item)
        target = linked_docname("index", href)
        assert [p.example for p in registry.PATTERNS if p.old_signature == signature] == [target]
        assert shows_hook(site, target, hook), f"{signature}: {target}"


@pytest.mark.parametrize("pattern", registry.PATTERNS, ids=lambda p: p.id)
def test_fix_page_shows_the_recorded_texts_of_its_patterns(site, pattern):
    [record] = [r for r in probe_document(site)["records"] if r["pattern"] == pattern.id]
    texts = record_texts(record)
    blocks = FIX_BLOCK.findall(site.page(pattern.example))
    if not texts:  # a hook Lightning silently ignores: nothing to quote
        assert record["outcome"] == "ignored"
        return
    assert len(blocks) == 1, f"{pattern.example}: {len(blocks)} symptom blocks"
    block = text_of(blocks[0])
    for text in texts:  # as the pattern's probe recorded it, or the same text naming another class
        quoted = re.escape(text).replace(re.escape(pattern.probe_class), r"\w+")
        assert re.search(quoted, block), f"{pattern.example} does not quote {text!r}"
    assert f"{pattern.owner}.{pattern.old_signature}" in block


def test_unknown_pattern_in_the_landing_quotes_fails_the_build_naming_file_and_line(tmp_path):
    """The landing page's ``symptom-quotes`` directive, on a fixture project: an id the registry does not know
    fails the build, naming the page and the directive's line."""
    files = example_stubs()
    quotes = ".. symptom-quotes::\n   training-epoch-end\n   no-such-pattern\n"
    files["index.rst"] += f"\nQuoted errors\n-------------\n\n{quotes}"
    line = 1 + files["index.rst"][: files["index.rst"].index(".. symptom-quotes::")].count("\n")
    files["gallery/README.txt"] = "Gallery\n=======\n"  # the symptom index also reads the gallery's pages: none here
    conf = f"extensions = {[*GALLERY_EXTENSIONS, 'guide.probe_records', 'guide.symptom_index']!r}\n{GALLERY_CONF}"
    tree = project(tmp_path, files, conf)
    build = sphinx_build(tree, source=".")
    assert build.returncode != 0
    assert f"index.rst:{line}" in build.output, build.output[-3000:]
    assert "no old pattern 'no-such-pattern'" in build.output
