"""The checker's core: :func:`check_source` reads a file once and applies the rules of :mod:`.rules` to it.

The steps, each a function of its own:

1. :func:`_classes` pairs each class of the file's :mod:`ast` tree (positions, resolution) with its libcst node
   (edits keep comments and formatting), walking statements only, and makes a :class:`ClassContext` for each
   Lightning class -- or mixin that a Lightning class of the project derives from;
2. :func:`_rule_findings` asks the rules about each method (and each hook bound in the class body);
3. :func:`_settle` decides what each finding's fix may do: a policy (:data:`POLICIES`) may turn it into a marker,
   with its reason; ``# noqa`` and notes are sorted out; an ``unsafe`` fix becomes a marker unless asked for;
4. :func:`_apply` rebuilds only the classes that changed and splices their code into the file's text.

Edits are made with libcst, so comments and formatting are kept; a file whose rewrite would not parse is never
returned.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import sys
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from lightning_migrate import hook_names, registry
from lightning_migrate.checker.base import (
    CALLBACK,
    DOCS_URL_VARIABLE,
    MANUAL,
    MARKER,
    MODULE,
    UNSAFE,
    Applied,
    ClassContext,
    FileContext,
    Finding,
    Fix,
    Rule,
    cst_dotted,
    docs_url,
    manual_fix,
    shown_path,
    without_own_marker,
)
from lightning_migrate.checker.resolve import Kind, Project, dotted, module_info
from lightning_migrate.checker.rules import RULES
from lightning_migrate.checker.rules._common import EPOCH_END_METHOD_PATTERNS

__all__ = ["DOCS_URL_VARIABLE", "PREFILTER", "RULES", "Result", "check_source", "docs_url", "rules_for"]

#: The rule of imports of names 2.x removed: asked about the file's imports, not about a class.
REMOVED_IMPORTS = "LM009"
#: The rule of hooks written ``async def``: asked about an ``async def`` of a hook name no other rule reports.
ASYNC_HOOKS = "LM008"
#: A class whose base is not resolved but that defines this method may be a LightningModule (notes only).
TRAINING_STEP = registry.STEP_METHODS["train"]
#: ... or one of these, which no other library's classes are known to define (a task class of a framework built on
#: Lightning, ``class MyTask(ClassificationTask)``, often defines only ``validation_epoch_end``).
MODULE_ONLY_METHODS = frozenset({TRAINING_STEP, *(registry.get(pid).hook for pid in EPOCH_END_METHOD_PATTERNS)})
#: Bytes every name a rule inspects contains: the name fragments of the name-pattern rules, and the listed hook
#: names holding none of them. A file without any is skipped unparsed; literal alternatives keep the search as quick
#: as a substring search.
_FRAGMENTS = sorted({fragment for rule in RULES.values() for fragment in rule.name_fragments})
PREFILTER = re.compile(
    b"|".join(
        re.escape(text.encode())
        for text in _FRAGMENTS
        + sorted({h for r in RULES.values() for h in r.hooks if not any(f in h for f in _FRAGMENTS)})
    )
)


@dataclass
class Result:
    """What checking one source gave: the findings (sorted by position) and the rewritten bytes (``None``: none)."""

    findings: list[Finding]
    new_source: bytes | None = None
    #: why the fixes were not applied (the rewrite failed its last check: :func:`_check_rewrite`); ``None``: no error
    error: str | None = None


#: The names some rule lists among its :attr:`~Rule.hooks`, per class kind: a name-pattern rule leaves them alone.
_LISTED = {
    kind: {hook for rule in RULES.values() if kind in rule.owners for hook in rule.hooks} for kind in (MODULE, CALLBACK)
}


def rules_for(hook: str, kind: str, select: frozenset[str] | None = None) -> list[Rule]:
    """The rules (among ``select``, default all) that inspect a method ``hook`` of a class of ``kind``: those that
    list it, else those whose name pattern it matches."""
    rules = [rule for rule in RULES.values() if (select is None or rule.code in select) and kind in rule.owners]
    if hook in _LISTED[kind]:
        return [rule for rule in rules if hook in rule.hooks]
    return [rule for rule in rules if rule.matches(hook, kind)]


def check_source(
    source: bytes,
    path: Path | None = None,
    project: Project | None = None,
    *,
    fix: bool = False,
    unsafe_fixes: bool = False,
    select: frozenset[str] | None = None,
    notes: bool = False,
) -> Result:
    """Check one file's bytes; with ``fix``, also return the rewritten bytes (same encoding and newlines).

    Args:
        source: the file's bytes (PEP 263 encoding cookie honoured; UTF-8 by default).
        path: where it lives in ``project`` (for cross-file base classes and callers); ``None`` for a snippet.
        project: the checked tree; ``None`` checks the source alone.
        fix: apply the ``safe`` and ``proven`` fixes and write the markers (and the ``unsafe`` fixes with
            ``unsafe_fixes``).
        unsafe_fixes: apply the ``unsafe`` tier too (``--unsafe-fixes``); without it, such a finding gets a marker
            that says what the rewrite would risk.
        select: only these rule codes (default: all).
        notes: also return the informational findings (``Finding.note``): classes whose base could not be resolved,
            and old shapes made harmless by a default value. They never carry a fix.

    Raises:
        SyntaxError: the source does not parse (``lineno`` set).
        UnicodeDecodeError: the source is not in its declared encoding.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)  # SyntaxError for a bad cookie
    source.decode(encoding)  # UnicodeDecodeError: not in the declared (or default UTF-8) encoding
    tree = ast.parse(source)  # raises SyntaxError / UnicodeDecodeError with a line number; libcst is slower
    project = project if project is not None else Project([], [])
    info = project.info(path, tree) if path is not None and path in project.name_of else None
    if info is None:  # a snippet, or a file outside the project
        info = module_info(tree, path.stem if path else "snippet")
    file = FileContext(source, tree, info, project, path)
    ast_classes = list(_ast_classes(tree.body))
    imports = _import_findings(source, tree, select)
    if not imports and not any(_may_report(node, file, select) for node, _ in ast_classes):
        return Result([])  # no class that may hold a finding: libcst (the slow part) is skipped
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as err:  # pragma: no cover - ast accepted it; libcst lags new syntax
        raise SyntaxError(f"libcst cannot parse this file: {err.message}", (str(path), err.raw_line, 0, "")) from err
    lines = source.splitlines()
    found = [
        (finding, target, ctx)
        for ctx, ast_node in _classes(module, ast_classes, file, lines, notes)
        for finding, target in _rule_findings(ctx, ast_node, lines, select)
    ]
    findings, edits = _settle(found, file, fix=fix, unsafe_fixes=unsafe_fixes, notes=notes)
    _settle_imports(imports, module, tree, lines, findings, edits if fix else None, unsafe_fixes)
    findings.sort(key=lambda f: (f.line, f.col, f.code))
    try:
        new_source = _apply(module, tree, source, edits) if fix and edits else None
    except RewriteRefused as err:
        return Result(findings, None, f"fix refused, file left unchanged: {err}")
    return Result(findings, new_source)


