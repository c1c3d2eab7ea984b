"""What rules are made of: :class:`Rule`, the :class:`Finding` a rule returns, the :class:`Fix` it offers, and the
libcst helpers rules share. Nothing here knows a rule: the list of rules lives in :mod:`.rules`, and
:mod:`.core` walks a file and applies them.

A finding may carry a :class:`Fix` of one of four tiers; ``safe``, ``unsafe`` and ``manual`` as ruff labels
fixes, ``proven`` beside them:

``safe``
    a rewrite that keeps what the code does and never makes code run that did not run before (drop an
    ``outputs`` parameter the body never reads);
``proven``
    a rewrite of a shape the scenario matrix proves (:mod:`.proven`): a row of ``data/scenarios.toml`` runs the
    rewritten shape in every configuration the matrix generates, and the last 1.x release that ran the old code
    recorded the values the rewrite must give. Plain ``--fix`` applies it, as it applies ``safe``;
``unsafe``
    an opt-in rewrite (``--unsafe-fixes``) whose :attr:`Fix.risk` says what it may change: a caching rewrite of a
    shape no row proves, and a rename of a hook Lightning stopped calling, which makes that code run again;
    without the option ``--fix`` leaves a marker that says so;
``manual``
    no automatic rewrite: ``--fix`` inserts one marker comment saying why, with the link to the fix (never twice).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.metadata
import os
import re
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import libcst as cst

from lightning_migrate import registry
from lightning_migrate.checker.resolve import LIGHTNING_ROOTS, Reference, Uses, project_root, uses_of

if TYPE_CHECKING:  # pragma: no cover
    from lightning_migrate.checker.resolve import ModuleInfo, Project

_NODES: weakref.WeakKeyDictionary[ast.AST, list[ast.AST]] = weakref.WeakKeyDictionary()


def nodes_of(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree``, in :func:`ast.walk`'s order, listed once per tree (the rules read a file's whole tree
    many times: on a 10,000-line file one walk takes about 0.3 s, reading the list again about 0.05 s). The tree
    must not change shape after the first call."""
    nodes = _NODES.get(tree)
    if nodes is None:
        nodes = _NODES[tree] = list(ast.walk(tree))
    return nodes


#: The two class kinds a rule inspects, as the registry names the owners of hooks.
MODULE, CALLBACK = registry.OWNERS
SAFE, PROVEN, UNSAFE, MANUAL = "safe", "proven", "unsafe", "manual"
#: The tiers plain ``--fix`` applies.
APPLIED = (SAFE, PROVEN)
#: The marker comment ``--fix`` leaves above a hook it cannot rewrite: ``# lightning-migrate: LM001 ...``.
MARKER = "lightning-migrate:"
#: A marker is two lines: the rule and the reason, then the link, alone on its line after
#: :data:`MARKER_CONTINUATION` (pycodestyle and ruff accept a long line that is a link alone).
MARKER_CONTINUATION = "#   "
#: The nodes a marker goes above: a statement (a ``def``, a ``class``, an assignment or import line).
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement
#: What a fix's ``apply`` returns: the new node, ``RemovalSentinel.REMOVE``, or (a top-level statement's fix) the
#: statements that replace it.
Applied = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]
#: The environment variable that overrides where finding links point (the docs build sets it to the site it builds).
DOCS_URL_VARIABLE = "LIGHTNING_MIGRATE_DOCS_URL"


def docs_url() -> str:
    """The base address of the published site, ending in ``/``: a finding links to ``docs_url() + page_of(code)``.

    One setting: the ``Documentation`` entry of ``[project.urls]`` in ``pyproject.toml`` (read from the installed
    package's metadata, or from the source tree's ``pyproject.toml`` when run from a checkout), overridden by
    :data:`DOCS_URL_VARIABLE` -- which the docs build sets from its ``html_baseurl``, so the rule pages link to
    the site being built.
    """
    url = os.environ.get(DOCS_URL_VARIABLE) or _published_url()
    return url.rstrip("/") + "/"


@functools.cache
def _published_url() -> str:
    try:
        for entry in importlib.metadata.metadata("lightning-migrate").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() == "documentation":
                return url.strip()
    except importlib.metadata.PackageNotFoundError:
        pass
    import tomllib  # run from a source tree (Python 3.11+, as the project's tools)

    from migration_guide import source_tree  # the one module that knows where the checkout is

    pyproject = source_tree.ROOT / "pyproject.toml"
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["urls"]["Documentation"]


