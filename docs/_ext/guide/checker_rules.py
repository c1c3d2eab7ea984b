"""Sphinx extension: one page per checker rule, generated from the rule registry, with the rule's example run
through the ``lightning-migrate`` command at every build.

At ``builder-inited`` it writes ``docs/checker/rules/<CODE>.rst`` (a generated, git-ignored folder) for every rule of
:data:`lightning_migrate.checker.RULES`; each page holds one ``checker-rule`` directive, which renders:

- what the rule finds (the rule's ``summary``);
- why Lightning breaks: for every registry pattern the rule covers, the old signature, the releases that deprecated
  and removed it (the registry's changelog facts) and what the installed Lightning did with it when the probes ran it
  in this build (:mod:`probe_records`; error texts are printed from the caught exception);
- the fix (the rule's ``fix_text``);
- the rule's example, and the output of ``lightning-migrate`` and ``lightning-migrate --diff`` on it, captured now.

The build fails (``ExtensionError``) when the example is not flagged by its rule, when the command's exit codes are
not 1 then 0, or when the example still has findings after ``--fix``: the page cannot drift from the checker.

``checker-rule-table`` lists the rules; ``checker-command`` shows the output of the command with given arguments.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

from build_mechanics import current_app
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

from guide import probe_records

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"
RULES_DIR = "checker/rules"


def _rules() -> dict[str, Any]:
    from lightning_migrate.checker import RULES

    return RULES


def run_command(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``lightning-migrate ARGS`` in ``cwd`` and capture what it prints and returns.

    The console script's own entry point (``lightning_migrate.checker.cli:main``) runs in this process, with its
    standard output and error captured: the same code path as the installed command, without starting a Python
    and importing libcst again for each of the build's calls.
    """
    from lightning_migrate.checker.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    # argparse wraps --help to the terminal's width: pin it, so every build shows the same text.
    with (
        mock.patch.dict(os.environ, {"COLUMNS": "100"}),
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        returncode = main(args)
    return subprocess.CompletedProcess(["lightning-migrate", *args], returncode, stdout.getvalue(), stderr.getvalue())


def _console(args: list[str], proc: subprocess.CompletedProcess) -> str:
    return f"$ lightning-migrate {shlex.join(args)}\n{proc.stdout}{proc.stderr}$ echo $?\n{proc.returncode}"


def run_example(code: str, example: str, fixable: bool = True, unsafe: bool = False) -> dict[str, Any]:
    """Run the command on a rule's example: plain, ``--diff``, ``--fix``, and plain again.

    A rule without an automatic fix (``fixable`` false, :attr:`Rule.fixable`) must instead leave its marker
    comment: the finding is still reported after ``--fix``, and a second ``--fix`` changes nothing. A rule whose
    example's fix is opt-in (``unsafe``, :attr:`Rule.example_unsafe`) is run with ``--unsafe-fixes`` for ``--diff``
    and ``--fix``.

    Returns:
        ``{"check": console text, "diff": console text}``.

    Raises:
        ExtensionError: the example is not flagged by rule ``code`` (exit code 1), or ``--fix`` leaves findings
        (a fixable rule), or ``--fix`` does not mark it once (a rule without an automatic fix).
    """
    opt_in = ["--unsafe-fixes"] if unsafe else []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "example.py").write_text(example, encoding="utf-8")
        check = run_command(["example.py"], folder)
        diff = run_command(["--diff", *opt_in, "example.py"], folder)
        fixed = run_command(["--fix", *opt_in, "--quiet", "example.py"], folder)
        after = run_command(["example.py"], folder)
        again = run_command(["--fix", "example.py"], folder)
        marked = (folder / "example.py").read_text(encoding="utf-8")
    if check.returncode != 1 or f" {code} " not in check.stdout:
        raise ExtensionError(
            f"checker rule {code}: its example is not flagged by {code} "
            f"(exit {check.returncode}):\n{check.stdout}{check.stderr}"
        )
    if not fixable:
        if (
            fixed.returncode != 1
            or f"lightning-migrate: {code} manual fix" not in marked
            or "changed 0 files" not in (again.stderr)
        ):
            raise ExtensionError(
                f"checker rule {code}: --fix does not leave exactly one marker in its example:\n{marked}"
            )
    elif fixed.returncode != 1 or after.returncode != 0 or after.stdout:
        raise ExtensionError(
            f"checker rule {code}: its example still has findings after --fix "
            f"(exit {after.returncode}):\n{after.stdout}{after.stderr}"
        )
    return {"check": _console(["example.py"], check), "diff": _console(["--diff", *opt_in, "example.py"], diff)}


