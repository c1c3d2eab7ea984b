"""Which classes are Lightning modules or callbacks: base classes resolved through imports and across files.

Resolution reads files with :mod:`ast` (fast, no formatting kept) and follows a subclass chain through every file of
the checked tree, parsing a file only when a chain reaches it. Nothing is imported: a base class from a package that
is not part of the checked tree and is not Lightning cannot be resolved (it is *unknown*).

Lightning's base classes are recognised by their import path (``pytorch_lightning``, ``lightning.pytorch`` or
``lightning``, any alias) and their name: ``LightningModule``, ``Callback`` and the classes recorded from the
installed Lightning as subclasses of one of them (:mod:`lightning_migrate.hook_names`: the callbacks and the demo
models); any other class imported from a ``callbacks`` package of Lightning is a callback too (a release may have
had callbacks the installed one has not).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lightning_migrate import hook_names, registry

MODULE, CALLBACK = registry.OWNERS
LIGHTNING_ROOTS = frozenset({"pytorch_lightning", "lightning"})
#: Roots whose classes are known not to be Lightning classes (the standard library, torch, numpy).
NOT_LIGHTNING_ROOTS = frozenset(sys.stdlib_module_names) | {"builtins", "torch", "numpy", "typing_extensions"}
BUILTIN_BASES = frozenset({"object", "Exception", "BaseException", "dict", "list", "tuple", "set", "str", "int"})


@functools.cache
def lightning_kinds() -> dict[str, str]:
    """``{class name: "LightningModule" | "Callback"}`` of Lightning's classes, recorded from the installed
    Lightning (:mod:`lightning_migrate.hook_names`)."""
    return dict(hook_names.load()["kinds"])


@dataclass
class Kind:
    """What a class is: ``kind`` is ``"LightningModule"``, ``"Callback"`` or ``None`` (not Lightning, or unknown);
    ``unknown`` is true when some base could not be resolved."""

    kind: str | None
    unknown: bool = False
    #: the Lightning class the chain reaches (``Callback``, ``ModelCheckpoint``, ``LightningModule``, ...)
    via: str | None = None
    #: the Lightning package the chain reaches: ``pytorch_lightning`` or ``lightning``
    root: str | None = None


@dataclass
class ModuleInfo:
    """The names one file binds: ``imports`` (local name -> dotted target) and ``classes`` (name -> base names)."""

    name: str
    imports: dict[str, str] = field(default_factory=dict)
    classes: dict[str, list[str | None]] = field(default_factory=dict)
    #: the line number of each class, to tell classes of the same name apart
    class_lines: dict[tuple[str, int], list[str | None]] = field(default_factory=dict)
    #: dotted modules of ``from M import *``, in file order: a name bound nowhere else may come from one of them
    star_imports: list[str] = field(default_factory=list)
    #: the method names each class defines (names its body assigns included)
    methods: dict[str, set[str]] = field(default_factory=dict)
    #: the names the module binds at its top level (definitions, imports, assignments)
    top_level: set[str] = field(default_factory=set)
    #: the top-level names bound to another name (``LitModel = Classifier``): name -> the dotted name it is bound to
    aliases: dict[str, str] = field(default_factory=dict)


def dotted(node: ast.expr) -> str | None:
    """``a.b.C`` for a Name/Attribute chain (``Generic[T]`` gives ``Generic``); ``None`` for anything else."""
    if isinstance(node, ast.Subscript):
        node = node.value
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def statements(body: list[ast.stmt]):
    """Every statement of ``body`` and of the blocks nested in it (function and class bodies, ``if``, ``for``,
    ``try``, ``with``, ``match``), in source order: the walk that finds imports and classes without visiting
    every expression."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                yield from statements(block)
        for handler in getattr(node, "handlers", ()):
            yield from statements(handler.body)
        for case in getattr(node, "cases", ()):
            yield from statements(case.body)