def page_of(code: str) -> str:
    """The site-relative page of rule ``code``: ``checker/rules/<code>.html``."""
    return f"checker/rules/{code}.html"


@dataclass(frozen=True)
class Fix:
    """An edit of one finding.

    Attributes:
        tier: ``safe``, ``proven``, ``unsafe`` or ``manual``.
        apply: maps the node the finding is about -- the ``FunctionDef``, the ``ClassDef`` (``on_class``) or the
            class-body statement that assigns the hook -- to its replacement (``cst.RemovalSentinel`` removes it).
        description: what the edit does, in a few words.
        risk: for ``unsafe``: what the edit may change; the marker ``--fix`` leaves without ``--unsafe-fixes``.
        changes_callers: the edit renames, removes or narrows the method: code that calls it must change with it.
        dropped: parameters the edit removes: a call passing one of them by keyword would break.
        new_name: the method's name after a rename: a base or a subclass defining that name would clash.
        imports: ``(module, name)`` pairs the edited code needs bound at module level.
        shape: for a caching rewrite, the shape it writes (``training-epoch-end``,
            ``validation-epoch-end/per-dataloader``, ...): the matrix rows that run the shape make it ``proven``.
    """

    tier: str
    apply: Callable[[cst.CSTNode], Applied]
    on_class: bool = False
    description: str = ""
    risk: str = ""
    changes_callers: bool = True
    dropped: tuple[str, ...] = ()
    new_name: str | None = None
    imports: tuple[tuple[str, str], ...] = ()
    shape: str | None = None
    #: for ``unsafe``: what the marker says when the fix is not asked for (default: :attr:`risk`), one short phrase
    withheld: str = ""
    #: the edit removes the method: what its own body calls (``super().<name>(...)``) goes with it
    removes: bool = False
    #: for an import's fix: module-level statements (lines of code) it adds after the file's leading imports, the
    #: last of which is :attr:`define_after` top-level statements below the import it fixes
    define: tuple[str, ...] = ()
    define_after: int = 0


@dataclass
class Finding:
    """One old hook shape at ``line``:``col`` (1-based line, 1-based column) of a file."""

    code: str
    message: str
    pattern_ids: tuple[str, ...]
    line: int = 0
    col: int = 0
    #: ``False`` when the class's base could not be resolved and it was taken for a module by its ``training_step``
    confident: bool = True
    #: informational only (a default value that hides an old shape, or a class not known to be Lightning's): shown
    #: with ``--notes``, never fixed, never counted in the exit code
    note: bool = False
    tier: str | None = None
    fix: Fix | None = field(default=None, repr=False, compare=False)
    #: where a notebook finding is: ``cell N`` (1-based, as ruff counts a notebook's cells); ``None`` in a ``.py``
    cell: int | None = None

    @property
    def url(self) -> str:
        return docs_url() + page_of(self.code)

    def format(self, path: str, applied: bool | None = None, diff: bool = False) -> str:
        """``path:line:col: CODE message [tier fix] url`` (``path:cell N:line:col`` in a notebook), as compilers,
        ruff and flake8 print findings. ``applied`` (with ``--fix`` / ``--diff``): ``[tier fix applied]`` (``[tier
        fix in the diff]`` with ``diff``) or ``[tier fix not applied]``; ``None``: ``[tier fix]``, what is offered."""
        prefix = "note: " if self.note else ""
        prefix += "" if self.confident else "possible (base class not resolved): "
        tier = f" [{self.tier} fix]" if self.tier in (SAFE, PROVEN, UNSAFE) else ""
        if tier and applied is not None:
            done = ("in the diff" if diff else "applied") if applied else "not applied"
            tier = f" [{self.tier} fix {done}]"
        where = f"{path}:cell {self.cell}" if self.cell is not None else path
        return f"{where}:{self.line}:{self.col}: {self.code} {prefix}{self.message}{tier} {self.url}"