def _outcome(record: dict[str, Any]) -> str:
    """One reST sentence about a probe record (its facts only; error text from the exception)."""
    outcome = record["outcome"]
    if outcome == "error":
        batches = sum(record["batches"].values())
        names = {"train": "training", "sanity_check": "sanity-check"}  # the probes' loops, as the page words them
        loops = ", ".join(f"{n} {names.get(loop, loop)}" for loop, n in record["batches"].items() if n)
        return (
            f"raised ``{record['error_type']}`` during ``{record['failed_during']}`` after {batches} "
            f"batch{'es' * (batches != 1)}{f' ({loops})' if loops else ''} "
            f"and {record['training_steps']} training steps::\n\n    {record['error_type']}: "
            + "\n    ".join(str(record["error_message"]).splitlines())
        )
    if outcome == "ignored":
        return (
            f"ran to the end without an error and **never called the hook** ({record['training_steps']} training "
            "steps, the hook's code never ran)."
        )
    return f"called the hook {record['hook_calls']} times ({outcome.replace('_', ' ')})."


class CheckerRule(SphinxDirective):
    """``.. checker-rule:: LM001``: the body of a rule page."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        from lightning_migrate import registry

        code = self.arguments[0]
        rules = _rules()
        if code not in rules:
            raise self.error(f"no checker rule {code!r}; known: {', '.join(rules)}")
        rule = rules[code]
        self.env.note_dependency(__file__)
        for path in (SRC / "lightning_migrate").rglob("*.py"):  # the rules, the core, the registry
            self.env.note_dependency(str(path))
        doc = probe_records.records(current_app.get())
        version = f"``{doc['lightning']['distribution']}`` {doc['lightning']['version']}"
        reference = "reference/hooks" in self.env.found_docs
        lines = [
            f"*{rule.title}* -- rule ``{rule.code}`` (``{rule.name}``).",
            "",
            "What it finds",
            "-------------",
            "",
            rule.summary,
            "",
        ]
        if rule.patterns or rule.why:
            lines += ["What Lightning does with it", "---------------------------", ""]
        if rule.patterns:
            lines += [f"What {version} does with each old shape:", ""]
            lines += [".. rst-class:: from-records", ""]  # every sentence of the list is rendered from a record
        elif rule.why:  # a rule of its own evidence (LM007): its claims, and the names it compares with
            from lightning_migrate import hook_names

            recorded = hook_names.load()
            lines += [
                f"{rule.why} The names the checker compares with are recorded from "
                f"``{recorded['lightning']['distribution']}`` {recorded['lightning']['version']} "
                f"({len(recorded['LightningModule']['hooks'])} ``LightningModule`` hooks, "
                f"{len(recorded['Callback']['hooks'])} ``Callback`` hooks).",
                "",
            ]
        for pattern_id in rule.patterns:
            pattern = registry.get(pattern_id)
            record = probe_records.record(current_app.get(), pattern_id)
            history = f"removed in {pattern.removed_in}"
            if pattern.deprecated_in:
                history = f"deprecated in {pattern.deprecated_in}, " + history
            anchor = f" (:doc:`reference row </reference/hooks>` ``#{pattern_id}``)" if reference else ""
            lines += [
                f"- ``{pattern.old_signature}`` on a ``{pattern.owner}`` ({history}){anchor}: "
                f"``Trainer.{pattern.run}`` {_outcome(record)}",
                "",
            ]
        lines += [
            "The fix",
            "-------",
            "",
            rule.fix_text,
            "",
        ]
        if rule.patterns:
            lines += [
                "The examples that show the replacements: "
                + ", ".join(sorted({f":doc:`/{registry.get(p).example}`" for p in rule.patterns})),
                "",
            ]
        lines += [
            "Example",
            "-------",
            "",
            ".. code-block:: python",
            "   :caption: example.py",
            "",
            *["   " + line for line in rule.example.splitlines()],
            "",
            "What the checker prints for this example, and the fixes it offers:",
            "",
            ".. code-block:: console",
            "",
        ]
        outputs = run_example(rule.code, rule.example, rule.fixable, rule.example_unsafe)
        lines += ["   " + line for line in outputs["check"].splitlines()]
        lines += ["", ".. code-block:: console", ""]
        lines += ["   " + line for line in outputs["diff"].splitlines()]
        if rule.fixable:
            option = " --unsafe-fixes" if rule.example_unsafe else ""
            lines += [
                "",
                f"After ``lightning-migrate --fix{option} example.py`` the checker finds nothing in it (exit code 0).",
            ]
        else:
            lines += ["", "``lightning-migrate --fix example.py`` adds the marker comment once; the finding stays."]
        container = nodes.section()
        text = "\n".join(lines).splitlines()  # items above may hold several lines
        nested_parse_with_titles(self.state, StringList(text, source=f"<checker rule {code}>"), container)
        return container.children


class CheckerRuleTable(SphinxDirective):
    """``.. checker-rule-table::``: code and title of every rule, linking the rule pages (which name the old hook
    shapes each rule covers and their fixes)."""

    def run(self) -> list[nodes.Node]:
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 15 85", "", "   * - Rule", "     - Finds", ""]
        for rule in _rules().values():
            lines += [
                f"   * - :doc:`{rule.code} <rules/{rule.code}>`",
                f"     - {rule.title}",
            ]
        container = nodes.section()
        self.state.nested_parse(StringList(lines, source="<checker rules>"), self.content_offset, container)
        return container.children


class CheckerCommand(SphinxDirective):
    """``.. checker-command:: --list-rules``: the command's output with these arguments, captured now."""

    required_arguments = 0
    final_argument_whitespace = True
    optional_arguments = 1
    option_spec = {"returncode": directives.nonnegative_int}

    def run(self) -> list[nodes.Node]:
        args = shlex.split(self.arguments[0]) if self.arguments else []
        with tempfile.TemporaryDirectory() as tmp:
            proc = run_command(args, Path(tmp))
        expected = self.options.get("returncode", 0)
        if proc.returncode != expected:
            raise self.error(f"lightning-migrate {shlex.join(args)} exited {proc.returncode}, not {expected}")
        text = _console(args, proc)
        block = nodes.literal_block(text, text, language="console")
        return [block]


