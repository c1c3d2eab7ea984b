"""Measure the checker on real code: hand-labelled checkouts of public repositories (``data/corpus/labels.toml``).

``nox -s corpus -- DIR`` (or ``python -m lightning_migrate.checker.corpus DIR``) runs the checker over every
repository folder of ``DIR`` that the labels file names (``DIR/<owner>+<name>``, checked out at the labelled
commit; the code itself is never part of this project) and prints, per repository and in total:

- precision and recall against the labels: a finding at a labelled ``path``:``line`` with the expected rule is a
  true positive; one at a line labelled ``none`` (must not report) or with another rule, or at a line nobody
  labelled, is a false positive; a labelled finding the checker does not report is a false negative;
- crashes (an exception out of the checker; a file that does not parse is an *error*, counted apart);
- after ``--fix`` on a copy of the folder: files changed, rewritten files that no longer parse, files a second
  ``--fix`` changes again (not idempotent), and edits that break a caller -- a method the fix renamed or removed
  whose old name is still used somewhere in the fixed copy, or a dropped parameter that a call still passes by
  keyword. That last check is written here, independently of the checker's own caller search.

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

from lightning_migrate.checker.cli import Options, discover, main, project_files, run_checks
from lightning_migrate.checker.resolve import Project

LABELS = Path(__file__).resolve().parents[3] / "data" / "corpus" / "labels.toml"


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
    details: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("tp", "fp", "fn", "crashes", "errors", "files", "changed", "parse_failures", "not_idempotent"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.broken_callers += other.broken_callers

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def load_labels(path: Path = LABELS) -> tuple[dict[str, dict], dict[str, dict[tuple[str, int], dict]]]:
    """``(repositories by name, {repository: {(path, line): case}})`` from the labels file.

    Raises:
        ValueError: a case names an unknown repository, or two cases share a path and line.
    """
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    repos = {repo["name"]: repo for repo in data["repository"]}
    cases: dict[str, dict[tuple[str, int], dict]] = {name: {} for name in repos}
    for case in data.get("case", []):
        if case["repo"] not in repos:
            raise ValueError(f"{path}: case {case['path']}:{case['line']} names unknown repository {case['repo']}")
        key = (case["path"], case["line"])
        if key in cases[case["repo"]]:
            raise ValueError(f"{path}: {case['repo']} {case['path']}:{case['line']} is labelled twice")
        cases[case["repo"]][key] = case
    return repos, cases


def check_folder(folder: Path) -> tuple[dict[tuple[str, int], list[str]], int, int, int]:
    """Findings of the checker on ``folder`` as ``{(relative path, line): [codes]}``, and the counts of files,
    errors and crashes."""
    files, _ = discover([folder])
    everything, roots = project_files([folder], files)
    project = Project(everything, roots)
    checked = [path.resolve() for path in files]
    found: dict[tuple[str, int], list[str]] = {}
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
            found.setdefault((path.relative_to(folder.resolve()).as_posix(), finding.line), []).append(finding.code)
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
    """Names used in a file (attributes, bare names, string constants) and keywords passed in calls."""
    names: Counter = Counter()
    keywords: Counter = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names[node.attr] += 1
        elif isinstance(node, ast.Name):
            names[node.id] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names[node.value] += 1
        elif isinstance(node, ast.keyword) and node.arg:
            keywords[node.arg] += 1
    return names, keywords


def _fix_quietly(folder: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["--fix", "--quiet", "--jobs", "1", str(folder)])


def fix_figures(folder: Path, tally: Tally) -> None:
    """``--fix`` on a copy of ``folder``: files changed, parse failures, non-idempotent files, broken callers."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy, symlinks=True)
        before = {path: path.read_bytes() for path in copy.rglob("*.py") if path.is_file()}
        _fix_quietly(copy)
        after = {path: path.read_bytes() for path in before}
        changed = [path for path in before if before[path] != after[path]]
        tally.changed += len(changed)
        removed: set[str] = set()
        dropped: set[str] = set()
        for path in changed:
            try:
                new_tree = ast.parse(after[path])
            except SyntaxError:
                tally.parse_failures += 1
                tally.details.append(f"parse failure after --fix: {path.relative_to(copy)}")
                continue
            old, new = _methods(ast.parse(before[path])), _methods(new_tree)
            removed |= {method for (cls, method) in old if (cls, method) not in new}
            dropped |= {p for key, params in old.items() if key in new for p in params - new[key]}
        _fix_quietly(copy)
        again = [path for path in before if path.read_bytes() != after[path]]
        tally.not_idempotent += len(again)
        tally.details += [f"not idempotent: {path.relative_to(copy)}" for path in again]
        names: Counter = Counter()
        keywords: Counter = Counter()
        for path in before:
            try:
                used, passed = _uses(ast.parse(after[path]))
            except SyntaxError:
                continue
            names += used
            keywords += passed
        broken = sorted(name for name in removed if names[name]) + sorted(f"{p}=" for p in dropped if keywords[p])
        tally.broken_callers += len(broken)
        tally.details += [f"edit breaks a caller: `{name}` still used" for name in broken]


def measure(corpus: Path, labels: Path = LABELS, fix: bool = True) -> Tally:
    """Print the table and return the totals."""
    repos, cases = load_labels(labels)
    total = Tally()
    header = f"{'repository':44} {'commit':10} {'files':>5} {'TP':>3} {'FP':>3} {'FN':>3} {'prec':>6} {'recall':>6}"
    header += f" {'crash':>5} {'err':>3}"
    if fix:
        header += f" {'chg':>4} {'parse':>5} {'idem':>4} {'brk':>3}"
    print(header)
    missing = []
    for name, repo in repos.items():
        folder = corpus / name.replace("/", "+")
        if not folder.is_dir():
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
                    tally.details.append(f"false positive {code} at {key[0]}:{key[1]} ({why})")
        for key, case in sorted(labelled.items()):
            if case["expect"] != "none" and case["expect"] not in found.get(key, []):
                tally.fn += 1
                tally.details.append(f"false negative {case['expect']} at {key[0]}:{key[1]}: {case.get('what', '')}")
        if fix:
            fix_figures(folder, tally)
        row = f"{name:44} {repo['commit'][:10]:10} {tally.files:5} {tally.tp:3} {tally.fp:3} {tally.fn:3}"
        row += f" {tally.precision:6.1%} {tally.recall:6.1%} {tally.crashes:5} {tally.errors:3}"
        if fix:
            row += f" {tally.changed:4} {tally.parse_failures:5} {tally.not_idempotent:4} {tally.broken_callers:3}"
        print(row)
        for line in tally.details:
            print(f"    {line}")
        total.add(tally)
    row = f"{'total (' + str(len(repos) - len(missing)) + ' repositories)':44} {'':10} {total.files:5} {total.tp:3}"
    row += f" {total.fp:3} {total.fn:3} {total.precision:6.1%} {total.recall:6.1%} {total.crashes:5} {total.errors:3}"
    if fix:
        row += f" {total.changed:4} {total.parse_failures:5} {total.not_idempotent:4} {total.broken_callers:3}"
    print(row)
    if missing:
        print(f"not found in {corpus} (fetch them at the labelled commits): {', '.join(missing)}")
    return total


def main_corpus(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="folder holding one checkout per labelled repository")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--no-fix", action="store_true", help="skip the --fix figures")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        parser.error(f"{args.corpus}: not a folder")
    measure(args.corpus, args.labels, fix=not args.no_fix)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_corpus())