@dataclass
class FileContext:
    """The file being checked: its bytes and :mod:`ast` tree, its resolved names (``info``), the project it belongs
    to and its path there. Answers the question every renaming fix asks: does code call this method?"""

    source: bytes
    tree: ast.Module
    info: ModuleInfo
    project: Project
    path: Path | None
    _uses: Uses | None = field(default=None, repr=False)
    #: answers about the whole file or project that rules ask once per class, kept for the file's other classes
    #: (keyed by the question: ``("readers", hook, stage)``)
    memo: dict[tuple, Any] = field(default_factory=dict, repr=False)

    @property
    def lightning_root(self) -> str | None:
        """The Lightning package this file imports (``pytorch_lightning`` or ``lightning``), for the imports a
        rewrite adds; ``None`` when it imports neither (its classes reach Lightning through another file)."""
        roots = [target.split(".")[0] for target in self.info.imports.values()]
        return next((root for root in roots if root in LIGHTNING_ROOTS), None)

    def place(self, line: int) -> str:
        """How a message names ``line`` of this file: ``line N of this file``, or for a notebook (whose code cells
        the checker reads joined, each after a ``# lightning-migrate-cell <token> <number>`` line)
        ``cell C, line L of this notebook``, as the findings of a notebook are placed."""
        if not self.source.startswith(b"# lightning-migrate-cell "):
            return f"line {line} of this file"
        lines = self.source.split(b"\n", line)[:line]
        for offset, text in enumerate(reversed(lines[:-1]), start=1):
            found = re.match(rb"# lightning-migrate-cell [0-9a-f]+ (\d+)\r?$", text)
            if found:
                return f"cell {int(found.group(1))}, line {offset} of this notebook"
        return f"line {line} of this file"

    def uses(self) -> Uses:
        if self._uses is None:
            self._uses = uses_of(self.tree)
        return self._uses

    @functools.cached_property
    def _word_counts(self) -> tuple[Counter, Counter, Counter]:
        """How often each word occurs in the file's bytes, how often it follows ``def``, and how often ``=``
        follows it (a keyword argument, or an assignment): one pass each, then every question is a lookup."""
        source = self.source
        return (
            Counter(re.findall(rb"\w+", source)),
            Counter(re.findall(rb"\bdef\s+(\w+)", source)),
            Counter(re.findall(rb"\b(\w+)\s*=(?!=)", source)),
        )

    def _mentioned(self, words: tuple[str, ...], keywords: tuple[str, ...] = ()) -> bool:
        """Whether the file's bytes hold one of ``words`` other than in a ``def`` of it, or one of ``keywords``
        followed by ``=`` (a cheap test that spares indexing the whole file when nothing but the hook's own
        definition names it)."""
        counts, defs, assigned = self._word_counts
        return any(counts[word.encode()] > defs[word.encode()] for word in words) or any(
            assigned[word.encode()] for word in keywords
        )

    def caller(
        self,
        name: str,
        dropped: tuple[str, ...] = (),
        dynamic: bool = False,
        name_uses: bool = True,
        of: ClassContext | None = None,
        removed: bool = False,
    ) -> str | None:
        """Where code calls the method ``name`` (or passes one of ``dropped`` by keyword to it, or to a call whose
        target is built at run time): this file first, then every other file of the project; ``None`` when
        nothing does, so a rename or a dropped parameter cannot break a call. The answer names the place.

        With ``of``, the class whose method it is: ``self.name`` and ``super().name`` count only in that class, its
        bases and its subclasses (another class's own method of that name is another method), and a call on
        another object inside the method itself (``return self.adapter.name(outputs)``) is delegation, not a
        call of it. With ``dynamic``, a string that ends the name (``"_epoch_end"``, two words or more) counts as
        a use too: code such as ``getattr(self, f"{stage}_epoch_end")`` builds the name at run time; without
        ``name_uses``, only those strings count. With ``removed`` (the method goes), ``super().name`` inside the
        method itself calls a base's method and goes with it: not a call of it."""
        fragments = dynamic_fragments(name) if dynamic else ()
        words = (*((name,) if name_uses else ()), *fragments)
        if (words or dropped) and self._mentioned(words, dropped):
            uses = self.uses()
            if uses.too_deep:
                return "this file is too deeply nested to search for its callers"
            found = []
            if name_uses:
                use = next((u for u in uses.names.get(name, ()) if self._relevant(u, None, of, name, removed)), None)
                if use is not None:
                    found.append((use.line, _use_text(use.what, name, "{}")))
            call = uses.keyword_call(name, dropped)
            if call is not None:
                found.append((call[0], f"a call passes `{call[1]}=` at {{}}"))
            found += [(at, _use_text("fragment", name, "{}")) for f in fragments if (at := uses.string(f)) is not None]
            if found:
                line, text = min(found)
                return text.format(self.place(line))
        if self.path is None or self.path not in self.project.name_of or not (words or dropped):
            return None
        for ref in self.project.references(name, dropped, exclude=self.path, fragments=fragments):
            if not name_uses and ref.what not in ("keyword", "fragment", "too deep"):
                continue
            if ref.what in ("attribute", "name", "string") and not self._relevant(ref, ref.path, of, name):
                continue
            where = shown_path(ref.path, self.path) if ref.path is not None else "?"
            if ref.what == "too deep":
                return f"{where} mentions `{name}` but is too deeply nested to parse"
            if ref.what == "keyword":
                return f"a call passes a dropped parameter by keyword at {where}:{ref.line}"
            return _use_text(ref.what, name, f"{where}:{ref.line}")
        return None

    def _relevant(
        self, use: Reference, path: Path | None, of: ClassContext | None, name: str, removed: bool = False
    ) -> bool:
        """Whether a use may call the method ``name`` of the class ``of`` (see :meth:`caller`)."""
        if of is None:
            return True
        first, last = of.spans.get(name, (0, -1))
        if removed and path is None and use.receiver == "super" and use.cls == of.name and first <= use.line <= last:
            return False  # the base's method, called from the method that goes
        if path is None and use.receiver == "other" and first <= use.line <= last:
            return False  # delegation to another object inside the method itself
        if use.receiver == "other" and use.attr is not None and use.cls is not None:
            return self._may_hold(use, path, of)
        if use.receiver not in ("self", "super", "class") or use.cls is None:
            return True
        info = self.info if path is None else self.project.info(path)
        if info is None or use.cls not in info.classes:
            return True
        mine = (self.info.name, of.name)
        if (info.name, use.cls) == mine:
            return True
        theirs = {(a.name, c) for a, c in self.project.ancestors(info, info.classes[use.cls])}
        bases = {(a.name, c) for a, c in self.project.ancestors(self.info, self.info.classes.get(of.name, []))}
        return mine in theirs or (info.name, use.cls) in bases

    def _may_hold(self, use: Reference, path: Path | None, of: ClassContext) -> bool:
        """Whether the attribute of ``self`` a use calls the method on (``self.adapter.name``) may hold an object of
        the class ``of``: ``False`` only when the project's class its annotation names
        (:meth:`~.resolve.Project.attribute_class`) is neither ``of`` nor a base of it, nor derives from it, and no
        class of the project derives from both."""
        assert use.cls is not None and use.attr is not None
        info = self.info if path is None else self.project.info(path)
        if info is None:
            return True
        uses = self.uses() if path is None else self.project.uses(path)
        where = self.path if path is None and self.path in self.project.name_of else path
        held = self.project.attribute_class(info, uses, where, use.cls, use.attr)
        if held is None:
            return True
        mine = (self.info.name, of.name)
        held_key = (held[0].name, held[1])
        ours = {mine, *((a.name, c) for a, c in self.project.ancestors(self.info, self.info.classes.get(of.name, [])))}
        if held_key in ours:
            return True
        needle = held[1].encode()
        for other in [self.path, *(p for p in self.project.name_of if p != self.path)]:
            if other is not None and other != self.path and needle not in self.project.read(other):
                continue
            other_info = self.info if other is None or other == self.path else self.project.info(other)
            if other_info is None:
                continue
            for cls, bases in other_info.classes.items():
                chain = {(other_info.name, cls), *((a.name, c) for a, c in self.project.ancestors(other_info, bases))}
                if held_key in chain and mine in chain:
                    return True  # a class of both: the attribute may hold one
        return False

    def use_site(self, name: str) -> str | None:
        """``path:line`` of the first use of ``name`` (an attribute, a bare name or a string): this file first,
        then the project's other files; ``None`` when nothing uses it."""
        if self._mentioned((name,)):
            uses = self.uses()
            if uses.names.get(name):
                return self.place(uses.names[name][0].line)
        if self.path is None or self.path not in self.project.name_of:
            return None
        for ref in self.project.references(name, (), exclude=self.path):
            return f"{shown_path(ref.path, self.path) if ref.path is not None else '?'}:{ref.line}"
        return None