def _checker_sources_key() -> str:
    """Hash of the checker's sources: the rule pages' text depends on nothing else."""
    digest = hashlib.sha256()
    for path in sorted((SRC / "lightning_migrate" / "checker").rglob("*.py")):
        digest.update(path.relative_to(SRC).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _write_pages(app: Sphinx) -> None:
    """Write one ``checker/rules/<CODE>.rst`` per rule (only when its text changed) and drop stale ones.

    A stamp file beside the pages records the hash of the checker's sources they were written from and their
    names; while it matches and every page exists, the pages are current and the checker (and libcst) is not
    even imported.
    """
    folder = Path(app.srcdir) / RULES_DIR
    stamp, key = folder / ".sources-sha256", _checker_sources_key()
    if stamp.is_file():
        recorded_key, *names = stamp.read_text(encoding="utf-8").split()
        if recorded_key == key and all((folder / name).is_file() for name in names):
            return
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {}
    for rule in _rules().values():
        title = f"{rule.code}: {rule.name}"
        wanted[f"{rule.code}.rst"] = (
            f".. This page is generated by docs/_ext/guide/checker_rules.py from the checker's rules: do not edit.\n\n"
            f".. _checker-{rule.code}:\n\n{title}\n{'=' * len(title)}\n\n.. checker-rule:: {rule.code}\n"
        )
    for name, text in wanted.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for path in folder.glob("*.rst"):
        if path.name not in wanted:
            path.unlink()
    stamp.write_text("\n".join([key, *wanted]) + "\n", encoding="utf-8")


def _link_to_this_site(app: Sphinx) -> None:
    """Make the checker's finding links and markers, as the pages show them, point to the site being built: its
    ``html_baseurl`` (conf.py's one setting of the published address) overrides the package's own."""
    if app.config.html_baseurl:
        from lightning_migrate.checker.core import DOCS_URL_VARIABLE

        os.environ[DOCS_URL_VARIABLE] = app.config.html_baseurl


def setup(app: Sphinx) -> dict[str, Any]:
    current_app.remember(app)
    app.setup_extension("guide.probe_records")
    app.connect("builder-inited", _link_to_this_site)
    app.connect("builder-inited", _write_pages)
    app.add_directive("checker-rule", CheckerRule)
    app.add_directive("checker-rule-table", CheckerRuleTable)
    app.add_directive("checker-command", CheckerCommand)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
