"""Measure the checker on real code: hand-labelled checkouts of public repositories (``data/corpus/labels.toml``).

``nox -s corpus -- DIR [DIR ...]`` (or ``python -m migration_guide.corpus DIR ...``) runs the checker over
every repository folder of the ``DIR`` s that the labels file names (``DIR/<owner>+<name>``, checked out at the
labelled commit; the code itself is never part of this project; ``.py`` files and notebooks) and prints, per
repository and in total:

- precision and recall against the labels: a finding at a labelled ``path``:``line`` with the expected rule is a
  true positive; one at a line labelled ``none`` (must not report) or with another rule, or at a line nobody
  labelled, is a false positive; a labelled finding the checker does not report is a false negative;
- crashes (an exception out of the checker; a file that does not parse is an *error*, counted apart);
- after ``--fix --unsafe-fixes`` on a copy of the folder: the findings rewritten by a safe fix and by an opt-in
  (unsafe) rewrite, the markers left (findings no fix rewrites), files changed, and for the rewrites: those in a
  file that no longer parses, those in a file a second ``--fix --unsafe-fixes`` changes again (not idempotent),
  and edits that break a caller -- a method the fix renamed or removed whose old name is still used
  somewhere in the fixed copy, or a dropped parameter that a call still passes by keyword. That last check is
  written here, independently of the checker's own caller search;
- the share of findings that need more than a safe fix (``proven``, ``unsafe`` and ``manual``) which the rewrites
  rewrite: the work the markers would otherwise leave to the user; and the share plain ``--fix`` rewrites, by a
  rewrite of a shape the scenario matrix proves.

A label's ``line`` is the line in the file; in a notebook, ``cell`` (the code cell's number) and the line in it.

Informational notes (``--notes``) are not findings and are not counted.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import shutil
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from lightning_migrate.checker import notebook
from lightning_migrate.checker.cli import Options, discover, main, project_files, run_checks
from lightning_migrate.checker.resolve import Project
from migration_guide import source_tree

LABELS = source_tree.DATA / "corpus" / "labels.toml"  # in the checkout, which ``nox -s corpus`` runs from


@dataclass
class Tally:
    """Counts of one repository (or of all)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    crashes: int = 0
    errors: int = 0
    files: int = 0
    changed: int = 0
    parse_failures: int = 0
    not_idempotent: int = 0
    broken_callers: int = 0
    #: findings by the fix ``--fix --unsafe-fixes`` gives them: ``safe``, ``proven`` (both applied by plain ``--fix``),
    #: ``unsafe`` (rewritten with the option), ``manual``
    safe: int = 0
    proven: int = 0
    unsafe: int = 0
    manual: int = 0
    #: marker comments in the fixed copy (one per manual finding)
    markers: int = 0
    #: ``(rule code, tier)`` -> findings
    by_rule: Counter = field(default_factory=Counter)
    #: ``(rule code, shape, tier)`` -> findings rewritten by a proven or opt-in rewrite (the shape a caching or
    #: stage-hook rewrite writes, else the fix's description)
    by_shape: Counter = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)

    COUNTS: ClassVar[tuple[str, ...]] = (
        *("tp", "fp", "fn", "crashes", "errors", "files", "changed", "parse_failures", "not_idempotent"),
        *("broken_callers", "safe", "proven", "unsafe", "manual", "markers"),
    )

    def add(self, other: Tally) -> None:
        for name in self.COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.by_rule.update(other.by_rule)
        self.by_shape.update(other.by_shape)

    @property
    def opt_in_share(self) -> float:
        """Of the findings that need more than a safe fix, the share the caching and other rewrites rewrite (the
        proven tier, which plain ``--fix`` applies, and the opt-in one)."""
        rewritten = self.proven + self.unsafe
        return rewritten / (rewritten + self.manual) if rewritten + self.manual else 1.0

    @property
    def proven_share(self) -> float:
        """Of the findings that need more than a safe fix, the share plain ``--fix`` rewrites: a rewrite of a shape a
        row of the scenario matrix proves."""
        needing = self.proven + self.unsafe + self.manual
        return self.proven / needing if needing else 1.0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def _key(path: str, cell: int | None, line: int) -> tuple[str, int, int]:
    """A place in a repository: ``(path, cell, line)``; ``cell`` 0 for a ``.py`` file."""
    return path, cell or 0, line