def _use_text(what: str, name: str, where: str) -> str:
    """What a use found by :meth:`FileContext.caller` is, at ``where``: a string holding the method's name is
    named as one (``getattr`` and hook tables call methods by such strings), a string that ends the name as what
    may build it at run time (``f"{stage}_epoch_end"``)."""
    if what == "string":
        return f"`{name}` is named in a string at {where}, which can call the method by name"
    if what == "fragment":
        return f"a string at {where} can build the name `{name}` at run time"
    return f"`{name}` is used at {where}"


def dynamic_fragments(name: str) -> tuple[str, ...]:
    """The endings of ``name`` from its second word on, two words or more: ``("_epoch_end",)`` for
    ``val_epoch_end`` -- strings code glues a stage onto to build the hook's name at run time."""
    parts = name.split("_")
    return tuple(f for f in ("_" + "_".join(parts[i:]) for i in range(1, len(parts) - 1)) if f != "_")


def shown_path(path: Path, marked: Path | None) -> str:
    """How a message about the file ``marked`` names another file of its project, ``path``: relative to the
    project's root (the nearest folder up from ``marked`` that holds one of :data:`.resolve.ROOT_MARKERS`, as the
    project is found) when ``path`` is below it -- a path as git, ruff and editors show it from the root --, else
    relative to ``marked``'s own folder. Never the checking machine's absolute path: a marker is written into the
    user's file and read on other machines."""
    if marked is None:
        return path.name
    root = _project_root(marked.parent)
    if root is not None:
        with contextlib.suppress(ValueError):
            return path.relative_to(root).as_posix()
    try:
        return Path(os.path.relpath(path, marked.parent)).as_posix()
    except ValueError:  # another drive (Windows): no relative path exists
        return path.name


