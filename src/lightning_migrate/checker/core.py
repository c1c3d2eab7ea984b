"""The checker's core: rules register themselves here; :func:`check_source` walks a file once and applies them.

A *rule* (:class:`Rule`) names the Lightning hooks it inspects, which class kind owns them (``LightningModule`` or
``Callback``) and the registry patterns it covers. For each method of a Lightning class whose name a rule inspects,
the rule returns :class:`Finding` objects; a finding may carry a :class:`Fix` of one of three tiers:

``safe``
    a rewrite that keeps what the code does (e.g. drop an ``outputs`` parameter the body never reads);
``manual``
    no automatic rewrite: ``--fix`` inserts one marker comment with the link to the fix (never twice);
``rewrite``
    an opt-in rewrite to module-side caching, offered only where it provably keeps the behaviour
    (``--rewrite-caching``).

Edits are made with libcst, so comments and formatting are kept; a file whose rewrite would not parse is never
written.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.metadata
import io
import os
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from lightning_migrate import registry
from lightning_migrate.checker.resolve import (
    CALLBACK,
    MODULE,
    ModuleInfo,
    Project,
    dotted,
    module_info,
    references_in,
)

#: The environment variable that overrides where finding links point (the docs build sets it to the site it builds).
DOCS_URL_VARIABLE = "LIGHTNING_MIGRATE_DOCS_URL"


def docs_url() -> str:
    """The base address of the published site, ending in ``/``: a finding links to ``docs_url() + rule.page``.

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

    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["urls"]["Documentation"]


#: The marker comment ``--fix`` leaves above a hook it cannot rewrite: ``# lightning-migrate: LM001 ...``.
MARKER = "lightning-migrate:"
#: Bytes that every hook name any rule inspects contains: files without any of them are skipped unparsed.
PREFILTER = re.compile(rb"_epoch_(?:start|end)|_batch_(?:start|end)|_step_end")

SAFE, MANUAL, REWRITE = "safe", "manual", "rewrite"


@dataclass(frozen=True)
class Fix:
    """An edit of one finding: ``tier`` (``safe``, ``manual`` or ``rewrite``); ``apply`` maps the node the finding is
    about (a ``FunctionDef``, or the ``ClassDef`` when ``on_class``) to its replacement (``cst.RemovalSentinel``
    removes a method)."""

    tier: str
    apply: Callable[[cst.CSTNode], cst.CSTNode | cst.RemovalSentinel]
    on_class: bool = False
    description: str = ""
    #: The edit renames, removes or narrows the method: code that calls it by name must change with it.
    changes_callers: bool = True
    #: Parameters the edit removes: a call passing one of them by keyword would break.
    dropped: tuple[str, ...] = ()
    #: The method's name after the edit, when it renames it: a base or a subclass defining that name would clash.
    new_name: str | None = None


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

    @property
    def url(self) -> str:
        return docs_url() + RULES[self.code].page

    def format(self, path: str) -> str:
        """``path:line:col: CODE message (tier) url``: the format of compilers, ruff and flake8."""
        prefix = "note: " if self.note else ""
        prefix += "" if self.confident else "possible (base class not resolved): "
        tier = f" [{self.tier} fix]" if self.tier in (SAFE, REWRITE) else ""
        return f"{path}:{self.line}:{self.col}: {self.code} {prefix}{self.message}{tier} {self.url}"


@dataclass
class ClassContext:
    """A Lightning class being checked: its ``kind`` (``LightningModule``/``Callback``), node and methods."""

    name: str
    kind: str
    confident: bool
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    rewrite_caching: bool = False
    #: the Lightning class its chain of bases reaches (``Callback``, ``ModelCheckpoint``, ...)
    via: str | None = None


class Rule:
    """Base class of a rule; subclasses set the attributes and implement :meth:`check`.

    Attributes:
        code: ``LM`` + 3 digits, stable; the page is ``checker/rules/<code>.html``.
        name: short kebab-case name.
        title: one line: what the rule finds.
        hooks: method names the rule inspects.
        owners: class kinds whose methods it inspects.
        patterns: registry pattern ids it covers (:mod:`lightning_migrate.registry`).
        summary: what it finds (reST, a paragraph).
        fix_text: what ``--fix`` does (reST, a paragraph).
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

    @property
    def page(self) -> str:
        return f"checker/rules/{self.code}.html"

    #: reported only when nothing in the project uses the method's name (the hook is dead code unless called)
    never_called: bool = False
    #: ``--fix`` cleans the rule's example; ``False`` for a rule that only ever marks (no rewrite keeps behaviour)
    fixable: bool = True

    def matches(self, name: str, kind: str) -> bool:
        """Whether the rule inspects methods called ``name`` beyond :attr:`hooks` (a rule over a name pattern)."""
        return False

    def check(self, ctx: ClassContext, func: cst.FunctionDef) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError


#: code -> rule instance, in registration order.
RULES: dict[str, Rule] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator: add a rule to :data:`RULES`; its pattern ids must exist in the registry."""
    rule = cls()
    if rule.code in RULES:
        raise ValueError(f"rule code {rule.code} registered twice")
    for pattern_id in rule.patterns:
        registry.get(pattern_id)  # KeyError naming the known ids
    RULES[rule.code] = rule
    return cls