def class_body_names(node: ast.ClassDef) -> set[str]:
    """The names a class body defines: its methods and the names it assigns (``training_epoch_end = f``)."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names.update(target.id for target in item.targets if isinstance(target, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
            names.add(item.target.id)
    return names


def module_info(tree: ast.Module, name: str, is_package: bool = False) -> ModuleInfo:
    """Collect the imports and class bases of a parsed file whose dotted module name is ``name``."""
    info = ModuleInfo(name)
    package = name if is_package else name.rpartition(".")[0]
    for node in statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    info.imports[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    info.imports[root] = root
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                if alias.name == "*":
                    info.star_imports.append(base)
                else:
                    info.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        elif isinstance(node, ast.ClassDef):
            bases = [dotted(base) for base in node.bases]
            info.classes[node.name] = bases
            info.class_lines[(node.name, node.lineno)] = bases
            info.methods[node.name] = class_body_names(node)
    for node in tree.body:  # the names the module binds at its top level
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            info.top_level.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            info.top_level.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.Assign):
            info.top_level.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
            bound = dotted(node.value) if isinstance(node.value, ast.Name | ast.Attribute) else None
            if bound is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                info.aliases[node.targets[0].id] = bound
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            info.top_level.add(node.target.id)
    return info


class Project:
    """The files being checked, addressable by dotted module name, each parsed with :mod:`ast` at most once.

    A file ``root/a/b.py`` answers to ``a.b`` and ``b`` (every dotted suffix of its path, so ``src/`` layouts and
    checks of a sub-folder both resolve); ``a/__init__.py`` answers to ``a``.
    """

    def __init__(self, files: list[Path], roots: list[Path]):
        self.by_name: dict[str, Path] = {}
        self.name_of: dict[Path, str] = {}
        self._infos: dict[Path, ModuleInfo | None] = {}
        self._bytes: dict[Path, bytes] = {}
        self._uses: dict[Path, Uses] = {}
        self._references: dict[tuple, list[Reference]] = {}
        self._subclasses: dict[tuple, list[Path]] = {}
        self._callbacks: dict[str, list[tuple[Path, str]]] = {}
        for path in files:
            package_parts = _package_parts(path)
            self.name_of[path] = ".".join(package_parts)
            for parts in (package_parts, _relative_parts(path, roots)):
                for start in range(len(parts)):
                    self.by_name.setdefault(".".join(parts[start:]), path)

    def info(self, path: Path, tree: ast.Module | None = None) -> ModuleInfo | None:
        """The :class:`ModuleInfo` of a file of the project (``None`` if it cannot be read or parsed)."""
        if path not in self._infos:
            if tree is None:
                try:
                    tree = ast.parse(path.read_bytes())
                except (OSError, SyntaxError, ValueError, RecursionError):
                    self._infos[path] = None
                    return None
            name = self.name_of.get(path, path.stem)
            self._infos[path] = module_info(tree, name, is_package=path.name == "__init__.py")
        return self._infos[path]

    def classify(self, info: ModuleInfo, bases: list[str | None], seen: frozenset = frozenset()) -> Kind:
        """What a class with these base names, written in the file ``info``, is."""
        unknown = False
        for base in bases:
            kind = self._resolve_local(info, base, seen)
            if kind.kind is not None:
                return Kind(kind.kind, kind.unknown, kind.via, kind.root)
            unknown = unknown or kind.unknown
        return Kind(None, unknown)

    def ancestors(self, info: ModuleInfo, bases: list[str | None]) -> list[tuple[ModuleInfo, str]]:
        """The project's own classes a class with these bases (written in ``info``) derives from, nearest first:
        ``(file info, class name)``; Lightning's and unresolved classes are not followed."""
        found: list[tuple[ModuleInfo, str]] = []
        seen: set[tuple[str, str]] = set()

        def walk(where: ModuleInfo, names: list[str | None]) -> None:
            for base in names:
                target = self._project_class(where, base)
                if target is not None and (target[0].name, target[1]) not in seen:
                    seen.add((target[0].name, target[1]))
                    found.append(target)
                    walk(target[0], target[0].classes[target[1]])

        walk(info, bases)
        return found

    def _project_class(self, info: ModuleInfo, base: str | None, depth: int = 0) -> tuple[ModuleInfo, str] | None:
        """The project class ``base`` names in ``info`` (through imports and re-exports), or ``None``."""
        if base is None or depth > 20:
            return None
        head, _, rest = base.partition(".")
        if not rest and head in info.classes:
            return info, head
        if not rest and head in info.aliases:  # LitModel = Classifier
            return self._project_class(info, info.aliases[head], depth + 1)
        if head in info.imports:
            target = info.imports[head] + ("." + rest if rest else "")
        elif not rest and info.star_imports:
            for module in info.star_imports:
                found = self._qualified_class(f"{module}.{head}", depth + 1)
                if found is not None:
                    return found
            return None
        else:
            return None
        return self._qualified_class(target, depth + 1)

    def _qualified_class(self, target: str, depth: int) -> tuple[ModuleInfo, str] | None:
        module_name, _, class_name = target.rpartition(".")
        path = self.by_name.get(module_name)
        info = self.info(path) if path is not None else None
        if info is None:
            return None
        if class_name in info.classes:
            return info, class_name
        return (
            self._project_class(info, class_name, depth + 1)
            if class_name in info.imports or info.star_imports
            else None
        )

    def read(self, path: Path) -> bytes:
        """The bytes of a file of the project, read once (``b""`` when it cannot be read)."""
        data = self._bytes.get(path)
        if data is None:
            try:
                data = path.read_bytes()
            except OSError:
                data = b""
            self._bytes[path] = data
        return data

    def uses(self, path: Path) -> Uses:
        """What the file ``path`` uses (:class:`Uses`), parsed at most once per process."""
        uses = self._uses.get(path)
        if uses is None:
            uses = self._uses[path] = uses_of(self.read(path))
        return uses

    def attribute_class(
        self, info: ModuleInfo, uses: Uses, path: Path | None, cls: str, attr: str
    ) -> tuple[ModuleInfo, str] | None:
        """The project's class (``(file info, class name)``) that the attribute ``attr`` of a ``cls`` object holds,
        as its annotation says, written in the file ``info`` (``uses``; ``path``, ``None`` for the file being
        checked when it is not part of the project): every assignment ``self.<attr> = <parameter>`` of ``cls``'s
        methods takes a parameter annotated with that class, and no other assignment to an attribute of that name
        exists in the project. ``None`` otherwise."""
        annotation = uses.attribute_types.get((cls, attr))
        if annotation is None:
            return None
        target = self._project_class(info, annotation)
        if target is None:
            return None
        stores = uses.attribute_stores[attr]
        needle = re.compile(rb"\b" + re.escape(attr.encode()) + rb"\b")
        for other in self.name_of:
            if other != path and needle.search(self.read(other)):
                counted = self.uses(other)
                if counted.too_deep:
                    return None
                stores += counted.attribute_stores[attr]
        return target if stores == uses.attribute_assignments[(cls, attr)] else None

    def subclasses_defining(self, info: ModuleInfo, class_name: str, method: str) -> list[Path]:
        """Files of the project with a class that derives from ``class_name`` of ``info`` and defines ``method``
        (it would override a method renamed to that name). Files are searched as bytes first."""
        key = (info.name, class_name, method)
        if key in self._subclasses:
            return self._subclasses[key]
        needle = re.compile(rb"\bdef\s+" + re.escape(method.encode()) + rb"\b")
        found = []
        for path in self.name_of:
            data = self.read(path)
            if class_name.encode() not in data or not needle.search(data):
                continue
            other = self.info(path)
            if other is None:
                continue
            for name, methods in other.methods.items():
                if method in methods and (other.name, name) != (info.name, class_name):
                    if any(
                        (a.name, c) == (info.name, class_name) for a, c in self.ancestors(other, other.classes[name])
                    ):
                        found.append(path)
                        break
        self._subclasses[key] = found
        return found

    def callbacks_defining(self, method: str) -> list[tuple[Path, str]]:
        """The project's ``Callback`` classes that define ``method`` (a hook: ``on_validation_epoch_end``), as
        ``(file, class name)`` in file order. Files are searched as bytes first."""
        if method in self._callbacks:
            return self._callbacks[method]
        needle = re.compile(rb"\bdef\s+" + re.escape(method.encode()) + rb"\b")
        found = []
        for path in self.name_of:
            if not needle.search(self.read(path)):
                continue
            other = self.info(path)
            if other is None:
                continue
            for name, methods in other.methods.items():
                if method in methods and self.classify(other, other.classes[name]).kind == CALLBACK:
                    found.append((path, name))
        self._callbacks[method] = found
        return found

    def subclasses(self, info: ModuleInfo, class_name: str) -> list[tuple[Path, ModuleInfo, str]]:
        """The project's classes that derive from ``class_name`` of ``info``, in any file: ``(path, file info,
        class name)``. Files are searched as bytes for the class name first."""
        found = []
        for path in self.name_of:
            if class_name.encode() not in self.read(path):
                continue
            other = self.info(path)
            if other is None:
                continue
            for name in other.classes:
                if (other.name, name) == (info.name, class_name):
                    continue
                if any((a.name, c) == (info.name, class_name) for a, c in self.ancestors(other, other.classes[name])):
                    found.append((path, other, name))
        return found

    def references(
        self, name: str, keywords: tuple[str, ...], exclude: Path | None, fragments: tuple[str, ...] = ()
    ) -> list[Reference]:
        """Uses of the method ``name`` in the project's files other than ``exclude``, in file order: every
        attribute, bare name or string equal to it (:class:`Uses`), a call that passes one of ``keywords`` to
        ``name`` or to a target built at run time, and a string equal to one of ``fragments`` (the
        ``"_epoch_end"`` of ``getattr(self, f"{stage}_epoch_end")``). A file is searched as bytes first and parsed
        only when it mentions one of the names; each question is answered once per process, so a file with many
        findings costs one search of the project per distinct name."""
        key = (name, keywords, fragments)
        found = self._references.get(key)
        if found is None:
            # whole words only: `validation_epoch_end` is not in `on_validation_epoch_end`
            words = (name, *keywords, *fragments)
            needle = re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in words) + rb")\b")
            found = []
            for path in self.name_of:
                if not needle.search(self.read(path)):
                    continue
                uses = self.uses(path)
                if uses.too_deep:  # it mentions the name, but where cannot be told: count it as a use
                    found.append(Reference(path, 0, "too deep"))
                    continue
                found += [dataclasses.replace(use, path=path) for use in uses.names.get(name, ())]
                call = uses.keyword_call(name, keywords)
                if call is not None:
                    found.append(Reference(path, call[0], "keyword"))
                found += [Reference(path, at, "fragment") for f in fragments if (at := uses.string(f)) is not None]
            self._references[key] = found
        return [ref for ref in found if ref.path != exclude]

    def _resolve_local(self, info: ModuleInfo, base: str | None, seen: frozenset) -> Kind:
        if base is None:
            return Kind(None, unknown=True)
        head, _, rest = base.partition(".")
        if head in info.imports:
            target = info.imports[head] + ("." + rest if rest else "")
            return self._resolve_qualified(target, seen)
        if not rest and head in info.classes:
            key = (info.name, head)
            if key in seen:
                return Kind(None)
            return self.classify(info, info.classes[head], seen | {key})
        if not rest and info.star_imports:
            return self._resolve_star(info, head, seen)
        if rest and info.star_imports and head not in info.top_level:
            # `pl.LightningModule` where `from common import *` binds `pl` (common.py: `import lightning as pl`)
            for module in info.star_imports:
                key = (info.name, "*" + head)
                if key not in seen:
                    kind = self._resolve_qualified(f"{module}.{base}", seen | {key})
                    if kind.kind is not None:
                        return kind
            return Kind(None, unknown=True)
        if head in BUILTIN_BASES:
            return Kind(None)
        return Kind(None, unknown=True)

    def _resolve_star(self, info: ModuleInfo, name: str, seen: frozenset) -> Kind:
        """``name`` through the ``from M import *`` of ``info``: the first module that binds it decides (Python's
        last-import-wins is not modelled; two star imports binding one name are rare)."""
        unknown = False
        for module in info.star_imports:
            kind = self._resolve_qualified(f"{module}.{name}", seen | {(info.name, "*" + name)})
            if kind.kind is not None:
                return kind
            unknown = unknown or kind.unknown
        if name in BUILTIN_BASES:
            return Kind(None)
        return Kind(None, unknown=unknown)

    def _resolve_qualified(self, target: str, seen: frozenset) -> Kind:
        parts = target.split(".")
        if parts[0] in LIGHTNING_ROOTS:
            kind = lightning_kinds().get(parts[-1])
            if kind is None and "callbacks" in parts[:-1]:
                kind = CALLBACK
            return Kind(kind, via=parts[-1], root=parts[0]) if kind else Kind(None)
        module_name, _, class_name = target.rpartition(".")
        path = self.by_name.get(module_name)
        if path is None and len(parts) > 2:
            found = self._through_module(parts, seen)
            if found is not None:
                return found
        if path is not None:
            info = self.info(path)
            if info is not None:
                key = (info.name, class_name)
                if key in seen:
                    return Kind(None)
                if class_name in info.classes:
                    return self.classify(info, info.classes[class_name], seen | {key})
                if class_name in info.imports:  # re-exported, e.g. from a package's __init__
                    return self._resolve_qualified(info.imports[class_name], seen | {key})
                if info.star_imports:  # re-exported with ``from .module import *``
                    star = (info.name, "*" + class_name)
                    if star in seen:
                        return Kind(None)
                    starred = self._resolve_star(info, class_name, seen)
                    if starred.kind is not None or starred.unknown:
                        return starred
                    return Kind(None)
        if parts[0] in NOT_LIGHTNING_ROOTS:
            return Kind(None)
        return Kind(None, unknown=True)

    def _through_module(self, parts: list[str], seen: frozenset) -> Kind | None:
        """``common.pl.LightningModule`` where ``common`` is a file of the project that binds ``pl`` by an import:
        the target through that import (``pytorch_lightning.LightningModule``); ``None`` when no prefix of
        ``parts`` is a project file that imports the next part."""
        for cut in range(len(parts) - 2, 0, -1):
            path = self.by_name.get(".".join(parts[:cut]))
            if path is None:
                continue
            info = self.info(path)
            head = parts[cut]
            if info is None or head not in info.imports:
                return None
            key = (info.name, "." + head)
            if key in seen:
                return Kind(None)
            return self._resolve_qualified(".".join([info.imports[head], *parts[cut + 1 :]]), seen | {key})
        return None


