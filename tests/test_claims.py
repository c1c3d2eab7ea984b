"""Claims (docs/_ext/guide/claims.py): a statement about Lightning is rendered from data and bound to its evidence.

The extension is tested on a small project laid out like the site (``conf.py`` at the root, pages in ``docs/``, a
one-script gallery, ``data/claims.toml``), built in seconds: a claim renders on the page and in the downloaded
notebook, and the build fails, naming the claim and the file, when its evidence is missing, did not run, or
disagrees. The evidence readers are tested on the project's own records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from builds import ROOT

EXT = ROOT / "docs" / "_ext"
sys.path.insert(0, str(EXT))

from guide import claims, warning_witnesses  # noqa: E402

MECHANICS = EXT / "build_mechanics"
CONF = f"""
import sys
sys.path.insert(0, {str(EXT)!r})
sys.path.insert(0, {str(ROOT / "src")!r})
extensions = [
    "sphinx_gallery.gen_gallery", "guide.claims", "build_mechanics.notebook_baseurl", "build_mechanics.run_records"
]
html_baseurl = "https://example.org/guide/"
exclude_patterns = ["examples/*.py", "**.ipynb"]
sphinx_gallery_conf = {{
    "examples_dirs": "../gallery",
    "gallery_dirs": "examples",
    "filename_pattern": "",
    "reset_modules": ("build_mechanics.run_records.record_runs",),
    "pypandoc": {{
        "extra_args": ["--from={MECHANICS / "notebook_rst_reader.lua"}", "--to=gfm", "--wrap=none"],
        "filters": ["{MECHANICS / "notebook_links.lua"}"],
    }},
}}
"""
SCRIPT = '''"""
Two
===

What one plus one is.
"""

# %%
# The sum
# -------
# The run below shows that :claim:`sum-is-two`; and :claim:`epoch-end-removed`.
total = 1 + 1
print(total)
assert total == 2, "one plus one is two"
'''
CLAIMS = """
[claim.sum-is-two]
text = "on Python with Lightning {lightning} installed, in one process, ``1 + 1`` is 2 (:doc:`the list </index>`)"
checked = "in one process"
evidence = [{ assert = "gallery/two.py", message = "one plus one is two" }]

[claim.epoch-end-removed]
text = "Lightning's changelog gives 1.8 as the release that removed ``on_epoch_end``"
evidence = [{ changelog = "module-on-epoch-end", field = "removed_in", equals = "1.8" }]
"""


def claims_project(tmp_path: Path) -> Path:
    """A project laid out like the site, with one gallery script asserting one claim and a page listing claims."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "gallery").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "conf.py").write_text(CONF, encoding="utf-8")
    (tmp_path / "gallery" / "README.txt").write_text("Gallery\n=======\n", encoding="utf-8")
    (tmp_path / "gallery" / "two.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "data" / "claims.toml").write_text(CLAIMS, encoding="utf-8")
    index = "Site\n====\n\n.. claims-table::\n\n.. toctree::\n\n   examples/index\n"
    (tmp_path / "docs" / "index.rst").write_text(index, encoding="utf-8")
    return tmp_path


def build(project: Path, *, expect_failure: bool = False) -> str:
    """``sphinx-build -W`` of the project (``docs`` into ``_build/html``); its output. Fails the test when the
    build's success is not what ``expect_failure`` says."""
    # CI and PYTHONWARNINGS are the build's own: another test may have imported the site's conf.py, which sets them
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONWARNINGS")} | {"PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-c", ".", "-b", "html", "docs", "_build/html"]
    proc = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)
    output = proc.stdout + proc.stderr
    assert (proc.returncode != 0) == expect_failure, output[-6000:]
    return output


def test_a_claim_renders_on_the_page_and_in_the_notebook(tmp_path):
    project = claims_project(tmp_path)
    build(project)
    page = (project / "_build" / "html" / "examples" / "two.html").read_text(encoding="utf-8")
    lightning, torch = claims.installed_versions()["lightning"], claims.installed_versions()["torch"]

    assert (  # the tooltip names the torch of this build's run, which the marker leaves out
        f'data-claim="sum-is-two" title="Checked on Lightning {lightning} · 1 process (with torch {torch}): the assert '
        "&quot;one plus one is two&quot;" in page
    )
    assert f"on Python with Lightning {lightning} installed, in one process, <code" in page
    # the marker: the claim's releases and configuration, linking to its row of the claims table
    assert (
        '<span class="claim-scope"> <a class="claim-evidence reference external" '
        f'href="../index.html#claim-sum-is-two">[Lightning {lightning} · 1 process]</a></span>' in page
    )
    notebook = nbformat.read(project / "docs" / "examples" / "two.ipynb", as_version=4)
    text = "".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert (
        f"The run below shows that on Python with Lightning {lightning} installed, in one process, `1 + 1` is 2 "
        f"([the list](https://example.org/guide/index.html)) (Lightning {lightning} · 1 process); and Lightning’s "
        "changelog gives 1.8 as the release that removed `on_epoch_end` (Lightning’s changelog)." in text
    )
    listing = (project / "_build" / "html" / "index.html").read_text(encoding="utf-8")
    assert 'id="claim-sum-is-two"' in listing and 'href="examples/two.html">Two</a>' in listing


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (("one plus one is two", "1 + 1 == 2"), 'gallery/two.py has no top-level assert with the message "one plus'),
        (("assert total", "if True:\n    assert total"), "gallery/two.py has no top-level assert with the message"),
        (("total == 2,", "total == 3,"), "gallery/two.py did not run to its end in this build"),
    ],
    ids=["message changed", "assert not at top level", "page failed"],
)
def test_the_build_fails_naming_the_claim_when_its_assert_is_missing_or_did_not_run(tmp_path, edit, reason):
    project = claims_project(tmp_path)
    script = project / "gallery" / "two.py"
    script.write_text(script.read_text(encoding="utf-8").replace(*edit), encoding="utf-8")
    output = build(project, expect_failure=True)
    assert f"data/claims.toml:2: WARNING: claim sum-is-two: assert evidence: {reason}" in output


def test_a_changelog_fact_that_disagrees_with_the_registry_fails_the_build(tmp_path):
    project = claims_project(tmp_path)
    data = project / "data" / "claims.toml"
    data.write_text(data.read_text(encoding="utf-8").replace('"1.8"', '"1.7"').replace("gives 1.8", "gives 1.7"))
    output = build(project, expect_failure=True)
    assert (
        "claims.toml:7: WARNING: claim epoch-end-removed: changelog evidence: registry module-on-epoch-end: " in output
    )
    assert "removed_in is '1.8', the claim needs '1.7'" in output


