"""The reference table, the landing page and the publishing metadata of the built site.

The table is rendered from the registry and from the probe records of the same build: these tests read both
(the records JSON the build wrote next to its doctrees) and check that every row shows what the records say.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from builds import ROOT, example_stubs, project, sphinx_build
from guide import gallery_version, reference_table

from lightning_migrate import registry


def probe_document(site) -> dict:
    """The probe records the build of ``site`` rendered (its one records file)."""
    path = site.outdir / ".doctrees" / "probe-records.json"
    return json.loads(path.read_text(encoding="utf-8"))


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def table_rows(page: str) -> dict[str, str]:
    """The HTML of each row of the old-hooks table, by the anchor (id) it carries."""
    [table] = re.findall(r'<table class="[^"]*old-hooks-table[^"]*".*?</table>', page, flags=re.S)
    rows = {}
    for row in re.findall(r"<tr[^>]*>.*?</tr>", table, flags=re.S):
        anchor = re.search(r'<span[^>]*\bid="([^"]+)"', row)
        if anchor:
            rows[anchor.group(1)] = row
    return rows


def test_one_row_per_registry_pattern_with_a_stable_anchor(site):
    rows = table_rows(site.page("reference/hooks"))
    assert list(rows) == [pattern.id for pattern in registry.PATTERNS]


@pytest.mark.parametrize("pattern", registry.PATTERNS, ids=lambda p: p.id)
def test_row_shows_versions_behaviour_message_and_example_link(site, pattern):
    row = table_rows(site.page("reference/hooks"))[pattern.id]
    record = next(r for r in probe_document(site)["records"] if r["pattern"] == pattern.id)
    text = text_of(row)
    assert pattern.old_signature in text
    assert f"removed {pattern.removed_in}" in text
    if pattern.deprecated_in:
        assert f"deprecated {pattern.deprecated_in}" in text
    else:
        assert "deprecated" not in text
    assert reference_table.describe(record, pattern.stage) in text
    if record["error_message"]:
        assert html.escape(f"{record['error_type']}: {record['error_message']}", quote=False) in row
    # The example link resolves to the example's page (relative to reference/hooks.html).
    assert f'href="../{pattern.example}.html"' in row
    assert (site.outdir / f"{pattern.example}.html").is_file()


def test_behaviour_sentences_follow_the_records(site):
    """Each outcome reads as the records say: an error names its type, an ignored hook says it was never called."""
    for record in probe_document(site)["records"]:
        stage = registry.get(record["pattern"]).stage
        sentence = reference_table.describe(record, stage)
        if record["outcome"] == "error":
            assert sentence.startswith(record["error_type"])
            if record["failed_during"] == "setup":
                assert sentence.endswith("nothing ran")
            elif record["training_steps"]:
                assert f"after {record['training_steps']} training step" in sentence
        elif record["outcome"] == "ignored":
            assert record["hook_calls"] == 0
            assert sentence.startswith("Silently ignored: never called")
            assert f"though {record['batches'][stage]} " in sentence


def test_reference_agrees_with_the_executed_example(site):
    """The probes and the old-hooks example ran the same three shapes: they took the same number of steps."""
    page = text_of(site.page("examples/core/old_outputs_hooks"))
    steps_in_example = [int(n) for n in re.findall(r"training steps taken before the failure: (\d+)", page)]
    records = {r["pattern"]: r for r in probe_document(site)["records"]}
    shown_in_example = [
        "module-on-train-epoch-end-outputs",
        "callback-on-train-epoch-end-outputs",
        "training-epoch-end",
    ]
    assert [records[pid]["training_steps"] for pid in shown_in_example] == steps_in_example
    assert [records[pid]["outcome"] for pid in shown_in_example] == ["error"] * 3


def test_landing_page_summary_counts_the_records(site):
    document = probe_document(site)
    text = " ".join(text_of(site.page("index")).split())
    assert " ".join(reference_table.summary(document).split()) in text
    errors = sum(r["outcome"] == "error" for r in document["records"])
    assert f"stops {errors} of the {len(document['records'])} old hook shapes" in text
    # the errors after a training step: the dataloader_idx of on_train_batch_start raises after the sanity check,
    # before any step, and is not among them
    late = [r for r in document["records"] if r["outcome"] == "error" and r["training_steps"] > 0]
    assert f"({len(late)} of them only after at least one training step)" in text


def test_landing_page_tabs_show_the_gallery_code(site):
    page = site.page("index")
    assert page.count('class="sd-tab-set') >= 2
    code = text_of(" ".join(re.findall(r'<div class="highlight-python[^"]*">(.*?)</pre>', page, flags=re.S)))
    for script, name in [
        ("old_outputs_hooks.py", "TrainingEpochEnd"),
        ("old_outputs_hooks.py", "CallbackHookWithOutputs"),
        ("module_side_caching.py", "LossCachingModel"),
        ("callback_side_caching.py", "EpochLossCallback"),
    ]:
        source = (ROOT / "gallery" / "core" / script).read_text(encoding="utf-8")
        match = re.search(rf"^class {name}\(.*?(?=^\S)", source, flags=re.S | re.M)
        assert match.group(0).strip() in code, f"{name} of {script} is not shown verbatim"


@pytest.mark.parametrize("docname", ["index", "reference/hooks", "examples/core/module_side_caching"])
def test_pages_have_titles_and_descriptions_for_search_engines_and_previews(site, docname):
    page = site.page(docname)
    title = text_of(re.search(r"<title>(.*?)</title>", page, flags=re.S).group(1))
    assert title.endswith("Lightning epoch-end migration guide")
    [description] = [tag for tag in re.findall(r"<meta [^>]*>", page) if 'name="description"' in tag]
    [og_description] = re.findall(r'<meta property="og:description" content="([^"]+)"', page)
    assert len(og_description) > 50
    assert f'content="{og_description}"' in description
    assert re.search(r'<meta property="og:title" content="[^"]+"', page)
    canonical = re.search(r'<link rel="canonical" href="([^"]+)"', page).group(1)
    assert re.search(r'<meta property="og:url" content="([^"]+)"', page).group(1) == canonical
    assert canonical.endswith(f"{docname}.html")


def test_404_page_links_carry_the_site_prefix(site):
    page = site.page("404")
    prefix = re.search(r'<link rel="canonical" href="https?://[^/]+(/[^"]*)index\.html"', site.page("index")).group(1)
    stylesheets = re.findall(r'<link rel="stylesheet"[^>]*href="([^"]+)"', page)
    assert stylesheets and all(href.startswith(f"{prefix}_static/") for href in stylesheets)


def test_gallery_page_without_a_lightning_line_is_reported(site):
    """The generated page of an example, with its version line taken out, makes the extension complain."""
    generated = (site.tree / "docs" / "examples" / "core" / "module_side_caching.rst").read_text(encoding="utf-8")
    assert gallery_version.version_note(generated) is not None
    without = re.sub(r"^(\s+)Lightning \d+\.\d+\S*\s*$", r"\1(version line removed)", generated, flags=re.M)
    with pytest.raises(LookupError, match="no 'Lightning X.Y.Z' line"):
        gallery_version.version_note(without)


def test_row_with_a_missing_example_stops_the_build_and_names_it(tmp_path):
    """A fixture project with a stub page for every registry pattern's example but one: the build stops, naming
    the pattern, its ``example`` and registry.py, where it is fixed."""
    files = example_stubs()
    pattern = registry.PATTERNS[0]
    missing = f"{pattern.example}.rst"
    del files[missing]
    files["index.rst"] = files["index.rst"].replace(f"   {pattern.example}\n", "")
    tree = project(tmp_path, files, 'extensions = ["guide.probe_records"]')
    build = sphinx_build(tree, source=".")
    assert build.returncode != 0
    assert f"{pattern.id}: {pattern.example!r}" in build.output
    assert "is not a document of this site" in build.output
    assert str(Path("src") / "lightning_migrate" / "registry.py") in build.output
    named = re.findall(r"^\s+([\w-]+): '[^']+'$", build.output, flags=re.M)  # the error's lines, one per pattern
    assert named == [p.id for p in registry.PATTERNS if p.example == pattern.example]