@functools.lru_cache(maxsize=1024)
def _project_root(folder: Path) -> Path | None:
    return project_root(folder)


@dataclass
class ClassContext:
    """A Lightning class being checked: its ``kind`` (:data:`MODULE` / :data:`CALLBACK`), node and methods."""

    name: str
    kind: str
    confident: bool
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    file: FileContext
    #: the Lightning class its chain of bases reaches (``Callback``, ``ModelCheckpoint``, ...)
    via: str | None = None
    #: ``"Model"`` when the class is a mixin that a Lightning class of the project derives from (``Model``)
    mixed_into: str | None = None
    #: where ``mixed_into`` is defined (``path:line``)
    mixed_into_at: str | None = None
    #: ids of the nodes on the way down from the module to the class (what an edit rebuilds)
    path: tuple[int, ...] = ()
    #: the Lightning package its chain of bases reaches (``pytorch_lightning`` or ``lightning``)
    root: str | None = None
    #: the class's source lines, as bytes (a quick test for a name the class may use)
    text: bytes = b""
    #: method name -> its first and last line in the file (its decorators included)
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: method name -> its :mod:`ast` node (reading names there is quicker than a libcst visit)
    ast_methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    #: name -> line of each name the class body binds other than with a ``def`` of its own (``name = f``,
    #: ``name: T = f``, a ``def`` inside an ``if`` or ``try`` of the body, an import): a fix that adds or renames a
    #: method onto such a name would silently replace the user's, or be replaced by it
    bindings: dict[str, int] = field(default_factory=dict)

    def binds(self, name: str) -> str | None:
        """Why the class already has ``name`` (a ``def`` of its own, or another binding), or ``None``."""
        if name in self.bindings:
            return f"the class already binds `{name}` at line {self.bindings[name]}"
        if name in self.methods:
            return f"the class already defines `{name}`"
        return None

    def reads(self, func: cst.FunctionDef, name: str) -> bool:
        """:func:`body_uses`, answered from the method's :mod:`ast` node when the class has it."""
        node = self.ast_methods.get(func.name.value)
        if node is None:
            return body_uses(func, name)
        names = {n.id for statement in node.body for n in ast.walk(statement) if isinstance(n, ast.Name)}
        return name in names or bool(names & {"locals", "vars", "eval", "exec"})

    def uses_attribute(self, name: str) -> bool:
        """Whether the class's source holds ``.name`` (an attribute of that name: ``self.name``, ``obj.name``) outside
        its comment lines (a marker names the cache a rewrite would make)."""
        pattern = rb"^(?![ \t]*#).*?\.\s*" + re.escape(name.encode()) + rb"\b"
        return re.search(pattern, self.text, re.MULTILINE) is not None