def test_an_unknown_claim_fails_the_build_on_a_page_and_in_a_notebook(tmp_path):
    project = claims_project(tmp_path)
    index = project / "docs" / "index.rst"
    index.write_text(index.read_text(encoding="utf-8").replace("Site\n====\n", "Site\n====\n\n:claim:`no-such`\n"))
    output = build(project, expect_failure=True)
    assert "index.rst:4: ERROR: unknown claim 'no-such' (claims are declared in data/claims.toml)" in output

    (tmp_path / "gallery-text").mkdir()
    project = claims_project(tmp_path / "gallery-text")
    script = project / "gallery" / "two.py"
    script.write_text(script.read_text(encoding="utf-8").replace("`epoch-end-removed`", "`no-such`"))
    output = build(project, expect_failure=True)
    assert "notebook_links.lua: :claim:`no-such` in a gallery text block: no such claim" in output


def test_a_claim_no_page_uses_fails_the_build(tmp_path):
    project = claims_project(tmp_path)
    script = project / "gallery" / "two.py"
    script.write_text(script.read_text(encoding="utf-8").replace("; and :claim:`epoch-end-removed`", ""))
    output = build(project, expect_failure=True)
    assert "claims.toml:7: WARNING: claim epoch-end-removed: no page uses this claim" in output


@pytest.mark.parametrize(
    ("table", "error"),
    [
        (
            'text = "in one process, x"\nchecked = "in one process"\nevidence = [{ assert = "p.py", message = "m" }]',
            "its evidence ran on this build's release: the wording names it",
        ),
        (
            'text = "on {lightning}, x"\nchecked = "in one process"\nevidence = [{ assert = "p.py", message = "m" }]',
            "the wording names its configuration: 'in one process' is not in its text",
        ),
        (
            'text = "on {lightning}, x"\nevidence = [{ probe = "p", field = "outcome", equals = "x" }]',
            "no configuration: scope = { axis = value } names what the evidence ran in",
        ),
        (
            'text = "on 1.9.5, in one process, x"\nchecked = "in one process"\nevidence = [{ recorded = "1.4.9", '
            'pattern = "p", field = "f", equals = 0 }]',
            "the wording names the release of its recorded evidence, 1.4.9",
        ),
        (
            'text = "on {lightning}, x"\ngeneral = true\nevidence = [{ matrix = "r", scenarios = ["a"] }]',
            "a general claim's evidence covers every scenario",
        ),
        (
            'text = "on {lightning}, x"\nchecked = "x"\nevidence = [{ probe = "p", equals = 1 }]',
            "probe evidence needs field",
        ),
        (
            'text = "on {release}, x"\nscope = { processes = 1 }\n'
            'evidence = [{ probe = "p", field = "f", equals = 1 }]',
            "unknown placeholder {release}",
        ),
        (
            'txt = "x"\nscope = { processes = 1 }\nevidence = [{ assert = "p.py", message = "m" }]',
            "unknown key 'txt' (did you mean 'text'?)",
        ),
        (
            'text = "x"\nscope = { processes = 1 }\nevidence = [{ asert = "p.py", message = "m" }]',
            "(did you mean 'assert'?)",
        ),
        (
            'text = "x"\nscope = { processes = 1 }\nevidence = [{ probe = "p", field = "f", equals = 1, feild = 2 }]',
            "probe evidence: unknown key 'feild' (did you mean 'field'?)",
        ),
        (
            'text = "x"\nscope = { proceses = 1 }\nevidence = [{ assert = "p.py", message = "m" }]',
            "unknown scope axis 'proceses' (did you mean 'processes'?)",
        ),
        (
            'text = "x"\nscope = { optimization = "manul" }\nevidence = [{ assert = "p.py", message = "m" }]',
            "scope optimization is one of automatic, manual; got 'manul'",
        ),
        (
            'text = "x"\nchecked = "on one GPU"\nevidence = [{ assert = "p.py", message = "m" }]',
            "checked 'on one GPU' is not a phrase the loader knows: write the configuration as scope",
        ),
        (
            'text = "Lightning always calls it"\nscope = { processes = 1 }\n'
            'evidence = [{ assert = "p.py", message = "m" }]',
            "the wording says 'always' of the configurations it covers, on the evidence of one run (page p.py)",
        ),
        (
            'text = "a step may return None under any strategy"\nscope = { processes = 1 }\n'
            'evidence = [{ assert = "p.py", message = "m" }, { assert = "p.py", message = "n" }]',
            "the wording says 'any' of the configurations it covers, on the evidence of one run (page p.py)",
        ),
        (
            'text = "x"\nevidence = [{ assert = "p.py", message = "m" }]',
            "no configuration",
        ),
        (
            'text = "it raises a ``TypeError``"\nscope = { processes = 1 }\n'
            'evidence = [{ probe = "p", fields = { error_type = "TypeError" } }]',
            "the wording types TypeError, which its evidence records: write {error_type}",
        ),
        (
            'text = "it raises a ``ValueError``"\nscope = { processes = 1 }\n'
            'evidence = [{ assert = "p.py", message = "m" }]',
            "the wording names ValueError, which none of its evidence checks",
        ),
        (
            'text = "it fails after 4 steps"\nscope = { processes = 1 }\n'
            'evidence = [{ probe = "p", fields = { training_steps = 4 } }]',
            "the wording types the number 4, which its evidence compares: write {training_steps}",
        ),
        (
            'text = "it ran {hook_calls} times"\nscope = { processes = 1 }\n'
            'evidence = [{ probe = "p", field = "hook_calls", equals = 1 }, { probe = "q", field = "hook_calls", '
            "equals = 2 }]",
            "{hook_calls} has several values in its evidence: name one of {hook_calls#1}, {hook_calls#2}",
        ),
        (
            'text = "it ran {hook_call} times"\nscope = { processes = 1 }\n'
            'evidence = [{ probe = "p", field = "hook_calls", equals = 1 }]',
            "unknown placeholder {hook_call} (did you mean 'hook_calls'?)",
        ),
    ],
    ids=[
        "no release",
        "no configuration",
        "checked missing",
        "other release",
        "general",
        "field",
        "placeholder",
        "claim key typo",
        "evidence kind typo",
        "evidence key typo",
        "scope axis typo",
        "scope value",
        "unknown checked phrase",
        "always on one run",
        "any on one page",
        "no scope",
        "typed error type",
        "unchecked error type",
        "typed count",
        "ambiguous value",
        "value typo",
    ],
)
def test_a_claim_names_its_release_and_configuration(tmp_path, table, error):
    path = tmp_path / "claims.toml"
    path.write_text(f"\n[claim.the-claim]\n{table}\n", encoding="utf-8")
    with pytest.raises(claims.ClaimsError) as raised:
        claims.load_claims(path)
    assert str(raised.value).startswith(f"{path}:2: claim the-claim: ")
    assert error in str(raised.value)


