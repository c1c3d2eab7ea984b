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

import html.parser
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from lightning_migrate import hook_names, probes, registry  # noqa: E402

#: What Lightning (the library, the Trainer, a callback class of Lightning's) does: behaviour verbs, inflected.
VERBS = re.compile(
    r"\b(?:call(?:s|ed|ing)?|runs?|ran|running|receiv(?:e|es|ed|ing)|hold(?:s|ing)?|held|detach(?:es|ed|ing)?|"
    r"rais(?:e|es|ed|ing)|free(?:s|d|ing)?|pass(?:es|ed|ing)?|keep(?:s|ing)?|kept|logs|logged|hand(?:s|ed)|"
    r"returns?|returned|warns?|warned|emit(?:s|ted)?|divides?|divided|clears?|cleared|"
    r"skips?|skipped|ignor(?:es|ed)|check(?:s|ed)|rejects?|rejected|refuses?|refused)\b"
)
#: What happens to a hook (a method the reader writes, that Lightning calls): the verbs that say Lightning's part.
#: A hook that "returns" or "logs" is the reader's own code doing it.
HOOK_VERBS = re.compile(
    r"\b(?:call(?:s|ed|ing)?|runs?|ran|running|receiv(?:e|es|ed|ing)|gets?|got|pass(?:es|ed)?|ignor(?:es|ed)|"
    r"fires?|fired|precedes?|follows?)\b"
)
#: How many words may stand between a name and its verb ("Lightning 2.x never calls", "on_train_epoch_end of plain
#: callbacks runs").
GAP = 6
#: Rendered content that is not typed prose, by the class of its HTML element, each with why.
NOT_PROSE = {
    "claim": "a claim: rendered from data/claims.toml and checked against its evidence at every build",
    "highlight": "code (the reader's code, or Lightning's own output captured by the run), not prose",
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
}
#: Sentences the guard may flag that are not about Lightning's behaviour, by page and a fragment of their text
#: (an empty fragment: the whole page), each with why. Keep it short: a sentence about Lightning is a claim.
ALLOWED: dict[tuple[str, str], str] = {
    ("contributing.html", ""): "the contributors' page describes the build (its extensions and checks), not Lightning",
}


def names() -> tuple[list[str], list[str]]:
    """``(subjects, hooks)``: the names of Lightning itself (the words ``Lightning`` and ``Trainer``, the ``Trainer``
    entry points of the registry, the callback classes Lightning exports) and of the hooks it calls (every recorded
    ``LightningModule`` and ``Callback`` hook with ``_`` in its name, and the registry's old hooks), read from the
    recorded hook names and the registry, never typed here."""
    recorded = hook_names.load()
    callback_hooks = set(recorded["Callback"]["hooks"])
    subjects = {"Lightning", "Trainer"} | {  # Lightning's callback classes, not the demo modules of lightning.demos
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
    return re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(word) for word in words) + r")(?!\w)")


SUBJECTS, HOOKS = (_alternatives(group) for group in names())


class ProseReader(html.parser.HTMLParser):
    """The prose of a page's main article, one block (paragraph, list item, heading, table cell) per entry, with
    everything :data:`NOT_PROSE` names left out."""

    BLOCKS = {"p", "li", "h1", "h2", "h3", "h4", "dt", "dd", "td", "th", "figcaption", "caption"}
    VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "col"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth_in_article = 0
        self.skip_stack: list[int] = []  # depths at which a skipped element started
        self.depth = 0
        self.blocks: list[str] = []
        self.current: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        self.depth += 1
        attributes = dict(attrs)
        if attributes.get("role") == "main" and not self.depth_in_article:  # furo: <article>; others: a <div>
            self.depth_in_article = self.depth
        classes = set((attributes.get("class") or "").split())
        if self.depth_in_article and not self.skip_stack and (tag == "pre" or classes & NOT_PROSE.keys()):
            self.skip_stack.append(self.depth)
        if tag in self.BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if self.skip_stack and self.skip_stack[-1] == self.depth:
            self.skip_stack.pop()
        if tag in self.BLOCKS:
            self._flush()
        if self.depth == self.depth_in_article:
            self.depth_in_article = 0
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth_in_article and not self.skip_stack:
            self.current.append(data)
        elif self.depth_in_article and self.skip_stack:
            self.current.append(" \x00 ")  # a claim or record stands here: the sentence goes on around it

    def _flush(self) -> None:
        text = re.sub(r"(?:\s*\x00)+\s*", " \x00 ", " ".join("".join(self.current).split()))
        if text.strip(" \x00"):
            self.blocks.append(text)
        self.current = []

    def close(self) -> None:
        super().close()
        self._flush()


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
    if word in ("run", "runs", "call", "calls") and (
        words[index].endswith(":")  # a heading's noun ("Trainer calls: fit", "Trainer calls (matters to: fit)")
        or (index + 1 < len(words) and words[index + 1].startswith("("))
        or (index and words[index - 1].lower().strip("(,") in NOUN_BEFORE)
    ):
        return False
    return True