def _import_findings(source: bytes, tree: ast.Module, select: frozenset[str] | None) -> list[tuple[int, Finding]]:
    """The findings of the rule of removed imports (LM009): ``(top-level statement index or -1, finding)``."""
    rule = RULES.get(REMOVED_IMPORTS)
    if rule is None or (select is not None and rule.code not in select):
        return []
    if not any(fragment.encode() in source for fragment in rule.name_fragments):
        return []
    return list(rule.check_imports(tree))


def _settle_imports(
    imports: list[tuple[int, Finding]],
    module: cst.Module,
    tree: ast.Module,
    lines: list[bytes],
    findings: list[Finding],
    edits: _Edits | None,
    unsafe_fixes: bool = False,
) -> None:
    """Add the import findings (those ``# noqa`` does not silence) to ``findings`` and, with ``edits``, their fixes:
    on a top-level statement that is alone on its line; a nested import is reported without a fix. A fix that
    defines names (:attr:`Fix.define`) writes them below the last of the file's leading imports."""
    if not imports:
        return
    statements: dict[int, tuple[cst.BaseStatement, bool]] = {}
    index = 0
    statement: cst.BaseStatement | None
    for statement in module.body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        for offset in range(count):
            statements[index + offset] = (statement, count == 1)
        index += count
    for where, finding in imports:
        if _noqa(lines, finding.line, finding.code):
            continue
        statement, alone = statements.get(where, (None, False))
        if statement is None:
            finding.fix = None
        elif not alone and finding.fix is not None and finding.fix.tier != MANUAL:
            finding.fix = manual_fix(finding.code, "the import shares its line with another statement: fix by hand")
        finding.tier = finding.fix.tier if finding.fix is not None else None
        if statement is module.body[0] and finding.tier == MANUAL and _header_marked(module, finding.code):
            statement = None  # the file's first statement: libcst keeps the comments above it in the header
        if edits is not None and statement is not None and finding.fix is not None:
            applied = finding.fix
            if applied.tier == UNSAFE and not unsafe_fixes:
                why = applied.withheld or applied.risk
                applied = manual_fix(finding.code, f"{why}; `--unsafe-fixes` applies it", tier=UNSAFE)
            elif applied.tier != MANUAL:
                applied = without_own_marker(applied, finding.code)
            if applied.define:
                anchor = statements.get(where + applied.define_after, (statement, True))[0]
                definitions = _defining(applied.define)
                if anchor is statement:
                    applied = dataclasses.replace(applied, apply=_then(applied.apply, definitions))
                else:
                    edits.add(anchor, dataclasses.replace(applied, apply=_then(lambda n: n, definitions)), ())
            edits.add(statement, applied, ())
        findings.append(finding)
    findings.sort(key=lambda f: (f.line, f.col, f.code))