def evidence(table: str) -> claims.Evidence:
    return claims._evidence(Path("claims.toml"), 1, "c", __import__("tomllib").loads(f"e = {table}")["e"])


def test_recorded_runs_are_read_from_the_release_data_files():
    """The project's own recording of pytorch-lightning 1.4.9: a callback's on_train_epoch_end(outputs) received an
    empty list, a module's training_epoch_end one entry per training batch."""
    sources = claims.Sources(ROOT)
    holds = evidence(
        '{ recorded = "1.4.9", pattern = "callback-on-train-epoch-end-outputs", field = "received.len", equals = 0 }'
    )
    differs = evidence('{ recorded = "1.4.9", pattern = "training-epoch-end", field = "received.len", equals = 0 }')
    missing = evidence('{ recorded = "1.4.9", pattern = "training-epoch-end", field = "received.size", equals = 0 }')
    assert claims.check_evidence(holds, sources, ran=None) is None
    assert claims.check_evidence(differs, sources, ran=None) == (
        "data/compat/1.4.9.json probes training-epoch-end: received.len is 4, the claim needs 0"
    )
    assert (
        claims.check_evidence(missing, sources, ran=None) == "KeyError: \"no field 'received.size' (missing 'size')\""
    )


def test_matrix_and_default_evidence_read_this_builds_results():
    sources = claims.Sources(ROOT)
    document = {
        "cells": [
            {"recipe": "r", "scenario": "a", "outcome": "holds", "detail": ""},
            {"recipe": "r", "scenario": "b", "outcome": "differs", "detail": "1e-2"},
            {"recipe": "r", "scenario": "c", "outcome": "not applicable", "detail": "why"},
        ]
    }
    sources._cache["matrix"] = claims.matrix_outcomes(document)
    sources._cache["probes"] = {"records": [], "trainer_defaults": {"num_sanity_val_steps": 2}}
    assert claims.check_evidence(evidence('{ matrix = "r", scenarios = ["a"] }'), sources, None) is None
    assert claims.check_evidence(evidence('{ matrix = "r", scenarios = "all" }'), sources, None) == (
        "r is not 'holds' in: b: differs"
    )
    assert (
        claims.check_evidence(evidence('{ matrix = "r", scenarios = ["b"], outcome = "differs" }'), sources, None)
        is None
    )
    assert claims.check_evidence(evidence('{ default = "num_sanity_val_steps", equals = 2 }'), sources, None) is None
    assert claims.check_evidence(evidence('{ default = "num_sanity_val_steps", equals = 0 }'), sources, None) == (
        "Trainer() default num_sanity_val_steps is 2, the claim needs 0"
    )


def test_a_cell_the_matrix_excludes_is_run_and_its_outcome_checked(tmp_path):
    """A constraint of data/scenarios.toml leaves out an iterable dataset with a fractional batch limit; a claim
    citing that cell gets it run by the matrix's harness (python -m migration_guide.claim_cells), and its
    outcome, error and warnings are checked."""
    claims_file = tmp_path / "claims.toml"
    cell = '{ cell = "callback_side", values = { dataset = "iterable", limits = "fraction" }, outcome = "raises" }'
    claims_file.write_text(f'[claim.c]\ntext = "on {{lightning}}, x"\nchecked = "x"\nevidence = [{cell}]\n')
    record = tmp_path / "cells.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "docs" / "_ext")]))
    command = [sys.executable, "-m", "migration_guide.claim_cells", "--claims", str(claims_file), "-o", str(record)]
    subprocess.run(command, check=True, env=env, cwd=ROOT, capture_output=True)
    sources = claims.Sources(ROOT)
    sources._cache["cells"] = {c["key"]: c for c in json.loads(record.read_text())["cells"]}
    sources._cache["probes"] = {"records": []}
    [result] = sources._cache["cells"].values()
    assert result["key"] == "callback_side in dataset=iterable, limits=fraction"
    assert result["outcome"] == "raises" and result["detail"].startswith("MisconfigurationException: ")

    def check(table: str) -> str | None:
        return claims.check_evidence(evidence(table), sources, None)

    values = 'cell = "callback_side", values = { dataset = "iterable", limits = "fraction" }'
    assert check(f'{{ {values}, outcome = "raises", match = "limit_val_batches" }}') is None
    assert check(f'{{ {values}, outcome = "holds" }}').startswith(
        "the cell callback_side in dataset=iterable, limits=fraction raises (MisconfigurationException: "
    )
    assert "does not contain 'accumulate_grad_batches'" in check(
        f'{{ {values}, outcome = "raises", match = "accumulate_grad_batches" }}'
    )
    assert "emitted no warning containing 'sync_dist'" in check(
        f'{{ {values}, outcome = "raises", warns = "sync_dist" }}'
    )
    assert check('{ cell = "callback_side", values = { dataset = "even" }, outcome = "holds" }') == (
        "the cell callback_side in dataset=even did not run in this build"
    )
    with pytest.raises(claims.ClaimsError, match="cell evidence names values"):
        evidence('{ cell = "callback_side", outcome = "holds" }')


def test_top_level_asserts_of_a_myst_notebook_are_read_from_its_code_cells(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        '# Page\n\n```{code-cell} ipython3\nx = 2\nassert x == 2, "x is two"\nfor i in range(1):\n'
        '    assert i == 0, "in a loop"\n```\n\nText.\n',
        encoding="utf-8",
    )
    assert claims.page_assert_messages(page) == {"x is two"}


