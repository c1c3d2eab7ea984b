"""Which classes are Lightning modules or callbacks: base classes resolved through imports and across files.

Resolution reads files with :mod:`ast` (fast, no formatting kept) and follows a subclass chain through every file of
the checked tree, parsing a file only when a chain reaches it. Nothing is imported: a base class from a package that
is not part of the checked tree and is not Lightning cannot be resolved (it is *unknown*).

Lightning's base classes are recognised by their import path (``pytorch_lightning``, ``lightning.pytorch`` or
``lightning``, any alias): ``LightningModule`` and the demo models subclassing it are modules; ``Callback`` and
every class imported from a ``callbacks`` package of Lightning are callbacks.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

MODULE, CALLBACK = "LightningModule", "Callback"
LIGHTNING_ROOTS = frozenset({"pytorch_lightning", "lightning"})
#: Lightning classes that are LightningModule subclasses (``lightning.pytorch.demos``).
LIGHTNING_MODULE_NAMES = frozenset({"LightningModule", "BoringModel", "DemoModel", "ManualOptimBoringModel"})
#: Roots whose classes are known not to be Lightning classes (the standard library, torch, numpy).
NOT_LIGHTNING_ROOTS = frozenset(sys.stdlib_module_names) | {"builtins", "torch", "numpy", "typing_extensions"}
BUILTIN_BASES = frozenset({"object", "Exception", "BaseException", "dict", "list", "tuple", "set", "str", "int"})


@dataclass
class Kind:
    """What a class is: ``kind`` is ``"LightningModule"``, ``"Callback"`` or ``None`` (not Lightning, or unknown);
    ``unknown`` is true when some base could not be resolved."""

    kind: str | None
    unknown: bool = False
    #: the Lightning class the chain reaches (``Callback``, ``ModelCheckpoint``, ``LightningModule``, ...)
    via: str | None = None


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
    #: the method names each class defines
    methods: dict[str, set[str]] = field(default_factory=dict)


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


def module_info(tree: ast.Module, name: str, is_package: bool = False) -> ModuleInfo:
    """Collect the imports and class bases of a parsed file whose dotted module name is ``name``."""
    info = ModuleInfo(name)
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
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
            info.methods[node.name] = {
                item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
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
        self._uses: dict[Path, dict[str, tuple[int, str]]] = {}
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
                except (OSError, SyntaxError, ValueError):
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
                return Kind(kind.kind, kind.unknown, kind.via)
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

    def subclasses_defining(self, info: ModuleInfo, class_name: str, method: str) -> list[Path]:
        """Files of the project with a class that derives from ``class_name`` of ``info`` and defines ``method``
        (it would override a method renamed to that name). Files are searched as bytes first."""
        needle = re.compile(rb"\bdef\s+" + re.escape(method.encode()) + rb"\b")
        found = []
        for path in self.name_of:
            data = self._bytes.get(path)
            if data is None:
                try:
                    data = path.read_bytes()
                except OSError:
                    data = b""
                self._bytes[path] = data
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
        return found

    def references(
        self, name: str, keywords: tuple[str, ...], exclude: Path | None, fragments: tuple[str, ...] = ()
    ) -> list[Reference]:
        """Uses of the method ``name`` (and calls passing one of ``keywords``, and strings equal to one of
        ``fragments``, such as the ``"_epoch_end"`` of ``getattr(self, f"{stage}_epoch_end")``) in the project's
        files other than ``exclude``. A file is searched as bytes first and parsed only when it mentions one of the
        names; what a parsed file uses is kept, so a file is parsed at most once per process."""
        # whole words only: `validation_epoch_end` is not in `on_validation_epoch_end`
        words = (name, *keywords, *fragments)
        needle = re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in words) + rb")\b")
        found: list[Reference] = []
        for path in self.name_of:
            if path == exclude:
                continue
            data = self._bytes.get(path)
            if data is None:
                try:
                    data = path.read_bytes()
                except OSError:
                    data = b""
                self._bytes[path] = data
            if not needle.search(data):
                continue
            uses = self._uses.get(path)
            if uses is None:
                uses = self._uses[path] = _uses_of(data)
            for key in (name, *(f"{keyword}=" for keyword in keywords)):
                if key in uses:
                    found.append(Reference(path, *uses[key]))
            found += [Reference(path, *uses[f]) for f in fragments if f in uses and uses[f][1] == "string"]
        return found

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
            if parts[-1] in LIGHTNING_MODULE_NAMES:
                return Kind(MODULE, via=parts[-1])
            if parts[-1] == "Callback" or "callbacks" in parts[:-1]:
                return Kind(CALLBACK, via=parts[-1])
            return Kind(None)
        module_name, _, class_name = target.rpartition(".")
        path = self.by_name.get(module_name)
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
                    kind = self._resolve_star(info, class_name, seen)
                    if kind.kind is not None or kind.unknown:
                        return kind
                    return Kind(None)
        if parts[0] in NOT_LIGHTNING_ROOTS:
            return Kind(None)
        return Kind(None, unknown=True)


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
    """A use of a name somewhere in the project: ``path``:``line`` and what it is (``attribute``, ``name``,
    ``keyword`` or ``string``)."""

    path: Path
    line: int
    what: str


class _References(ast.NodeVisitor):
    def __init__(self, names: set[str], keywords: set[str]):
        self.names, self.keywords = names, keywords
        self.found: list[tuple[int, str, str]] = []

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.names:
            self.found.append((node.lineno, "attribute", node.attr))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.names:
            self.found.append((node.lineno, "name", node.id))

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in self.keywords:
            self.found.append((node.value.lineno, "keyword", node.arg))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in self.names:  # getattr(obj, "name"), hasattr, ...
            self.found.append((node.lineno, "string", node.value))


def _uses_of(data: bytes) -> dict[str, tuple[int, str]]:
    """``{name: (first line, kind)}`` of every attribute, bare name and string constant a file uses, and
    ``{"keyword=": ...}`` for every call keyword; ``{}`` for a file that does not parse."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return {}
    uses: dict[str, tuple[int, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            uses.setdefault(node.attr, (node.lineno, "attribute"))
        elif isinstance(node, ast.Name):
            uses.setdefault(node.id, (node.lineno, "name"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            uses.setdefault(node.value, (node.lineno, "string"))
        elif isinstance(node, ast.keyword) and node.arg:
            uses.setdefault(f"{node.arg}=", (node.value.lineno, "keyword"))
    return uses


def references_in(tree: ast.AST, names: set[str], keywords: set[str] = frozenset()) -> list[tuple[int, str, str]]:
    """``(line, kind, name)`` of every use of ``names`` in ``tree`` (attribute, bare name or string constant) and
    every call keyword in ``keywords``; a ``def`` of the name is not a use."""
    visitor = _References(set(names), set(keywords))
    visitor.visit(tree)
    return visitor.found
