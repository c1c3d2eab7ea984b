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

The same texts lead a reader who pastes one into the site search to the page that fixes it. Each page a registry
pattern links (its ``example``) shows, near its top, the errors and warnings the probes recorded for that
pattern ("If you saw this error"); that block and every printed symptom line of a gallery page carry a main
index entry (:class:`sphinx.addnodes.index`) whose text is the symptom itself. Sphinx's search scores an index
entry that contains the query, and is no more than twice its length, far above any full-text match, so the
exact pasted text ranks the fix page first. (Sphinx splits an index entry at ``;``: a text holding one is
found by its full-text terms only. A rebuild drops the index entries of the pages it does not rewrite from the
search index, sphinx-doc/sphinx#12599; the site's search scorer, ``docs/_static/search_scorer.js``, still ranks
the executed examples, where the fix block is, above the reference pages among the full-text matches.)

The directive ``.. symptom-quotes:: PATTERN_ID ...`` (the landing page) lists the error of each named pattern,
as recorded by this build's probes, beside the old signature that raised it and a link to its fix.

A link to a page that does not exist fails the build: the directive raises :class:`SymptomIndexError` when a
target is not a source page of the build, and ``build-finished`` raises it when a linked HTML file was not
written.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from guide import probe_records
from lightning_migrate import registry

REGISTRY_FILE = Path(registry.__file__).resolve()

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


def record_texts(record: dict[str, Any]) -> list[str]:
    """The ``"ErrorType: message"`` and ``"WarningCategory: message"`` texts of one probe record, error first."""
    texts = [f"{record['error_type']}: {record['error_message']}"] if record.get("error_type") else []
    texts.extend(f"{w['category']}: {w['message']}" for w in record.get("warnings") or [])
    return texts


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
    probed: list[Symptom] = []
    for record in probe_records.records(app)["records"]:
        try:
            pattern = registry.get(record["pattern"])
        except KeyError as err:
            raise SymptomIndexError(f"symptom index: {err.args[0]}") from None
        target, source = pattern.example, f"seen when this build ran {pattern.owner}.{pattern.old_signature}"
        probed.extend(Symptom(text, target, source) for text in record_texts(record))

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


#: The id of the "If you saw this error" block on a fix page. Its index entries name no anchor: a search result
#: from an index entry is then the same result as the page's full-text match (Sphinx's search lists it once).
FIX_BLOCK_ID = "if-you-saw-this-error"
#: A fix page's block is shown open when it holds at most this many texts, folded (one line) otherwise.
OPEN_UP_TO = 3


def fix_texts(app: Sphinx, docname: str) -> list[tuple[registry.OldPattern, list[str]]]:
    """The patterns whose ``example`` is ``docname``, each with the texts its probe record holds (maybe none).

    Reads the probe records (so the page being read depends on them) only when ``docname`` is such a page.
    """
    patterns = [p for p in registry.PATTERNS if p.example == docname]
    if not patterns:
        return []
    by_id = {record["pattern"]: record for record in probe_records.records(app)["records"]}
    return [(p, record_texts(by_id[p.id])) for p in patterns if p.id in by_id]


def _rubric(texts: list[str]) -> str:
    kinds = {"warning" if text.split(":")[0].endswith("Warning") else "error" for text in texts}
    noun = " or ".join(sorted(kinds))
    return f"If you saw this {noun}" if len(texts) == 1 else f"If you saw one of these {noun}s"


def fix_block(app: Sphinx, docname: str) -> nodes.container | None:
    """The "If you saw this error" block of a fix page (``None`` when no pattern that links it has a text).

    Each recorded text of each pattern that links the page, with the old signature that produced it, in an HTML
    ``<details>`` element (open when it holds at most :data:`OPEN_UP_TO` texts, so a long list does not push the
    page's content down), and a main index entry per text.
    """
    found = [(pattern, texts) for pattern, texts in fix_texts(app, docname) if texts]
    if not found:
        return None
    all_texts = list(dict.fromkeys(text for _, texts in found for text in texts))
    release = probe_records.records(app)["lightning"]["version"]
    block = nodes.container(classes=["symptoms-fixed-here"], ids=[FIX_BLOCK_ID])
    block += addnodes.index(entries=[("single", text, "", "main", None) for text in all_texts])
    opened = " open" if len(all_texts) <= OPEN_UP_TO else ""
    summary = f"{_rubric(all_texts)}, this page shows the fix"
    block += nodes.raw("", f"<details{opened}><summary>{html.escape(summary)}</summary>", format="html")
    listing = nodes.bullet_list(classes=["symptom-index"])
    for pattern, texts in found:
        item = nodes.list_item()
        for text in texts:
            item += nodes.literal_block(text, text, language="none", classes=["symptom"])
        para = nodes.paragraph(text=f"Lightning {release} said this when this build ran ")
        para += nodes.literal(text=f"{pattern.owner}.{pattern.old_signature}")
        para += nodes.Text(".")
        item += para
        listing += item
    block += listing
    block += nodes.raw("", "</details>", format="html")
    return block