def test_a_declared_warning_its_witness_no_longer_emits_is_reported():
    from build_mechanics import declared_warnings

    entry = next(e for e in declared_warnings.DECLARED if e.message.startswith("The number of training batches"))
    seen = {
        "category": ["PossibleUserWarning", "UserWarning", "Warning"],
        "message": "The number of training batches (1) is smaller than the logging interval",
    }
    other = {"category": ["FutureWarning", "Warning"], "message": "`isinstance(treespec, LeafSpec)` is deprecated"}
    assert warning_witnesses.emitted([other, seen], entry)
    assert not warning_witnesses.emitted([other], entry)
    assert not warning_witnesses.emitted([{**seen, "category": ["DeprecationWarning", "Warning"]}], entry)
    record = {name: [other, seen] for name in ("fit",)}
    problems = {(e.message, reason.split(":")[0]) for e, reason in warning_witnesses.unseen(record)}
    assert (entry.message, "") not in problems
    assert ("`isinstance(treespec", "") not in problems
    assert any(message.startswith("The 'train_dataloader'") for message, _ in problems)
    assert warning_witnesses.declaration_line(entry) > 0


def test_every_declared_warning_is_emitted_by_its_witness_on_the_installed_packages(tmp_path):
    """The witnesses, run as the build runs them: each declared warning is among what its witness emitted."""
    output = tmp_path / "witnesses.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    subprocess.run(
        [sys.executable, "-m", "migration_guide.warning_witnesses", "--output", str(output)],
        env=env,
        check=True,
        cwd=tmp_path,
    )
    assert warning_witnesses.unseen(json.loads(output.read_text(encoding="utf-8"))) == []


def test_a_claims_words_follow_its_record():
    """The error type a claim prints is the value its evidence compares with the record: changing the record and
    the claim's value together changes the sentence; changing the record alone fails the check."""
    sources = claims.Sources(ROOT)

    def claim_with(error_type: str) -> claims.Claim:
        table = (
            '[claim.c]\ntext = "the old hook fails with a ``{error_type}``"\nscope = { processes = 1 }\n'
            f'evidence = [{{ probe = "p", fields = {{ outcome = "error", error_type = "{error_type}" }} }}]\n'
        )
        path = ROOT / "_build" / "claims-words.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(table, encoding="utf-8")
        return claims.load_claims(path)["c"]

    versions = claims.installed_versions()
    sources._cache["probes"] = {"records": [{"pattern": "p", "outcome": "error", "error_type": "TypeError"}]}
    before = claim_with("TypeError")
    assert claims.render_text(before, versions) == "the old hook fails with a ``TypeError``"
    assert claims.check_evidence(before.evidence[0], sources, None) is None

    sources._cache["probes"]["records"][0]["error_type"] = "RuntimeError"  # the record changed: the claim fails
    assert claims.check_evidence(before.evidence[0], sources, None) == (
        "probe p: error_type is 'RuntimeError', the claim needs 'TypeError'"
    )
    after = claim_with("RuntimeError")  # the claim's value changed with it: the sentence changed
    assert claims.render_text(after, versions) == "the old hook fails with a ``RuntimeError``"
    assert claims.check_evidence(after.evidence[0], sources, None) is None


def test_a_cells_match_must_identify_its_recorded_message():
    """A cell's ``match`` must be found in its error and in no other message this build recorded: "val" is in
    several, the words of the error itself in one."""
    sources = claims.Sources(ROOT)
    detail = "MisconfigurationException: Using `limit_val_batches=0.5` with an iterable dataset is not supported"
    key = "callback_side in dataset=iterable, limits=fraction"
    sources._cache["cells"] = {key: {"key": key, "outcome": "raises", "detail": detail, "warnings": []}}
    other = "MisconfigurationException: `val_check_interval` should be an int with an iterable dataset"
    sources._cache["probes"] = {"records": [{"pattern": "p", "error_message": other}]}
    values = 'cell = "callback_side", values = { dataset = "iterable", limits = "fraction" }, outcome = "raises"'
    weak = claims.check_evidence(evidence(f'{{ {values}, match = "val" }}'), sources, None)
    assert weak.startswith(f"the cell {key}'s match 'val' does not identify its error: 1 other recorded message")
    specific = evidence(f'{{ {values}, match = "`limit_val_batches=0.5` with an iterable dataset" }}')
    assert claims.check_evidence(specific, sources, None) is None
    typed = evidence(f'{{ {values}, error_type = "RuntimeError" }}')
    assert claims.check_evidence(typed, sources, None) == (
        f"the cell {key} raised 'MisconfigurationException', the claim needs 'RuntimeError'"
    )


def test_every_declared_evidence_kind_is_implemented_and_every_implementation_declared():
    from migration_guide import claim_schema

    assert set(claims.IMPLEMENTATIONS) == set(claim_schema.EVIDENCE_KINDS)
    for kind, implementation in claims.IMPLEMENTATIONS.items():
        for method in ("describe", "check", "runs", "configurations"):
            assert getattr(implementation, method) is not getattr(claims.Evidence, method), (kind, method)


def test_a_legacy_block_appended_in_the_earlier_form_loads_and_migrates(tmp_path):
    """A block in the earlier form (``checked`` and the qualifier in the wording) loads as its scope; the
    migration writes it in the reader's voice, with the same scope."""
    from migration_guide import claim_schema

    legacy = (
        '[claim.c]\ntext = "on Lightning {lightning}, in one process, the hook runs twice"\n'
        'checked = "in one process"\nevidence = [{ assert = "gallery/two.py", message = "m" }]\n'
    )
    path = tmp_path / "claims.toml"
    path.write_text(legacy, encoding="utf-8")
    [old] = claims.load_claims(path).values()
    path.write_text(claim_schema.migrate(legacy), encoding="utf-8")
    [new] = claims.load_claims(path).values()
    assert old.scope == new.scope == {"processes": 1}
    assert new.text == "the hook runs twice"
    assert new.marker({"lightning": "2.6.6"}) == "Lightning 2.6.6 · 1 process"


def test_a_claim_about_torch_names_the_torch_it_ran_on_in_its_marker(tmp_path):
    """``about = "torch"``: the claim states torch's behaviour, so its marker names the installed torch beside
    Lightning; an unknown library is refused, naming the file and the line."""
    body = 'text = "a detached loss keeps its storage"\nscope = {{ processes = 1 }}{about}\n'
    body += 'evidence = [{{ assert = "gallery/two.py", message = "m" }}]\n'
    path = tmp_path / "claims.toml"
    path.write_text("[claim.c]\n" + body.format(about='\nabout = "torch"'), encoding="utf-8")
    [claim] = claims.load_claims(path).values()
    assert claim.marker({"lightning": "2.6.6", "torch": "2.13.0"}) == "Lightning 2.6.6 · torch 2.13.0 · 1 process"
    path.write_text("[claim.c]\n" + body.format(about=""), encoding="utf-8")
    [plain] = claims.load_claims(path).values()
    assert plain.marker({"lightning": "2.6.6", "torch": "2.13.0"}) == "Lightning 2.6.6 · 1 process"
    path.write_text("\n[claim.c]\n" + body.format(about='\nabout = "numpy"'), encoding="utf-8")
    with pytest.raises(claims.ClaimsError, match=r"claims.toml:2: claim c: about 'numpy' is none of torch"):
        claims.load_claims(path)


