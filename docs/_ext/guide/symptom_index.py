"""Sphinx extension: the symptom index -- one entry per error or warning Lightning prints for the old hooks, linked
to its fix.

A *symptom* is one error or warning with the reader's class name left open: Lightning quotes the class that
defines an old hook (``... `LitModel` implements this method``, ``MyCallback.on_train_epoch_end() missing ...``), so
the same error reads differently in every project. :func:`collect` gathers every text that was recorded by running
Lightning, and groups them into :class:`Symptom` entries by their text with the class names taken out
(:func:`class_key`):

* the probe records of the Lightning the site is built with (:func:`probe_records.records`), and those of every
  2.x release of ``data/compat/matrix.toml`` (``[matrix]``, recorded by :mod:`migration_guide.compat`): an
  older release that words the same error differently (2.0 and 2.2 link ``Lightning-AI/lightning``, later releases
  ``Lightning-AI/pytorch-lightning``) adds a wording to the entry of the same pattern. The class names are the
  registry's :attr:`~lightning_migrate.registry.OldPattern.probe_class`; each links the pattern's ``example``;
* every ``SomeError: text`` / ``SomeWarning: text`` line the gallery examples printed, read from the captured output
  blocks (``.. rst-class:: sphx-glr-script-out``) of the pages sphinx-gallery generated; the class names are those
  the example's script defines. A line with the text of a probe entry is that entry (the example shows the
  failure, the registry's ``example`` the fix); any other line is an entry linked to the example that printed it.

Nothing here is typed by hand. sphinx-gallery executes the examples at ``builder-inited``, before any page is
read, so the generated pages exist when the directives run; a page that renders symptoms depends on the generated
example pages, the probe records and the recorded releases (``env.note_dependency``).

Directives and blocks:

``.. symptom-index::``
    the symptom index: the errors and warnings of the old hooks, the old hooks Lightning never calls, and what the
    examples print, one entry per symptom with its fix.
``.. symptom-quotes:: PATTERN_ID ...``
    (the landing page) the error of each named pattern, as the Lightning the site is built with words it, beside
    the old signature that raised it and a link to its fix.
The "If you saw this error" block
    every fix page (a pattern's ``example``) shows, near its top, every wording of the symptoms it fixes, each with a
    main index entry (:class:`sphinx.addnodes.index`) whose text is the wording itself, so that Sphinx's search
    finds the pasted text there (an index entry that contains the query, and is no more than twice its length,
    scores far above any full-text match). The search itself is in :mod:`guide.symptom_search`.
The cache names of a fix page
    every cache name (:data:`lightning_migrate.registry.CACHE_IDIOMS`) of the patterns a fix page fixes gets a main
    index entry there, and is one of the page's ``keywords`` (a :class:`docutils.nodes.meta` node, which Sphinx's
    search index adds to the page's words): ``validation_step_outputs`` finds its fix, though the page's code names
    its list otherwise (:func:`idiom_nodes`).

A link to a page that does not exist fails the build: the directive raises :class:`SymptomIndexError` when a
target is not a source page of the build, and ``build-finished`` raises it when a linked HTML file was not
written.
"""

from __future__ import annotations

import ast
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build_mechanics import current_app
from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

from guide import probe_records
from lightning_migrate import registry
from migration_guide import compat

REGISTRY_FILE = Path(registry.__file__).resolve()

#: A printed exception or warning: ``Name: text`` where ``Name`` ends in Error, Warning or Exception
#: (optionally dotted, e.g. ``torch.OutOfMemoryError``).
SYMPTOM_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Warning|Exception|Interrupt)): (.+)$")
OUTPUT_BLOCK = ".. rst-class:: sphx-glr-script-out"
#: What :func:`class_key` puts where a text names the code's own class.
CLASS_SLOT = "{class}"


class SymptomIndexError(ExtensionError):
    """A symptom links to a page that does not exist, or a source of symptoms cannot be read."""