class Rule:
    """Base class of a rule; subclasses set the attributes and implement :meth:`check`.

    Attributes:
        code: ``LM`` + 3 digits, stable; the page is ``checker/rules/<code>.html``.
        name: short kebab-case name.
        title: one line: what the rule finds.
        hooks: method names the rule inspects.
        owners: class kinds whose methods it inspects.
        patterns: registry pattern ids it covers (:mod:`lightning_migrate.registry`).
        summary: what it finds (reST: a paragraph, or a paragraph and a bullet list).
        fix_text: what ``--fix`` does (reST: a paragraph or a bullet list).
        example: a complete old-shape file that the rule flags and ``--fix`` makes clean (the docs build checks it).
    """

    code: str = ""
    name: str = ""
    title: str = ""
    hooks: frozenset[str] = frozenset()
    owners: frozenset[str] = frozenset({MODULE, CALLBACK})
    patterns: tuple[str, ...] = ()
    summary: str = ""
    fix_text: str = ""
    example: str = ""
    #: for a rule without registry patterns: why Lightning breaks on what it finds (reST, claims only; the rule page's
    #: "What Lightning does with it" section, which a rule without patterns or ``why`` does not have)
    why: str = ""
    #: reported only when nothing in the project uses the method's name (the hook is dead code unless called)
    never_called: bool = False
    #: ``--fix`` cleans the rule's example (with ``--unsafe-fixes`` when ``example_unsafe``); ``False`` for a rule
    #: that only ever marks (no rewrite keeps behaviour)
    fixable: bool = True
    #: the example's fix is an opt-in rewrite: the rule page shows it with ``--unsafe-fixes``
    example_unsafe: bool = False
    #: for a rule over a name pattern (:meth:`matches`): text every name it matches contains (the byte prefilter)
    name_fragments: tuple[str, ...] = ()

    @property
    def page(self) -> str:
        return page_of(self.code)

    def matches(self, name: str, kind: str) -> bool:
        """Whether the rule inspects methods called ``name`` beyond :attr:`hooks` (a rule over a name pattern)."""
        return False

    def check(self, ctx: ClassContext, func: cst.FunctionDef) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_imports(self, tree: ast.Module) -> Iterable[tuple[int, Finding]]:
        """For a rule about a file's imports (not a hook): ``(index of the top-level statement or -1 for a nested
        one, finding)`` for each import it reports. None by default."""
        return ()

    def applies(self, name: str, kind: str) -> bool:
        """For a rule about any hook of a kind of class (``async def``): whether it inspects the method ``name`` of
        a ``kind`` class. ``False`` by default."""
        return False

    def check_assigned(self, ctx: ClassContext, name: str, value: str | None = None) -> Iterable[Finding]:
        """Findings for ``name = <expression>`` in the class body (a hook bound to a function defined elsewhere);
        ``value``: the expression when it is a bare name (``on_train_epoch_end = _print_epoch``), else ``None``.
        None by default."""
        return ()


# -- helpers the rules share ---------------------------------------------------------------------------------------


#: Stands for the ``self`` a ``@staticmethod`` does not declare (Lightning calls it with the same arguments).
_NO_SELF = cst.Param(cst.Name("self"))


def cst_dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.C`` for a Name/Attribute chain (``Generic[T]`` gives ``Generic``); ``None`` for anything else."""
    if isinstance(node, cst.Subscript):
        node = node.value
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def is_static(func: cst.FunctionDef) -> bool:
    """Whether ``func`` is decorated with ``@staticmethod`` (it takes no ``self``)."""
    return any(cst_dotted(dec.decorator) in ("staticmethod", "builtins.staticmethod") for dec in func.decorators)


def positional(func: cst.FunctionDef) -> list[cst.Param]:
    """The positional parameters (positional-only first), ``self`` included: for a ``@staticmethod``, a stand-in
    ``self`` comes first, so position ``i`` is the same argument as in a method."""
    params = [*func.params.posonly_params, *func.params.params]
    return [_NO_SELF, *params] if is_static(func) else params


def named_params(func: cst.FunctionDef) -> list[cst.Param]:
    return [*positional(func), *func.params.kwonly_params]


def plain_signature(func: cst.FunctionDef) -> bool:
    """No ``*args``, ``**kwargs`` or keyword-only parameters."""
    params = func.params
    return (
        not params.kwonly_params and not isinstance(params.star_arg, cst.Param | cst.ParamStar)
    ) and params.star_kwarg is None


def expected_count(kind: str, module_count: int) -> int:
    """Positional parameters a hook takes: a module hook's count, plus ``trainer, pl_module`` on a callback."""
    return module_count + (2 if kind == CALLBACK else 0)


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `self.outputs`: `self` is a name, `outputs` is an attribute, not a variable
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # `f(outputs=x)`: the keyword is not a variable
        return False


def names_in(node: cst.CSTNode) -> set[str]:
    """Every variable name in ``node`` (loads, stores and the rest: a superset of the uses); attribute names
    (``self.outputs``) and call keywords (``f(outputs=1)``) are not variables and are left out."""
    visitor = _Names()
    node.visit(visitor)
    return visitor.names


