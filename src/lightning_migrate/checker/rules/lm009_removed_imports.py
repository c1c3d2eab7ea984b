"""LM009: an import of a name (or a module) of ``pytorch_lightning`` that Lightning 2.x no longer has, so the file
fails to import before any hook runs."""

from __future__ import annotations

import ast
import copy
import functools
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from lightning_migrate.checker import lightning_names
from lightning_migrate.checker.base import MODULE, SAFE, UNSAFE, Finding, Fix, Rule, manual_fix, nodes_of
from lightning_migrate.checker.resolve import dotted

#: The ``lightning`` package's copy of ``pytorch_lightning`` (``lightning.pytorch``, 1.9 on): the same modules and
#: names under another prefix. LM009's records are of ``pytorch_lightning``; an import from here is looked up there.
MIRROR = "lightning.pytorch"


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
        "last 1.x release binds the name (or has the module) and the installed 2.x release does not bind it at all "
        "(a name that module merely imports still imports from it): the import raises before any hook runs.\n\n"
        "- Code written for an older 1.x release is covered too: a module or name that release had and the last "
        "1.x release had already dropped (``pytorch_lightning.core.lightning``) is reported the same way, naming "
        "that release.\n"
        "- The lists are recorded by importing every module of each release in its own environment, not "
        "typed: a public name is one the module's ``__all__`` lists, a class or function of "
        "Lightning, or a value assigned in the module (``EPOCH_OUTPUT``).\n"
        "- Not reported: an import in a ``try`` that "
        "catches ``ImportError`` (the file handles it), in the handler of a ``try`` whose body imports only names "
        "the installed release binds (that handler never runs), or in the branch a release flag keeps for older "
        "releases (the ``else`` of ``if _PL_GREATER_EQUAL_1_6_0:``).\n"
        "- An import under ``if TYPE_CHECKING:`` "
        "is reported as one only a type checker reads, which then finds no such name.\n"
        f"- An import from ``{MIRROR}`` (the ``lightning`` package's copy of ``pytorch_lightning``) is looked up as "
        "the same import from ``pytorch_lightning`` and reported with a marker: the fixes name "
        "``pytorch_lightning``'s modules.\n"
        "- A removed name read as an attribute of the package or of one of its modules "
        "(``pl.utilities.types.EPOCH_OUTPUT`` in an annotation) is reported too, without a fix: reading it fails "
        "where the code runs (at the ``def``, for an annotation the file does not postpone).\n"
    )
    fix_text = (
        "- **safe** when every name the statement imports was moved: the same class or function is bound by a "
        "module of 2.x (its own module, or a package above it): the statement imports it from there. Likewise when "
        "the old release itself exported the same object from another module that 2.x still binds the name in (its "
        f"own module, or a package above: ``pytorch_lightning.core.lightning.{MODULE}`` is imported from "
        "``pytorch_lightning``): on the old release the import binds the same object as before. A name that moved "
        "beside names still there: the statement keeps those and the moved one joins the imports.\n"
        "- A name the old "
        "module assigned as a value (``EPOCH_OUTPUT``), whose recorded definition uses only names the installed "
        "release or the standard library bind, is defined in the file as recorded, below its imports, with the "
        "imports it needs (``EPOCH_OUTPUT = List[STEP_OUTPUT]``, ``STEP_OUTPUT`` from its new module); the "
        "statement keeps its other names. That is **safe** where the file reads the name only in annotations (or "
        "the definition uses no Lightning name), **unsafe** otherwise: its value then rests on the installed "
        "release's definitions of the names it uses.\n"
        "- A function the recorded listing of the old module shows as a deprecation shim "
        "(``seed_everything`` of ``pytorch_lightning.utilities.seed``) is imported from the replacement its "
        "deprecation message names, recorded by calling the shim there, where that replacement takes every call "
        "the shim took on the installed release: **safe** when the shim only handed its arguments to it and the "
        "file only calls the name (or decorates with it), **unsafe** otherwise (a shim that did more, a name the "
        "file reads as an object).\n"
        "- A name that has a tombstone in a recorded listing (its message, recorded by calling the class or "
        "function in its place: ``pytorch_lightning.loggers.base.LightningLoggerBase``) is imported from the "
        "replacement its message names, under the name the file binds (``Logger as LightningLoggerBase``), where "
        "the installed release "
        "binds it: **safe** where the file reads the name only in annotations, **unsafe** otherwise (another "
        "class).\n"
        "- **manual** for the rest (a class with no counterpart in the recorded listing of the "
        "installed release, such as ``TrainingStep``; a name the definition needs that the file binds otherwise; "
        "a shim whose message names no drop-in): a marker names what is missing, with the shim's message. A class or "
        "function the installed release defines elsewhere under the same name, in another module than the old "
        "release defined it in, is not shown to be the same object: the marker names where the installed release "
        "defines it, and the statement is left to the user.\n"
    )
    example = """\
from pytorch_lightning.loops.utilities import recursive_detach


def detached(outputs):
    return recursive_detach(outputs)
"""
    #: a file that imports such a name names the package (the byte prefilter)
    name_fragments = ("pytorch_lightning", MIRROR)

    def check_imports(self, tree: ast.Module) -> Iterator[tuple[int, Finding]]:
        """``(index of the top-level statement or -1 for a nested one, finding)`` for each import of a removed
        name or module, in source order; an import from :data:`MIRROR` (``from lightning.pytorch.callbacks import
        ...``) is looked up as the same import from the recorded package, and reported with a marker, not fixed:
        the fixes name the recorded package's modules."""
        data = table()
        translated, mirrored = _as_recorded(tree, data["package"])
        found = list(self._check_imports(translated, data))
        for _, finding in found:
            if (finding.line, finding.col) in mirrored:
                finding.message = _mirrored_text(finding.message, data["package"])
                why = "an import of the `lightning` package" if finding.fix is None else finding.fix.description
                finding.fix = manual_fix(self.code, f"{_mirrored_text(why, data['package'])}: fix by hand")
        found += [(-1, finding) for finding in self._attribute_uses(tree, data)]
        found.sort(key=lambda item: (item[1].line, item[1].col))
        yield from found

    def _attribute_uses(self, tree: ast.Module, data: dict) -> Iterator[Finding]:
        """A removed name read as an attribute of the package (``pl.utilities.types.EPOCH_OUTPUT``, the package
        imported as ``pl``, or a module of it imported as itself or under an alias): the attribute access raises
        ``AttributeError`` where it runs -- at the ``def`` for an annotation, unless the file postpones annotations
        (``from __future__ import annotations``: then only a type checker reads it). Reported with what the marker of
        its import would say, and no fix."""
        package, removed = data["package"], data["removed"]
        aliases = _package_aliases(tree, package)
        if not aliases:
            return
        postponed = any(
            isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations" for a in s.names)
            for s in tree.body
        )
        annotations = _annotation_nodes(tree) if postponed else set()
        for node in nodes_of(tree):
            if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
                continue
            dotted_name = dotted(node)
            if dotted_name is None or dotted_name.split(".")[0] not in aliases:
                continue
            head, _, rest = dotted_name.partition(".")
            full = aliases[head] + ("." + rest if rest else "")
            module, _, name = full.rpartition(".")
            if name not in removed.get(module, {}):
                continue
            target = removed[module][name]
            said = _shim(data, module, name)
            message = (
                f"`{name}` of `{module}`, read as `{dotted_name}`: {_versions(data, {_release(data, module, name)})}; "
            )
            message += (
                "only a type checker reads it (the file postpones annotations), which then finds no such name"
                if id(node) in annotations
                else "reading it fails where it runs: the module has no such attribute"
            )
            if target:
                message += f"; import it from `{target}`"
            elif said:
                message += f"; {_had(said, data)} said: {said['message']}"
            elif name in data.get("definitions", {}).get(module, {}):
                message += f"; define `{name}` as {_had(data['definitions'][module][name], data)} did"
            else:
                message += (
                    f"; no name of {data['new']} is recorded as its replacement; look it up in Lightning's CHANGELOG"
                )
            yield Finding(self.code, message, (), line=node.lineno, col=node.col_offset + 1)

    def _check_imports(self, tree: ast.Module, data: dict) -> Iterator[tuple[int, Finding]]:
        """:meth:`check_imports` of a tree whose imports name the recorded package."""
        removed, gone = data["removed"], set(data["modules_removed"])
        guarded = _guarded(tree)
        dead = _fallbacks(tree, removed, gone) | _older_release_branches(tree, data["old"])
        typing_only = _type_checking_branches(tree)
        for index, statement in enumerate(tree.body):
            for node in ast.walk(statement) if not isinstance(statement, ast.Import | ast.ImportFrom) else [statement]:
                where = index if node is statement else -1
                if id(node) in guarded:
                    continue  # `try: ... except ImportError:` -- the file handles the import failing
                if id(node) in dead:
                    continue  # a fallback or a branch for older releases: it does not run on 2.x
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [a.name for a in node.names if a.name != "*"]
                    known = removed.get(node.module, {})
                    missing = {n: known.get(n) for n in names if n in known or node.module in gone}
                    if not missing:
                        continue
                    shown = ", ".join(f"`{n}`" for n in missing)
                    versions = _versions(data, {_release(data, node.module, n) for n in missing})
                    message = f"{shown} of `{node.module}`: {versions}; " + (
                        TYPING_ONLY if id(node) in typing_only else "the import raises ImportError"
                    )
                    targets = set(missing.values())
                    defined = _definitions(data, node, missing)
                    shims = _replacements(tree, node, missing, data)
                    if len(missing) == len(names) and len(targets) == 1 and None not in targets:
                        [target] = targets
                        message += f"; import it from `{target}`"
                        exported = data.get("exported", {}).get(node.module, {})
                        if any(n in exported for n in missing):
                            releases = " and ".join(sorted({_release(data, node.module, n) for n in exported}))
                            kept = f"{data['new']} still has the name"
                            message += f", where {releases} exported the same object and {kept}"
                        fix = Fix(SAFE, _from(target), description=f"import from {target}", changes_callers=False)
                    elif shims is not None and (where != -1 or _one_module(shims, len(missing) == len(names))):
                        message += "; " + "; ".join(
                            f"{shim.release} said: {shim.message}"
                            if shim.message
                            else f"import it from `{shim.module}`"
                            for shim in shims.values()
                        )
                        fix = _replacement_fix(node, shims, len(missing) == len(names))
                    elif defined is not None and where != -1:
                        message += "; " + ", ".join(f"define `{n}` as {_had(d, data)} did" for n, d in defined.items())
                        fix = _definition_fix(tree, index, node, missing, defined, data) or manual_fix(
                            self.code, f"gone in {data['new']}: define {', '.join(defined)} by hand"
                        )
                    else:
                        moved = [f"import {n} from {t}" for n, t in missing.items() if t]
                        said = {n: _shim(data, node.module, n) for n, t in missing.items() if not t}
                        namesakes = data.get("namesakes", {}).get(node.module, {})
                        dropped = [n for n, shim in said.items() if shim is None and n not in namesakes]
                        if dropped:
                            moved.append(
                                f"{', '.join(dropped)}: no name of {data['new']} is recorded as "
                                f"{'its' if len(dropped) == 1 else 'their'} replacement; look "
                                f"{'it' if len(dropped) == 1 else 'them'} up in Lightning's CHANGELOG"
                            )
                        moved += [
                            f"{data['new']} defines a {n} in {', '.join(namesakes[n])}, not shown to be "
                            f"{_release(data, node.module, n)}'s: import it from there if it is the one meant"
                            for n, shim in said.items()
                            if shim is None and n in namesakes
                        ]
                        moved += [f"{_had(shim, data)} said: {shim['message']}" for shim in said.values() if shim]
                        message += "".join(
                            f"; {_had(shim, data)} said: {shim['message']}" for shim in said.values() if shim
                        )
                        if where == -1:  # a nested import gets no marker (_settle_imports): the message says it
                            message += "".join(f"; {item}" for item in moved if item not in message)
                        fix = manual_fix(self.code, f"gone in {data['new']}: {'; '.join(moved)}")
                    yield where, Finding(self.code, message, (), line=node.lineno, col=node.col_offset + 1, fix=fix)
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name in gone:
                            versions = _versions(data, {data.get("modules_had", {}).get(alias.name, data["old"])})
                            message = f"module `{alias.name}`: {versions}; " + (
                                TYPING_ONLY if id(node) in typing_only else "the import raises ImportError"
                            )
                            fix = manual_fix(self.code, f"module {alias.name}: not in {data['new']}'s recorded modules")
                            finding = Finding(self.code, message, (), line=node.lineno, col=node.col_offset + 1)
                            finding.fix = fix
                            yield where, finding


