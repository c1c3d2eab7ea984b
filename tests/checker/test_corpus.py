"""The corpus measure (``nox -s corpus``) on a small made-up corpus: its counts are the ones worked out by hand."""

from __future__ import annotations

import textwrap
from pathlib import Path

from migration_guide import corpus

MODEL = """\
import lightning.pytorch as pl


class M(pl.LightningModule):
    def training_epoch_end(self, outputs):
        pass

    def validation_epoch_end(self, outputs):
        print(outputs)


class Plain:
    def test_epoch_end(self, outputs):
        pass
"""
LABELS = """\
[[repository]]
name = "someone/project"
commit = "0000000000000000000000000000000000000000"

[[case]]
repo = "someone/project"
path = "pkg/model.py"
line = 5
expect = "LM001"

[[case]]
repo = "someone/project"
path = "pkg/model.py"
line = 13
expect = "none"

[[case]]
repo = "someone/project"
path = "pkg/other.py"
line = 2
expect = "LM006"
"""


def test_the_counts_of_a_small_corpus(tmp_path: Path, capsys):
    folder = tmp_path / "corpus" / "someone+project" / "pkg"
    folder.mkdir(parents=True)
    (folder / "model.py").write_text(MODEL, encoding="utf-8")
    (folder / "other.py").write_text("x = 1\n", encoding="utf-8")  # the labelled LM006 is not there: a miss
    labels = tmp_path / "labels.toml"
    labels.write_text(LABELS, encoding="utf-8")
    total = corpus.measure(tmp_path / "corpus", labels)
    # line 5: true positive; line 8 (validation_epoch_end): unlabelled, so a false positive; line 13: not reported
    assert (total.tp, total.fp, total.fn) == (1, 1, 1)
    assert (total.precision, total.recall) == (0.5, 0.5)
    assert (total.crashes, total.files, total.changed, total.parse_failures, total.not_idempotent) == (0, 2, 1, 0, 0)
    assert total.broken_callers == 0
    # line 5 renamed (safe), line 8 rewritten to module-side caching (proven: plain --fix applies it): no marker left
    assert (total.safe, total.proven, total.unsafe, total.manual, total.markers) == (1, 1, 0, 0, 0)
    out = capsys.readouterr().out
    assert (
        "of the 1 findings that need more than a safe fix, the rewrites rewrite 1 (100%), by a proven rewrite 1 (100%)"
        in out
    )
    assert dict(total.by_shape) == {("LM001", "validation-epoch-end/per-dataloader", "proven"): 1}
    assert "  LM001 validation-epoch-end/per-dataloader: 1 proven" in out
    assert "false positive LM001 at pkg/model.py:8 (unlabelled)" in out
    assert "false negative LM006 at pkg/other.py:2" in out


def test_a_rewrite_no_row_proves_counts_as_rewritten_but_not_as_proven(tmp_path: Path, capsys, monkeypatch):
    from lightning_migrate.checker import proven

    monkeypatch.setattr(proven, "shapes", lambda: frozenset())
    folder = tmp_path / "corpus" / "someone+project" / "pkg"
    folder.mkdir(parents=True)
    (folder / "model.py").write_text(MODEL, encoding="utf-8")
    labels = tmp_path / "labels.toml"
    labels.write_text(LABELS, encoding="utf-8")
    total = corpus.measure(tmp_path / "corpus", labels)
    assert (total.proven, total.unsafe, total.manual) == (0, 1, 0)
    assert (total.opt_in_share, total.proven_share) == (1.0, 0.0)
    out = capsys.readouterr().out
    assert "the rewrites rewrite 1 (100%), by a proven rewrite 0 (0%);" in out


def test_an_edit_that_leaves_a_caller_behind_is_counted(tmp_path: Path, monkeypatch):
    folder = tmp_path / "someone+project"
    folder.mkdir()
    (folder / "m.py").write_text(MODEL, encoding="utf-8")
    (folder / "loop.py").write_text("def end(model):\n    model.training_epoch_end([])\n", encoding="utf-8")

    def careless_fix(copy: Path) -> None:  # renames without looking for callers: what the count must catch
        for path in copy.rglob("*.py"):
            path.write_text(
                path.read_text().replace("def training_epoch_end(self, outputs)", "def on_train_epoch_end(self)")
            )

    monkeypatch.setattr(corpus, "_fix_quietly", careless_fix)
    tally = corpus.Tally()
    corpus.fix_figures(folder, tally)
    assert (tally.changed, tally.broken_callers, tally.not_idempotent) == (1, 1, 0)
    assert "edit breaks a caller: `training_epoch_end` still used" in tally.details
    assert "def training_epoch_end(self, outputs):" in (folder / "m.py").read_text()  # the copy was fixed, not this


def test_labels_name_known_repositories(tmp_path: Path):
    labels = tmp_path / "labels.toml"
    labels.write_text(LABELS.replace('repo = "someone/project"\npath = "pkg/other.py"', 'repo = "x/y"\npath = "a"'))
    try:
        corpus.load_labels(labels)
    except ValueError as err:
        assert "unknown repository x/y" in str(err)
    else:
        raise AssertionError("an unknown repository was accepted")


def test_the_project_labels_file_is_well_formed():
    repos, cases = corpus.load_labels()
    assert len(repos) >= 10
    assert all(len(repo["commit"]) == 40 for repo in repos.values())
    with_findings = {name for name, found in cases.items() if any(c["expect"] != "none" for c in found.values())}
    assert len(with_findings) >= 10, textwrap.shorten(str(sorted(with_findings)), 200)
