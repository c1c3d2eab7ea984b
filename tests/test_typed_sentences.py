"""The guard for typed sentences: rendered prose that speaks of Lightning's behaviour outside a claim.

The site's rule is that what it says about Lightning comes from running Lightning: a sentence about what Lightning
(a hook, the Trainer, a callback of Lightning's) does is a claim, rendered from ``data/claims.toml`` by the
``:claim:`` role and checked against its evidence at every build (``docs/_ext/guide/claims.py``), or it is rendered
from records. This guard reads the built HTML's prose -- what a reader reads -- and flags every sentence, outside a
claim and outside what the renderers of records wrote, in which a *name* is followed, within a few words, by a
*behaviour verb*:

- the names: Lightning's hook names as recorded from Lightning (``src/lightning_migrate/data/hook_names.json``: every
  ``LightningModule`` and ``Callback`` hook with ``_`` in its name, and the callback classes Lightning exports), the
  old hooks of the registry, the ``Trainer`` entry points of the registry (``trainer.fit``, ...), and the words
  ``Lightning`` and ``Trainer``;
- the verbs: :data:`VERBS`;

and every sentence that names the default of a ``Trainer`` argument (:data:`DEFAULT_NAMED`).

A finding names the source file and line of the sentence (found by its words in the page's source; the built page
otherwise). Run it on a build: ``python tests/test_typed_sentences.py _build/html``.
"""

from __future__ import annotations

import ast
import html.parser
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lightning_migrate import hook_names, probes, registry  # noqa: E402

#: What Lightning (the library, the Trainer, a callback class of Lightning's) or a hook's caller does: behaviour
#: verbs, each stem with its inflections (:func:`_inflections`). Wide on purpose: a contributor's verb is not the
#: guard's; a sentence about the reader's own code that uses one reads better as an instruction ("Append ...").
VERB_STEMS = (
    "abort accept accumulate allow append apply average become build call cast catch check clear clone "
    "collect compute contain convert copy crash create deprecate detach detect disable discard divide drop emit "
    "enable execute expect fail fill find fire flush follow free gather get give hand hold ignore include infer "
    "invoke keep let load log lose move multiply notice pass precede print produce raise receive reduce refuse "
    "reject reload remain remove repeat replace report require reset restart restore resume return run "
    "save scale send shard shuffle skip sort split stay stop store sum support sync take throw treat trigger "
    "unwrap update wait warn wrap write yield"
).split()
IRREGULAR = "released releasing ran caught gave given got gotten held kept lost sent threw thrown".split()


def _inflections(stem: str) -> set[str]:
    """``stem`` and its third person, past and gerund forms, spelled as English spells them."""
    forms = {stem}
    if stem.endswith(("s", "sh", "ch", "x", "z")):
        forms.add(stem + "es")
    elif stem.endswith("y") and stem[-2:-1] not in "aeiou":
        forms |= {stem[:-1] + "ies", stem[:-1] + "ied"}
    else:
        forms.add(stem + "s")
    if stem.endswith("e"):
        forms |= {stem + "d", stem[:-1] + "ing"}
    elif stem.endswith("y"):
        forms |= {stem + "ing"} | ({stem + "ed"} if stem[-2:-1] in "aeiou" else set())
    else:
        double = (
            stem[-1]
            if len(stem) > 2 and stem[-1] in "bdglmnpt" and stem[-2] in "aeiou" and stem[-3] not in "aeiou"
            else ""
        )
        forms |= {stem + double + "ed", stem + double + "ing", stem + "ed", stem + "ing"}
    return forms


