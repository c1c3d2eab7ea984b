"""The equivalence check of the caching rewrites: each shape of ``data/rewrites`` rewritten by the checker, run on the
installed Lightning, computes what the shape as written computed on the last 1.x release that ran it, over the
same data and weights (``data/compat/<version>.json``, recorded by ``nox -s legacy``)."""

from __future__ import annotations

import hashlib
import json

import pytest

from lightning_migrate.checker import rewrite_source
from migration_guide import compat, rewrite_equivalence

pl = pytest.importorskip("lightning.pytorch")

#: The 1.x releases recorded, newest first: a configuration is compared with the newest that ran it.
LEGACY = sorted(compat.load_matrix()["versions"], key=lambda v: tuple(map(int, v.split("."))))
LEGACY = [v for v in reversed(LEGACY) if compat.load_matrix()["versions"][v]["group"] == "legacy"]
#: Configurations where no 1.x release could run the old code, and what the rewrite does there instead.
NOT_RUN_ON_1X = {
    "predict_no_return": "1.x passed empty lists with return_predictions=False (the shape's torch.cat raised); "
    "the rewrite keeps every prediction",
    "two_val_dataloaders": "a step without dataloader_idx takes no second dataloader on any release",
    "two_test_dataloaders": "a step without dataloader_idx takes no second dataloader on any release",
    "epoch_without_batches": "1.4.9 called the old hook with an empty list in the epoch without a batch (the shape's "
    "torch.stack raised), and 1.9.5 rejects the hook's outputs parameter or its step-end shape raised too",
}
#: A shape that gives other values than the newest 1.x release that ran it, in one configuration, and why: the rule
#: page says so through the claim named.
DIFFERS: dict[tuple[str, str], str] = {}


def _records() -> dict[str, dict]:
    return {
        version: json.loads(compat.data_path(version).read_text(encoding="utf-8"))["rewrites"] for version in LEGACY
    }


def _runs(version: str, shape: str) -> dict[str, dict]:
    return RECORDS[version][shape]["runs"]


RECORDS = _records()
CASES = [
    (path.name, config)
    for path in rewrite_equivalence.shapes()
    for config in rewrite_equivalence.CONFIGS[rewrite_equivalence.stage_of(path)]
]


@pytest.fixture(scope="module")
def rewritten() -> dict[str, str]:
    return {
        path.name: rewrite_source(path.read_text(encoding="utf-8"), str(path)) for path in rewrite_equivalence.shapes()
    }


@pytest.mark.parametrize(("shape", "config"), CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_the_rewrite_computes_what_the_last_1x_release_did(shape, config, rewritten):
    ran = [v for v in LEGACY if "error" not in _runs(v, shape)[config]]
    stage = rewrite_equivalence.stage_of(rewrite_equivalence.SHAPES_DIR / shape)
    new = rewrite_equivalence.run(rewritten[shape], shape, rewrite_equivalence.CONFIGS[stage][config], pl)
    if not ran:  # no 1.x release ran the old code here: the difference is declared, and shown
        assert config in NOT_RUN_ON_1X, (
            f"{shape} raised on every 1.x release in {config}: {_runs(LEGACY[0], shape)[config]}"
        )
        if config == "predict_no_return":
            assert "error" not in new and new["attributes"], new
        else:
            assert "error" in new, new
        return
    old = _runs(ran[0], shape)[config]
    assert old["logged"] or old["attributes"], "the record holds what the epoch-end code computed"
    if (shape, config) in DIFFERS:
        assert rewrite_equivalence.same(old, new) is not None, f"{shape} in {config} now holds: drop it from DIFFERS"
        return
    assert rewrite_equivalence.same(old, new) is None, (
        f"{shape} in {config} vs {ran[0]}: {rewrite_equivalence.same(old, new)}"
    )


def test_every_shape_is_compared_in_most_of_its_configurations():
    for path in rewrite_equivalence.shapes():
        configs = rewrite_equivalence.CONFIGS[rewrite_equivalence.stage_of(path)]
        compared = [c for c in configs if any("error" not in _runs(v, path.name)[c] for v in LEGACY)]
        assert len(compared) >= len(configs) - 1, (path.name, compared)


def test_1x_releases_disagree_under_accumulation_and_the_rewrite_follows_the_last_that_ran_the_hook():
    """Lightning 1.4 passed ``training_epoch_end`` the whole loss, 1.5-1.9 the loss divided by
    ``accumulate_grad_batches``: the rewrite of ``training_epoch_end`` gives 1.9's values (compared above), the
    rewrite of the 1.4-only ``on_train_epoch_end(outputs)`` gives 1.4's."""
    by_version = {v: _runs(v, "module_training_epoch_end.py")["accumulate_3"]["logged"] for v in ("1.4.9", "1.9.5")}
    whole, divided = ([value for _, value in by_version[v]] for v in ("1.4.9", "1.9.5"))
    assert whole == pytest.approx([3 * v for v in divided], rel=1e-5)
    fit = _runs("1.9.5", "module_training_epoch_end.py")["fit"]["logged"]
    assert fit == _runs("1.4.9", "module_training_epoch_end.py")["fit"]["logged"]


def test_the_records_are_those_of_the_committed_shapes():
    """A shape added or edited after the records were made must be recorded again (``nox -s legacy``)."""
    for version in LEGACY:
        assert set(RECORDS[version]) == {path.name for path in rewrite_equivalence.shapes()}, version
        for path in rewrite_equivalence.shapes():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            assert RECORDS[version][path.name]["sha256"] == digest, f"{path.name} changed: run nox -s legacy"
            configs = set(rewrite_equivalence.CONFIGS[rewrite_equivalence.stage_of(path)])
            assert set(_runs(version, path.name)) == configs, (version, path.name)


def test_the_shapes_are_old_code_the_checker_rewrites_in_full():
    for path in rewrite_equivalence.shapes():
        source = path.read_text(encoding="utf-8")
        once = rewrite_source(source, str(path))
        assert once != source and rewrite_source(once, str(path)) == once, path.name
        assert "BoringModel" in source or "Callback" in source


def test_the_rewrite_page_shows_a_shape_the_scenario_matrix_proves():
    """``gallery/core/automatic_rewrite.py`` rewrites the old module it writes (``OLD_MODULE``) and shows the domain
    box of a matrix row: that row is a rewrite of a ``data/rewrites`` shape whose classes are the page's old
    module's, so what the page shows is what the row proves in every configuration."""
    import ast
    import re

    from migration_guide.scenarios import load_space

    page = rewrite_equivalence.ROOT / "gallery" / "core" / "automatic_rewrite.py"
    text = page.read_text(encoding="utf-8")
    (old_module,) = [
        node.value.value
        for node in ast.parse(text).body
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["OLD_MODULE"]
    ]
    (ids,) = re.findall(r"^# \.\. recipe-domain:: (.+)$", text, flags=re.M)
    recipes = {r.id: r for r in load_space().recipes}

    def classes(source: str, names) -> list[str]:
        return [ast.dump(n) for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name in names]

    for rid in ids.split():
        recipe = recipes[rid]
        shape = (rewrite_equivalence.ROOT / recipe.page).read_text(encoding="utf-8")
        assert recipe.transform == "lightning-migrate" and recipe.page.startswith("data/rewrites/"), rid
        assert classes(old_module, recipe.define) == classes(shape, recipe.define) != [], rid
        rewritten = classes(rewrite_source(old_module), recipe.define)
        assert rewritten == classes(rewrite_source(shape, recipe.page), recipe.define), rid