def rules_for(hook: str, kind: str) -> list[Rule]:
    """The rules that inspect a method ``hook`` of a class of ``kind``."""
    return [rule for rule in RULES.values() if kind in rule.owners and (hook in rule.hooks or rule.matches(hook, kind))]


# -- helpers the rules share -------------------------------------------------------------------------------------


#: Stands for the ``self`` a ``@staticmethod`` does not declare (Lightning calls it with the same arguments).
_NO_SELF = cst.Param(cst.Name("self"))


def is_static(func: cst.FunctionDef) -> bool:
    """Whether ``func`` is decorated with ``@staticmethod`` (it takes no ``self``)."""
    return any(_cst_dotted(dec.decorator) in ("staticmethod", "builtins.staticmethod") for dec in func.decorators)


def positional(func: cst.FunctionDef) -> list[cst.Param]:
    """The positional parameters (positional-only first), ``self`` included: for a ``@staticmethod``, a stand-in
    ``self`` comes first, so position ``i`` is the same argument as in a method."""
    params = [*func.params.posonly_params, *func.params.params]
    return [_NO_SELF, *params] if is_static(func) else params


def named_params(func: cst.FunctionDef) -> list[cst.Param]:
    return [*positional(func), *func.params.kwonly_params]


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
    changes = {
        attr: [param for param in getattr(params, attr) if param.name.value not in drop]
        for attr in ("posonly_params", "params", "kwonly_params")
    }
    new = params.with_changes(**changes)
    if not new.kwonly_params and isinstance(new.star_arg, cst.ParamStar):
        new = new.with_changes(star_arg=cst.MaybeSentinel.DEFAULT)
    if not new.posonly_params and isinstance(params.posonly_ind, cst.ParamSlash):
        new = new.with_changes(posonly_ind=cst.MaybeSentinel.DEFAULT)
    ends_with_named = not isinstance(new.star_arg, cst.Param) and new.star_kwarg is None
    if old_last and old_last[-1].name.value in drop and ends_with_named:
        for attr in ("kwonly_params", "params", "posonly_params"):
            seq = list(getattr(new, attr))
            if seq:
                seq[-1] = seq[-1].with_changes(comma=old_last[-1].comma)
                new = new.with_changes(**{attr: seq})
                break
    return func.with_changes(params=new)


def has_marker(func: cst.FunctionDef, code: str) -> bool:
    return any(
        line.comment is not None and f"{MARKER} {code}" in line.comment.value
        for line in (*func.leading_lines, *(line for dec in func.decorators for line in dec.leading_lines))
    )


