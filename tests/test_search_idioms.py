"""The names migrated code gives its cache, as the registry holds them, and what the site's search reads of them and
of Sphinx's search script.

(src/lightning_migrate/registry.py ``CACHE_IDIOMS``; docs/_ext/guide/symptom_search.py ``topics``;
docs/_ext/guide/symptom_index.py ``idiom_nodes``. The search in a browser: browser/test_search.py.)
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import sphinx
from builds import ROOT
from docutils import nodes
from sphinx import addnodes

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from guide import symptom_index, symptom_search  # noqa: E402

from lightning_migrate import registry  # noqa: E402


def test_a_cache_name_is_the_stage_step_and_outputs_as_lightning_names_it():
    """Each name is ``<step method of the pattern's stage>_outputs``; the training one is the name of Lightning's own
    docstrings of ``on_train_epoch_end``, for the module and for a callback reading the module's cache."""
    from lightning.pytorch import Callback, LightningModule

    assert registry.CACHE_IDIOMS
    for pattern_id, idioms in registry.CACHE_IDIOMS.items():
        pattern = registry.get(pattern_id)
        assert pattern.owner == "LightningModule"
        assert idioms == (f"{registry.STEP_METHODS[pattern.stage]}_outputs",)
    assert "self.training_step_outputs.clear()" in inspect.getdoc(LightningModule.on_train_epoch_end)
    assert "pl_module.training_step_outputs" in inspect.getdoc(Callback.on_train_epoch_end)
    assert registry.idioms("callback-on-epoch-end") == ()


def test_the_search_gets_each_hook_with_its_fix_its_cache_names_and_its_words():
    topics = symptom_search.topics()
    assert len(topics) == len(registry.PATTERNS)
    [validation] = [t for t, p in zip(topics, registry.PATTERNS, strict=True) if p.id == "validation-epoch-end"]
    assert validation["fixes"] == ["examples/stages/validation_epoch_end"]
    assert validation["hook"] == "validation_epoch_end"
    assert validation["idioms"] == ["validation_step_outputs"]
    assert {"validation_epoch_end", "outputs", "on_validation_epoch_end", "validation_step_outputs"} <= set(
        validation["words"]
    )
    [callback] = [t for t, p in zip(topics, registry.PATTERNS, strict=True) if p.id == "callback-on-epoch-end"]
    assert callback["idioms"] == [] and {"callback", "trainer", "pl_module"} <= set(callback["words"])


def test_a_fix_page_gets_an_index_entry_and_a_keyword_per_cache_name():
    [index, meta] = symptom_index.idiom_nodes("examples/core/module_side_caching")
    assert isinstance(index, addnodes.index) and isinstance(meta, nodes.meta)
    assert [entry[1] for entry in index["entries"]] == ["training_step_outputs", "self.training_step_outputs"]
    assert all(entry[3] == "main" for entry in index["entries"])
    assert (meta["name"], meta["content"]) == ("keywords", "training_step_outputs")
    assert symptom_index.idiom_nodes("examples/pitfalls/step_end_hooks_ignored") == []


def test_sphinx_search_keeps_the_loaded_index_where_the_splitter_reads_it():
    """The splitter (docs/_static/symptom_search.js) reads ``Search._index`` and the stemmer and stopwords of
    ``language_data.js``; this fails when Sphinx's ``searchtools.js`` stops keeping the index there, or stops calling
    the splitter on each query."""
    searchtools = (Path(sphinx.__file__).parent / "themes" / "basic" / "static" / "searchtools.js").read_text("utf-8")
    assert re.search(r"setIndex: \(index\) => \{\s*Search\._index = index;", searchtools)
    assert "splitQuery(query.trim())" in searchtools and "const terms = Search._index.terms;" in searchtools
    splitter = symptom_search.SPLITTER.read_text(encoding="utf-8")
    assert "Search._index" in splitter and "new Stemmer()" in splitter and "stopwords.has(" in splitter