def test_the_real_claims_file_and_its_evidence_that_needs_no_build():
    """data/claims.toml loads under every wording and scope rule; every recorded-run and changelog evidence holds
    on the committed records and the registry; every assert evidence names a top-level assert of its page (whether
    the page ran is the build's check); the scope of every claim is what its recorded runs, matrix scenarios and
    cells ran in (a page's and a probe's configurations are recorded by the build); every claim is used by a page,
    a rule text or a template. Seconds."""
    import re

    known = claims.load_claims(ROOT / "data" / "claims.toml")
    sources = claims.Sources(ROOT)
    problems = []
    for claim in known.values():
        for item in claim.evidence:
            if item.kind in ("recorded", "changelog"):
                reason = claims.check_evidence(item, sources, None)
            elif item.kind == "assert":
                reason = claims.check_evidence(item, sources, lambda page: None)
            else:
                continue
            if reason:
                problems.append(f"{claim.id}: {reason}")
        # the scope against what the recorded runs, the matrix's named scenarios and the claims' cells ran in
        for reason in claims.configuration_problems(claim, sources, kinds=("recorded", "cell", "matrix")):
            problems.append(f"{claim.id}: scope: {reason}")
        claims.render_text(claim, claims.installed_versions())  # every placeholder has its value
    texts = [
        path.read_text(encoding="utf-8")
        for folder in ("docs", "gallery", "src", "data")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".rst", ".md", ".py", ".txt", ".html", ".toml") and path.name != "claims.toml"
    ]
    used = {
        m[1][:1].lower() + m[1][1:] for text in texts for m in re.finditer(r"(?::claim:|\{claim\})`([\w-]+)`", text)
    }
    problems += [f"{claim_id}: no page uses it" for claim_id in known if claim_id not in used]
    assert problems == [], "\n".join(problems)
    assert len(known) > 100


LIGHTNING_PAGE = '''"""
Runs
====

A page that trains in one process, with gradient accumulation.
"""

# %%
# Its claims: :claim:`one-process`; :claim:`two-processes`; :claim:`accumulation-unsaid`; :claim:`fork-refuses`.
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel

trainer = pl.Trainer(
    max_epochs=1, limit_train_batches=3, limit_val_batches=1, accumulate_grad_batches=3, logger=False,
    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
)
trainer.fit(BoringModel())
assert trainer.global_step == 1, "three batches made one optimizer step"

refused = None
try:
    pl.Trainer(strategy="ddp_fork", devices=2, accelerator="cpu", logger=False, enable_progress_bar=False).predict(
        BoringModel(), return_predictions=True
    )
except Exception as error:  # refused in the workers, before the loop is set up
    refused = error
assert refused is not None, "ddp_fork refused return_predictions=True"
'''
RUN_CLAIMS = """
[claim.one-process]
text = "three batches make one optimizer step"
scope = { processes = 1, accumulate_grad_batches = 3 }
evidence = [{ assert = "gallery/runs.py", message = "three batches made one optimizer step" }]

[claim.two-processes]
text = "three batches make one optimizer step"
scope = { strategy = "ddp_fork", processes = 2, accumulate_grad_batches = 3 }
evidence = [{ assert = "gallery/runs.py", message = "three batches made one optimizer step" }]

[claim.fork-refuses]
text = "``return_predictions=True`` is refused"
scope = { strategy = "ddp_fork", processes = 2, return_predictions = true }
evidence = [{ assert = "gallery/runs.py", message = "ddp_fork refused return_predictions=True" }]

[claim.accumulation-unsaid]
text = "three batches make one optimizer step"
scope = { processes = 1 }
evidence = [{ assert = "gallery/runs.py", message = "three batches made one optimizer step" }]
"""


def test_a_claims_scope_is_compared_with_the_configuration_its_page_ran(tmp_path):
    """The page's Trainer records what it ran in (one process, accumulate_grad_batches=3) while the page runs --
    its code untouched: Lightning adds the recorder through its callbacks_factory entry point. A scope that says
    two ddp_fork processes fails the build naming the claim and what the page ran; a scope that leaves out the
    accumulation every run had fails too; the scope that says what ran passes."""
    project = claims_project(tmp_path)
    (project / "gallery" / "runs.py").write_text(LIGHTNING_PAGE, encoding="utf-8")
    data = project / "data" / "claims.toml"
    data.write_text(data.read_text(encoding="utf-8") + RUN_CLAIMS, encoding="utf-8")
    output = build(project, expect_failure=True)
    [record] = (project / "_build" / "html" / ".doctrees" / "run-configurations" / "gallery").glob("runs.py.jsonl")
    run, predict = [json.loads(line) for line in record.read_text().splitlines()]
    # the predict the workers refused, heard of in this process, with what the call asked for
    assert (predict["processes"], predict["strategy"], predict["stage"], predict["return_predictions"]) == (
        2, "ddp_fork", "predict", True
    )  # fmt: skip
    assert run["processes"] == 1 and run["accumulate_grad_batches"] == 3 and run["stage"] == "fit"
    assert run["page"] == "gallery/runs.py" and run["line"] == 17  # trainer.fit(...)
    assert (
        "WARNING: claim two-processes: scope: the scope (2 processes · ddp_fork · accumulate_grad_batches=3) is not "
        'what the assert "three batches made one optimizer step" of gallery/runs.py ran: processes=1, '
        "precision=32-true, optimization=automatic, stage=fit, accumulate_grad_batches=3" in output
    ), output[-4000:]
    assert (
        "WARNING: claim accumulation-unsaid: scope: every run of its evidence had accumulate_grad_batches = 3, which "
        "the scope does not say" in output
    )
    assert "claim one-process:" not in output and "claim fork-refuses:" not in output
    assert "claim sum-is-two:" not in output  # a page that ran no Trainer ran in its own one process


MEASURED_PAGE = '''"""
Sizes
=====

A page that measures a size.
"""

# %%
# :claim:`Size-measured`.
buffer = bytes(3 * 4)
size = len(buffer)
assert size == 3 * 4, "the buffer holds its elements' bytes"
'''
MEASURED_CLAIM = """
[claim.size-measured]
text = "the buffer holds {size} bytes"
scope = { processes = 1 }
evidence = [{ assert = "gallery/sizes.py", message = "the buffer holds its elements' bytes" }]
"""