def _defining(lines: tuple[str, ...]) -> list[cst.SimpleStatementLine | cst.BaseCompoundStatement]:
    """The statements of ``lines``, a blank line above the first."""
    statements = [cst.parse_statement(line) for line in lines]
    statements[0] = statements[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    return statements


def _then(
    apply: Callable[[cst.CSTNode], Applied], after: list[cst.SimpleStatementLine | cst.BaseCompoundStatement]
) -> Callable[[cst.CSTNode], Applied]:
    """``apply``, then ``after`` below what it leaves (where it removes the statement, ``after`` takes its comment
    lines above)."""

    def both(node: cst.CSTNode) -> Applied:
        new = apply(node)
        if isinstance(new, cst.RemovalSentinel):
            lines = [*after[0].leading_lines, *getattr(node, "leading_lines", ())]
            return cst.FlattenSentinel([after[0].with_changes(leading_lines=lines), *after[1:]])
        if isinstance(new, cst.FlattenSentinel):
            return cst.FlattenSentinel([*new.nodes, *after])
        return cst.FlattenSentinel([new, *after])

    return both


def _header_marked(module: cst.Module, code: str) -> bool:
    """Whether the comments above the module's first statement (its header, for libcst) hold a marker of ``code``."""
    return any(line.comment is not None and f"{MARKER} {code}" in line.comment.value for line in module.header)


# -- 1. the classes ------------------------------------------------------------------------------------------------


def _ast_classes(body: list[ast.stmt], parents: tuple = ()) -> Iterator[tuple[ast.ClassDef, bool]]:
    """Every class of ``body`` and of the blocks nested in it, in source order: ``(node, top level)``."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node, not parents
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                yield from _ast_classes(block, (*parents, node))
        for handler in getattr(node, "handlers", ()):
            yield from _ast_classes(handler.body, (*parents, node))
        for case in getattr(node, "cases", ()):
            yield from _ast_classes(case.body, (*parents, node))


def _cst_classes(node: cst.CSTNode, path: tuple[int, ...] = ()) -> Iterator[tuple[cst.ClassDef, tuple[int, ...]]]:
    """Every class under ``node`` in source order, walking statements and blocks only (never expressions, which
    hold no class): ``(node, ids of the nodes on the way down from the module)``."""
    for child in _statement_children(node):
        if isinstance(child, cst.ClassDef):
            yield child, path
        yield from _cst_classes(child, (*path, id(child)))


def _statement_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The statements, blocks and clauses directly inside ``node`` (a module, a block or a compound statement)."""
    if isinstance(node, cst.SimpleStatementLine):
        return
    body = getattr(node, "body", None)
    if isinstance(body, tuple | list):
        yield from (child for child in body if not isinstance(child, cst.SimpleStatementLine))
    elif isinstance(body, cst.IndentedBlock):
        yield body
    for name in ("orelse", "finalbody"):
        clause = getattr(node, name, None)
        if isinstance(clause, cst.CSTNode):
            yield clause
    yield from getattr(node, "handlers", ())
    yield from getattr(node, "cases", ())


def _may_report(node: ast.ClassDef, file: FileContext, select: frozenset[str] | None) -> bool:
    """Whether the class (read with :mod:`ast`) defines a name a rule inspects and is, or may be, a Lightning class
    or a mixin of one: the only classes :func:`check_source` can report."""
    names = _body_names(node)
    kinds = (MODULE, CALLBACK)
    if not any(rules_for(name, kind, select) for name in names for kind in kinds) and not any(
        _async_hook_rule(item.name, kind, select)
        for item in node.body
        if isinstance(item, ast.AsyncFunctionDef)
        for kind in kinds
    ):
        return False
    kind = file.project.classify(file.info, [dotted(base) for base in node.bases])
    if kind.kind is not None or (kind.unknown and not MODULE_ONLY_METHODS.isdisjoint(names)):
        return True
    return _mixed_into(node, file) is not None


def _body_names(node: ast.ClassDef) -> list[str]:
    """The names the class body binds: its methods, and every other binding (:func:`_other_bindings`)."""
    names = [item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
    return names + list(_other_bindings(node))


def _other_bindings(node: ast.ClassDef) -> dict[str, int]:
    """``{name: line}`` of the names the class body binds other than with a ``def`` at its top level: assignment
    targets, a ``def`` or ``class`` nested in a compound statement of the body, imports, ``for`` / ``with`` targets
    (a function's or a nested class's own body is another scope and is not read)."""
    found: dict[str, int] = {}
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    stack: list[ast.AST] = [item for item in node.body if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
    while stack:
        item = stack.pop()
        if isinstance(item, scopes):
            if not isinstance(item, ast.Lambda):
                found.setdefault(item.name, item.lineno)
            stack += getattr(item, "decorator_list", [])
            continue
        if isinstance(item, comprehensions):
            continue
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            found[item.id] = min(item.lineno, found.get(item.id, item.lineno))
        elif isinstance(item, ast.Import | ast.ImportFrom):
            for alias in item.names:
                name = alias.asname or alias.name.split(".")[0]
                found[name] = min(item.lineno, found.get(name, item.lineno))
        stack += ast.iter_child_nodes(item)
    return found


#: The hooks of an old release's recorded hook classes the installed release lacks (LM007): exact names, so a mixin
#: that defines one is checked as the classes that derive from it.
_REMOVED_HOOKS = frozenset(name for kind in (MODULE, CALLBACK) for name in hook_names.load_removed()[kind])


def _mixed_into(node: ast.ClassDef, file: FileContext) -> tuple[Kind, str, str] | None:
    """``(kind, class, where)`` of a Lightning class of the project that derives from ``node``, a class that is not
    Lightning's itself but defines a hook a rule (other than a name-pattern rule) inspects; else ``None``. Lightning
    looks a hook up on the subclass, so a mixin's old hook breaks the subclass."""
    hooks = {hook for rule in RULES.values() for hook in rule.hooks} | _REMOVED_HOOKS
    if not hooks & set(_body_names(node)):
        return None
    project, info = file.project, file.info
    candidates = [(file.path, info, name) for name in info.classes if name != node.name]
    if file.path is not None and file.path in project.name_of:
        candidates += [c for c in project.subclasses(info, node.name) if c[0] != file.path]
    for path, other, name in candidates:
        if (info.name, node.name) not in {(a.name, c) for a, c in project.ancestors(other, other.classes[name])}:
            continue
        kind = project.classify(other, other.classes[name])
        if kind.kind is not None and not kind.unknown:
            line = next((ln for (n, ln) in other.class_lines if n == name), 0)
            where = file.place(line) if path in (None, file.path) else f"{shown_path(path, file.path)}:{line}"
            return kind, name, where
    return None


def _classes(
    module: cst.Module, ast_classes: list[tuple[ast.ClassDef, bool]], file: FileContext, lines: list[bytes], notes: bool
) -> Iterator[tuple[ClassContext, ast.ClassDef]]:
    """A :class:`ClassContext` for each class that may hold a finding, with its :mod:`ast` node (positions)."""
    cst_classes = list(_cst_classes(module))
    if len(cst_classes) != len(ast_classes):  # pragma: no cover - both parsers see the same class statements
        raise RuntimeError("libcst and ast disagree on the classes of the file")
    for (node, path), (ast_node, _) in zip(cst_classes, ast_classes, strict=True):
        methods = {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}
        kind = file.project.classify(file.info, [dotted(base) for base in ast_node.bases])
        first = min([ast_node.lineno, *(d.lineno for d in ast_node.decorator_list)])
        text = b"\n".join(lines[first - 1 : ast_node.end_lineno])
        spans = {
            item.name: (min([item.lineno, *(d.lineno for d in item.decorator_list)]), item.end_lineno or item.lineno)
            for item in ast_node.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        owner, confident, root = kind.kind, not kind.unknown, kind.root
        mixed_into = mixed_into_at = None
        if owner is None:
            mixed = _mixed_into(ast_node, file)
            if mixed is not None:
                owner, confident, root = mixed[0].kind, True, mixed[0].root
                mixed_into, mixed_into_at = mixed[1], mixed[2]
            elif kind.unknown and not MODULE_ONLY_METHODS.isdisjoint(methods):
                owner, confident = MODULE, False  # possibly a module: notes only
        if owner is None or not (confident or notes):
            continue
        ctx = ClassContext(
            node.name.value,
            owner,
            confident,
            node,
            methods,
            file,
            kind.via,
            mixed_into=mixed_into,
            mixed_into_at=mixed_into_at,
            path=path,
            root=root,
            text=text,
            spans=spans,
            ast_methods={
                item.name: item for item in ast_node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            },
            bindings=_other_bindings(ast_node),
        )
        yield ctx, ast_node


# -- 2. what the rules find ----------------------------------------------------------------------------------------


def _rule_findings(
    ctx: ClassContext, ast_node: ast.ClassDef, lines: list[bytes], select: frozenset[str] | None
) -> Iterator[tuple[Finding, cst.CSTNode]]:
    """``(finding, the node its fix edits)`` of every rule, for every method and class-body assignment, placed at
    the method's (assigned) name; a finding silenced by ``# noqa`` on that line is left out.

    A ``def`` inside a compound statement of the body (``if DEBUG:``) and an assignment in a one-line class body
    (``class M(pl.LightningModule): training_epoch_end = f``) are reported too; their fix is a marker, above the
    compound statement or above the class."""
    if isinstance(ctx.node.body, cst.SimpleStatementSuite):  # a one-line body holds small statements only
        for small, ast_statement in zip(ctx.node.body.body, ast_node.body, strict=False):
            for finding in _assigned_findings(ctx, small, ast_statement, lines, select):
                if finding.fix is not None:
                    finding.fix = dataclasses.replace(finding.fix, on_class=True)
                yield finding, ctx.node
        return
    for statement, ast_statements in _paired_body(ctx.node, ast_node):
        if isinstance(statement, cst.FunctionDef):
            ast_func = ast_statements[0]
            if isinstance(ast_func, ast.FunctionDef | ast.AsyncFunctionDef):  # always: both parsers see the `def`
                yield from ((f, statement) for f in _def_findings(ctx, statement, ast_func, lines, select))
        elif isinstance(statement, cst.SimpleStatementLine):
            for small, ast_statement in zip(statement.body, ast_statements, strict=False):
                yield from ((f, statement) for f in _assigned_findings(ctx, small, ast_statement, lines, select))
        else:
            nested = zip(_nested_cst_defs(statement), _nested_ast_defs(ast_statements[0]), strict=False)
            for func, ast_func in nested:
                for finding in _def_findings(ctx, func, ast_func, lines, select):
                    keyword = type(ast_statements[0]).__name__.lower()
                    finding.fix = manual_fix(finding.code, f"defined inside the class body's `{keyword}`: fix by hand")
                    yield finding, statement


def _def_findings(
    ctx: ClassContext,
    func: cst.FunctionDef,
    ast_func: ast.FunctionDef | ast.AsyncFunctionDef,
    lines: list[bytes],
    select: frozenset[str] | None,
) -> Iterator[Finding]:
    name = func.name.value
    line, col = _name_position(lines, ast_func)
    rules = rules_for(name, ctx.kind, select)
    found = [finding for rule in rules for finding in rule.check(ctx, func)]
    if not found and func.asynchronous is not None:  # a hook no other rule reports, written `async def`
        found = [finding for rule in _async_hook_rule(name, ctx.kind, select) for finding in rule.check(ctx, func)]
    for finding in found:
        finding.line, finding.col = line, col
        if not _noqa(lines, line, finding.code):
            yield finding


def _async_hook_rule(name: str, kind: str, select: frozenset[str] | None) -> list[Rule]:
    """The rule of hooks written ``async def`` (LM008), when selected and ``name`` is a hook of ``kind``."""
    rule = RULES.get(ASYNC_HOOKS)
    if rule is None or (select is not None and rule.code not in select) or kind not in rule.owners:
        return []
    return [rule] if rule.applies(name, kind) else []


def _assigned_findings(
    ctx: ClassContext, small: cst.BaseSmallStatement, ast_statement: ast.stmt, lines: list[bytes], select
) -> Iterator[Finding]:
    line, col = ast_statement.lineno, _column(lines, ast_statement.lineno, ast_statement.col_offset)
    value = getattr(small, "value", None)
    bound = value.value if isinstance(value, cst.Name) else None
    for name in _assigned_names(small):
        for rule in rules_for(name, ctx.kind, select):
            for finding in rule.check_assigned(ctx, name, bound):
                finding.line, finding.col = line, col
                if not _noqa(lines, line, finding.code):
                    yield finding


def _nested_cst_defs(node: cst.CSTNode) -> Iterator[cst.FunctionDef]:
    """The ``def`` statements inside a compound statement (not those inside another ``def`` or a class)."""
    for child in _statement_children(node):
        if isinstance(child, cst.FunctionDef):
            yield child
        elif not isinstance(child, cst.ClassDef):
            yield from _nested_cst_defs(child)


def _nested_ast_defs(node: ast.stmt) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """:func:`_nested_cst_defs` read with :mod:`ast`, in the same order (body, ``else``, ``finally``, handlers,
    cases)."""
    blocks = [getattr(node, name, None) for name in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(node, "handlers", ())]
    blocks += [case.body for case in getattr(node, "cases", ())]
    for block in blocks:
        for child in block if isinstance(block, list) else ():
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield child
            elif not isinstance(child, ast.ClassDef):
                yield from _nested_ast_defs(child)


def _paired_body(node: cst.ClassDef, ast_node: ast.ClassDef) -> Iterator[tuple[cst.BaseStatement, list[ast.stmt]]]:
    """Each statement of a class body with its :mod:`ast` statements (a libcst line ``a = 1; b = 2`` holds two)."""
    if not isinstance(node.body, cst.IndentedBlock):  # a one-line body: the caller reads its small statements
        return
    ast_body = iter(ast_node.body)
    for statement in node.body.body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        ast_statements = [s for s in (next(ast_body, None) for _ in range(count)) if s is not None]
        if not ast_statements:  # pragma: no cover - both parsers see the same statements
            return
        yield statement, ast_statements


def _assigned_names(small: cst.BaseSmallStatement) -> list[str]:
    """The names a small statement ``name = value`` binds (``a = b = value``: both; ``name: T = value`` too)."""
    if isinstance(small, cst.Assign):
        return [target.target.value for target in small.targets if isinstance(target.target, cst.Name)]
    if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
        return [small.target.value]
    return []


def _column(lines: list[bytes], line: int, byte_offset: int) -> int:
    """The 1-based character column of a UTF-8 byte offset on a 1-based line (what :mod:`ast` gives)."""
    text = lines[line - 1] if 0 < line <= len(lines) else b""
    return len(text[:byte_offset].decode("utf-8", "replace")) + 1


def _name_position(lines: list[bytes], node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """Line and 1-based column of a ``def``'s name (:mod:`ast` gives the ``def`` keyword's position)."""
    text = lines[node.lineno - 1] if 0 < node.lineno <= len(lines) else b""
    match = re.compile(rb"(?:async\s+)?def\s+").match(text, node.col_offset)
    offset = match.end() if match else node.col_offset
    return node.lineno, _column(lines, node.lineno, offset)


#: A noqa comment on a line, for every code or for the codes named after its colon (LM001), as flake8 and ruff read it.
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


# -- 3. what each fix may do ---------------------------------------------------------------------------------------


def _async_hook(finding: Finding, node: cst.CSTNode, ctx: ClassContext) -> str | None:
    """An ``async def`` hook: Lightning calls it without awaiting the coroutine, so its body never runs -- fixing
    its name or signature would turn an error into a hook that silently does nothing."""
    if isinstance(node, cst.FunctionDef) and node.asynchronous is not None:
        return "`async def`: a hook written as a coroutine function"
    return None


def _callers(finding: Finding, node: cst.CSTNode, ctx: ClassContext) -> str | None:
    """A fix that renames, removes or narrows a method that code calls (by name, or a dropped keyword)."""
    fix = finding.fix
    if fix is None or fix.tier == MANUAL or not fix.changes_callers or not isinstance(node, cst.FunctionDef):
        return None
    caller = ctx.file.caller(node.name.value, fix.dropped, of=ctx, removed=fix.removes)
    return None if caller is None else f"{caller}: change the callers too"


def _override_clash(finding: Finding, node: cst.CSTNode, ctx: ClassContext) -> str | None:
    """A rename onto a name that a base class -- the project's, or a Lightning class other than ``Callback`` /
    ``LightningModule`` (its methods recorded by :mod:`lightning_migrate.hook_names`) -- defines (the renamed method
    would replace it), or that a subclass defines (it would replace the renamed method)."""
    new_name = finding.fix.new_name if finding.fix is not None else None
    if finding.fix is None or finding.fix.tier == MANUAL or new_name is None:
        return None
    why = _clash(ctx, new_name)
    return None if why is None else f"{why}: merge by hand"


def _clash(ctx: ClassContext, new_name: str) -> str | None:
    file = ctx.file
    bound = ctx.binds(new_name)
    if bound is not None:
        return bound
    if ctx.via not in (None, CALLBACK, MODULE):
        from lightning_migrate import hook_names

        recorded = hook_names.load()["classes"].get(ctx.via)
        if recorded is None:
            return f"Lightning's `{ctx.via}` is not among the recorded classes; it may define `{new_name}`"
        if new_name in recorded:
            return f"Lightning's `{ctx.via}` defines `{new_name}`"
    for base_info, base in file.project.ancestors(file.info, file.info.classes.get(ctx.name, [])):
        if new_name in base_info.methods.get(base, set()):
            return f"base class `{base}` defines `{new_name}`"
    if file.path is not None and file.path in file.project.name_of:
        for other in file.project.subclasses_defining(file.info, ctx.name, new_name):
            return f"a subclass in {shown_path(other, file.path)} defines `{new_name}`"
    return None


def _mixin(finding: Finding, node: cst.CSTNode, ctx: ClassContext) -> str | None:
    """A fix on a mixin: a class that is Lightning's only through a class that derives from it. Whether Lightning
    calls the mixin's renamed or narrowed hook depends on where the mixin comes among that class's bases (after
    ``LightningModule`` or ``Callback``, Lightning's own empty hook comes first and the mixin's never runs)."""
    if finding.fix is None or finding.fix.tier == MANUAL or ctx.mixed_into is None:
        return None
    return (
        f"a mixin of `{ctx.mixed_into}`: which hook of that name `{ctx.mixed_into}` has depends on the mixin's place "
        f"among `{ctx.mixed_into}`'s bases (before or after `{ctx.kind}`)"
    )


def _unresolved_base(finding: Finding, node: cst.CSTNode, ctx: ClassContext) -> str | None:
    """A fix that renames a method or adds methods, in a class with a base that is not resolved (a third-party
    class, or an expression): that base may define the new name, which the fix would then replace."""
    fix = finding.fix
    if fix is None or fix.tier == MANUAL or (fix.new_name is None and not fix.on_class):
        return None
    base = unresolved_base(ctx)
    if base is None:
        return None
    what = f"`{fix.new_name}`" if fix.new_name is not None else "the hooks the rewrite adds"
    return f"base `{base}` is not resolved; it may define {what}: merge by hand"


def unresolved_base(ctx: ClassContext) -> str | None:
    """The first base of the class or of its project ancestors that does not resolve to Lightning, a builtin or
    a class of the project (``None``: all resolve), as written (``<expression>`` for a base that is not a name)."""
    file = ctx.file
    if file is None:
        return None
    project, info = file.project, file.info
    chain = [(info, ctx.name), *project.ancestors(info, info.classes.get(ctx.name, []))]
    for where, name in chain:
        for base in where.classes.get(name, []):
            kind = project.classify(where, [base])
            if kind.kind is None and kind.unknown:
                return base or "<expression>"
    return None


#: What may turn a finding's fix into a marker, in order: each returns the reason, or ``None``.
POLICIES: tuple[Callable[[Finding, cst.CSTNode, ClassContext], str | None], ...] = (
    _async_hook,
    _callers,
    _override_clash,
    _mixin,
    _unresolved_base,
)


@dataclass
class _Edits:
    """The edits of a file: per node id, the fixes to apply to that node, and the imports they need."""

    nodes: dict[int, list[Fix]] = field(default_factory=dict)
    #: node id -> ids of the nodes on the way down from the module (what must be rebuilt around an edit)
    paths: dict[int, tuple[int, ...]] = field(default_factory=dict)
    imports: dict[tuple[str, str], None] = field(default_factory=dict)

    def add(self, node: cst.CSTNode, fix: Fix, path: tuple[int, ...]) -> None:
        self.nodes.setdefault(id(node), []).append(fix)
        self.paths[id(node)] = path
        self.imports.update(dict.fromkeys(fix.imports))

    def __bool__(self) -> bool:
        return bool(self.nodes)


def _settle(
    found: list[tuple[Finding, cst.CSTNode, ClassContext]],
    file: FileContext,
    *,
    fix: bool,
    unsafe_fixes: bool,
    notes: bool,
) -> tuple[list[Finding], _Edits]:
    """The findings to report and the edits to make: policies first, then notes, then the tiers."""
    findings, edits = [], _Edits()
    for finding, node, ctx in found:
        finding.confident = ctx.confident
        finding.note = finding.note or not ctx.confident
        if ctx.mixed_into is not None:
            finding.message += f" (mixed into {ctx.kind} `{ctx.mixed_into}` at {ctx.mixed_into_at})"
        if finding.note:
            if notes:
                finding.fix = None
                findings.append(finding)
            continue
        if finding.fix is not None:
            for policy in POLICIES:
                why = policy(finding, node, ctx)
                if why is not None:
                    finding.fix = manual_fix(finding.code, why)
                    break
            finding.tier = finding.fix.tier
            applied = finding.fix
            if applied.tier == UNSAFE and not unsafe_fixes:
                why = applied.withheld or applied.risk
                applied = manual_fix(finding.code, f"{why}; `--unsafe-fixes` applies it", tier=UNSAFE)
            elif applied.tier != MANUAL:
                method = node.name.value if isinstance(node, cst.FunctionDef) else None
                applied = without_own_marker(applied, finding.code, method)
            if fix:
                if applied.on_class:
                    edits.add(ctx.node, applied, ctx.path)
                else:
                    edits.add(node, applied, (*ctx.path, id(ctx.node), id(ctx.node.body)))
        findings.append(finding)
    return findings, edits


# -- 4. the edits ----------------------------------------------------------------------------------------------------


def _apply(module: cst.Module, tree: ast.Module, source: bytes, edits: _Edits) -> bytes | None:
    """The file's bytes after the edits (``None`` when they change nothing).

    Only the nodes on the way down to an edited node are rebuilt. When every edited node lies in a class at the
    module's top level, the new code of those classes is spliced into the file's text (the rest of the file is
    never regenerated); otherwise libcst writes the whole module.

    Raises:
        RewriteRefused: the rewritten file fails :func:`_check_rewrite` (a bug; such a file is never written).
    """
    replaced: dict[int, Applied] = {}
    dirty = {ancestor for path in edits.paths.values() for ancestor in path}

    def rebuild(node: cst.CSTNode) -> Applied:
        if id(node) in replaced:
            return replaced[id(node)]
        new: Applied = _rebuild_children(node, rebuild) if id(node) in dirty else node
        for fix in reversed(edits.nodes.get(id(node), ())):  # the last first: what each inserts stays in order
            if isinstance(new, cst.RemovalSentinel | cst.FlattenSentinel):
                break
            new = fix.apply(new)
        replaced[id(node)] = new
        return new

    top = [statement for statement in module.body if id(statement) in dirty or id(statement) in edits.nodes]
    new_top = {id(statement): rebuild(statement) for statement in top}
    imports = _missing_imports(module, edits.imports)
    before = min(module.body.index(statement) for statement in top)
    encoding = module.encoding
    text = source.decode(encoding)
    spliced = None
    if all(isinstance(s, cst.ClassDef) for s in top):
        spliced = _splice(module, _first_lines(module, tree), text, new_top, imports, before)
    if spliced is None:
        body = []
        for statement in module.body:
            new = new_top.get(id(statement), statement)
            if isinstance(new, cst.FlattenSentinel):
                body += list(new.nodes)
            elif not isinstance(new, cst.RemovalSentinel):
                body.append(new)
        new_module = module.with_changes(body=body)
        spliced = _with_imports(new_module, imports, before).code
    new_bytes = spliced.encode(encoding)
    if new_bytes == source:
        return None
    _check_rewrite(module, tree, text, spliced, new_top, len(imports))
    return new_bytes


class RewriteRefused(Exception):
    """A rewrite that failed the last check before writing (:func:`_check_rewrite`): the file is left unchanged.
    The message says why, without the file's name (the caller adds it)."""


def _check_rewrite(
    module: cst.Module,
    tree: ast.Module,
    text: str,
    new_text: str,
    new_top: dict[int, Applied],
    imports: int,
) -> None:
    """The last check of a rewrite, independent of how it was made: the whole new file parses, and every top-level
    statement the fixes did not edit is still there, in order, with the same code character for character (the
    edited statements and the added imports are the only new ones).

    Raises:
        RewriteRefused: either fails (a bug in a rule or in the splice; such a file is never written).
    """
    text, new_text = text.removeprefix("\ufeff"), new_text.removeprefix("\ufeff")  # ast's positions skip a BOM
    try:
        new_tree = ast.parse(new_text)
    except SyntaxError as err:
        raise RewriteRefused(f"the rewritten file does not parse (line {err.lineno}: {err.msg})") from err
    except (RecursionError, MemoryError) as err:  # pragma: no cover - the old file parsed
        raise RewriteRefused("the rewritten file is too deeply nested to parse") from err
    # cut here, not with split_lines, so that this check does not share the splice's code
    old_lines, new_lines = (io.StringIO(t, newline="").readlines() for t in (text, new_text))
    untouched, expected, ast_body = [], imports, iter(tree.body)
    for statement in module.body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        nodes = [next(ast_body) for _ in range(count)]
        if id(statement) in new_top:
            new = new_top[id(statement)]
            for part in new.nodes if isinstance(new, cst.FlattenSentinel) else [new]:
                if not isinstance(part, cst.RemovalSentinel):
                    expected += len(part.body) if isinstance(part, cst.SimpleStatementLine) else 1
        else:
            untouched += [_code_of(old_lines, node) for node in nodes]
    expected += len(untouched)
    found = [_code_of(new_lines, node) for node in new_tree.body]
    remaining = iter(found)
    for code in untouched:
        if not any(code == other for other in remaining):
            line = code[-1].split("\n", 1)[0][:60]
            raise RewriteRefused(f"the rewrite would change code it does not fix: `{line}`")
    if len(found) != expected:
        raise RewriteRefused(
            f"the rewrite would leave {len(found)} top-level statements where {expected} were expected"
        )


def _code_of(lines: list[str], node: ast.stmt) -> tuple[str, ...]:
    """A statement's code, its decorators' first, cut from ``lines`` (the text's lines, as Python counts them) at
    :mod:`ast`'s positions, as :func:`ast.get_source_segment` cuts it (which splits the whole text on every call)."""
    parts = []
    for part in [*getattr(node, "decorator_list", ()), node]:
        first, last = part.lineno - 1, (part.end_lineno or part.lineno) - 1
        start, end = part.col_offset, part.end_col_offset
        if first == last:
            parts.append(lines[first].encode()[start:end].decode())
        else:
            head, tail = lines[first].encode()[start:].decode(), lines[last].encode()[:end].decode()
            parts.append(head + "".join(lines[first + 1 : last]) + tail)
    return tuple(parts)


def split_lines(text: str) -> list[str]:
    """``text`` cut after each line end Python's parser counts -- ``\\n``, ``\\r\\n`` and ``\\r`` only -- the ends
    kept. ``str.splitlines`` also cuts at form feeds, ``\\x1c``-``\\x1e``, ``\\x85`` and U+2028, which :mod:`ast`
    and libcst do not count, so its line numbers would not be theirs."""
    return io.StringIO(text, newline="").readlines()


def _first_lines(module: cst.Module, tree: ast.Module) -> dict[int, int]:
    """The first line of each top-level libcst statement's code -- the comments and blank lines libcst keeps above
    it included -- from :mod:`ast`'s positions (writing the whole module out to count its lines would cost as much
    as parsing it)."""
    starts, ast_body = {}, iter(tree.body)
    for statement in module.body:
        node = next(ast_body, None)
        if node is None:  # pragma: no cover - both parsers see the same statements
            break
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        starts[id(statement)] = first - len(statement.leading_lines)
        if isinstance(statement, cst.SimpleStatementLine):
            for _ in statement.body[1:]:
                next(ast_body, None)
    return starts


def _rebuild_children(node: cst.CSTNode, rebuild: Callable) -> cst.CSTNode:
    """``node`` with each statement, block or clause inside it passed through ``rebuild``."""
    changes = {}
    for item in dataclasses.fields(node):
        value = getattr(node, item.name)
        if isinstance(value, tuple | list):
            new = [rebuild(v) if isinstance(v, cst.CSTNode) else v for v in value]
            new = [v for v in new if not isinstance(v, cst.RemovalSentinel)]
            if any(a is not b for a, b in zip(new, value, strict=False)) or len(new) != len(value):
                changes[item.name] = new
        elif isinstance(value, cst.CSTNode):
            new = rebuild(value)
            if new is not value:
                changes[item.name] = new
    return node.with_changes(**changes) if changes else node


def _missing_imports(module: cst.Module, wanted: dict[tuple[str, str], None]) -> list[cst.SimpleStatementLine]:
    """``from module import name`` statements for the wanted names the module's top level does not import yet."""
    have: set[tuple[str | None, str]] = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    source = cst_dotted(small.module) if small.module is not None else None
                    have.update((source, cst_dotted(alias.name) or "") for alias in small.names if alias.asname is None)
    return [_import_line(mod, name) for mod, name in wanted if (mod, name) not in have]


def _import_line(module: str, name: str) -> cst.SimpleStatementLine:
    """``from module import name`` as a statement line."""
    line = cst.parse_statement(f"from {module} import {name}\n")
    assert isinstance(line, cst.SimpleStatementLine)  # an import is a simple statement
    return line


def _import_index(module: cst.Module, before: int) -> int:
    """Where new imports go: after the last top-level import that precedes the statement at index ``before``
    (the first one edited), so the import runs before the class that needs it, after any ``sys.path`` set-up
    between imports; after the module's docstring when no import precedes it."""
    index = 1 if module.body and _is_docstring(module.body[0]) else 0
    for i, statement in enumerate(module.body[:before]):
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Import | cst.ImportFrom) for small in statement.body
        ):
            index = i + 1
    return index


def _import_blocks(module: cst.Module, before: int) -> list[list[tuple[int, str, str | None]]]:
    """The top-level imports before the statement at index ``before``, in blocks: a blank line, a comment (a
    notebook's cell boundary, an IPython line such as ``!pip install``, a section's title) or any other statement
    (``sys.path`` set-up) ends a block. Each import is ``(index, top-level package, module of a ``from`` import or
    None)``; a relative import's package is ``""``, and ``__future__`` imports are left out."""
    blocks: list[list[tuple[int, str, str | None]]] = []
    current: list[tuple[int, str, str | None]] | None = None
    for index, statement in enumerate(module.body[:before]):
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if not isinstance(small, cst.Import | cst.ImportFrom):
            current = None
            continue
        if current is None or statement.leading_lines:
            current = []
            blocks.append(current)
        if isinstance(small, cst.ImportFrom):
            name = cst_dotted(small.module) if small.module is not None and not small.relative else None
            top = name.split(".")[0] if name else ""
        else:
            top, name = (cst_dotted(small.names[0].name) or "").split(".")[0], None
        if top != "__future__":
            current.append((index, top, name))
    return [block for block in blocks if block]


def _import_place(module: cst.Module, before: int, statement: cst.SimpleStatementLine) -> tuple[int, bool, bool]:
    """Where a new import (``from <module> import <name>``) goes, as isort and ruff's ``I`` rules sort it, and never
    before what makes its package importable: ``(index of the statement to insert before, whether a blank line
    separates them, whether it goes below that statement's comments)``.

    A standard-library module joins the block of standard-library imports (or goes before the first import, a blank
    line after it: another section follows). Any other module joins the block of the first import of its own
    top-level package (``lightning``, ``pytorch_lightning``), after that import: a ``sys.path`` set-up or a
    notebook's ``!pip install`` before it ends a block. In the block, it goes before the first later ``from``
    import whose module sorts after its own, else after the block's last import. Without such a block (the package
    imported in a ``try``, say), it goes after the last import, as :func:`_import_index` says. Before an import, it
    goes below that import's comments (a notebook's cell boundary among them)."""
    fallback = _import_index(module, before), False, False
    small = statement.body[0]
    if not isinstance(small, cst.ImportFrom) or small.module is None:
        return fallback
    wanted = cst_dotted(small.module) or ""
    top = wanted.split(".")[0]
    blocks = _import_blocks(module, before)
    if top in sys.stdlib_module_names:
        block = next((b for b in blocks if all(package in sys.stdlib_module_names for _, package, _ in b)), None)
        if block is None:
            return (blocks[0][0][0], True, True) if blocks else fallback
        after = block[0][0] - 1
    else:
        block = next((b for b in blocks if any(package == top for _, package, _ in b)), None)
        if block is None:
            return fallback
        after = next(index for index, package, _ in block if package == top)  # the import that brings the package
    later = [i for i, _, name in block if i > after and name is not None and name.lower() > wanted.lower()]
    if later:
        return later[0], False, True
    return block[-1][0] + 1, False, False


def _is_docstring(statement: cst.BaseStatement) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0]
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString | cst.ConcatenatedString)


def _with_imports(module: cst.Module, imports: list[cst.SimpleStatementLine], before: int) -> cst.Module:
    """``module`` with each of ``imports`` where :func:`_import_place` puts it (``before``: as there)."""
    body = list(module.body)
    for (index, blank, below), group in sorted(_grouped(module, before, imports).items(), reverse=True):
        if below:  # the comments above that import stay above the new ones
            following = body[index]
            group[0] = group[0].with_changes(leading_lines=following.leading_lines)
            body[index] = following.with_changes(leading_lines=[cst.EmptyLine()] if blank else [])
        body[index:index] = group
    return module.with_changes(body=body)


def _grouped(
    module: cst.Module, before: int, imports: list[cst.SimpleStatementLine]
) -> dict[tuple[int, bool, bool], list[cst.SimpleStatementLine]]:
    """The new imports by where :func:`_import_place` puts them, each place's sorted by module as isort sorts
    ``from`` imports (case aside), so that two imports going to one place read as one sorted block."""
    groups: dict[tuple[int, bool, bool], list[cst.SimpleStatementLine]] = {}
    for statement in imports:
        groups.setdefault(_import_place(module, before, statement), []).append(statement)
    for group in groups.values():
        group.sort(key=lambda s: module.code_for_node(s).lower())
    return groups


def _splice(
    module: cst.Module,
    starts: dict[int, int],
    text: str,
    new_top: dict[int, Applied],
    imports: list[cst.SimpleStatementLine],
    before: int,
) -> str | None:
    """``text`` with the code of each changed top-level statement replaced by its new code, and the new imports
    inserted; ``None`` when a statement's old code is not where it should be (then the whole module is written)."""
    lines = split_lines(text)
    ends = [starts.get(id(s), 0) for s in module.body[1:]] + [len(lines) + 1 - len(module.footer)]
    pieces = []  # (first line, last line + 1, new text), in file order
    for statement, last in zip(module.body, ends, strict=True):
        if id(statement) not in new_top:
            continue
        # a statement's code runs up to the next one's (its own comments and blank lines before that included)
        first = starts.get(id(statement), 0)
        decorated = first + len(statement.leading_lines)
        if not 0 < first < last or not re.match(
            r"\s*(@|class\b)", lines[decorated - 1] if decorated <= len(lines) else ""
        ):
            return None
        new = new_top[id(statement)]
        parts = (
            [] if isinstance(new, cst.RemovalSentinel) else new.nodes if isinstance(new, cst.FlattenSentinel) else [new]
        )
        pieces.append((first, last, "".join(module.code_for_node(part) for part in parts)))
    for (index, blank, below), group in _grouped(module, before, imports).items():
        at = starts.get(id(module.body[index])) if index < len(module.body) else len(lines) + 1
        if below and at is not None:  # below the comments above that import
            at += len(module.body[index].leading_lines)
        if at is None or at < 1:
            return None
        code = "".join(module.code_for_node(statement) for statement in group)
        pieces.append((at, at, code + (module.default_newline if blank else "")))
    pieces.sort(key=lambda piece: (piece[0], piece[1] != piece[0]))
    out: list[str] = []
    at = 1
    for first, last, code in pieces:
        out.append("".join(lines[at - 1 : first - 1]))
        out.append(code)
        at = last
    out.append("".join(lines[at - 1 :]))
    result = "".join(out)
    if text and not text.endswith(("\n", "\r")) and result.endswith("\n"):
        result = result[: -len(module.default_newline)] if result.endswith(module.default_newline) else result[:-1]
    return result