def class_key(text: str, class_names: frozenset[str] | set[str]) -> str:
    """``text`` with every whole-word occurrence of a name of ``class_names`` replaced by :data:`CLASS_SLOT`.

    >>> class_key("TypeError: LitModel.on_train_epoch_end() missing 1 ...", {"LitModel"})
    'TypeError: {class}.on_train_epoch_end() missing 1 ...'
    """
    for name in sorted(class_names, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", CLASS_SLOT, text)
    return text


@dataclass
class Wording:
    """One way Lightning words a symptom.

    Attributes:
        text: ``"ErrorType: message"`` exactly as recorded or printed (with the class names of the code that ran).
        class_names: the names in ``text`` that are the code's own classes (a reader's error names theirs).
        releases: the Lightning releases whose probes recorded this wording, in the order they were read (the
            site's own release first); empty for a text only an example printed.
    """

    text: str
    class_names: frozenset[str]
    releases: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """:attr:`text` without its class names (:func:`class_key`)."""
        return class_key(self.text, self.class_names)


@dataclass
class Symptom:
    """One entry of the symptom index: an error or warning, every wording of it, and where its fix is.

    Attributes:
        wordings: the site's own release's wording first (or the first recorded), then older releases' wordings.
        patterns: the registry patterns whose probes recorded it (their ``example`` is the fix).
        printed_by: docnames of the gallery examples that printed it.
    """

    wordings: list[Wording]
    patterns: list[registry.OldPattern] = field(default_factory=list)
    printed_by: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The first wording's text."""
        return self.wordings[0].text

    @property
    def fixes(self) -> list[tuple[str | None, str]]:
        """``(owner, docname)`` of each page with the fix, in registry order, without duplicate pages.

        ``owner`` (``"LightningModule"`` or ``"Callback"``) says whose code the page fixes; it is ``None`` when every
        pattern of the symptom has the same page, or for a text only an example printed (its page is the fix).
        """
        pages = list(dict.fromkeys(p.example for p in self.patterns)) or self.printed_by[:1]
        if len(pages) == 1:
            return [(None, pages[0])]
        return [(next(p.owner for p in self.patterns if p.example == page), page) for page in pages]

    @property
    def signatures(self) -> list[str]:
        """``owner.old_signature`` of each pattern whose probe recorded this symptom."""
        return list(dict.fromkeys(f"{p.owner}.{p.old_signature}" for p in self.patterns))

    def add(self, text: str, class_names: frozenset[str], release: str | None) -> None:
        """Count ``text`` (recorded on ``release``, or printed by an example when ``None``) as a wording of this."""
        same = next((w for w in self.wordings if w.text == text), None)
        if same is None:
            same = Wording(text, class_names)
            self.wordings.append(same)
        if release is not None and release not in same.releases:
            same.releases.append(release)

    def distinct_wordings(self, class_names: set[str] | None = None) -> list[Wording]:
        """One wording per text without its class names, in order; with ``class_names``, only wordings that name one
        of them (the texts a fix page's own patterns recorded).

        The releases of a wording returned are those of every wording with the same text without class names.
        """
        found: dict[str, Wording] = {}
        for wording in self.wordings:
            if class_names is not None and not wording.class_names & class_names:
                continue
            if wording.key not in found:
                found[wording.key] = Wording(wording.text, wording.class_names, list(wording.releases))
            else:
                merged = found[wording.key].releases
                merged.extend(r for r in wording.releases if r not in merged)
        return list(found.values())


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


def defined_classes(source: str) -> frozenset[str]:
    """The names of every class a Python script defines, at any depth (``SyntaxError`` if it does not parse)."""
    return frozenset(node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef))


def record_texts(record: dict[str, Any]) -> list[str]:
    """The ``"ErrorType: message"`` and ``"WarningCategory: message"`` texts of one probe record, error first."""
    texts = [f"{record['error_type']}: {record['error_message']}"] if record.get("error_type") else []
    texts.extend(f"{w['category']}: {w['message']}" for w in record.get("warnings") or [])
    return texts