def manual_fix(code: str, what: str) -> Fix:
    """The ``manual`` tier: one marker comment above the hook (its decorators), naming the rule and its page."""

    def apply(func: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(func, cst.FunctionDef)
        if has_marker(func, code):
            return func
        text = f"# {MARKER} {code} manual fix, {what}: {docs_url()}{RULES[code].page}"
        return func.with_changes(leading_lines=[*func.leading_lines, cst.EmptyLine(comment=cst.Comment(text))])

    return Fix(MANUAL, apply, description="marker comment")


def with_name(new_name: str, drop: set[str] = frozenset()) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def apply(func: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(func, cst.FunctionDef)
        return drop_params(func, set(drop)).with_changes(name=cst.Name(new_name))

    return apply


# -- the walk ----------------------------------------------------------------------------------------------------


@dataclass
class Result:
    """What checking one source gave: the findings (sorted by position) and the rewritten bytes (``None``: none)."""

    findings: list[Finding]
    new_source: bytes | None = None


def _cst_dotted(node: cst.BaseExpression) -> str | None:
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


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.classes: list[cst.ClassDef] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)


class _Applier(cst.CSTTransformer):
    def __init__(self, func_fixes: dict[int, list[Fix]], class_fixes: dict[int, list[Fix]]):
        self.func_fixes, self.class_fixes = func_fixes, class_fixes

    def leave_FunctionDef(self, original_node, updated_node):
        for fix in self.func_fixes.get(id(original_node), ()):
            if isinstance(updated_node, cst.RemovalSentinel):
                break
            updated_node = fix.apply(updated_node)
        return updated_node

    def leave_ClassDef(self, original_node, updated_node):
        for fix in self.class_fixes.get(id(original_node), ()):
            updated_node = fix.apply(updated_node)
        return updated_node


def check_source(
    source: bytes,
    path: Path | None = None,
    project: Project | None = None,
    *,
    fix: bool = False,
    rewrite_caching: bool = False,
    select: frozenset[str] | None = None,
    notes: bool = False,
) -> Result:
    """Check one file's bytes; with ``fix``, also return the rewritten bytes (same encoding and newlines).

    Args:
        source: the file's bytes (PEP 263 encoding cookie honoured; UTF-8 by default).
        path: where it lives in ``project`` (for cross-file base classes); ``None`` for a lone snippet.
        project: the checked tree; ``None`` checks the source alone.
        fix: apply the ``safe`` and ``manual`` tiers (and ``rewrite`` when ``rewrite_caching``).
        select: only these rule codes (default: all).
        notes: also return the informational findings (``Finding.note``): classes whose base could not be resolved,
            and old shapes made harmless by a default value. They never carry a fix.

    Raises:
        SyntaxError: the source does not parse (``lineno`` set).
        UnicodeDecodeError: the source is not in its declared encoding.
    """
    from lightning_migrate.checker import rules as _rules  # noqa: F401 - registers every rule

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)  # SyntaxError for a bad cookie
    source.decode(encoding)  # UnicodeDecodeError: not in the declared (or default UTF-8) encoding
    tree = ast.parse(source)  # raises SyntaxError / UnicodeDecodeError with a line number; libcst is slower
    if project is None:
        project = Project([], [])
    info = (
        project.info(path, tree)
        if path is not None and path in project.name_of
        else module_info(tree, path.stem if path else "snippet")
    )
    if not _has_candidates(tree, info, project, select):
        return Result([])  # no Lightning class with a hook any rule inspects: libcst (the slow part) is skipped
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as err:  # pragma: no cover - ast accepted it; libcst lags new syntax
        location = (str(path), err.raw_line, err.raw_column, "")
        raise SyntaxError(f"libcst cannot parse this file: {err.message}", location) from err
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # the module is not used elsewhere
    positions = wrapper.resolve(PositionProvider)
    collector = _Collector()
    wrapper.module.visit(collector)

    lines = source.splitlines()
    findings: list[Finding] = []
    func_fixes: dict[int, list[Fix]] = {}
    class_fixes: dict[int, list[Fix]] = {}
    for class_node in collector.classes:
        ctx = _context(class_node, info, project, rewrite_caching)
        if ctx is None or (not ctx.confident and not notes):  # a class only possibly Lightning's: notes only
            continue
        for func in ctx.methods.values():
            for rule in rules_for(func.name.value, ctx.kind):
                if select is not None and rule.code not in select:
                    continue
                if rule.never_called and _caller(tree, path, project, func.name.value, (), dynamic=True) is not None:
                    continue
                for finding in rule.check(ctx, func):
                    start = positions[func.name].start
                    finding.line, finding.col = start.line, start.column + 1
                    if _noqa(lines, finding.line, finding.code):
                        continue
                    if finding.fix is not None and finding.fix.tier == SAFE and finding.fix.changes_callers:
                        caller = _caller(tree, path, project, func.name.value, finding.fix.dropped)
                        if caller is not None:
                            finding.fix = manual_fix(rule.code, f"{caller}: change the callers too")
                    if finding.fix is not None and finding.fix.tier == SAFE and finding.fix.new_name:
                        clash = _override_clash(info, path, project, ctx, finding.fix.new_name)
                        if clash is not None:
                            finding.fix = manual_fix(rule.code, f"{clash}: merge by hand")
                    finding.confident = ctx.confident
                    finding.note = finding.note or not ctx.confident
                    if finding.note and not notes:
                        continue
                    if finding.fix is not None and not finding.note:
                        if finding.fix.tier == REWRITE and not rewrite_caching:
                            continue
                        finding.tier = finding.fix.tier
                        target = class_fixes if finding.fix.on_class else func_fixes
                        target.setdefault(id(class_node if finding.fix.on_class else func), []).append(finding.fix)
                    else:
                        finding.fix = None
                    findings.append(finding)
    findings.sort(key=lambda f: (f.line, f.col, f.code))
    new_source = None
    if fix and (func_fixes or class_fixes):
        new_module = wrapper.module.visit(_Applier(func_fixes, class_fixes))
        new_bytes = new_module.bytes
        if new_bytes != source:
            try:
                ast.parse(new_bytes)
            except SyntaxError as err:  # pragma: no cover - a bug in a rule; never write such a file
                raise RuntimeError(f"the rewrite of {path} does not parse ({err}); file left unchanged") from err
            new_source = new_bytes
    return Result(findings, new_source)