def _shown(key: tuple[str, int, int]) -> str:
    path, cell, line = key
    return f"{path}:cell {cell}:{line}" if cell else f"{path}:{line}"


def load_labels(path: Path = LABELS) -> tuple[dict[str, dict], dict[str, dict[tuple[str, int, int], dict]]]:
    """``(repositories by name, {repository: {(path, cell, line): case}})`` from the labels file.

    Raises:
        ValueError: a case names an unknown repository, or two cases share a path and line.
    """
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    repos = {repo["name"]: repo for repo in data["repository"]}
    cases: dict[str, dict[tuple[str, int, int], dict]] = {name: {} for name in repos}
    for case in data.get("case", []):
        if case["repo"] not in repos:
            raise ValueError(f"{path}: case {case['path']}:{case['line']} names unknown repository {case['repo']}")
        key = _key(case["path"], case.get("cell"), case["line"])
        if key in cases[case["repo"]]:
            raise ValueError(f"{path}: {case['repo']} {_shown(key)} is labelled twice")
        cases[case["repo"]][key] = case
    return repos, cases


def check_folder(folder: Path) -> tuple[dict[tuple[str, int, int], list[str]], int, int, int]:
    """Findings of the checker on ``folder`` as ``{(relative path, cell, line): [codes]}``, and the counts of
    files, errors and crashes."""
    files, _ = discover([folder])
    everything, roots = project_files([folder], files)
    project = Project(everything, roots)
    checked = [path.resolve() for path in files]
    found: dict[tuple[str, int, int], list[str]] = {}
    errors = crashes = 0
    for path in checked:
        try:
            [report] = run_checks([path], project, Options(), jobs=1)
        except Exception as err:  # noqa: BLE001 - a crash is what is being counted
            crashes += 1
            print(f"CRASH {path}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        errors += report.error is not None
        for finding in report.findings:
            key = _key(path.relative_to(folder.resolve()).as_posix(), finding.cell, finding.line)
            found.setdefault(key, []).append(finding.code)
    return found, len(files), errors, crashes


def _methods(tree: ast.AST) -> dict[tuple[str, str], set[str]]:
    """``{(class, method): parameter names}`` of every method in a file."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = item.args
                    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                    out[(node.name, item.name)] = set(names)
    return out


def _uses(tree: ast.AST) -> tuple[Counter, Counter]:
    """Names used in a file (attributes, bare names, string constants) and, for each call keyword, the calls that
    pass it: ``(callee, keyword)``, the callee ``None`` when the call's target is built at run time."""
    names: Counter = Counter()
    keywords: Counter = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names[node.attr] += 1
        elif isinstance(node, ast.Name):
            names[node.id] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names[node.value] += 1
        elif isinstance(node, ast.Call):
            func = node.func
            callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            for keyword in node.keywords:
                if keyword.arg:
                    keywords[(callee, keyword.arg)] += 1
    return names, keywords


def _fix_quietly(folder: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["--fix", "--unsafe-fixes", "--quiet", "--jobs", "1", str(folder)])


def _tiers(folder: Path, by_rule: Counter | None = None, by_shape: Counter | None = None) -> dict[str, list[str]]:
    """``{relative path: [tier of each finding]}`` of ``--fix --unsafe-fixes`` on ``folder`` (nothing written);
    ``by_rule`` counts ``(rule code, tier)``, ``by_shape`` ``(rule code, shape, tier)`` of the rewritten ones."""
    files, _ = discover([folder])
    everything, roots = project_files([folder], files)
    reports = run_checks([p.resolve() for p in files], Project(everything, roots), Options(True, True), jobs=1)
    tiers = {}
    for report in reports:
        found = [f for f in report.findings if not f.note]
        tiers[report.path.relative_to(folder.resolve()).as_posix()] = [f.tier or "manual" for f in found]
        if by_rule is not None:
            by_rule.update((f.code, f.tier or "manual") for f in found)
        if by_shape is not None:
            by_shape.update(
                (f.code, f.fix.shape or f.fix.description, f.tier)
                for f in found
                if f.fix is not None and f.tier in ("proven", "unsafe")
            )
    return tiers


def _python(path: Path, data: bytes) -> str | None:
    """The Python source of a file (a notebook's code cells), or ``None`` when it is not readable as such."""
    if path.suffix != ".ipynb":
        return data.decode("utf-8", "replace")
    try:
        return notebook.read(data.decode("utf-8")).source
    except (UnicodeDecodeError, notebook.NotebookError):
        return None


def fix_figures(folder: Path, tally: Tally) -> None:
    """``--fix --unsafe-fixes`` on a copy of ``folder``: the findings by tier, markers left, files changed, and the
    rewrites in files that no longer parse, that a second run changes again, or whose edits break a caller."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy, symlinks=True)
        tiers = _tiers(copy, tally.by_rule, tally.by_shape)
        for found in tiers.values():
            for tier in found:
                setattr(tally, tier, getattr(tally, tier) + 1)
        paths = [p for p in copy.rglob("*") if p.suffix in (".py", ".ipynb") and p.is_file()]
        before = {path: path.read_bytes() for path in paths}
        _fix_quietly(copy)
        after = {path: path.read_bytes() for path in before}
        changed = [path for path in before if before[path] != after[path]]
        tally.changed += len(changed)
        rewrites = {
            path: sum(t in ("safe", "proven", "unsafe") for t in tiers.get(path.relative_to(copy).as_posix(), []))
            for path in changed
        }
        removed: set[str] = set()
        dropped: set[tuple[str, str]] = set()  # (method, parameter)
        defined: set[str] = set()  # the method names some class of the fixed copy defines
        for path in changed:
            old_text, new_text = _python(path, before[path]), _python(path, after[path])
            try:
                new_tree = ast.parse(new_text or "")
                old_tree = ast.parse(old_text or "")
            except SyntaxError:
                tally.parse_failures += max(rewrites[path], 1)
                tally.details.append(f"parse failure after --fix: {path.relative_to(copy)}")
                continue
            old, new = _methods(old_tree), _methods(new_tree)
            removed |= {method for (cls, method) in old if (cls, method) not in new}
            dropped |= {(key[1], p) for key, params in old.items() if key in new for p in params - new[key]}
        tally.markers += sum(
            line.count("# lightning-migrate:")
            for path in after
            for line in (_python(path, after[path]) or "").splitlines()
            if "# lightning-migrate:" in line
        )
        _fix_quietly(copy)
        for path in changed:
            relative = path.relative_to(copy).as_posix()
            if path.read_bytes() != after[path]:
                tally.not_idempotent += max(rewrites[path], 1)
                tally.details.append(f"not idempotent: {relative}")
        names: Counter = Counter()
        keywords: Counter = Counter()
        for path in before:
            try:
                tree = ast.parse(_python(path, after[path]) or "")
            except SyntaxError:
                continue
            used, passed = _uses(tree)
            names += used
            keywords += passed
            defined |= {method for (_cls, method) in _methods(tree)}
        # a name still used is broken when no class defines that method any more; a dropped parameter, when a
        # call passes it to that method (or to a target built at run time)
        broken = sorted(name for name in removed if names[name] and name not in defined)
        broken += sorted(f"{p}=" for m, p in dropped if keywords[(m, p)] or keywords[(None, p)])
        tally.broken_callers += len(broken)
        tally.details += [f"edit breaks a caller: `{name}` still used" for name in broken]


def measure(corpus: Path | list[Path], labels: Path = LABELS, fix: bool = True) -> Tally:
    """Print the table and return the totals. ``corpus``: the folder (or folders) holding the checkouts."""
    folders = [corpus] if isinstance(corpus, Path) else list(corpus)
    repos, cases = load_labels(labels)
    total = Tally()
    header = f"{'repository':44} {'commit':10} {'files':>5} {'TP':>3} {'FP':>3} {'FN':>3} {'prec':>6} {'recall':>6}"
    header += f" {'crash':>5} {'err':>3}"
    if fix:
        header += f" {'safe':>4} {'prov':>4} {'unsf':>4} {'mark':>4} {'chg':>4} {'parse':>5} {'idem':>4} {'brk':>3}"
    print(header)
    missing = []
    for name, repo in repos.items():
        folder = next((f / name.replace("/", "+") for f in folders if (f / name.replace("/", "+")).is_dir()), None)
        if folder is None:
            missing.append(name)
            continue
        tally = Tally()
        found, tally.files, tally.errors, tally.crashes = check_folder(folder)
        labelled = cases[name]
        for key, codes in sorted(found.items()):
            for code in codes:
                case = labelled.get(key)
                if case is not None and case["expect"] == code:
                    tally.tp += 1
                else:
                    tally.fp += 1
                    why = "unlabelled" if case is None else f"labelled {case['expect']}"
                    tally.details.append(f"false positive {code} at {_shown(key)} ({why})")
        for key, case in sorted(labelled.items()):
            if case["expect"] != "none" and case["expect"] not in found.get(key, []):
                tally.fn += 1
                tally.details.append(f"false negative {case['expect']} at {_shown(key)}: {case.get('what', '')}")
        if fix:
            fix_figures(folder, tally)
        print(_row(name, repo["commit"][:10], tally, fix))
        for line in tally.details:
            print(f"    {line}")
        total.add(tally)
    print(_row(f"total ({len(repos) - len(missing)} repositories)", "", total, fix))
    if fix:
        needing = total.proven + total.unsafe + total.manual
        print(
            f"rewritten: {total.safe} by a safe fix, {total.proven} by a proven rewrite (plain --fix), {total.unsafe}"
            f" by an opt-in rewrite; markers left: {total.manual} ({total.markers} marker comments); of the {needing}"
            f" findings that need more than a safe fix, the rewrites rewrite {total.proven + total.unsafe}"
            f" ({total.opt_in_share:.0%}), by a proven rewrite {total.proven} ({total.proven_share:.0%});"
            " rewrites whose file does not parse:"
            f" {total.parse_failures}, not idempotent: {total.not_idempotent}"
        )
    if fix:
        for code in sorted({code for code, _ in total.by_rule}):
            counts = {tier: total.by_rule[(code, tier)] for tier in ("safe", "proven", "unsafe", "manual")}
            print(f"  {code}: " + ", ".join(f"{n} {tier}" for tier, n in counts.items()))
    if fix and total.by_shape:
        print("rewritten, by shape (proven: a row of the scenario matrix proves it):")
        for (code, shape, tier), count in sorted(total.by_shape.items()):
            print(f"  {code} {shape}: {count} {tier}")
    if missing:
        print(f"not found in {', '.join(map(str, folders))} (fetch them at the labelled commits): {', '.join(missing)}")
    return total


def _row(name: str, commit: str, tally: Tally, fix: bool) -> str:
    row = f"{name:44} {commit:10} {tally.files:5} {tally.tp:3} {tally.fp:3} {tally.fn:3}"
    row += f" {tally.precision:6.1%} {tally.recall:6.1%} {tally.crashes:5} {tally.errors:3}"
    if fix:
        row += f" {tally.safe:4} {tally.proven:4} {tally.unsafe:4} {tally.manual:4} {tally.changed:4}"
        row += f" {tally.parse_failures:5}"
        row += f" {tally.not_idempotent:4} {tally.broken_callers:3}"
    return row


def main_corpus(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="+", help="folders holding one checkout per labelled repository")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--no-fix", action="store_true", help="skip the --fix figures")
    args = parser.parse_args(argv)
    for folder in args.corpus:
        if not folder.is_dir():
            parser.error(f"{folder}: not a folder")
    measure(args.corpus, args.labels, fix=not args.no_fix)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_corpus())
