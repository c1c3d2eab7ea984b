"""LM009: an import of a name (or a module) of ``pytorch_lightning`` that Lightning 2.x no longer has, so the file
fails to import before any hook runs."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

import libcst as cst

from lightning_migrate.checker import lightning_names
from lightning_migrate.checker.base import SAFE, Finding, Fix, Rule, manual_fix


@functools.cache
def table() -> dict:
    """The recorded table of removed names (:mod:`lightning_migrate.checker.lightning_names`)."""
    return lightning_names.load()


class RemovedImports(Rule):
    code = "LM009"
    name = "removed-imports"
    title = "imports of names and modules of pytorch_lightning that 2.x removed"
    #: not a hook rule: the core asks it about the file's imports (:meth:`check_imports`)
    owners = frozenset()
    summary = (
        "``from pytorch_lightning.<module> import <name>`` (or ``import pytorch_lightning.<module>``) where the "
        "last 1.x release binds the name (or has the module) and the installed 2.x release does not: the import "
        "raises before any hook runs. Both lists are recorded by importing every module of each release in its own "
        "environment, not typed: a public name is one the module's ``__all__`` lists, a class or function of "
        "Lightning, or a value assigned in the module (``EPOCH_OUTPUT``)."
    )
    fix_text = (
        "**safe** when every name the statement imports was moved: the same class or function is bound by a module "
        "of 2.x (its own module, or a package above it): the statement imports it from there. **manual** "
        "otherwise (a value such as ``EPOCH_OUTPUT`` that 2.x dropped, a statement that also imports names still "
        "there): a marker names what is gone."
    )
    example = """\
from pytorch_lightning.loops.utilities import recursive_detach


def detached(outputs):
    return recursive_detach(outputs)
"""
    #: a file that imports such a name names the package (the byte prefilter)
    name_fragments = ("pytorch_lightning",)

    def check_imports(self, tree: ast.Module) -> Iterator[tuple[int, Finding]]:
        """``(index of the top-level statement or -1 for a nested one, finding)`` for each import of a removed
        name or module, in source order."""
        data = table()
        removed, gone = data["removed"], set(data["modules_removed"])
        versions = f"Lightning {data['old']} has it, {data['new']} does not"
        guarded = _guarded(tree)
        for index, statement in enumerate(tree.body):
            for node in ast.walk(statement) if not isinstance(statement, ast.Import | ast.ImportFrom) else [statement]:
                where = index if node is statement else -1
                if id(node) in guarded:
                    continue  # `try: ... except ImportError:` -- the file handles the import failing
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [a.name for a in node.names if a.name != "*"]
                    known = removed.get(node.module, {})
                    missing = {n: known.get(n) for n in names if n in known or node.module in gone}
                    if not missing:
                        continue
                    shown = ", ".join(f"`{n}`" for n in missing)
                    message = f"{shown} of `{node.module}`: {versions}; the import raises ImportError"
                    targets = set(missing.values())
                    if len(missing) == len(names) and len(targets) == 1 and None not in targets:
                        [target] = targets
                        message += f"; import it from `{target}`"
                        fix = Fix(SAFE, _from(target), description=f"import from {target}", changes_callers=False)
                    else:
                        moved = [f"import {n} from {t}" for n, t in missing.items() if t]
                        dropped = [n for n, t in missing.items() if not t]
                        if dropped:
                            moved.append(f"{', '.join(dropped)} has no replacement: drop it")
                        fix = manual_fix(self.code, f"gone in {data['new']}: {'; '.join(moved)}")
                    yield where, Finding(self.code, message, (), line=node.lineno, col=node.col_offset + 1, fix=fix)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name in gone:
                            message = f"module `{alias.name}`: {versions}; the import raises ImportError"
                            fix = manual_fix(self.code, f"module {alias.name} is gone in {data['new']}")
                            finding = Finding(self.code, message, (), line=node.lineno, col=node.col_offset + 1)
                            finding.fix = fix
                            yield where, finding


#: The exceptions a ``try`` may catch to handle an import that fails.
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _guarded(tree: ast.Module) -> set[int]:
    """The ids of the imports in the body of a ``try`` whose handlers catch an import error (or everything)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        caught = set()
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught |= {"BaseException" if t is None else getattr(t, "id", getattr(t, "attr", "")) for t in types}
        if caught & _IMPORT_ERRORS:
            guarded |= {id(n) for s in node.body for n in ast.walk(s) if isinstance(n, ast.Import | ast.ImportFrom)}
    return guarded


def _from(target: str):
    """An ``apply`` that makes a ``from ... import`` statement line import from ``target``."""

    def apply(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.SimpleStatementLine)
        [small] = node.body
        assert isinstance(small, cst.ImportFrom)
        module = cst.parse_expression(target)
        return node.with_changes(body=[small.with_changes(module=module)])

    return apply