def _as_recorded(tree: ast.Module, package: str) -> tuple[ast.Module, set[tuple[int, int]]]:
    """``tree`` with every import from :data:`MIRROR` made an import from ``package`` (a copy; ``tree`` itself when
    there is none), and the ``(line, column)`` (1-based column) of each such import."""
    mirrored = set()
    for node in nodes_of(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and _mirrors(node.module):
            mirrored.add((node.lineno, node.col_offset + 1))
    if not mirrored:
        return tree, mirrored
    recorded = copy.deepcopy(tree)
    for node in ast.walk(recorded):
        if isinstance(node, ast.ImportFrom) and not node.level and _mirrors(node.module):
            node.module = package + (node.module or "")[len(MIRROR) :]
    return recorded, mirrored


def _mirrors(module: str | None) -> bool:
    return module is not None and (module == MIRROR or module.startswith(MIRROR + "."))


def _mirrored_text(text: str, package: str) -> str:
    """``text`` naming :data:`MIRROR`'s modules where it names ``package``'s (``pytorch_lightning.x`` ->
    ``lightning.pytorch.x``)."""
    return re.sub(rf"(?<![\w.]){re.escape(package)}(?=[.`\s]|$)", MIRROR, text)


def _package_aliases(tree: ast.Module, package: str) -> dict[str, str]:
    """``{bound name: dotted module}`` for each import of ``package`` or one of its modules (or of :data:`MIRROR`'s,
    looked up as ``package``'s): ``import pytorch_lightning as pl`` binds ``pl``, ``import pytorch_lightning.utilities
    .types`` binds ``pytorch_lightning``, ``from pytorch_lightning.utilities import types`` binds ``types``."""
    found = {}

    def recorded(module: str) -> str | None:
        if module == package or module.startswith(package + "."):
            return module
        return package + module[len(MIRROR) :] if _mirrors(module) else None

    for node in nodes_of(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = recorded(alias.name)
                if module is not None:
                    if alias.asname:
                        found[alias.asname] = module
                    elif module == alias.name:
                        found[alias.name.split(".")[0]] = package
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = recorded(node.module)
            for alias in node.names if module is not None else []:
                found[alias.asname or alias.name] = f"{module}.{alias.name}"
    return found


def _annotation_nodes(tree: ast.Module) -> set[int]:
    """The ids of every node inside an annotation (a parameter's, a return's, an annotated assignment's)."""
    roots: list[ast.expr] = []
    for node in nodes_of(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(inner) for root in roots for inner in ast.walk(root)}


def _release(data: dict, module: str, name: str) -> str:
    """The newest recorded 1.x release that had ``name`` in ``module`` (or the module, for a name the records never
    saw in a module that is gone): the newest, unless only an older one had it
    (:func:`~lightning_migrate.checker.lightning_names.compare_releases`)."""
    had = data.get("had", {}).get(module, {}).get(name)
    return had or data.get("modules_had", {}).get(module) or data["old"]


def _had(entry: dict, data: dict) -> str:
    """The release a recorded definition or shim is of: its ``"release"``, or the newest 1.x release."""
    return entry.get("release") or data["old"]


def _versions(data: dict, releases: set[str]) -> str:
    """``Lightning 1.4.9 has it, 2.6.6 does not``, from the recorded versions."""
    order = data.get("releases", [data["old"]])
    shown = sorted(releases, key=lambda r: order.index(r) if r in order else len(order))
    if len(shown) == 1:
        return f"Lightning {shown[0]} has it, {data['new']} does not"
    return f"Lightning {' and '.join(shown)} have them, {data['new']} does not"


#: The exceptions a ``try`` may catch to handle an import that fails.
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _guarded(tree: ast.Module) -> set[int]:
    """The ids of the imports in the body of a ``try`` whose handlers catch an import error (or everything)."""
    guarded: set[int] = set()
    for node in nodes_of(tree):
        if not isinstance(node, ast.Try | ast.TryStar):
            continue
        caught = set()
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught |= {"BaseException" if t is None else getattr(t, "id", getattr(t, "attr", "")) for t in types}
        if caught & _IMPORT_ERRORS:
            guarded |= {id(n) for s in node.body for n in ast.walk(s) if isinstance(n, ast.Import | ast.ImportFrom)}
    return guarded


def _lightning_import_kept(node: ast.stmt, removed: dict, gone: set[str]) -> bool:
    """Whether ``node`` imports only from ``pytorch_lightning`` and nothing the table says 2.x removed."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return (
            not node.level
            and module.split(".")[0] == "pytorch_lightning"
            and module not in gone
            and not any(alias.name in removed.get(module, {}) for alias in node.names)
        )
    if isinstance(node, ast.Import):
        return all(a.name.split(".")[0] == "pytorch_lightning" and a.name not in gone for a in node.names)
    return False


#: What an import under ``if TYPE_CHECKING:`` does when it names what 2.x removed: nothing at run time.
TYPING_ONLY = "it runs only for a type checker (`if TYPE_CHECKING:`), which then finds no such name"


def _type_checking_branches(tree: ast.Module) -> set[int]:
    """The ids of the imports in the body of ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``, ``if TYPE_CHECKING
    and X:``) and in the ``else`` of ``if not TYPE_CHECKING:``: Python never runs them, a type checker reads them."""
    found: set[int] = set()
    for node, test, negated in _if_tests(tree):
        if negated and _is_type_checking(test):
            found |= _imports_in(node.orelse)
        elif not negated and (
            _is_type_checking(test)
            or isinstance(test, ast.BoolOp)
            and isinstance(test.op, ast.And)
            and any(map(_is_type_checking, test.values))
        ):
            found |= _imports_in(node.body)
    return found


def _if_tests(tree: ast.Module) -> Iterator[tuple[ast.If, ast.expr, bool]]:
    """Each ``if`` of the file with its test, a leading ``not`` taken off: ``(node, test, negated)``."""
    for node in nodes_of(tree):
        if isinstance(node, ast.If):
            test, negated = node.test, False
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, negated = test.operand, True
            yield node, test, negated


def _is_type_checking(test: ast.expr) -> bool:
    """Whether ``test`` is ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``, ``t.TYPE_CHECKING``)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_in(statements: list[ast.stmt]) -> set[int]:
    """The ids of the import statements in ``statements``, nested ones included."""
    return {id(n) for s in statements for n in ast.walk(s) if isinstance(n, ast.Import | ast.ImportFrom)}


def _fallbacks(tree: ast.Module, removed: dict, gone: set[str]) -> set[int]:
    """The ids of the imports in the handlers of a ``try`` that catches an import error and whose body only
    imports ``pytorch_lightning`` names 2.x kept (``try: from pytorch_lightning.utilities.rank_zero import
    rank_zero_info`` / ``except ModuleNotFoundError: from pytorch_lightning.utilities.distributed import ...``):
    the body imports on 2.x, so the handler, the older releases' way, never runs there. A body that imports a name
    of another package, or one the table lists, may fail: its handlers' imports are checked as any other."""
    found: set[int] = set()
    for node in nodes_of(tree):
        if not isinstance(node, ast.Try | ast.TryStar) or not node.body:
            continue
        if not all(_lightning_import_kept(statement, removed, gone) for statement in node.body):
            continue
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught = {"BaseException" if t is None else getattr(t, "id", getattr(t, "attr", "")) for t in types}
            if caught & _IMPORT_ERRORS:
                found |= _imports_in(handler.body)
    return found


#: A flag that says the installed ``pytorch_lightning`` is at least a release, as projects name it after
#: Lightning's own ``_TORCH_GREATER_EQUAL_1_12`` (lightning-flash: ``_PL_GREATER_EQUAL_1_6_0 =
#: compare_version("pytorch_lightning", operator.ge, "1.6.0")``).
_RELEASE_FLAG = re.compile(r"_?(?:PL|PYTORCH_LIGHTNING)_(?:GREATER_EQUAL|GE)_(\d+)_(\d+)(?:_(\d+))?")


def _older_release_branches(tree: ast.Module, old: str) -> set[int]:
    """The ids of the imports in a branch that runs only before a release no later than ``old`` (the last 1.x
    release): the ``else`` of ``if _PL_GREATER_EQUAL_1_6_0:``, the body of ``if not _PL_GREATER_EQUAL_1_6_0:``.
    2.x is newer, so the flag is true there and the branch never runs."""
    newest = tuple(int(part) for part in old.split("."))
    found: set[int] = set()
    for node, test, negated in _if_tests(tree):
        name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
        match = _RELEASE_FLAG.fullmatch(name)
        if match is None or tuple(int(part or 0) for part in match.groups()) > newest:
            continue
        branch = node.body if negated else node.orelse
        found |= _imports_in(branch)
    return found


def _shim(data: dict, module: str, name: str) -> dict | None:
    """The recorded deprecation shim ``module.name`` of the last 1.x release (``{"message", "replacement",
    "drop_in", "forwards"}``: :func:`~lightning_migrate.checker.lightning_names.compare`), else the tombstone a 1.x
    release left in its place (its message; never a drop-in), or ``None``."""
    found = data.get("deprecated", {}).get(module, {}).get(name)
    return found if found is not None else data.get("tombstones", {}).get(module, {}).get(name)


@dataclass(frozen=True)
class _Replacement:
    """Where a removed name of an import statement is imported from instead, and how safely."""

    module: str
    tier: str
    #: the shim's deprecation message (empty for a name that moved: the same object elsewhere)
    message: str = ""
    risk: str = ""
    #: the release whose shim the message is
    release: str = ""
    #: the name imported instead, where a tombstone's message names another (``Logger`` for ``LightningLoggerBase``)
    name: str = ""


def _replacements(
    tree: ast.Module, node: ast.ImportFrom, missing: dict[str, str | None], data: dict
) -> dict[str, _Replacement] | None:
    """For a statement whose every removed name moved (``safe``: the same object elsewhere) or was a deprecation
    shim of the last 1.x release whose message names a replacement that is a drop-in on 2.x
    (:func:`~lightning_migrate.checker.lightning_names.drop_in`), under the same name: ``{name: replacement}``;
    ``None`` otherwise.

    A shim's replacement is ``safe`` when the shim did nothing but warn and hand every argument to that very object,
    and the file only calls the name (or decorates with it): its value is then the replacement's in effect. It is
    ``unsafe`` otherwise: a shim that did more (``apply_to_collection`` turned a ``ValueError`` into another
    exception), or a name the file reads otherwise (``rank_zero_only.rank``: the shim had no such attribute)."""
    found: dict[str, _Replacement] = {}
    for alias in node.names:
        target = missing.get(alias.name, "")
        if target == "":
            continue  # still there
        if target is not None:
            found[alias.name] = _Replacement(target, SAFE)
            continue
        shim = _shim(data, node.module or "", alias.name)
        bound = alias.asname or alias.name
        if shim is not None and shim.get("tombstone") and shim["replacement"]:
            module, _, name = shim["replacement"].rpartition(".")
            risk = (
                ""
                if _annotations_only(tree, bound, node)
                else f"the file reads `{bound}` outside annotations, and `{shim['replacement']}` is another class"
            )
            tier = UNSAFE if risk else SAFE
            found[alias.name] = _Replacement(module, tier, shim["message"], risk, _had(shim, data), name)
            continue
        if shim is None or not shim["replacement"] or not shim["drop_in"]:
            return None
        module, _, name = shim["replacement"].rpartition(".")
        if name != alias.name:
            return None
        risks = []
        if not shim["forwards"]:
            risks.append(
                f"{_had(shim, data)}'s `{alias.name}` did more than hand its arguments to `{shim['replacement']}`"
            )
        if not _only_called(tree, bound, node):
            risks.append(
                f"the file uses `{bound}` otherwise than calling it, and {_had(shim, data)}'s was another object"
            )
        tier = UNSAFE if risks else SAFE
        found[alias.name] = _Replacement(module, tier, shim["message"], "; ".join(risks), _had(shim, data))
    return found


def _one_module(found: dict[str, _Replacement], every_name: bool) -> bool:
    """Whether the statement can be fixed in place: every name it imports goes to one module."""
    return every_name and len({r.module for r in found.values()}) == 1


def _only_called(tree: ast.Module, name: str, statement: ast.ImportFrom) -> bool:
    """Whether ``name`` is read only as what a call calls (``seed_everything(0)``) or as a decorator
    (``@rank_zero_only``), outside ``statement``."""
    allowed = {id(statement)}
    for node in nodes_of(tree):
        if isinstance(node, ast.Call):
            allowed.add(id(node.func))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            allowed |= {id(d) for d in node.decorator_list}
    return all(id(n) in allowed for n in nodes_of(tree) if isinstance(n, ast.Name) and n.id == name)


def _replacement_fix(node: ast.ImportFrom, found: dict[str, _Replacement], every_name: bool) -> Fix:
    """The fix of :func:`_replacements`: the statement imports from the one new module when every name goes
    there; otherwise it keeps its other names and the new imports go with the file's imports (a name imported
    under another name is then left to a marker)."""
    tier = UNSAFE if any(r.tier == UNSAFE for r in found.values()) else SAFE
    risk = "; ".join(r.risk for r in found.values() if r.risk)
    where = ", ".join(sorted({r.module for r in found.values()}))
    renames = {old: r.name for old, r in found.items() if r.name and r.name != old}
    shown = ", ".join(f"{new} as {old}" for old, new in renames.items())
    if _one_module(found, every_name) or (renames and {r.module for r in found.values()} == {node.module}):
        [module] = {r.module for r in found.values()}
        description = f"import from {module}" + (f" ({shown})" if renames else "")
        return Fix(tier, _from(module, renames), description=description, risk=risk, changes_callers=False)
    if renames:
        return manual_fix(RemovedImports.code, f"import {shown} from {where}")
    if any(a.asname for a in node.names if a.name in found):
        return manual_fix(RemovedImports.code, f"import {', '.join(found)} from {where}, under the names used here")
    kept = {a.asname or a.name for a in node.names if a.name not in found}
    return Fix(
        tier,
        _keep_names(kept),
        description=f"import from {where}",
        risk=risk,
        changes_callers=False,
        imports=tuple((r.module, name) for name, r in found.items()),
    )