def _package_parts(path: Path) -> list[str]:
    """The dotted name of a file as Python imports it: up through every folder holding an ``__init__.py``."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return parts or [path.parent.name]


def _relative_parts(path: Path, roots: list[Path]) -> list[str]:
    for root in roots:
        try:
            relative = path.relative_to(root)
        except ValueError:
            continue
        parts = list(relative.with_suffix("").parts)
        if root.is_file() or not parts:
            parts = [path.stem]
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        return parts
    return [path.stem]


#: Files whose folder is a project's root, as ruff and mypy look for it (the nearest one up from a checked file).
ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")


def project_root(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` (a file's folder, or a folder) holding one of :data:`ROOT_MARKERS`;
    ``None`` when there is none up to the file system's root."""
    folder = path if path.is_dir() else path.parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return None


@dataclass(frozen=True)
class Reference:
    """A use of a name somewhere in the project: ``path``:``line``, what it is (``attribute``, ``name``,
    ``string``, ``keyword``, ``fragment``: a string that ends the name, for a name built at run time, or ``too
    deep``: a file that mentions the name but is too deeply nested to parse) and, for an
    attribute, its receiver (``self``, ``super`` -- ``super().name`` -- or ``other``) and the class it is written in;
    a bare name in a class body that the body defines has the receiver ``class`` and that class. For a method of
    an attribute of ``self`` (``self.adapter.name``), the receiver is ``other``, ``attr`` that attribute
    (``adapter``) and ``cls`` the class it is written in."""

    path: Path | None
    line: int
    what: str
    receiver: str | None = None
    cls: str | None = None
    attr: str | None = None