def _record_slots(record: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """``(slot, text)`` per text of a record: the slot (error, or warning category and position) names the same
    text on another release."""
    slots: list[tuple[tuple[str, ...], str]] = []
    if record.get("error_type"):
        slots.append((("error",), f"{record['error_type']}: {record['error_message']}"))
    for position, warning in enumerate(record.get("warnings") or []):
        slots.append((("warning", warning["category"], str(position)), f"{warning['category']}: {warning['message']}"))
    return slots


def gallery_pages(app: Sphinx) -> list[Path]:
    """The ``.rst`` pages sphinx-gallery generated for this build, sorted (index pages excluded)."""
    conf = app.config.sphinx_gallery_conf
    pages: list[Path] = []
    for gallery_dir in conf.get("gallery_dirs", []):
        root = Path(app.srcdir, gallery_dir)
        pages.extend(p for p in root.rglob("*.rst") if p.name not in ("index.rst", "sg_execution_times.rst"))
    return sorted(pages)


def recorded_releases() -> list[tuple[str, dict[str, Any]]]:
    """``(version, probe document)`` of every ``[matrix]`` (2.x) release of ``data/compat/matrix.toml`` that has a
    data file, newest first."""
    matrix = compat.load_matrix()
    found = []
    for version, entry in matrix["versions"].items():
        path = compat.data_path(version)
        if entry["group"] == "matrix" and path.is_file():
            found.append((version, json.loads(path.read_text(encoding="utf-8"))["probes"]))
    return sorted(found, key=lambda item: [int(part) for part in re.findall(r"\d+", item[0])], reverse=True)


def dependencies() -> list[Path]:
    """The files :func:`collect` reads besides the probe records and the generated pages: the registry, the matrix
    definition and the data file of every declared release."""
    matrix = compat.load_matrix()
    return [REGISTRY_FILE, compat.MATRIX_FILE, *(compat.data_path(v) for v in matrix["versions"])]


def collect(app: Sphinx) -> tuple[list[Symptom], list[Symptom]]:
    """The symptoms: ``(of the old hooks, printed by the examples only)``, in the order first seen.

    The first list holds every text the probes recorded on the site's release and on the recorded 2.x releases,
    one :class:`Symptom` per text without its class name, with the patterns that produced it; an example's printed
    line with such a text counts as printed by that example. The second list holds the other printed lines.

    Raises:
        SymptomIndexError: a probe record names a pattern the registry does not know, or a gallery script that
            printed a line cannot be parsed.
    """
    document = probe_records.records(app)
    documents = [(document["lightning"]["version"], document)]
    documents += [(version, doc) for version, doc in recorded_releases() if version != documents[0][0]]
    by_key: dict[str, Symptom] = {}
    by_slot: dict[tuple[str, ...], Symptom] = {}
    probed: list[Symptom] = []
    for release, doc in documents:
        for record in doc["records"]:
            try:
                pattern = registry.get(record["pattern"])
            except KeyError as err:
                raise SymptomIndexError(f"symptom index: {err.args[0]} (recorded on Lightning {release})") from None
            names = frozenset({pattern.probe_class})
            for slot, text in _record_slots(record):
                key = class_key(text, names)
                symptom = by_key.get(key) or by_slot.get((pattern.id, *slot))
                if symptom is None:
                    symptom = Symptom([])
                    probed.append(symptom)
                symptom.add(text, names, release)
                if pattern not in symptom.patterns:
                    symptom.patterns.append(pattern)
                by_key[key] = by_slot[(pattern.id, *slot)] = symptom

    printed: list[Symptom] = []
    srcdir = Path(app.srcdir)
    for page in gallery_pages(app):
        docname = page.relative_to(srcdir).with_suffix("").as_posix()
        lines = symptom_lines(page.read_text(encoding="utf-8"))
        if not lines:
            continue
        script = page.with_suffix(".py")
        try:
            names = defined_classes(script.read_text(encoding="utf-8")) if script.is_file() else frozenset()
        except SyntaxError as err:
            raise SymptomIndexError(f"{script}: cannot read the classes it defines: {err}") from None
        for text in lines:
            key = class_key(text, names)
            symptom = by_key.get(key)
            if symptom is None:
                symptom = by_key[key] = Symptom([])
                printed.append(symptom)
                symptom.add(text, names, None)
            if docname not in symptom.printed_by:
                symptom.printed_by.append(docname)
    return probed, printed


def ignored_hooks(app: Sphinx) -> list[tuple[str, str]]:
    """``(old signature, fix docname)`` of every old hook shape whose probe ran to the end without Lightning ever
    calling the hook (there is no message: the text is the registry's ``owner.old_signature``)."""
    found = []
    for record in probe_records.records(app)["records"]:
        if record["outcome"] == "ignored":
            pattern = registry.get(record["pattern"])
            found.append((f"{pattern.owner}.{pattern.old_signature}", pattern.example))
    return list(dict.fromkeys(found))


def releases_phrase(releases: list[str]) -> str:
    """``"Lightning 2.0.9"``, ``"Lightning 2.0.9 and 2.2.5"``, ``"Lightning 2.0.9, 2.2.5 and 2.6.6"`` (oldest first)."""
    ordered = sorted(releases, key=lambda v: [int(part) for part in re.findall(r"\d+", v)])
    if len(ordered) == 1:
        return f"Lightning {ordered[0]}"
    return f"Lightning {', '.join(ordered[:-1])} and {ordered[-1]}"


def _doc_link(docname: str) -> addnodes.pending_xref:
    xref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + docname, refexplicit=False)
    xref += nodes.inline(text=docname)
    return xref


def fix_paragraph(symptom: Symptom) -> nodes.paragraph:
    """``Fix: <page>``, or ``Fix: in a LightningModule, <page>; in a Callback, <page>``."""
    para = nodes.paragraph(text="Fix: ", classes=["symptom-fix"])
    for position, (owner, docname) in enumerate(symptom.fixes):
        if position:
            para += nodes.Text("; ")
        if owner is not None:
            para += nodes.Text(f"in a {owner}, ")
        para += _doc_link(docname)
    return para


def _wording_nodes(wordings: list[Wording]) -> list[nodes.Node]:
    """The first wording, then each other wording after the releases that print it."""
    first = wordings[0].text
    found: list[nodes.Node] = [nodes.literal_block(first, first, language="none", classes=["symptom"])]
    for wording in wordings[1:]:
        if not wording.releases:
            continue
        found.append(nodes.paragraph(text=f"{releases_phrase(wording.releases)} word it:"))
        found.append(nodes.literal_block(wording.text, wording.text, language="none", classes=["symptom"]))
    return found


def _releases(symptom: Symptom) -> list[str]:
    return list(dict.fromkeys(release for wording in symptom.wordings for release in wording.releases))


class SymptomIndexDirective(SphinxDirective):
    """``.. symptom-index::`` -- no arguments, no options, no content."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        probed, printed = cached_collect(current_app.get())
        ignored = ignored_hooks(current_app.get())
        for path in [*gallery_pages(current_app.get()), *dependencies()]:
            self.env.note_dependency(str(path))
        self.env.note_dependency(self.env.probe_records_path)  # type: ignore[attr-defined]
        targets = [docname for s in probed + printed for _, docname in s.fixes] + [page for _, page in ignored]
        missing = sorted({t for t in targets if t not in self.env.found_docs})
        if missing:
            raise SymptomIndexError(
                f"{self.get_location()}: symptom index links to pages that are not in the build: {missing}"
            )
        self.env.symptom_index_docs.add(self.env.docname)  # type: ignore[attr-defined]
        self.env.symptom_index_targets.setdefault(self.env.docname, set()).update(targets)  # type: ignore[attr-defined]
        current = probe_records.records(current_app.get())["lightning"]["version"]
        return [
            self._section("Errors and warnings of the old hooks", "symptoms-probes", probed),
            self._ignored_section(ignored, current),
            self._section("Other errors and warnings the examples show", "symptoms-examples", printed),
        ]

    def _section(self, title: str, ident: str, symptoms: list[Symptom]) -> nodes.section:
        section = nodes.section(ids=[ident], classes=["from-records"])  # headings and texts from this build's runs
        section += nodes.title(text=title)
        listing = nodes.bullet_list(classes=["symptom-index"])
        for symptom in sorted(symptoms, key=lambda s: (s.text.split(":")[0], s.wordings[0].key)):
            item = nodes.list_item()
            item += _wording_nodes(symptom.distinct_wordings())
            item += fix_paragraph(symptom)
            if symptom.patterns:
                para = nodes.paragraph(classes=["symptom-source"])
                para += nodes.Text(f"{releases_phrase(_releases(symptom))} raise it for ")
                for position, signature in enumerate(symptom.signatures):
                    if position:
                        para += nodes.Text(" and ")
                    para += nodes.literal(text=signature)
                para += nodes.Text(".")
                item += para
            listing += item
        section += listing if symptoms else nodes.paragraph(text="None.")
        return section

    def _ignored_section(self, ignored: list[tuple[str, str]], current: str) -> nodes.section:
        section = nodes.section(ids=["symptoms-ignored"], classes=["from-records"])  # the probes' ignored patterns
        section += nodes.title(text="Old hooks Lightning silently never calls")
        section += nodes.paragraph(
            text=f"Lightning {current} runs these without an error and never calls them; no warning names them:"
        )
        listing = nodes.bullet_list(classes=["symptom-index"])
        for signature, docname in sorted(ignored):
            item = nodes.list_item()
            item += nodes.literal_block(signature, signature, language="none", classes=["symptom"])
            para = nodes.paragraph(text="Fix: ", classes=["symptom-fix"])
            para += _doc_link(docname)
            item += para
            listing += item
        section += listing if ignored else nodes.paragraph(text="None.")
        return section


#: The id of the "If you saw this error" block on a fix page. Its index entries name no anchor: a search result
#: from an index entry is then the same result as the page's full-text match (Sphinx's search lists it once).
FIX_BLOCK_ID = "if-you-saw-this-error"


def page_symptoms(app: Sphinx, docname: str) -> list[tuple[Symptom, list[registry.OldPattern]]]:
    """The symptoms whose fix is ``docname``, each with the patterns that link it there (in registry order).

    Reads the probe records and the recorded releases only when ``docname`` is a pattern's ``example``; the page
    being read then depends on them.
    """
    if not any(p.example == docname for p in registry.PATTERNS):
        return []
    for path in dependencies():
        app.env.note_dependency(str(path))
    probed, _ = cached_collect(app)
    found = []
    for symptom in probed:
        here = [p for p in symptom.patterns if p.example == docname]
        if here:
            found.append((symptom, here))
    return found


def _rubric(symptoms: list[Symptom]) -> str:
    """The one line (HTML) a fix page's folded block shows: the recorded class names of its symptoms, in the order
    they come (``If you saw <code>TypeError</code> or <code>NotImplementedError</code>, this page shows the fix``)."""
    names = [f"<code>{html.escape(name)}</code>" for name in dict.fromkeys(s.text.split(":")[0] for s in symptoms)]
    saw = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"
    return f"If you saw {saw}, this page shows the fix"


def fix_block(app: Sphinx, docname: str) -> nodes.container | None:
    """The "If you saw this error" block of a fix page (``None`` when no pattern that links it has a text).

    Each symptom the page fixes -- every wording of it, the releases that print it and the old signatures that
    raise it -- in a folded HTML ``<details>`` element whose one line names their exception classes (open, the
    texts would push the fix below the first screen: 150 to 400 px of a 1400 x 900 window), and a main index entry
    per wording (Sphinx's search finds the page by them, folded or not).
    """
    found = page_symptoms(app, docname)
    if not found:
        return None
    shown = [
        (symptom, patterns, symptom.distinct_wordings({p.probe_class for p in patterns})) for symptom, patterns in found
    ]
    texts = list(dict.fromkeys(w.text for _, _, wordings in shown for w in wordings))
    # every sentence of the block says what this build's runs recorded (the releases, the errors, the old shapes)
    block = nodes.container(classes=["symptoms-fixed-here", "from-records"], ids=[FIX_BLOCK_ID])
    block += addnodes.index(entries=[("single", text, "", "main", None) for text in texts])
    summary = _rubric([symptom for symptom, _ in found])
    block += nodes.raw("", f"<details><summary>{summary}</summary>", format="html")
    listing = nodes.bullet_list(classes=["symptom-index"])
    for symptom, patterns, wordings in shown:
        item = nodes.list_item()
        item += _wording_nodes(wordings)
        para = nodes.paragraph()
        para += nodes.Text(f"{releases_phrase(_releases(symptom))} raise it for ")
        for position, pattern in enumerate(patterns):
            if position:
                para += nodes.Text(" and ")
            para += nodes.literal(text=f"{pattern.owner}.{pattern.old_signature}")
        para += nodes.Text(".")
        item += para
        listing += item
    block += listing
    block += nodes.raw("", "</details>", format="html")
    return block


def idiom_nodes(docname: str) -> list[nodes.Node]:
    """The main index entries and the ``keywords`` meta node of the cache names of the patterns whose ``example`` is
    ``docname`` (``[]`` when they have none): ``training_step_outputs`` and ``self.training_step_outputs``."""
    idioms = list(dict.fromkeys(i for p in registry.PATTERNS if p.example == docname for i in registry.idioms(p.id)))
    if not idioms:
        return []
    entries = [("single", text, "", "main", None) for idiom in idioms for text in (idiom, f"self.{idiom}")]
    return [addnodes.index(entries=entries), nodes.meta(name="keywords", content=", ".join(idioms))]


def _insert_after_intro(section: nodes.Element, block: nodes.Node) -> None:
    """Put ``block`` after the title and the paragraphs that open ``section``, before its first code or section."""
    position = 0
    for position, child in enumerate(section.children):  # noqa: B007 - the position is the result
        if not isinstance(child, (nodes.title, nodes.paragraph, nodes.comment, nodes.target)):
            break
    else:
        position = len(section.children)
    section.insert(position, block)


def printed_symptom_entries(doctree: nodes.document, own: set[str]) -> int:
    """Give each ``Name: text`` line of ``own`` in a gallery page's captured output a main index entry at its output
    block (the lines that are a probe's symptom are indexed on their fix page instead).

    Returns how many lines got one.
    """
    count = 0
    for block in list(doctree.findall(nodes.literal_block)):
        if "sphx-glr-script-out" not in block["classes"]:
            continue
        lines = [line.strip() for line in block.astext().splitlines()]
        texts = list(dict.fromkeys(line for line in lines if SYMPTOM_LINE.match(line) and line in own))
        if not texts:
            continue
        index = addnodes.index(entries=[("single", text, "", "main", None) for text in texts])
        block.parent.insert(block.parent.index(block), index)
        count += len(texts)
    return count


def cached_collect(app: Sphinx) -> tuple[list[Symptom], list[Symptom]]:
    """:func:`collect`, once per process and probe records file (pages are read after the examples ran and the
    probes finished, so what it reads does not change while they are read)."""
    key = probe_records.records(app)
    cached = getattr(app, "_symptoms_cache", None)
    if cached is None or cached[0] is not key:
        cached = (key, collect(app))
        app._symptoms_cache = cached  # type: ignore[attr-defined]
    return cached[1]


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    """Fix pages get their "If you saw this error" block; gallery pages index the lines they printed that are
    their own symptom (whether a line is a probe's symptom depends on the registry and the recorded releases)."""
    docname = app.env.docname
    gallery_dirs = tuple(f"{d}/" for d in app.config.sphinx_gallery_conf.get("gallery_dirs", []))
    if docname.startswith(gallery_dirs):
        for path in dependencies():
            app.env.note_dependency(str(path))
        _, printed = cached_collect(app)
        own = {w.text for s in printed if docname in s.printed_by for w in s.wordings}
        printed_symptom_entries(doctree, own)
    block = fix_block(app, docname)
    idioms = idiom_nodes(docname)
    if block is None and not idioms:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        raise SymptomIndexError(f"{docname}: a fix page needs a title section for its symptom block")
    if block is None:
        for node in reversed(idioms):
            _insert_after_intro(section, node)
        return
    block.insert(1, idioms)
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
        document = probe_records.records(current_app.get())
        by_id = {record["pattern"]: record for record in document["records"]}
        intro = nodes.paragraph(
            text=f"What Lightning {document['lightning']['version']} raises for each of these old signatures "
            f"(your class name where these say {' or '.join(registry.PROBE_CLASSES.values())}):"
        )
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
        return [intro, listing]


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
    current_app.remember(app)
    app.setup_extension("guide.probe_records")
    app.add_directive("symptom-index", SymptomIndexDirective)
    app.add_directive("symptom-quotes", SymptomQuotesDirective)
    app.connect("doctree-read", _on_doctree_read)
    app.connect("env-before-read-docs", _init_env)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _check_built)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