class _Identifiers(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def identifiers_in(node: cst.CSTNode) -> set[str]:
    """Every identifier in ``node``, attribute names and keywords included (is a name free for new code?)."""
    visitor = _Identifiers()
    node.visit(visitor)
    return visitor.names


def body_uses(func: cst.FunctionDef, name: str) -> bool:
    """Whether the body of ``func`` may read ``name``: any mention, or ``locals()``/``vars()``/``eval``/``exec``."""
    names = names_in(func.body)
    return name in names or bool(names & {"locals", "vars", "eval", "exec"})


def drop_params(func: cst.FunctionDef, drop: set[str]) -> cst.FunctionDef:
    """``func`` without the named parameters; when the old last parameter goes, the new last one takes its comma
    (so ``def f(self, outputs)`` becomes ``def f(self)`` and a trailing comma style stays)."""
    params = func.params
    old_last = [*params.posonly_params, *params.params, *params.kwonly_params]
    changes: dict[str, list[cst.Param] | cst.MaybeSentinel] = {
        attr: _kept_comments([param for param in getattr(params, attr)], drop)
        for attr in ("posonly_params", "params", "kwonly_params")
    }
    if not changes["kwonly_params"] and isinstance(params.star_arg, cst.ParamStar):
        changes["star_arg"] = cst.MaybeSentinel.DEFAULT  # a bare `*` needs a keyword-only parameter after it
    new = params.with_changes(**changes)
    if not new.posonly_params and isinstance(params.posonly_ind, cst.ParamSlash):
        new = new.with_changes(posonly_ind=cst.MaybeSentinel.DEFAULT)
    ends_with_named = not isinstance(new.star_arg, cst.Param) and new.star_kwarg is None
    if old_last and old_last[-1].name.value in drop and ends_with_named:
        for attr in ("kwonly_params", "params", "posonly_params"):
            seq = list(getattr(new, attr))
            if seq:
                seq[-1] = _new_last(seq[-1], old_last[-1])
                new = new.with_changes(**{attr: seq})
                break
    return func.with_changes(params=new)


def _kept_comments(params: list[cst.Param], drop: set[str]) -> list[cst.Param]:
    """``params`` without those named in ``drop``; the whole comment lines below a dropped parameter that another
    follows (one parameter a line) move below the parameter kept before it, so no comment of the user's goes."""
    kept: list[cst.Param] = []
    for param in params:
        if param.name.value not in drop:
            kept.append(param)
            continue
        below = param.comma.whitespace_after if isinstance(param.comma, cst.Comma) else None
        lines = below.empty_lines if isinstance(below, cst.ParenthesizedWhitespace) else ()
        comma = kept[-1].comma if kept else None
        previous = comma.whitespace_after if isinstance(comma, cst.Comma) else None
        if lines and param is not params[-1] and isinstance(comma, cst.Comma):
            if isinstance(previous, cst.ParenthesizedWhitespace):
                moved = previous.with_changes(empty_lines=[*previous.empty_lines, *lines])
                kept[-1] = kept[-1].with_changes(comma=comma.with_changes(whitespace_after=moved))
    return kept


def _new_last(param: cst.Param, dropped: cst.Param) -> cst.Param:
    """``param`` as the last parameter in place of ``dropped``: it takes the dropped one's comma, unless its own comma
    ends a line (a signature one parameter a line); then it keeps its own comma and comment, and the closing
    parenthesis keeps the dropped one's line and indentation. A comment on the dropped parameter's line goes with
    it; no other comment moves or goes."""
    comma = param.comma
    own = comma.whitespace_after if isinstance(comma, cst.Comma) else None
    if not isinstance(comma, cst.Comma) or not isinstance(own, cst.ParenthesizedWhitespace):
        return param.with_changes(comma=dropped.comma)
    tail = dropped.comma.whitespace_after if isinstance(dropped.comma, cst.Comma) else dropped.whitespace_after_param
    if isinstance(tail, cst.ParenthesizedWhitespace):
        # the comment lines under the dropped parameter stay, above the closing parenthesis
        closing = own.with_changes(
            empty_lines=[*own.empty_lines, *tail.empty_lines], indent=tail.indent, last_line=tail.last_line
        )
        return param.with_changes(comma=comma.with_changes(whitespace_after=closing))
    if own.first_line.comment is not None or own.empty_lines:
        return param  # `x,  # note` then `dropped)`: the comment stays, `)` goes on the next line
    return param.with_changes(comma=dropped.comma)


def on_def(edit: Callable[[cst.FunctionDef], cst.FunctionDef]) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An ``apply`` of a fix on a ``def`` (the node a rule's finding is about): ``edit`` of it."""

    def apply(node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(node, cst.FunctionDef):  # pragma: no cover - a fix on a def is applied to that def
            raise TypeError(f"a fix of a def applied to a {type(node).__name__}")
        return edit(node)

    return apply


def with_name(new_name: str, drop: AbstractSet[str] = frozenset()) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An ``apply`` that renames the method to ``new_name`` and drops the parameters ``drop``."""

    def apply(func: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(func, cst.FunctionDef)
        return drop_params(func, set(drop)).with_changes(name=cst.Name(new_name))

    return apply


def _leading_lines(node: cst.CSTNode) -> list[cst.EmptyLine]:
    if isinstance(node, cst.FunctionDef | cst.ClassDef):
        return [*node.leading_lines, *(line for dec in node.decorators for line in dec.leading_lines)]
    return list(getattr(node, "leading_lines", ()))


def has_marker(node: cst.CSTNode, code: str) -> bool:
    """Whether the lines above ``node`` (its decorators' included) hold a marker of rule ``code``."""
    return any(line.comment is not None and f"{MARKER} {code}" in line.comment.value for line in _leading_lines(node))


def without_own_marker(fix: Fix, code: str, method: str | None = None) -> Fix:
    """``fix`` that first removes the markers of rule ``code`` above the node it edits (its decorators' included) --
    for a fix of the whole class (``on_class``), above the class body's method ``method``: a marker an earlier
    ``--fix`` left, saying the fix was not applied, is stale once it is."""

    def strip(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
        """``lines`` without the markers of ``code``: a marker's first line, then its continuation lines up to the
        one that ends with its link (a comment of the user's below it stays)."""
        kept, inside = [], False
        for line in lines:
            comment = line.comment.value if line.comment is not None else None
            if comment is not None and f"{MARKER} {code} " in comment:
                inside = not comment.endswith(page_of(code))
            elif inside and comment is not None and comment.startswith(MARKER_CONTINUATION):
                inside = not comment.endswith(page_of(code))
            else:
                inside = False
                kept.append(line)
        return kept

    def unmarked(node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(node, Statement) or not has_marker(node, code):
            return node
        node = node.with_changes(leading_lines=strip(node.leading_lines))
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            decorators = [d.with_changes(leading_lines=strip(d.leading_lines)) for d in node.decorators]
            node = node.with_changes(decorators=decorators)
        return node

    def apply(node: cst.CSTNode) -> Applied:
        if fix.on_class and isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock) and method:
            body = [
                unmarked(s) if isinstance(s, cst.FunctionDef) and s.name.value == method else s for s in node.body.body
            ]
            node = node.with_changes(body=node.body.with_changes(body=body))
        else:
            node = unmarked(node)
        return fix.apply(node)

    return replace(fix, apply=apply)


def manual_fix(code: str, why: str, tier: str = MANUAL) -> Fix:
    """The ``manual`` tier: one marker comment above the hook (its decorators) or the assignment, naming the rule,
    why it cannot be fixed automatically, and its page. With ``tier="unsafe"``, the marker of an opt-in rewrite
    that was not asked for: ``why`` says what it would do and risk."""

    def apply(node: cst.CSTNode) -> cst.CSTNode:
        if not isinstance(node, Statement) or has_marker(node, code):  # a marker goes above a statement
            return node
        text = f"# {MARKER} {code} {tier} fix, {why.rstrip('.:;')}: {docs_url()}{page_of(code)}"
        lines = [cst.EmptyLine(comment=cst.Comment(line)) for line in marker_lines(text)]
        return node.with_changes(leading_lines=[*node.leading_lines, *lines])

    return Fix(MANUAL, apply, description=why)


def marker_lines(text: str) -> list[str]:
    """A marker's comment (``text``, one line starting ``# lightning-migrate:`` and ending with the link) as the
    two lines ``--fix`` writes: the rule and the reason, then :data:`MARKER_CONTINUATION` and the link."""
    head, _, link = text.rpartition(" ")
    return [head, MARKER_CONTINUATION + link]


def is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def is_super_init(statement: cst.BaseStatement) -> bool:
    """``super().__init__(...)`` (or ``super(C, self).__init__(...)``) as a statement of its own."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    expr = statement.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        return False
    func = expr.value.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )
