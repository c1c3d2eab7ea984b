"""Sphinx extension: the symptom index -- every error and warning text the build saw, linked to its fix.

The directive ``.. symptom-index::`` renders two lists, so that a user who pastes an error into the site search
lands on this page and from there on the example that fixes it:

* the errors and warnings the probes recorded for the registry's old hook shapes
  (:func:`probe_records.records`), each linked to the pattern's ``example`` page
  (:func:`lightning_migrate.registry.get`);
* the old hooks the probes found silently never called (no text to search for but the hook's name);
* every ``SomeError: text`` / ``SomeWarning: text`` line the gallery examples printed, read from the captured
  output blocks (``.. rst-class:: sphx-glr-script-out``) of the pages sphinx-gallery generated, each linked to
  the example that printed it.

Nothing here is typed by hand: every text comes from a run of this build. sphinx-gallery executes the examples
at ``builder-inited``, before any page is read, so the generated pages exist when the directive runs. A page
holding the directive depends on every generated example page and on the probe records file
(``env.note_dependency``): Sphinx re-reads it whenever one of them was rewritten, and only then.

A link to a page that does not exist fails the build: the directive raises :class:`SymptomIndexError` when a
target is not a source page of the build, and ``build-finished`` raises it when a linked HTML file was not
written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import probe_records
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

#: A printed exception or warning: ``Name: text`` where ``Name`` ends in Error, Warning or Exception
#: (optionally dotted, e.g. ``torch.OutOfMemoryError``).
SYMPTOM_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Warning|Exception|Interrupt)): (.+)$")
OUTPUT_BLOCK = ".. rst-class:: sphx-glr-script-out"


class SymptomIndexError(ExtensionError):
    """A symptom links to a page that does not exist, or a source of symptoms cannot be read."""


@dataclass(frozen=True)
class Symptom:
    """One error or warning text and the page that shows its fix.

    Attributes:
        text: ``"ErrorType: message"`` exactly as printed or recorded.
        target: docname of the page with the fix (e.g. ``examples/core/module_side_caching``).
        source: where this build saw the text, in words for the reader (the old signature it ran, or the example).
    """

    text: str
    target: str
    source: str


def symptom_lines(rst: str) -> list[str]:
    """The ``Name: text`` lines inside the captured-output blocks of a sphinx-gallery page.

    ``rst`` is the text of a page sphinx-gallery generated; output blocks are ``.. rst-class::
    sphx-glr-script-out`` followed by an indented ``code-block``. Returns the lines in page order, stripped,
    without duplicates.
    """
    found: list[str] = []
    lines = rst.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != OUTPUT_BLOCK:
            i += 1
            continue
        i += 1
        while i < len(lines) and not lines[i].strip():  # blank lines before the code-block directive
            i += 1
        i += 1  # the " .. code-block:: none" line
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
            match = SYMPTOM_LINE.match(lines[i].strip())
            if match and lines[i].strip() not in found:
                found.append(lines[i].strip())
            i += 1
    return found


def gallery_pages(app: Sphinx) -> list[Path]:
    """The ``.rst`` pages sphinx-gallery generated for this build, sorted (index pages excluded)."""
    conf = app.config.sphinx_gallery_conf
    pages: list[Path] = []
    for gallery_dir in conf.get("gallery_dirs", []):
        root = Path(app.srcdir, gallery_dir)
        pages.extend(p for p in root.rglob("*.rst") if p.name not in ("index.rst", "sg_execution_times.rst"))
    return sorted(pages)


def ignored_hooks(app: Sphinx) -> list[Symptom]:
    """The old hook shapes whose probe ran to the end without Lightning ever calling the hook.

    ``text`` is the old signature from the registry (``owner.old_signature``), not a message: there is none.
    """
    from lightning_migrate import registry

    found = []
    for record in probe_records.records(app)["records"]:
        if record["outcome"] == "ignored":
            pattern = registry.get(record["pattern"])
            text = f"{pattern.owner}.{pattern.old_signature} is never called"
            found.append(Symptom(text, pattern.example, "this build ran it: Lightning never called it"))
    return _unique(found)


def collect(app: Sphinx) -> tuple[list[Symptom], list[Symptom]]:
    """The symptoms of this build: ``(from the probes, from the gallery pages)``, each without duplicates.

    Raises:
        SymptomIndexError: a probe record names a pattern the registry does not know.
    """
    from lightning_migrate import registry

    probed: list[Symptom] = []
    for record in probe_records.records(app)["records"]:
        try:
            pattern = registry.get(record["pattern"])
        except KeyError as err:
            raise SymptomIndexError(f"symptom index: {err.args[0]}") from None
        target, source = pattern.example, f"seen when this build ran {pattern.owner}.{pattern.old_signature}"
        texts = []
        if record.get("error_type"):
            texts.append(f"{record['error_type']}: {record['error_message']}")
        texts.extend(f"{w['category']}: {w['message']}" for w in record.get("warnings") or [])
        probed.extend(Symptom(text, target, source) for text in texts)

    printed: list[Symptom] = []
    srcdir = Path(app.srcdir)
    for page in gallery_pages(app):
        docname = page.relative_to(srcdir).with_suffix("").as_posix()
        for text in symptom_lines(page.read_text(encoding="utf-8")):
            printed.append(Symptom(text, docname, "printed by that example in this build"))
    return _unique(probed), _unique(printed)


def _unique(symptoms: list[Symptom]) -> list[Symptom]:
    return list({(s.text, s.target): s for s in symptoms}.values())


class SymptomIndexDirective(SphinxDirective):
    """``.. symptom-index::`` -- no arguments, no options, no content."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        probed, printed = collect(self.env.app)
        ignored = ignored_hooks(self.env.app)
        for page in gallery_pages(self.env.app):
            self.env.note_dependency(str(page))
        self.env.note_dependency(self.env.probe_records_path)  # type: ignore[attr-defined]
        missing = [s for s in probed + printed + ignored if s.target not in self.env.found_docs]
        if missing:
            listing = "\n".join(f"  {s.target} (from {s.source}): {s.text[:80]}" for s in missing)
            raise SymptomIndexError(
                f"{self.get_location()}: symptom index links to pages that are not in the build:\n{listing}"
            )
        self.env.symptom_index_docs.add(self.env.docname)  # type: ignore[attr-defined]
        self.env.symptom_index_targets.setdefault(self.env.docname, set()).update(  # type: ignore[attr-defined]
            s.target for s in probed + printed + ignored
        )
        return [
            self._section("What old hook shapes raise or warn", "symptoms-probes", probed),
            self._section("Old hooks Lightning silently never calls", "symptoms-ignored", ignored),
            self._section("What the examples print", "symptoms-examples", printed),
        ]

    def _section(self, title: str, ident: str, symptoms: list[Symptom]) -> nodes.section:
        section = nodes.section(ids=[ident])
        section += nodes.title(text=title)
        listing = nodes.bullet_list(classes=["symptom-index"])
        for symptom in sorted(symptoms, key=lambda s: (s.text.split(":")[0], s.text)):
            item = nodes.list_item()
            item += nodes.literal_block(symptom.text, symptom.text, language="none", classes=["symptom"])
            para = nodes.paragraph(text="Fix: ")
            xref = addnodes.pending_xref(
                "", refdomain="std", reftype="doc", reftarget="/" + symptom.target, refexplicit=False
            )
            xref += nodes.inline(text=symptom.target)
            para += xref
            para += nodes.Text(f" ({symptom.source})")
            item += para
            listing += item
        if not symptoms:
            section += nodes.paragraph(text="None in this build.")
        else:
            section += listing
        return section


def _init_env(app: Sphinx, env: Any, docnames: list[str]) -> None:
    if not hasattr(env, "symptom_index_docs"):
        env.symptom_index_docs = set()
        env.symptom_index_targets = {}


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "symptom_index_docs", set()).discard(docname)
    getattr(env, "symptom_index_targets", {}).pop(docname, None)


def _merge(app: Sphinx, env: Any, docnames: set[str], other: Any) -> None:
    env.symptom_index_docs |= getattr(other, "symptom_index_docs", set())
    env.symptom_index_targets.update(getattr(other, "symptom_index_targets", {}))


def _check_built(app: Sphinx, exception: BaseException | None) -> None:
    """Fail the build when a linked page has no HTML file (html builders only)."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    suffix = getattr(app.builder, "out_suffix", ".html")
    for docname, targets in getattr(app.env, "symptom_index_targets", {}).items():
        missing = sorted(t for t in targets if not (outdir / f"{t}{suffix}").is_file())
        if missing:
            raise SymptomIndexError(f"{docname}: the symptom index links to pages that were not built: {missing}")


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("probe_records")
    app.add_directive("symptom-index", SymptomIndexDirective)
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _check_built)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