VERBS = re.compile(
    r"\b(?:"
    + "|".join(sorted({f for stem in VERB_STEMS for f in _inflections(stem)} | set(IRREGULAR), key=len, reverse=True))
    + r")\b"
)
#: What a hook itself does is the reader's code ("``training_step`` returns the loss", "clearing in
#: ``on_train_epoch_end``"): these verbs say nothing of Lightning next to a hook name.
READER_VERBS = (
    "return append cache clear collect compute log read reset save store sum average update write print take "
    "accumulate keep hold gather become reduce check skip fill clone cast convert sort split shuffle scale multiply "
    "divide use build move apply"
).split()
#: What happens to a hook, on either side of its name ("Lightning's loop calls ``on_train_epoch_end``",
#: "``on_train_epoch_end`` receives nothing"): the verbs of :data:`VERB_STEMS` but the reader's own.
HOOK_VERBS = re.compile(
    r"\b(?:"
    + "|".join(
        sorted(
            {f for stem in VERB_STEMS if stem not in READER_VERBS for f in _inflections(stem)}
            | {"ran", "got", "gotten", "given", "gave"},
            key=len,
            reverse=True,
        )
    )
    + r")\b"
)
#: How many words may stand between a name and its verb, on either side ("Lightning 2.x never calls", "calls the
#: module's ``on_train_epoch_end``").
GAP = 6
#: Rendered content that is not typed prose, by the class of its HTML element, each with why. Each is set by an
#: extension or by sphinx-gallery, never by a page: a page whose source sets one of these classes by hand
#: (``.. rst-class::``, ``:class:``, a MyST ``{rst-class}``, raw HTML) is itself a finding (:func:`opt_outs`), so no
#: markup switches the guard off.
NOT_PROSE = {
    "claim": "a claim: rendered from data/claims.toml and checked against its evidence at every build",
    "sphx-glr-script-out": "what an example printed, captured by sphinx-gallery",
    "from-records": "sentences the guide's extensions write from probe records and recorded runs",
    "old-hooks-table": "the reference table: the registry's changelog facts and this build's probe records",
    "old-hooks-summary": "the landing page's summary of the reference table, rendered from the probe records",
    "probe-environment": "the release the probe records came from",
    "symptom-index": "error and warning texts captured by this build",
    "symptom-quotes": "error texts captured by this build",
    "symptoms-fixed-here": "error and warning texts captured by this build",
    "compat-table": "the recorded runs of every release (data/compat/*.json)",
    "scenario-matrix": "the scenario matrix's cells, run at every build",
    "claims-table": "the list of claims itself",
    "sphx-glr-footer": "sphinx-gallery's download links",
    "headerlink": "the pilcrow of a heading link",
    "lightning-version": "the release a gallery page's output came from, read from that output",
    "related-pages": "the theme's links to the previous and next pages: their titles, read on their own pages",
    "compat-received": "what the old hooks received on a release, rendered from its recorded runs",
    "recipe-domain": "where a recipe works: the settings of the runs that held, rendered from the matrix's results",
}
#: Code is the reader's code, not prose -- but its docstrings are prose a page shows: they are read
#: (:func:`docstrings`).
CODE = "highlight"
#: Sentences the guard may flag that are not about Lightning's behaviour, by page and a fragment of their text
#: (an empty fragment: the whole page), each with why. Keep it short: a sentence about Lightning is a claim.
ALLOWED: dict[tuple[str, str], str] = {
    ("contributing.html", ""): "the contributors' page describes the build (its extensions and checks), not Lightning",
    ("*", "Callback-side caching: replace a callback’s on_train_epoch_end(..., outputs)"): "the title of the "
    "callback-side page, wherever a link or a list names it: an instruction to the reader",
    ("*", "Callback-side caching: replace a callback's on_train_epoch_end(..., outputs)"): "the same title where "
    "Sphinx writes it without smart quotes (a card's alt text)",
    ("checker/rules/LM001.html", "safe when the body never reads outputs"): "what the checker's fix writes",
    ("checker/rules/LM001.html", "The class gets a cache"): "what the checker's rewrite writes",
    ("examples/caching/detach_cached_tensors.html", "This page trains the same module twice"): "what the page does",
    ("examples/caching/outputs_keep_graph.html", "This page compares, key by key"): "what the page does",
    ("examples/stages/predict_epoch_end.html", "Run ``trainer.predict``; return the exception"): "a docstring of the "
    "page's own helper",
    ("examples/caching/callback_owned_cache.html", "(Or pass num_sanity_val_steps=0 to the Trainer"): "an "
    "instruction to the reader",
    ("examples/caching/several_losses_manual_optimization.html", "training_step appends a detached"): "what the "
    "recipe's own code does",
    (
        "examples/pitfalls/monitoring_callbacks_read_cleared_cache.html",
        "As on Module-side caching: training_step caches",
    ): "what the recipe's own code does",
    ("examples/pitfalls/monitoring_callbacks_read_cleared_cache.html", "A subclass of the callback class"): "a "
    "docstring of the page's own helper",
    ("examples/core/module_side_caching.html", ".clear() in on_train_epoch_end frees"): "what the recipe's own code "
    "does",
    ("examples/core/automatic_rewrite.html", "The module gets a cache, emptied when each epoch starts"): "what the "
    "checker's rewrite writes",
    ("examples/core/automatic_rewrite.html", "lightning-migrate --fix rewrites"): "what the checker's rewrite writes",
    ("examples/core/automatic_rewrite.html", "A module written for Lightning 1.x, saved in a file"): "the page's own "
    "old module",
    ("examples/pitfalls/multiple_val_dataloaders.html", "With several validation dataloaders, give validation_step"): (
        "an instruction to the reader"
    ),
    ("examples/stages/predict_epoch_end.html", "Instead of the results of a module’s on_predict_epoch_end"): "an "
    "instruction to the reader",
    ("examples/core/callback_side_caching.html", "Instead of the outputs argument of a callback’s"): "an instruction "
    "to the reader",
    ("index.html", "removed training_epoch_end, validation_epoch_end and test_epoch_end"): "the release is printed "
    "by the :removed-in: role from the registry's changelog facts",
    ("index.html", "whose outputs Lightning 1.5 removed"): "the release is printed by the :removed-in: role from "
    "the registry's changelog facts",
    ("examples/index.html", "Every example on these pages checks what it claims"): "what the site's examples do",
    ("examples/index.html", "Mistakes that migrated code actually makes"): "what the site's pages show",
    ("examples/pitfalls/index.html", "Mistakes that migrated code actually makes"): "what the site's pages show",
    ("reference/scenarios.html", "Open a recipe’s dropdowns"): "an instruction to the reader",
    ("examples/caching/callback_owned_cache.html", "A callback that only counts"): "a docstring of the page's own "
    "callback",
}


