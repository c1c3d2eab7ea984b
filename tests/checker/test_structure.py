"""The checker's structure: no import cycle, one list of rules, and no Lightning fact typed in its code -- hook
names, owners and Lightning's class names come from the registry or from what is recorded from Lightning."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from lightning_migrate import hook_names, registry

CHECKER = Path(__file__).resolve().parents[2] / "src" / "lightning_migrate" / "checker"
PACKAGE = "lightning_migrate.checker"


def module_name(path: Path) -> str:
    parts = path.relative_to(CHECKER).with_suffix("").parts
    return ".".join([PACKAGE, *(p for p in parts if p != "__init__")])


MODULES = {module_name(path): path for path in sorted(CHECKER.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """The checker modules ``path`` imports (at any depth, ``TYPE_CHECKING`` blocks aside): a module named by the
    import, or the module a ``from package import name`` names when ``name`` is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for child in ast.walk(node)
    }
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {name for name in found if name in MODULES}


GRAPH = {name: imports(path) - {name} for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of ``graph``, each as the list of modules around it (depth-first search)."""
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_checker_has_no_import_cycle():
    assert cycles(GRAPH) == []
    assert f"{PACKAGE}.rules" in GRAPH[f"{PACKAGE}.core"]  # the core reads the list of rules ...
    assert not any(f"{PACKAGE}.core" in GRAPH[name] for name in GRAPH if name.startswith(f"{PACKAGE}.rules"))


def test_the_cycle_test_finds_a_cycle():
    injected = {**GRAPH, f"{PACKAGE}.base": GRAPH[f"{PACKAGE}.base"] | {f"{PACKAGE}.core"}}
    assert any(f"{PACKAGE}.core" in cycle for cycle in cycles(injected))


def test_the_rules_are_listed_in_one_place():
    rule_modules = {name for name in MODULES if re.search(r"\.rules\.lm\d{3}_", name)}
    importers = {name for name, targets in GRAPH.items() if targets & rule_modules}
    assert importers == {f"{PACKAGE}.rules"}
    defining = [name for name, path in MODULES.items() if re.search(r"^RULES\b.*=", path.read_text(), re.M)]
    assert defining == [f"{PACKAGE}.rules"]


# -- no Lightning fact typed in the checker --------------------------------------------------------------------------

recorded = hook_names.load()
#: A hook's name: the events Lightning's hooks are named after (the other public methods, ``log``, ``optimizers``,
#: ``freeze``, are plain words in prose).
HOOK_LIKE = re.compile(r"^on_\w+$|^\w+_(?:step|epoch_(?:start|end)|batch_(?:start|end)|step_end)$")
FACTS = {
    name
    for name in (
        *recorded["LightningModule"]["hooks"],
        *recorded["Callback"]["hooks"],
        *(pattern.hook for pattern in registry.PATTERNS),
        *(pattern.new_signature.partition("(")[0] for pattern in registry.PATTERNS if pattern.new_signature),
    )
    if HOOK_LIKE.match(name)
} | set(recorded["kinds"])
FACT = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, FACTS), key=len, reverse=True)) + r")\b")
#: Class attributes whose strings are not facts the checker uses: a rule's example is user code the docs build runs
#: through the checker (so it cannot go stale).
EXEMPT_ATTRIBUTES = {"example"}


def typed_facts(source: str, filename: str = "<string>") -> list[str]:
    """``line: text`` of each string in ``source`` -- docstrings and rule examples aside -- that names a hook or a
    Lightning class."""
    tree = ast.parse(source, filename)
    exempt = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            exempt.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in EXEMPT_ATTRIBUTES for t in node.targets):
            exempt |= {id(n) for n in ast.walk(node.value)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in exempt:
            match = FACT.search(node.value)
            if match:
                found.append(f"{node.lineno}: {match.group(0)!r} in {node.value[:70]!r}")
    return found


@pytest.mark.parametrize("name", sorted(MODULES), ids=sorted(MODULES))
def test_no_hook_name_or_lightning_class_is_typed_in_the_checker(name):
    path = MODULES[name]
    assert typed_facts(path.read_text(encoding="utf-8"), str(path)) == []


def test_the_fact_test_finds_a_typed_fact():
    injected = (
        'STAGES = ("train", "validation")\nHOOKS = {f"on_{s}_epoch_end" for s in STAGES} | {"training_epoch_end"}\n'
    )
    assert typed_facts(injected) == ["2: 'training_epoch_end' in 'training_epoch_end'"]
    assert typed_facts('x = "LightningTransformer"\n') == ["1: 'LightningTransformer' in 'LightningTransformer'"]
    assert typed_facts('"""training_epoch_end in a docstring is prose about the code."""\n') == []


def test_the_stage_steps_the_registry_names_are_lightning_hooks():
    assert set(registry.STEP_METHODS.values()) <= set(recorded["LightningModule"]["hooks"])
    assert set(registry.OWNERS) == {kind for kind in recorded["kinds"].values()}


def test_only_source_tree_locates_the_checkout():
    """An installed package has no checkout above it: a module that climbs from its own file out of
    ``src/lightning_migrate`` (``Path(__file__).parents[3]``) reads a repository-only path. The checkout is
    located in ``migration_guide/source_tree.py`` alone; a module may reach its own package's data."""
    package = CHECKER.parent
    climbing = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "source_tree.py":
            continue
        depth = len(path.relative_to(package).parts) - 1  # folders between the module and the package
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = ast.unparse(node) if isinstance(node, ast.Subscript) else ""
            found = re.fullmatch(r"Path\(__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]", text)
            if found and int(found.group(1)) > depth:
                climbing.append(f"{path.relative_to(package)}:{node.lineno}: {text}")
    assert climbing == []


def test_the_monitoring_callbacks_the_registry_names_are_checkpoints_or_early_stopping():
    """The callbacks 2.x calls after the module at a training epoch's end are instances of ``Checkpoint`` or
    ``EarlyStopping``: every name of ``registry.MONITORING_CALLBACKS`` is such a class of the installed Lightning."""
    from lightning.pytorch import callbacks

    for name in registry.MONITORING_CALLBACKS:
        assert issubclass(getattr(callbacks, name), (callbacks.Checkpoint, callbacks.EarlyStopping)), name


def test_the_display_callbacks_the_registry_names_are_progress_bars():
    """``registry.DISPLAY_CALLBACKS`` (never readers of the module) are Lightning's progress bars."""
    from lightning.pytorch import callbacks

    for name in registry.DISPLAY_CALLBACKS:
        assert issubclass(getattr(callbacks, name), callbacks.ProgressBar), name


SRC = CHECKER.parents[1]


def test_the_installed_package_never_imports_the_guides_own_tools():
    """``lightning-migrate`` installs ``src/lightning_migrate`` alone; the guide's tools (``src/migration_guide``: the
    probes, the scenario matrix, the release records) run from the checkout, so an import of them in the package
    would fail on every user's machine. The one exception reads the checkout's ``pyproject.toml`` where the package is
    not installed at all (``base._published_url``, run from a checkout)."""
    found = []
    for path in sorted((SRC / "lightning_migrate").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owners = {
            id(child): node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
            for child in ast.walk(node)
        }
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name.split(".")[0] == "migration_guide" for name in names):
                found.append((path.relative_to(SRC).as_posix(), owners.get(id(node))))
    assert found == [("lightning_migrate/checker/base.py", "_published_url")]


def test_the_wheel_holds_the_checker_and_none_of_the_guides_tools(tmp_path):
    """The wheel pip builds from the checkout (pyproject's ``packages.find``): the checker, its rules and its recorded
    data; no module of ``migration_guide``."""
    import shutil
    import subprocess
    import sys
    import zipfile

    project = tmp_path / "project"  # a copy: setuptools' build/ folder of an earlier build would add its files
    shutil.copytree(SRC, project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SRC.parent / name, project / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(project)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    [wheel] = tmp_path.glob("lightning_migrate-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert packages == {"lightning_migrate"}, packages
    assert "lightning_migrate/checker/cli.py" in names and "lightning_migrate/data/hook_names.json" in names
    assert not [name for name in names if "scenarios" in name or "probes" in name], names