def test_a_number_a_page_measures_is_printed_from_its_assert_and_follows_it(tmp_path):
    """The page asserts the size it measured; the claim prints it as ``{size}``. Typing the number fails the file;
    a page that measures another value fails its assert, so the build; measuring and asserting the new value
    changes the sentence on the page."""
    project = claims_project(tmp_path)
    page = project / "gallery" / "sizes.py"
    page.write_text(MEASURED_PAGE, encoding="utf-8")
    data = project / "data" / "claims.toml"
    data.write_text(data.read_text(encoding="utf-8") + MEASURED_CLAIM, encoding="utf-8")
    build(project)
    html = project / "_build" / "html" / "examples" / "sizes.html"
    assert "The buffer holds 12 bytes" in html.read_text(encoding="utf-8")

    page.write_text(MEASURED_PAGE.replace("bytes(3 * 4)", "bytes(5 * 4)"), encoding="utf-8")  # the value changed
    output = build(project, expect_failure=True)
    assert "claim size-measured: assert evidence: gallery/sizes.py did not run to its end in this build" in output

    page.write_text(MEASURED_PAGE.replace("3 * 4", "5 * 4"), encoding="utf-8")  # and the page asserts it
    build(project)
    assert "The buffer holds 20 bytes" in html.read_text(encoding="utf-8")

    data.write_text(data.read_text(encoding="utf-8").replace("{size} bytes", "20 bytes"), encoding="utf-8")
    output = build(project, expect_failure=True)
    assert "the wording types the number 20, which its evidence compares: write {size}" in output


RECORD_CLAIM = """
[claim.old-hook-error]
text = "the old hook fails with a ``{error_type}``: {error_message}"
scope = { processes = 1 }
evidence = [{ recorded = "9.9.9", pattern = "module-on-train-epoch-end-outputs", fields = { error_type = "TypeError", \
error_message = "missing 1 required positional argument: 'outputs'" } }]
"""


def test_changing_a_record_changes_its_sentence_or_fails_the_build(tmp_path):
    """A claim printing a recorded error's type and message: a record that changes alone fails the build, naming the
    claim and the field; the record and the claim changed together change the sentence on the page."""
    project = claims_project(tmp_path)
    (project / "data" / "compat").mkdir()
    record = {
        "pattern": "module-on-train-epoch-end-outputs",
        "outcome": "error",
        "error_type": "TypeError",
        "error_message": "missing 1 required positional argument: 'outputs'",
        "configuration": {"processes": 1, "stage": "fit"},
    }
    recorded = project / "data" / "compat" / "9.9.9.json"
    recorded.write_text(json.dumps({"probes": {"records": [record]}}), encoding="utf-8")
    data = project / "data" / "claims.toml"
    data.write_text(data.read_text(encoding="utf-8") + RECORD_CLAIM, encoding="utf-8")
    script = project / "gallery" / "two.py"
    script.write_text(
        script.read_text(encoding="utf-8").replace(
            "`epoch-end-removed`.", "`epoch-end-removed`. And :claim:`old-hook-error`."
        ),
        encoding="utf-8",
    )
    page = project / "_build" / "html" / "examples" / "two.html"
    build(project)
    assert "the old hook fails with a <code" in page.read_text(encoding="utf-8")
    assert "TypeError</span></code>: missing 1 required positional argument: ‘outputs’" in page.read_text()

    for name, value in (("error_type", "RuntimeError"), ("error_message", "outputs is not accepted")):
        recorded.write_text(json.dumps({"probes": {"records": [{**record, name: value}]}}), encoding="utf-8")
        output = build(project, expect_failure=True)
        assert "claim old-hook-error: recorded evidence: data/compat/9.9.9.json probes " in output
        assert f"module-on-train-epoch-end-outputs: {name} is {value!r}, the claim needs" in output

    changed = {**record, "error_type": "RuntimeError", "error_message": "outputs is not accepted"}
    recorded.write_text(json.dumps({"probes": {"records": [changed]}}), encoding="utf-8")
    claims_text = data.read_text(encoding="utf-8").replace('"TypeError"', '"RuntimeError"')
    data.write_text(claims_text.replace("missing 1 required positional argument: 'outputs'", "outputs is not accepted"))
    build(project)
    assert "RuntimeError</span></code>: outputs is not accepted" in page.read_text(encoding="utf-8")


def test_each_scope_rule_on_recorded_configurations():
    """configuration_problems on evidence whose runs are given: a scope no run of an evidence is in, a listed value
    no evidence ran, a non-default value every run had that the scope leaves out, and a quantifying wording on one
    run, each reported; the scope that says what ran, none."""

    class Ran(claims.Evidence):
        def describe(self) -> str:
            return f"the runs {self.target}"

        def configurations(self, sources):
            return self.fields["runs"]

    def problems(scope, *runs_per_evidence, text="the hook runs"):
        evidence = tuple(
            Ran(
                "assert",
                f"e{n}",
                {"runs": [{**run, "release": "2.6.6", "run": f"e{n}-{i}"} for i, run in enumerate(r)]},
            )
            for n, r in enumerate(runs_per_evidence)
        )
        claim = claims.Claim("c", text, "", False, evidence, 1, scope)
        return claims.configuration_problems(claim, claims.Sources(ROOT))

    one = {"processes": 1, "stage": "fit"}
    fork = {"processes": 2, "strategy": "ddp_fork", "stage": "fit"}
    assert problems({"processes": 1}, [one]) == []
    [wrong] = problems({"strategy": "ddp_fork", "processes": 2}, [one])
    assert wrong.startswith("the scope (2 processes · ddp_fork) is not what the runs e0 ran: processes=1, ")
    assert problems({"processes": [1, 2]}, [one], [fork]) == []
    assert problems({"processes": [1, 2]}, [one]) == ["the scope names processes 2, which none of its evidence ran"]
    [unsaid] = problems({"processes": 1}, [{**one, "optimization": "manual"}])
    assert unsaid.startswith("every run of its evidence had optimization = 'manual', which the scope does not say")
    assert problems({"processes": 1}, [{**one, "optimization": "manual"}, one]) == []  # both modes ran
    [bf16] = problems({"processes": 1}, [{**one, "precision": "bf16-mixed"}])
    assert "precision = 'bf16-mixed'" in bf16
    assert problems({"processes": 1}, [{**one, "precision": "32"}]) == []  # 1.x's name of 32-true
    [always] = problems({"processes": 1}, [one], text="the hook always runs")
    assert always.startswith("the wording says 'always' of the configurations it covers, and its evidence rests on")
    assert problems({"processes": 1}, [one, {**one, "stage": "validate"}], text="the hook always runs") == []
    [predict] = problems({"processes": 1}, [{**one, "stage": "predict", "return_predictions": False}])
    assert "return_predictions = False" in predict