#: ``# noqa`` (every code) or ``# noqa: LM001, LM002`` on a line, as flake8 and ruff read it.
NOQA = re.compile(rb"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def _noqa(lines: list[bytes], line: int, code: str) -> bool:
    """Whether line ``line`` (1-based) of the file silences ``code``."""
    if not 0 < line <= len(lines):
        return False
    match = NOQA.search(lines[line - 1])
    if match is None:
        return False
    listed = match.group("codes")
    return listed is None or code.encode() in {c.strip().upper() for c in listed.split(b",")}


def _caller(
    tree: ast.Module, path: Path | None, project: Project, name: str, dropped: tuple[str, ...], dynamic: bool = False
) -> str | None:
    """Where code calls the method ``name`` (or passes one of ``dropped`` by keyword): this file first, then every
    other file of the project; ``None`` when nothing does, so a rename or a dropped parameter cannot break a call.

    With ``dynamic``, a string that ends the name (``"_epoch_end"``, two words or more) counts as a use too: code
    such as ``getattr(self, f"{stage}_epoch_end")`` builds the name at run time."""
    parts = name.split("_")
    fragments = tuple("_" + "_".join(parts[i:]) for i in range(1, len(parts) - 1)) if dynamic else ()
    fragments = tuple(f for f in fragments if f != "_")
    here = references_in(tree, {name, *fragments}, set(dropped))
    if here:
        line, what, used = here[0]
        return (
            f"`{used}` is used at line {line} of this file"
            if what != "keyword"
            else (f"a call passes `{used}=` at line {line} of this file")
        )
    if path is None or path not in project.name_of:
        return None
    for ref in project.references(name, dropped, exclude=path, fragments=fragments):
        where = ref.path
        with contextlib.suppress(ValueError):  # the marker is written into the file: no machine-specific prefix
            where = ref.path.relative_to(Path.cwd())
        if ref.what == "keyword":
            return f"a call passes a dropped parameter by keyword at {where}:{ref.line}"
        return f"`{name}` is used at {where}:{ref.line}"
    return None


def _override_clash(
    info: ModuleInfo, path: Path | None, project: Project, ctx: ClassContext, new_name: str
) -> str | None:
    """Why renaming a method of the class ``ctx`` to ``new_name`` would change which code runs: a base class -- the
    project's, or a Lightning class other than ``Callback`` / ``LightningModule`` (its methods recorded by
    :mod:`lightning_migrate.hook_names`) -- defines ``new_name`` (the renamed method would replace it), or a
    subclass does (it would replace the renamed method); ``None`` when neither."""
    cls = ctx.name
    if ctx.via not in (None, CALLBACK, MODULE):
        from lightning_migrate import hook_names

        recorded = hook_names.load()["classes"].get(ctx.via)
        if recorded is None:
            return f"Lightning's `{ctx.via}` is not among the recorded classes; it may define `{new_name}`"
        if new_name in recorded:
            return f"Lightning's `{ctx.via}` defines `{new_name}`"
    for base_info, base in project.ancestors(info, info.classes.get(cls, [])):
        if new_name in base_info.methods.get(base, set()):
            return f"base class `{base}` defines `{new_name}`"
    if path is not None and path in project.name_of:
        for other in project.subclasses_defining(info, cls, new_name):
            where = other
            with contextlib.suppress(ValueError):
                where = other.relative_to(Path.cwd())
            return f"a subclass in {where} defines `{new_name}`"
    return None


def _has_candidates(tree: ast.Module, info: ModuleInfo, project: Project, select: frozenset[str] | None) -> bool:
    """Whether some class of the file (read with :mod:`ast`) defines a method a rule inspects and is, or may be,
    a Lightning class: the only classes :func:`check_source` can report."""
    hooks = {hook for rule in RULES.values() if select is None or rule.code in select for hook in rule.hooks}
    patterned = [rule for rule in RULES.values() if not rule.hooks and (select is None or rule.code in select)]
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if not methods & hooks and not any(
            rule.matches(name, kind) for rule in patterned for name in methods for kind in (MODULE, CALLBACK)
        ):
            continue
        kind = project.classify(info, [dotted(base) for base in node.bases])
        if kind.kind is not None or (kind.unknown and "training_step" in methods):
            return True
    return False


def _context(node: cst.ClassDef, info: ModuleInfo, project: Project, rewrite_caching: bool) -> ClassContext | None:
    bases = [_cst_dotted(arg.value) for arg in node.bases if arg.keyword is None]
    methods = {}
    for statement in node.body.body:
        if isinstance(statement, cst.FunctionDef):
            methods[statement.name.value] = statement
    kind = project.classify(info, bases)
    if kind.kind is not None:
        return ClassContext(node.name.value, kind.kind, not kind.unknown, node, methods, rewrite_caching, kind.via)
    if kind.unknown and "training_step" in methods:
        return ClassContext(node.name.value, MODULE, False, node, methods, rewrite_caching)
    return None