def names() -> tuple[list[str], list[str]]:
    """``(subjects, hooks)``: the names of Lightning itself (the words ``Lightning`` and ``Trainer``, the ``Trainer``
    entry points of the registry, the callback classes Lightning exports) and of the hooks it calls (every recorded
    ``LightningModule`` and ``Callback`` hook with ``_`` in its name, and the registry's old hooks), read from the
    recorded hook names and the registry, never typed here."""
    recorded = hook_names.load()
    callback_hooks = set(recorded["Callback"]["hooks"])
    subjects = {
        "Lightning",
        "Trainer",
        "trainer",
        "PyTorch Lightning",
        "pytorch-lightning",
    } | {  # Lightning's callback classes, not the demo modules of lightning.demos
        name
        for name, methods in recorded["classes"].items()
        if callback_hooks & set(methods) and "training_step" not in methods
    }
    subjects |= {f"{owner}.{run}" for run in registry.RUNS for owner in ("trainer", "Trainer")}
    hooks = {pattern.hook for pattern in registry.PATTERNS}
    for kind in ("LightningModule", "Callback"):
        hooks |= {name for name in recorded[kind]["hooks"] if "_" in name}
    return sorted(subjects, key=len, reverse=True), sorted(hooks, key=len, reverse=True)


def _alternatives(words: list[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(word) for word in words) + r")(?!\w|\.\w)")


SUBJECTS, HOOKS = (_alternatives(group) for group in names())


class ProseReader(html.parser.HTMLParser):
    """Every text of a page a reader reads, one block (paragraph, list item, heading, table row, admonition
    paragraph) per entry: the article, and what templates put around it (nav, sidebars and scripts aside, which
    repeat the pages' titles); with what :data:`NOT_PROSE` names left out, and the docstrings of the Python code the
    page shows read as prose (:attr:`docstrings`)."""

    BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "figcaption", "caption", "tr", "blockquote"}
    VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "col", "source"}
    SKIP_TAGS = {"script", "style", "nav", "aside", "header", "svg", "button", "form", "label", "head", "title"}
    PYTHON = re.compile(r"\bhighlight-(?:python\d?|ipython\d?|default|py)\b", re.I)

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.in_body = False
        self.skip_stack: list[int] = []  # depths at which a skipped element started
        self.depth = 0
        self.row_depth = 0  # inside a table row: its cells are one block
        self.python_depth = 0  # inside a Python code block: its docstrings are read
        self.code: list[str] | None = None
        self.blocks: list[str] = []
        self.docstrings: list[str] = []
        self.current: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        self.depth += 1
        if tag == "body":
            self.in_body = True
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        if self.python_depth == 0 and self.PYTHON.search(attributes.get("class") or ""):
            self.python_depth = self.depth
        if not self.skip_stack and (tag in self.SKIP_TAGS or classes & NOT_PROSE.keys() or tag == "pre"):
            self.skip_stack.append(self.depth)
            if tag == "pre" and self.python_depth and not classes & NOT_PROSE.keys():
                self.code = []
        if tag == "tr":
            self._flush()
            self.row_depth = self.depth
        elif tag in ("td", "th") and self.row_depth:
            self.current.append(" — ")
        elif tag in self.BLOCKS and not self.row_depth:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if self.skip_stack and self.skip_stack[-1] == self.depth:
            self.skip_stack.pop()
            if self.code is not None:
                self.docstrings += docstrings("".join(self.code))
                self.code = None
        if tag == "tr" and self.row_depth == self.depth:
            self.row_depth = 0
            self._flush()
        elif tag in self.BLOCKS and not self.row_depth:
            self._flush()
        if self.python_depth == self.depth:
            self.python_depth = 0
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.code is not None:
            self.code.append(data)
        elif self.in_body and not self.skip_stack:
            self.current.append(data)
        elif self.in_body and self.skip_stack:
            self.current.append(" \x00 ")  # a claim or record stands here: the sentence goes on around it

    def _flush(self) -> None:
        text = re.sub(r"(?:\s*\x00)+\s*", " \x00 ", " ".join("".join(self.current).split()))
        if text.strip(" \x00—"):
            self.blocks.append(text)
        self.current = []

    def close(self) -> None:
        super().close()
        self._flush()


def docstrings(code: str) -> list[str]:
    """The docstrings (module, class, function) of a block of Python code a page shows, each as one line of prose;
    none when the block is not Python that parses (a shell line, a fragment)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            text = ast.get_docstring(node)
            if text:
                found.append(" ".join(text.split()))
    return found


SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z`(\"“‘])")
#: A heading or sentence that asks is a topic, not a claim ("What on_train_batch_end receives").
QUESTION = re.compile(r"^(?:What|When|Which|How|Why|Where|Who)\b|\?$")


def sentences(text: str) -> list[str]:
    """The sentences of a block that state something (questions and headings that ask are topics)."""
    return [part for part in SENTENCE_END.split(text) if part.strip(" \x00") and not QUESTION.search(part.strip())]


#: A default of Lightning named in prose: a default's value ("2 by default", "defaults to", "the default value") in a
#: sentence that names a ``Trainer`` argument whose default the probes record (``probes.TRAINER_DEFAULTS``).
_ARGUMENT = r"\b(?:" + "|".join(map(re.escape, probes.TRAINER_DEFAULTS)) + r")\b"
_DEFAULT_VALUE = r"\b(?:by default|defaults? (?:to|of|is|are)|default values?)\b"
DEFAULT_NAMED = re.compile(f"{_DEFAULT_VALUE}.*{_ARGUMENT}|{_ARGUMENT}.*{_DEFAULT_VALUE}")


#: Words after which "run", "runs", "call" and "calls" are nouns ("a run that stopped", "their calls").
NOUN_BEFORE = {
    "a",
    "an",
    "the",
    "each",
    "every",
    "one",
    "this",
    "that",
    "its",
    "their",
    "whole",
    "same",
    "next",
    "first",
    "second",
    "last",
    "real",
    "validation",
    "training",
    "test",
    "predict",
    "sanity",
    "stopped",
    "resumed",
    "another",
    "any",
    "no",
    "both",
    "two",
    "three",
    "several",
    "uninterrupted",
    "interrupted",
    "recorded",
    "of",
    "his",
    "her",
    "your",
}


def _verb_at(words: list[str], index: int, verbs: re.Pattern[str]) -> bool:
    word = words[index].strip(".,;:()'\"`’”")
    if not verbs.fullmatch(word):
        return False
    previous = words[index - 1].lower().strip("(,") if index else ""
    if word in VERB_STEMS and (
        previous in ("to", "please") or (previous in ("and", "or", "then") and _instruction(words))
    ):
        return False  # the reader's action: "to call fit", "Create a trainer and call fit"
    if (
        words[index].endswith(":")  # a heading's noun ("Trainer calls: fit", "Trainer calls (matters to: fit)")
        or (index + 1 < len(words) and words[index + 1].startswith("("))
        or (index and words[index - 1].lower().strip("(,") in NOUN_BEFORE)  # "a run", "the return value"
    ):
        return False
    return True


def _instruction(words: list[str]) -> bool:
    """Whether the sentence is an instruction to the reader: it starts with a verb's base form ("Create ...")."""
    first = next((w for w in words if w != "\x01"), "")
    return first[:1].isupper() and first.lower().strip(",") in VERB_STEMS + ["define", "use", "create", "add", "write"]


#: Words that make a hook the reader's own code ("your ``on_train_batch_end``", "you define ..."), not Lightning's.
READERS = {"your", "you", "yours", "you'll", "you've"}


def flagged(sentence: str) -> bool:
    """Whether a name of Lightning or a hook name has one of :data:`VERBS` within :data:`GAP` words on either side
    (a colon or semicolon ends the clause), or a sentence names a default of a ``Trainer`` argument
    (:data:`DEFAULT_NAMED`) -- in the text outside claims and records. A hook the sentence calls the reader's
    (:data:`READERS`) is the reader's code."""
    for part in sentence.split("\x00"):  # a claim or a record breaks the sentence: its parts are read apart
        if DEFAULT_NAMED.search(part):
            return True
        for names_, verbs, is_hook in ((SUBJECTS, VERBS, False), (HOOKS, HOOK_VERBS, True)):
            for match in names_.finditer(part):
                before, after = part[: match.start()].split(), part[match.end() :].split()
                words = before + ["\x01"] + after
                at = len(before)
                low = max(0, at - GAP)
                for i in range(at - 1, low - 1, -1):
                    if words[i].endswith((":", ";")):
                        low = i + 1
                        break
                high = min(len(words), at + 1 + GAP)
                for i in range(at + 1, high):
                    if words[i].endswith((":", ";")):
                        high = i + 1
                        break
                if is_hook and any(w.lower().strip(".,'’`") in READERS for w in words[max(low, at - 3) : at]):
                    continue
                window = [*range(low, at), *range(at + 1, high)] if is_hook else [*range(at + 1, high)]
                if any(_verb_at(words, i, verbs) for i in window):
                    return True
    return False


@dataclass(frozen=True)
class Finding:
    page: str  # the built page, relative to the HTML directory
    source: str  # the source file, relative to the project ("?" when not found)
    line: int
    sentence: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.sentence.replace(chr(0), '[claim]')}  ({self.page})"


def source_of(page: str, root: Path) -> Path | None:
    """The source file of a built page: a gallery script, a page of ``docs/``, a checker rule's module."""
    stem = page.removesuffix(".html")
    if stem.startswith("examples/"):
        candidate = root / "gallery" / (stem.removeprefix("examples/") + ".py")
        return candidate if candidate.is_file() else None
    if stem.startswith("checker/rules/"):
        code = stem.rsplit("/", 1)[-1].lower()
        found = sorted((root / "src" / "lightning_migrate" / "checker" / "rules").glob(f"{code}_*.py"))
        return found[0] if found else None
    for suffix in (".rst", ".md"):
        candidate = root / "docs" / (stem + suffix)
        if candidate.is_file():
            return candidate
    return None


ROLE_WITH_TITLE = re.compile(r":[\w:]+:`([^`<]*?)\s*<[^`>]*>`")
MARKUP = re.compile(r":[\w:]+:`|[`*]|\\")


def line_of(sentence: str, source: Path | None) -> int:
    """The line of ``source`` holding the sentence's first words, read as plain words (rST roles, backticks and
    line breaks aside); 0 when they are not found there."""
    if source is None:
        return 0
    text = source.read_text(encoding="utf-8")
    plain = MARKUP.sub("", ROLE_WITH_TITLE.sub(r"\1", text))
    offsets = [i for i, line in enumerate(plain.splitlines(keepends=True)) for _ in line]
    words = [re.sub(r"\W", "", word) for word in sentence.replace("\x00", " ").split()]
    words = [word for word in words if word]
    for count in (6, 4, 3):
        if len(words) < count:
            continue
        match = re.search(r"[\W_]+".join(re.escape(word) for word in words[:count]), plain)
        if match:
            return offsets[match.start()] + 1 if offsets else 0
    return 0


#: How a page's source sets a class by hand: reST's ``rst-class`` and ``:class:`` (MyST's ``{rst-class}`` and
#: ``:class:``), and raw HTML.
CLASS_MARKUP = re.compile(r"(?:rst-class::?\}?|:class:)\s*([\w -]+)|class=[\"']([^\"']+)[\"']")
#: The sources a contributor writes: pages, gallery scripts, the checker's rule texts and the templates.
SOURCES = (
    "docs/**/*.rst",
    "docs/**/*.md",
    "docs/_templates/**/*.html",
    "gallery/**/*.py",
    "gallery/**/*.txt",
    "src/lightning_migrate/checker/rules/*.py",
    "data/scenarios.toml",
)


def opt_outs(root: Path = ROOT) -> list[Finding]:
    """Every place a source sets, by hand, a class that the guard leaves unread (:data:`NOT_PROSE`): such markup
    would switch the guard off, so it is a finding itself."""
    found = []
    for pattern in SOURCES:
        for path in sorted(root.glob(pattern)):
            if "_build" in path.parts or "_ext" in path.parts:
                continue
            if path.relative_to(root).parts[:2] == ("docs", "examples"):
                continue  # sphinx-gallery's generated pages (its output blocks' class); their gallery/ scripts are read
            if path.relative_to(root).as_posix() == "docs/contributing.md":
                continue  # the contributors' page names the classes in describing the guard (ALLOWED's first entry)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for match in CLASS_MARKUP.finditer(line):
                    classes = set((match[1] or match[2] or "").split())
                    hidden = sorted(classes & NOT_PROSE.keys())
                    if hidden:
                        relative = path.relative_to(root).as_posix()
                        sentence = f"sets the class {hidden[0]!r} by hand: text under it would go unread"
                        found.append(Finding("(source)", relative, number, sentence))
    return found


def typed_sentences(html_dir: Path, root: Path = ROOT) -> list[Finding]:
    """Every flagged sentence of every page of ``html_dir`` that :data:`ALLOWED` does not list -- its prose, table
    rows, admonitions, the text templates put around it, the docstrings of the code it shows -- and every markup of
    the sources that would hide text from the guard (:func:`opt_outs`). A sentence a template repeats on every page
    is reported once."""
    findings, seen = [], set()
    for path in sorted(html_dir.rglob("*.html")):
        page = path.relative_to(html_dir).as_posix()
        if page.startswith(("_", "genindex", "search", "404", "py-modindex")):
            continue
        reader = ProseReader()
        reader.feed(path.read_text(encoding="utf-8"))
        reader.close()
        source = source_of(page, root)
        for block in reader.blocks + reader.docstrings:
            for sentence in sentences(block):
                if not flagged(sentence):
                    continue
                if any(p in (page, "*") and fragment in sentence for (p, fragment) in ALLOWED):
                    continue
                relative = source.relative_to(root).as_posix() if source else page
                finding = Finding(page, relative, line_of(sentence, source), sentence)
                if (finding.line == 0 and sentence in seen) or finding in findings:
                    continue
                seen.add(sentence)
                findings.append(finding)
    return findings + opt_outs(root)


# -- Tests -----------------------------------------------------------------------------------------------------------
#: Behaviour sentences as contributors write them: each must be flagged.
TYPED = [
    "Lightning calls ``on_train_epoch_end`` once per epoch, after the callbacks.",
    "Lightning silently drops the outputs of every step.",  # a verb outside the earlier list
    "The loop calls ``on_train_epoch_end`` after validation.",  # the verb before the hook
    "After validation, Lightning invokes the hook with no arguments.",
    "``on_train_batch_end`` receives the loss divided by the number of accumulated batches.",
    "``training_epoch_end`` is refused with an error before the first batch.",
    "The Trainer resets every metric at the end of each validation run.",
    "``ModelCheckpoint`` saves a checkpoint after the module's hook.",
    "Under DDP, Lightning raises when a step returns None.",
    "With one process the ``self.all_gather`` call adds no dimension, and Lightning keeps it that way.",
    "Lightning 2.x no longer passes ``outputs`` to ``on_train_epoch_end``.",
    "``on_validation_epoch_end`` fires after the sanity check too.",
    "The sanity check runs 2 batches by default before num_sanity_val_steps is read.",
    "``trainer.predict`` returns None with return_predictions off, Lightning warns nothing.",
    "The Trainer frees the list at the end of the same epoch.",
    "``EarlyStopping`` stops training when the monitored value stalls.",
    "Lightning detaches the loss and hands it on.",
    "A step may return None to skip a batch, and Lightning skips the optimizer step.",
    "``on_test_epoch_end`` gets called after the last test batch.",
    "Lightning will throw a TypeError at the end of the first epoch.",
    "The Trainer moves the batch to the device before ``training_step`` runs.",
    "Lightning accumulates the gradients over three batches.",
    "``on_predict_epoch_end`` was given the predictions on 1.9.5.",
    "Lightning averages the value across ranks with sync_dist.",
]
#: Ordinary sentences of a page that say nothing of Lightning's behaviour: none may be flagged.
ORDINARY = [
    "Install the requirements with pip before you start.",
    "This page shows the old code beside the new one.",
    "Copy the block below into your own module.",
    "See the reference table for the replacement of each hook.",
    "The table below lists each removed hook and what replaces it.",
    "Define ``on_train_epoch_end`` without the ``outputs`` argument.",
    "Read the checker's page for the command line and its options.",
    "In your ``on_train_batch_end``, append the loss to a list.",
    "What ``on_train_batch_end`` receives",
    "Why did the outputs argument go?",
    "The guide has three parts: the fixes, the reference and the explanations.",
    "A recipe page starts with the fix and ends with its proof.",
    "Lightning 2.0 and later",
    "For the Trainer's arguments, see its documentation.",
    "Create a trainer and call fit.",
    "Use the Trainer to run the fit.",
]


def test_the_guard_flags_many_phrasings_and_passes_ordinary_sentences():
    def typed(text: str) -> bool:
        return any(flagged(sentence) for sentence in sentences(text))

    missed = [text for text in TYPED if not typed(text)]
    wrong = [text for text in ORDINARY if typed(text)]
    assert missed == [] and wrong == [], f"missed: {missed}; flagged: {wrong}"