def test_the_numbers_an_assert_compares_a_variable_with(tmp_path):
    """A name, an attribute or a list compared with a number (a literal, a page constant, arithmetic of them) is a
    value a wording prints; a comparison inside a generator, or with a computed value, is not."""
    page = tmp_path / "page.py"
    page.write_text(
        "BATCH, CLASSES = 64, 10\n"
        "rows, size, trainer = [11, 10], len(bytes(2564)), object()\n"
        "assert rows == [11, 10] and size == BATCH * CLASSES * 4 + 4 and trainer.global_step == 4 and "
        "all(x == 9 for x in rows) and size > len(rows), 'm'\n"
        "assert size == 2564 and size == 2565, 'twice'\n",
        encoding="utf-8",
    )
    assert claims.assert_values(page, "m") == {"rows.0": 11, "rows.1": 10, "size": 2564, "trainer.global_step": 4}
    with pytest.raises(claims.ClaimsError, match="compares size with two numbers"):
        claims.assert_values(page, "twice")


def test_the_configuration_of_matrix_cells_and_recorded_runs():
    """A scenario's runs carry its processes, strategy, precision, optimization, accumulation and stages; a recorded
    run its record's configuration, or the one its recording code gives (marked declared)."""
    from migration_guide import run_configurations, scenarios

    space = scenarios.load_space()
    [ddp_manual] = run_configurations.scenario_configurations(
        space.scenario("s", {"strategy": "ddp-2", "train_step": "manual", "precision": "bf16-mixed"})
    )
    assert ddp_manual == {
        "processes": 2,
        "strategy": "ddp_fork",
        "precision": "bf16-mixed",
        "optimization": "manual",
        "accumulate_grad_batches": 1,
        "dataloaders": 1,
        "stage": "fit",
        "return_predictions": None,
    }
    runs = run_configurations.scenario_configurations(
        space.scenario("s", {"calls": "predict-fit-predict", "accumulation": "fixed-3", "strategy": "ddp-3"})
    )
    assert [(r["stage"], r["return_predictions"], r["accumulate_grad_batches"], r["processes"]) for r in runs] == [
        ("predict", False, 3, 3),
        ("fit", None, 3, 3),
        ("predict", False, 3, 3),
    ]
    scheduled = run_configurations.scenario_configurations(space.scenario("s", {"accumulation": "scheduled"}))
    assert scheduled[0]["accumulate_grad_batches"] is None

    recorded = run_configurations.recorded_configuration
    assert recorded("probes", "test-epoch-end", {}, {}) == {
        "processes": 1, "strategy": None, "declared": True, "stage": "test", "dataloaders": 1
    }  # fmt: skip
    two = run_configurations.scenario_configurations(
        space.scenario("s", {"eval_loaders": "2", "calls": "fit-validate"})
    )
    assert [(r["stage"], r["dataloaders"]) for r in two] == [("fit", 2), ("validate", 2)]
    varies = run_configurations.scenario_configurations(space.scenario("s", {"eval_loaders": "varies"}))
    assert varies[0]["dataloaders"] == "varies"  # the count changes between epochs
    assert recorded("observations", "p", {"world_size": 2}, {})["strategy"] == "ddp_fork"
    fields = {"runs.accumulate_3.logged.0.1": 1.0}
    assert recorded("rewrites", "module_training_epoch_end.py", {}, fields)["accumulate_grad_batches"] == 3
    own = {"configuration": {"processes": 1, "stage": "fit", "precision": "32"}}
    assert recorded("probes", "test-epoch-end", own, {}) == own["configuration"]
    assert run_configurations.value(own["configuration"], "precision") == "32-true"
    assert run_configurations.value({"stage": "predict"}, "return_predictions") is True


def test_only_an_equality_gives_a_placeholder_its_value(tmp_path):
    """``x == 4`` (or ``math.isclose(x, 0.5)``) gives ``{x}`` its value; ``x != 4``, ``x >= 100`` and the like give
    none: an inequality bounds the value, and prints it only after the words that say so ("at least {x}")."""
    page = tmp_path / "page.py"
    page.write_text(
        "import math\nsize, ratio, share, other, count = len(bytes(4)), abs(120), abs(0.5), abs(3), abs(7)\n"
        "assert size == 4 and math.isclose(share, 0.5, rel_tol=1e-6) and ratio >= 100 and other != 4 "
        "and 10 > count, 'm'\n",
        encoding="utf-8",
    )
    assert claims.assert_values(page, "m") == {"size": 4, "share": 0.5}
    assert claims.assert_bounds(page, "m") == {"ratio": (">=", 100), "count": ("<", 10)}

    def load(text: str) -> claims.Claim:
        path = tmp_path / "data" / "claims.toml"
        path.parent.mkdir(exist_ok=True)
        evidence = '[{ assert = "page.py", message = "m" }]'
        path.write_text(f'[claim.c]\ntext = "{text}"\nscope = {{ processes = 1 }}\nevidence = {evidence}\n')
        return claims.load_claims(path)["c"]

    versions = claims.installed_versions()
    assert (
        claims.render_text(load("it keeps {size} bytes, {share} of them"), versions) == "it keeps 4 bytes, 0.5 of them"
    )
    assert claims.render_text(load("it is at least {ratio} times faster"), versions) == (
        "it is at least 100 times faster"
    )
    assert claims.render_text(load("fewer than {count} calls"), versions) == "fewer than 10 calls"
    with pytest.raises(claims.ClaimsError, match=r"\{ratio\}: the assert bounds it \(ratio >= 100\)"):
        load("it is {ratio} times faster")
    with pytest.raises(claims.ClaimsError, match=r"\{count\}: the assert bounds it \(count < 10\)"):
        load("at least {count} calls")
    with pytest.raises(claims.ClaimsError, match=r"unknown placeholder \{other\}"):
        load("it keeps {other} bytes")