def _insert_after_intro(section: nodes.Element, block: nodes.Node) -> None:
    """Put ``block`` after the title and the paragraphs that open ``section``, before its first code or section."""
    position = 0
    for position, child in enumerate(section.children):  # noqa: B007 - the position is the result
        if not isinstance(child, (nodes.title, nodes.paragraph, nodes.comment, nodes.target)):
            break
    else:
        position = len(section.children)
    section.insert(position, block)


def printed_symptom_entries(doctree: nodes.document) -> int:
    """Give each ``Name: text`` line of a gallery page's captured output a main index entry at its output block.

    Returns how many lines got one.
    """
    count = 0
    for block in list(doctree.findall(nodes.literal_block)):
        if "sphx-glr-script-out" not in block["classes"]:
            continue
        lines = [line.strip() for line in block.astext().splitlines()]
        texts = list(dict.fromkeys(line for line in lines if SYMPTOM_LINE.match(line)))
        if not texts:
            continue
        index = addnodes.index(entries=[("single", text, "", "main", None) for text in texts])
        block.parent.insert(block.parent.index(block), index)
        count += len(texts)
    return count


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    """Fix pages get their "If you saw this error" block; gallery pages index their printed symptom lines.

    A page in a gallery directory depends on the registry: a change of ``example`` may make it a fix page.
    """
    docname = app.env.docname
    gallery_dirs = tuple(f"{d}/" for d in app.config.sphinx_gallery_conf.get("gallery_dirs", []))
    if docname.startswith(gallery_dirs):
        app.env.note_dependency(str(REGISTRY_FILE))
        printed_symptom_entries(doctree)
    block = fix_block(app, docname)
    if block is None:
        return
    app.env.note_dependency(str(REGISTRY_FILE))
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        raise SymptomIndexError(f"{docname}: a fix page needs a title section for its symptom block")
    _insert_after_intro(section, block)


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (a ``.`` followed by a space), with `` ...`` if cut."""
    match = re.search(r"\.\s", text)
    return text if match is None else text[: match.start() + 1] + " ..."


class SymptomQuotesDirective(SphinxDirective):
    """``.. symptom-quotes:: PATTERN_ID [PATTERN_ID ...]`` -- the recorded error of each named registry pattern
    (its first sentence), beside the old signature that raised it and a link to the pattern's fix page.

    Raises:
        SymptomIndexError: an id the registry does not know, or a pattern whose probe recorded no error.
    """

    required_arguments = 1
    optional_arguments = 100
    has_content = False

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(REGISTRY_FILE))
        by_id = {record["pattern"]: record for record in probe_records.records(self.env.app)["records"]}
        listing = nodes.bullet_list(classes=["symptom-quotes"])
        for pattern_id in self.arguments:
            try:
                pattern = registry.get(pattern_id)
            except KeyError as err:
                raise SymptomIndexError(f"{self.get_location()}: {err.args[0]}") from None
            record = by_id.get(pattern_id, {})
            if not record.get("error_type"):
                raise SymptomIndexError(
                    f"{self.get_location()}: the probe of {pattern_id!r} recorded no error "
                    f"(outcome {record.get('outcome')!r}): there is nothing to quote"
                )
            text = first_sentence(f"{record['error_type']}: {record['error_message']}")
            item = nodes.list_item()
            head = nodes.paragraph()
            head += nodes.literal(text=pattern.old_signature)
            head += nodes.Text(" -- fix: ")
            xref = addnodes.pending_xref(
                "", refdomain="std", reftype="doc", reftarget="/" + pattern.example, refexplicit=False, refwarn=True
            )
            xref += nodes.inline(text=pattern.example)
            head += xref
            item += head
            item += nodes.literal_block(text, text, language="none", classes=["symptom"])
            listing += item
        return [listing]


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
    app.setup_extension("guide.probe_records")
    app.add_directive("symptom-index", SymptomIndexDirective)
    app.add_directive("symptom-quotes", SymptomQuotesDirective)
    app.connect("doctree-read", _on_doctree_read)
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _check_built)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