def flagged(sentence: str) -> bool:
    """Whether a name of Lightning is followed, within :data:`GAP` words, by one of :data:`VERBS`, or a hook name by
    one of :data:`HOOK_VERBS`, or a sentence names a default of a ``Trainer`` argument (:data:`DEFAULT_NAMED`) -- in
    the text outside claims and records."""
    for part in sentence.split("\x00"):  # a claim or a record breaks the sentence: its parts are read apart
        if DEFAULT_NAMED.search(part):
            return True
        for names_, verbs in ((SUBJECTS, VERBS), (HOOKS, HOOK_VERBS)):
            for match in names_.finditer(part):
                before = part[: match.start()].split()[-1:]
                words = before + part[match.end() :].split()[: GAP + 1]
                for end, word in enumerate(words[len(before) :], len(before)):
                    if word.endswith(":"):  # a colon ends the clause: "Trainer calls: crashes, run again" is a label
                        words = words[: end + 1]
                        break
                if any(_verb_at(words, index, verbs) for index in range(len(before), len(words))):
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


def typed_sentences(html_dir: Path, root: Path = ROOT) -> list[Finding]:
    """Every flagged sentence of every page of ``html_dir`` that :data:`ALLOWED` does not list."""
    findings = []
    for path in sorted(html_dir.rglob("*.html")):
        page = path.relative_to(html_dir).as_posix()
        if page.startswith(("_", "genindex", "search", "404")):
            continue
        reader = ProseReader()
        reader.feed(path.read_text(encoding="utf-8"))
        reader.close()
        source = source_of(page, root)
        for block in reader.blocks:
            for sentence in sentences(block):
                if not flagged(sentence):
                    continue
                if any(page == p and fragment in sentence for (p, fragment) in ALLOWED):
                    continue
                relative = source.relative_to(root).as_posix() if source else page
                findings.append(Finding(page, relative, line_of(sentence, source), sentence))
    return findings


# -- Tests -----------------------------------------------------------------------------------------------------------
def test_the_guard_flags_an_injected_typed_sentence_and_passes_claims(tmp_path):
    """A two-page project: one page says it through a claim, the other types the same kind of sentence. Only the
    typed one is flagged, with its file and line."""
    from test_claims import build, claims_project

    project = claims_project(tmp_path)
    sentence = "Lightning calls ``on_train_epoch_end`` once per epoch, after the callbacks"
    with (project / "data" / "claims.toml").open("a", encoding="utf-8") as data:
        data.write(
            f'\n[claim.once-per-epoch]\ntext = "on {{lightning}}, in one process, {sentence}"\n'
            'checked = "in one process"\nevidence = [{ assert = "gallery/two.py", message = "one plus one is two" }]\n'
        )
    typed = project / "docs" / "typed.rst"
    typed.write_text(
        f"Typed\n=====\n\nThe claim: :claim:`once-per-epoch`.\n\n{sentence}.\n",
        encoding="utf-8",
    )
    index = project / "docs" / "index.rst"
    index.write_text(index.read_text(encoding="utf-8") + "   typed\n", encoding="utf-8")
    build(project)

    findings = typed_sentences(project / "_build" / "html", root=project)

    assert [(f.source, f.line) for f in findings] == [("docs/typed.rst", 6)], findings
    assert findings[0].sentence.startswith("Lightning calls on_train_epoch_end once per epoch")


def test_no_sentence_on_the_site_speaks_of_lightning_outside_a_claim(site):
    findings = typed_sentences(site.outdir)
    assert findings == [], f"{len(findings)} typed sentences:\n" + "\n".join(map(str, findings))


if __name__ == "__main__":
    found = typed_sentences(Path(sys.argv[1]))
    print("\n".join(map(str, found)))
    print(f"{len(found)} typed sentences", file=sys.stderr)
    raise SystemExit(1 if found else 0)