@dataclass
class Uses:
    """What one file uses, indexed once: every caller question about the file is a dictionary lookup.

    Attributes:
        names: every use of each attribute name, bare name and identifier-like string constant, in source order
            (:class:`Reference` without a path). A string that is a dict display's key or a subscript's index
            (``{"on_train_batch_end": 0}``, ``counts["on_train_batch_end"]``) is data, not a use of a method, and is
            left out; a ``def`` of a name is not a use either.
        keywords: for each call keyword, the calls passing it: ``(line, callee)``, where ``callee`` is the called
            attribute's or name's identifier (``self.log(outputs=...)`` -> ``log``), or ``None`` when the call's
            target is built at run time (``getattr(cb, name)(..., outputs=...)``).
    """

    names: dict[str, list[Reference]] = field(default_factory=dict)
    keywords: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    #: ``(class, attribute)`` -> the annotation every assignment ``self.<attribute> = <parameter>`` in that class's
    #: methods takes its value from (``def __init__(self, adapter: Adapter): self.adapter = adapter`` gives
    #: ``"Adapter"``), or ``None`` when one of them assigns anything else (see :meth:`Project.attribute_class`)
    attribute_types: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: how many assignments to an attribute of that name the file holds, on any object (``x.name = ...``, ``x.name
    #: += ...``, ``setattr(x, "name", ...)``; a ``setattr`` whose name is built at run time is not counted, as a
    #: ``getattr`` call of a method is not: a risk the fixes state), in a class or not
    attribute_stores: Counter = field(default_factory=Counter)
    #: ``(class, attribute)`` -> how many assignments ``self.<attribute> = ...`` that class's methods hold
    attribute_assignments: Counter = field(default_factory=Counter)
    #: the file parses for Python but is too deeply nested for :mod:`ast` to index: any name may be used there
    too_deep: bool = False

    def string(self, text: str) -> int | None:
        """The line of the first string constant (not a key) equal to ``text``, or ``None``."""
        return next((use.line for use in self.names.get(text, ()) if use.what == "string"), None)

    def keyword_call(self, method: str, keywords: tuple[str, ...] | set[str]) -> tuple[int, str] | None:
        """``(line, keyword)`` of the first call that passes one of ``keywords`` to ``method`` -- by name, or to a
        target built at run time, which may be ``method`` -- or ``None``. A keyword passed to another call
        (``torch.autograd.grad(outputs=...)``, ``self.helper(dataloader_idx=...)``) does not count."""
        calls = [
            (line, keyword)
            for keyword in keywords
            for line, callee in self.keywords.get(keyword, ())
            if callee is None or callee == method
        ]
        return min(calls) if calls else None


def _is_string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _UsesVisitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.uses = Uses()
        self.classes: list[str] = []
        #: the innermost scopes: a class body's own names (a set), or ``None`` for a function or a comprehension
        self.scopes: list[set[str] | None] = []

    def _add(self, name: str, line: int, kind: str, receiver: str | None = None, attr: str | None = None) -> None:
        known = receiver in ("self", "super", "class") or attr is not None
        cls = self.classes[-1] if self.classes and known else None
        self.uses.names.setdefault(name, []).append(Reference(None, line, kind, receiver, cls, attr))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for part in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(part)
        own = {s.name for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        own |= {t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
        self.classes.append(node.name)
        self.scopes.append(own)
        for statement in node.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self._attribute_types(node.name, statement)
            self.visit(statement)
        self.scopes.pop()
        self.classes.pop()

    def _function(self, node: ast.AST) -> None:
        self.scopes.append(None)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _function

    def _attribute_types(self, cls: str, method: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Record in :attr:`Uses.attribute_types` what each ``self.<attribute> = ...`` of ``method`` assigns."""
        args = method.args
        params = {a.arg: a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        rebound = {n.id for n in ast.walk(method) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)}
        for node in ast.walk(method):
            value: ast.expr | None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets, value = [node.target], (node.value if isinstance(node, ast.AnnAssign) else None)
            else:
                continue
            for target in targets:
                receiver = target.value if isinstance(target, ast.Attribute) else None
                if not (isinstance(target, ast.Attribute) and isinstance(receiver, ast.Name) and receiver.id == "self"):
                    continue
                annotation = None
                if isinstance(value, ast.Name) and value.id in params and value.id not in rebound:
                    annotation = _annotation_name(params[value.id])
                key = (cls, target.attr)
                self.uses.attribute_assignments[key] += 1
                known = self.uses.attribute_types.get(key, annotation)
                self.uses.attribute_types[key] = annotation if annotation is not None and known == annotation else None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        value = node.value
        attr = None
        if isinstance(value, ast.Name) and value.id == "self":
            receiver = "self"
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            receiver = "super"
        else:
            receiver = "other"
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
                attr = value.attr  # self.adapter.name
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.uses.attribute_stores[node.attr] += 1
        self._add(node.attr, node.lineno, "attribute", receiver, attr)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # in a class body, a name the body defines is the class's own attribute (``test_epoch_end =
        # validation_epoch_end`` aliases that class's method): a use only where that class is related
        own = self.scopes[-1] if self.scopes else None
        self._add(node.id, node.lineno, "name", "class" if own is not None and node.id in own else None)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.isidentifier():  # getattr(obj, "name"), hasattr, ...
            self._add(node.value, node.lineno, "string")

    def visit_Dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            if key is not None and not _is_string(key):
                self.visit(key)
        for value in node.values:
            self.visit(value)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.visit(node.value)
        if not _is_string(node.slice):
            self.visit(node.slice)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        name = node.args[1] if callee == "setattr" and len(node.args) > 1 else None
        if _is_string(name):  # setattr(obj, "name", value) assigns obj.name
            self.uses.attribute_stores[name.value] += 1  # type: ignore[union-attr]
        for keyword in node.keywords:
            if keyword.arg:
                self.uses.keywords.setdefault(keyword.arg, []).append((keyword.value.lineno, callee))
        self.generic_visit(node)


def _annotation_name(annotation: ast.expr | None) -> str | None:
    """The dotted class name an annotation names (``Adapter``, ``adapters.Adapter``, ``"Adapter"``), or ``None``."""
    if _is_string(annotation):
        text = annotation.value  # type: ignore[union-attr]
        return text if all(part.isidentifier() for part in text.split(".")) else None
    return dotted(annotation) if isinstance(annotation, ast.Name | ast.Attribute) else None


def uses_of(source: bytes | ast.AST) -> Uses:
    """The :class:`Uses` of a file (its bytes, or its parsed tree); empty for a file that does not parse."""
    if not isinstance(source, ast.AST):
        try:
            source = ast.parse(source)
        except (SyntaxError, ValueError):
            return Uses()
        except RecursionError:
            return Uses(too_deep=True)
    visitor = _UsesVisitor()
    try:
        visitor.visit(source)
    except RecursionError:
        return Uses(too_deep=True)
    return visitor.uses