def _from(target: str, renames: dict[str, str] | None = None):
    """An ``apply`` that makes a ``from ... import`` statement line import from ``target``; ``renames``: ``{old
    name: new name}``, each imported as the name the file binds (``Logger as LightningLoggerBase``)."""

    def apply(node: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(node, cst.SimpleStatementLine)
        [small] = node.body
        assert isinstance(small, cst.ImportFrom)
        module = cst.parse_expression(target)
        changes: dict = {"module": module}
        if renames and not isinstance(small.names, cst.ImportStar):
            changes["names"] = [_renamed(alias, renames) for alias in small.names]
        return node.with_changes(body=[small.with_changes(**changes)])

    return apply


def _renamed(alias: cst.ImportAlias, renames: dict[str, str]) -> cst.ImportAlias:
    """``alias`` importing its new name under the name the file binds, where ``renames`` renames it."""
    old = alias.name.value if isinstance(alias.name, cst.Name) else None
    if old not in renames:
        return alias
    asname = alias.asname or cst.AsName(name=cst.Name(old))
    return alias.with_changes(name=cst.Name(renames[old]), asname=asname)


def _definitions(data: dict, node: ast.ImportFrom, missing: dict[str, str | None]) -> dict[str, dict] | None:
    """For a statement whose every removed name either moved (a replacement) or has a recorded definition 2.x can
    make (``EPOCH_OUTPUT = List[STEP_OUTPUT]``): ``{bound name: definition}`` of the latter (``None`` otherwise, or
    when none is defined)."""
    table = data.get("definitions", {}).get(node.module, {})
    found = {}
    for alias in node.names:
        if alias.name not in missing or missing[alias.name] is not None:
            continue
        if alias.name not in table:
            return None
        found[alias.asname or alias.name] = table[alias.name]
    return found or None


def _top_level_bindings(tree: ast.Module) -> dict[str, list[tuple[int, str | None]]]:
    """Each name the module's top level binds: ``(statement index, "module.name" for a ``from`` import of it under
    its own name, else None)`` per binding."""
    found: dict[str, list[tuple[int, str | None]]] = {}
    for index, statement in enumerate(tree.body):
        if isinstance(statement, ast.ImportFrom) and not statement.level:
            for alias in statement.names:
                what = f"{statement.module}.{alias.name}" if alias.asname is None else None
                found.setdefault(alias.asname or alias.name, []).append((index, what))
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                found.setdefault(alias.asname or alias.name.split(".")[0], []).append((index, None))
        else:
            for node in ast.walk(statement) if not isinstance(statement, ast.FunctionDef | ast.ClassDef) else ():
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    found.setdefault(node.id, []).append((index, None))
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.setdefault(statement.name, []).append((index, None))
    return found


def _annotations_only(tree: ast.Module, name: str, statement: ast.stmt) -> bool:
    """Whether ``name`` is read only in annotations (of parameters, returns and annotated assignments) outside
    ``statement``: where a type alias's value makes no difference when the code runs."""
    annotations = set()
    for node in nodes_of(tree):
        parts: list[ast.AST | None] = []
        if isinstance(node, ast.arg):
            parts = [node.annotation]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            parts = [node.returns]
        elif isinstance(node, ast.AnnAssign):
            parts = [node.annotation]
        annotations |= {id(n) for part in parts if part is not None for n in ast.walk(part)}
    skip = {id(n) for n in ast.walk(statement)}
    return all(
        id(node) in annotations or id(node) in skip
        for node in nodes_of(tree)
        if isinstance(node, ast.Name) and node.id == name
    )


def _definition_fix(
    tree: ast.Module, index: int, node: ast.ImportFrom, missing: dict, defined: dict[str, dict], data: dict
) -> Fix | None:
    """The fix of a statement whose removed names have definitions (:func:`_definitions`): the statement keeps its
    other names (a moved one is imported from its new module), and each definition goes after the file's leading
    imports (``EPOCH_OUTPUT = List[STEP_OUTPUT]``), with the imports it needs. ``safe`` when each defined name is
    read only in annotations or its definition uses no Lightning name (its value is then 1.9.5's); ``unsafe``
    otherwise. ``None`` when a name a definition needs is bound otherwise in the file (the marker says so)."""
    bindings = _top_level_bindings(tree)
    end = index
    while end + 1 < len(tree.body) and isinstance(tree.body[end + 1], ast.Import | ast.ImportFrom):
        end += 1
    imports: list[tuple[str, str]] = []
    for alias in node.names:
        target = missing.get(alias.name)
        if target is not None:
            if alias.asname is not None:
                return None
            imports.append((target, alias.name))
    why = None
    for definition in defined.values():
        for module, name in definition["imports"]:
            found = [b for b in bindings.get(name, []) if b[0] != index]
            stays = name in {a.name for a in node.names if a.asname is None and a.name not in missing}
            if stays and node.module == module:
                continue
            if any(what != f"{module}.{name}" or at > end for at, what in found):
                why = f"`{name}` is another name in this file"
            elif not found:
                imports.append((module, name))
    if why is not None:
        return manual_fix_text(why, data)
    safe = all(
        _annotations_only(tree, bound, node)
        or all(module.split(".")[0] in sys.stdlib_module_names for module, _ in d["imports"])
        for bound, d in defined.items()
    )
    lines = [
        f"{bound} = {d['expression']}  # Lightning {_had(d, data)}'s definition; {data['new']} has none\n"
        for bound, d in defined.items()
    ]
    releases = " and ".join(sorted({_had(d, data) for d in defined.values()}))
    kept = [a for a in node.names if missing.get(a.name, "") == ""]
    return Fix(
        SAFE if safe else UNSAFE,
        _keep_names({a.asname or a.name for a in kept}),
        description="define " + ", ".join(defined),
        risk=f"{', '.join(defined)} would be {releases}'s definition over {data['new']}'s names, which differ, and "
        "the code reads it when it runs",
        changes_callers=False,
        imports=tuple(imports),
        define=tuple(lines),
        define_after=end - index,
    )


def manual_fix_text(why: str, data: dict) -> Fix:
    return manual_fix(RemovedImports.code, f"gone in {data['new']}: {why}")


def _keep_names(kept: set[str]):
    """An ``apply`` that keeps only the ``kept`` names of a ``from ... import`` statement line (removes it when
    none is left)."""

    def apply(node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        assert isinstance(node, cst.SimpleStatementLine)
        [small] = node.body
        assert isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar)
        names = [a for a in small.names if (a.evaluated_alias or a.evaluated_name) in kept]
        if not names:
            return cst.RemovalSentinel.REMOVE
        # the last name takes the old last one's comma: none, or a trailing comma before a closing parenthesis
        names[-1] = names[-1].with_changes(comma=small.names[-1].comma)
        return node.with_changes(body=[small.with_changes(names=names)])

    return apply