def test_a_page_that_asserts_an_inequality_no_longer_prints_its_number(tmp_path):
    """The real claims file and gallery, with ``clone_bytes == 4`` of the retained-memory page turned into
    ``clone_bytes != 4``: the claim that printed ``{clone_bytes}`` as the size of a clone fails to load, naming it."""
    import shutil

    shutil.copytree(ROOT / "gallery", tmp_path / "gallery")
    (tmp_path / "data").mkdir()
    shutil.copy(ROOT / "data" / "claims.toml", tmp_path / "data" / "claims.toml")
    page = tmp_path / "gallery" / "performance" / "retained_memory.py"
    text = page.read_text(encoding="utf-8")
    assert text.count("and clone_bytes == 4") == 1
    claims.load_claims(tmp_path / "data" / "claims.toml")  # as committed: loads
    page.write_text(text.replace("and clone_bytes == 4", "and clone_bytes != 4"), encoding="utf-8")
    with pytest.raises(
        claims.ClaimsError, match=r"claim detach-clone-keeps-one-element: unknown placeholder \{clone_bytes\}"
    ):
        claims.load_claims(tmp_path / "data" / "claims.toml")


def test_a_wording_about_dataloaders_names_how_many_its_evidence_had():
    """The number of dataloaders a run's evaluation loop had is an axis of its configuration: a wording that speaks of
    loaders or ``dataloader_idx`` on a scope that leaves the count out needs runs of several counts; one that says
    "any" of the counts needs them whatever its scope; every run with two loaders and a scope silent on them is
    reported as for any axis; the scope that says the count it ran passes."""

    class Ran(claims.Evidence):
        def describe(self) -> str:
            return f"the runs {self.target}"

        def configurations(self, sources):
            return self.fields["runs"]

    def problems(scope, *runs_per_evidence, text):
        evidence = tuple(
            Ran(
                "assert",
                f"e{n}",
                {"runs": [{**run, "release": "2.6.6", "run": f"e{n}-{i}"} for i, run in enumerate(r)]},
            )
            for n, r in enumerate(runs_per_evidence)
        )
        return claims.configuration_problems(
            claims.Claim("c", text, "", False, evidence, 1, scope), claims.Sources(ROOT)
        )

    one = {"processes": 1, "stage": "validate", "dataloaders": 1}
    two = {**one, "dataloaders": 2}
    refused = "Lightning refuses a module's ``on_validation_batch_end`` whose ``dataloader_idx`` has no default"
    [silent] = problems({"processes": 1}, [one], [one], text=refused)  # two runs, one count: the breaker's case
    assert silent.startswith(
        "the wording speaks of dataloaders ('dataloader_idx') and its scope does not say how many: every run of its "
        "evidence had dataloaders = 1; add dataloaders = 1 to the scope"
    )
    assert problems({"processes": 1, "dataloaders": 1}, [one], [one], text=refused) == []
    assert problems({"processes": 1}, [one], [two], text=refused) == []  # both counts ran
    anyone = "Lightning refuses any required ``dataloader_idx``"
    [narrow] = problems({"processes": 1, "dataloaders": 1}, [one], [one], text=anyone)
    assert narrow.startswith("the wording says 'any' of the dataloaders a run may have, and its evidence ran 1 only")
    assert problems({"processes": 1, "dataloaders": [1, 2]}, [one], [two], text=anyone) == []
    [unsaid] = problems({"processes": 1}, [two], text="the hook runs once per validation run")
    assert unsaid.startswith("every run of its evidence had dataloaders = 2, which the scope does not say")
    assert problems({"processes": 1}, [{**one, "dataloaders": None}], text="the hook runs once per run") == []
    from migration_guide import claim_schema

    assert claim_schema.scope_words({"processes": 1, "stage": "validate", "dataloaders": 1}) == [
        "1 process", "trainer.validate", "1 validation dataloader"
    ]  # fmt: skip
    assert claim_schema.scope_words({"dataloaders": [1, 2]}) == ["1 and 2 evaluation dataloaders"]


LOADERS_PAGE = '''"""
Loaders
=======

A module whose validation batch hook requires ``dataloader_idx``, run with one loader and with two.
"""

# %%
# :claim:`required-refused`; :claim:`required-refused-one-loader`.
import lightning.pytorch as pl
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader


class Required(BoringModel):
    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        return super().validation_step(batch, batch_idx)

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx):
        pass


def trainer():
    return pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)


refused = None
try:
    trainer().validate(Required(), DataLoader(RandomDataset(32, 8), batch_size=4))
except RuntimeError as error:
    refused = error
assert refused is not None and "dataloader_idx" in str(refused), "one loader: the required dataloader_idx is refused"
trainer().validate(Required(), [DataLoader(RandomDataset(32, 8), batch_size=4)] * 2)
'''
LOADERS_CLAIMS = """
[claim.required-refused]
text = "Lightning refuses a module's ``on_validation_batch_end`` whose ``dataloader_idx`` has no default"
scope = { processes = 1 }
evidence = [{ assert = "gallery/loaders.py", message = "one loader: the required dataloader_idx is refused" }]

[claim.required-refused-one-loader]
text = "with one validation dataloader, Lightning refuses a module's ``on_validation_batch_end`` whose \
``dataloader_idx`` has no default"
scope = { processes = 1, stage = "validate", dataloaders = 1 }
evidence = [{ assert = "gallery/loaders.py", message = "one loader: the required dataloader_idx is refused" }]
"""


def test_the_number_of_dataloaders_a_page_ran_is_recorded_and_checked(tmp_path):
    """A page's runs record how many loaders their evaluation loop had, the refused run too (1; then 2 for the run
    Lightning accepts); a claim that the required ``dataloader_idx`` is refused, scoped without the count, fails the
    build naming it, and the claim that says one loader passes and prints it in its marker."""
    project = claims_project(tmp_path)
    (project / "gallery" / "loaders.py").write_text(LOADERS_PAGE, encoding="utf-8")
    data = project / "data" / "claims.toml"
    data.write_text(data.read_text(encoding="utf-8") + LOADERS_CLAIMS, encoding="utf-8")
    output = build(project, expect_failure=True)
    [record] = (project / "_build" / "html" / ".doctrees" / "run-configurations" / "gallery").glob("loaders.py.jsonl")
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(run["stage"], run["dataloaders"]) for run in runs] == [("validate", 1), ("validate", 2)]
    assert (
        "WARNING: claim required-refused: scope: the wording speaks of dataloaders ('dataloader_idx') and its scope "
        "does not say how many: every run of its evidence had dataloaders = 1" in output
    ), output[-4000:]
    assert "claim required-refused-one-loader:" not in output
    page = (project / "_build" / "html" / "examples" / "loaders.html").read_text(encoding="utf-8")
    assert "1 process · trainer.validate · 1 validation dataloader]" in page