FIXTURE_PAGES = {
    "verb.rst": "Verb\n====\n\nLightning silently drops the outputs of every step.\n",
    "before.rst": "Before\n======\n\nThe loop calls ``on_train_epoch_end`` after validation.\n",
    "table.rst": (
        "Table\n=====\n\n.. list-table::\n   :header-rows: 1\n\n   * - Hook\n     - Today\n"
        "   * - ``on_train_epoch_end``\n     - receives no outputs\n"
    ),
    "note.rst": "Note\n====\n\n.. note::\n\n   Lightning frees the list after each epoch.\n",
    "admonition.md": (
        "# Admonition\n\n```{admonition} Beware\nLightning divides the loss by the accumulation count.\n```\n\n"
        "```{note}\nThe Trainer resets the metric after each run.\n```\n"
    ),
    "opt_out.rst": (
        "Opt out\n=======\n\n.. rst-class:: from-records\n\n   Lightning keeps the list until the next epoch.\n"
    ),
    "ordinary.rst": "Ordinary\n========\n\n" + "\n\n".join(ORDINARY[:8]) + "\n",
}
GALLERY_DOCSTRING = '''"""
Docstring
=========

A page whose code documents a hook.
"""


# %%
# The callback below.
class Recorder:
    def on_train_epoch_end(self, trainer, pl_module):
        """Lightning calls this hook once per epoch, with no outputs."""
        return None
'''


def test_the_guard_reads_every_place_text_reaches_a_reader(tmp_path):
    """A project with one page per way a contributor types a behaviour sentence -- a verb outside the old list, a
    verb before the hook, a table row, an rST note, MyST admonitions, a docstring in gallery code, a template,
    text under ``.. rst-class:: from-records`` -- and an ordinary page. Each typed page has a finding with its
    file; the ordinary page and the claim have none."""
    from test_claims import build, claims_project

    project = claims_project(tmp_path)
    conf = project / "conf.py"
    conf.write_text(
        conf.read_text(encoding="utf-8").replace(
            '"build_mechanics.run_records"', '"build_mechanics.run_records", "myst_parser"'
        )
        + 'templates_path = ["_templates"]\n',
        encoding="utf-8",
    )
    (project / "_templates").mkdir()
    (project / "_templates" / "layout.html").write_text(
        '{% extends "!layout.html" %}{% block footer %}{{ super() }}<div class="footer-note">The Trainer runs '
        "validation twice per epoch.</div>{% endblock %}\n",
        encoding="utf-8",
    )
    for name, text in FIXTURE_PAGES.items():
        (project / "docs" / name).write_text(text, encoding="utf-8")
    (project / "gallery" / "docstring.py").write_text(GALLERY_DOCSTRING, encoding="utf-8")
    index = project / "docs" / "index.rst"
    pages = "".join(f"   {Path(name).stem}\n" for name in FIXTURE_PAGES)
    index.write_text(index.read_text(encoding="utf-8") + pages, encoding="utf-8")
    build(project)

    findings = typed_sentences(project / "_build" / "html", root=project)
    by_source = {}
    for finding in findings:
        by_source.setdefault(finding.source, []).append(finding)
    expected = {f"docs/{name}" for name in FIXTURE_PAGES if name != "ordinary.rst"} | {"gallery/docstring.py"}
    assert expected <= set(by_source), (sorted(by_source), findings)
    assert "docs/ordinary.rst" not in by_source, by_source["docs/ordinary.rst"]
    assert [f.line for f in by_source["docs/note.rst"]] == [6], by_source["docs/note.rst"]
    assert any(f.sentence.startswith("sets the class 'from-records' by hand") for f in by_source["docs/opt_out.rst"])
    assert any("Lightning calls this hook once per epoch" in f.sentence for f in by_source["gallery/docstring.py"])
    assert any("The Trainer runs validation twice" in f.sentence for f in findings), findings  # the template
    assert not any("1 + 1" in f.sentence for f in findings)  # the claim


def test_no_sentence_on_the_site_speaks_of_lightning_outside_a_claim(site):
    findings = typed_sentences(site.outdir)
    assert findings == [], f"{len(findings)} typed sentences:\n" + "\n".join(map(str, findings))


if __name__ == "__main__":
    found = typed_sentences(Path(sys.argv[1]))
    print("\n".join(map(str, found)))
    print(f"{len(found)} typed sentences", file=sys.stderr)
    raise SystemExit(1 if found else 0)
