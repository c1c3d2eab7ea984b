"""The symptom index's grouping of recorded texts into one entry per error, and the words the search matches.

(docs/_ext/guide/symptom_index.py and symptom_search.py; the built pages and the search itself are tested in
test_caching_distributed.py, test_fix_links.py and browser/test_search.py.)
"""

from __future__ import annotations

import sys

import pytest
from builds import ROOT

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from guide import symptom_index, symptom_search  # noqa: E402
from guide.symptom_index import Symptom, Wording  # noqa: E402

from lightning_migrate import registry  # noqa: E402

MODULE_TEXT = "TypeError: LitModel.on_train_epoch_end() missing 1 required positional argument: 'outputs'"
CALLBACK_TEXT = "TypeError: MyCallback.on_train_epoch_end() missing 1 required positional argument: 'outputs'"
OLD_URL = (
    "NotImplementedError: `LitModel` implements this method. See https://github.com/Lightning-AI/lightning/pull/1."
)
NEW_URL = OLD_URL.replace("/lightning/", "/pytorch-lightning/")


@pytest.mark.parametrize(
    ("text", "names", "key"),
    [
        (MODULE_TEXT, {"LitModel"}, MODULE_TEXT.replace("LitModel", "{class}")),
        (OLD_URL, {"LitModel"}, OLD_URL.replace("LitModel", "{class}")),
        # whole words only
        ("ValueError: LitModelX is no _LitModel", {"LitModel"}, "ValueError: LitModelX is no _LitModel"),
        ("E: Outer.Inner.hook()", {"Outer", "Inner"}, "E: {class}.{class}.hook()"),
    ],
)
def test_class_key_leaves_the_class_names_open(text, names, key):
    assert symptom_index.class_key(text, frozenset(names)) == key


def pattern(pattern_id: str) -> registry.OldPattern:
    return registry.get(pattern_id)


def test_a_module_and_a_callback_raising_the_same_text_are_one_symptom_with_a_fix_per_owner():
    symptom = Symptom([], patterns=[pattern("module-on-train-epoch-end-outputs")])
    symptom.add(MODULE_TEXT, frozenset({"LitModel"}), "2.6.6")
    symptom.add(CALLBACK_TEXT, frozenset({"MyCallback"}), "2.6.6")
    symptom.patterns.append(pattern("callback-on-train-epoch-end-outputs"))
    assert symptom.fixes == [
        ("LightningModule", "examples/core/module_side_caching"),
        ("Callback", "examples/core/callback_side_caching"),
    ]
    assert [w.text for w in symptom.distinct_wordings()] == [MODULE_TEXT]
    assert [w.text for w in symptom.distinct_wordings({"MyCallback"})] == [CALLBACK_TEXT]
    assert symptom.signatures == [
        "LightningModule.on_train_epoch_end(self, outputs)",
        "Callback.on_train_epoch_end(self, trainer, pl_module, outputs)",
    ]


def test_patterns_with_one_page_have_one_fix_and_a_printed_text_is_fixed_where_it_was_printed():
    same_page = Symptom([], patterns=[pattern("module-on-train-batch-end-dataloader-idx")])
    same_page.patterns.append(pattern("callback-on-train-batch-end-dataloader-idx"))
    assert same_page.fixes == [(None, "examples/pitfalls/batch_hooks_dataloader_idx")]
    printed = Symptom([Wording("RuntimeError: x", frozenset())], printed_by=["examples/a", "examples/b"])
    assert printed.fixes == [(None, "examples/a")]


def test_wordings_of_several_releases_keep_their_releases_merged_by_text_without_class_names():
    symptom = Symptom([])
    symptom.add(NEW_URL, frozenset({"LitModel"}), "2.6.6")
    symptom.add(OLD_URL, frozenset({"LitModel"}), "2.2.5")
    symptom.add(OLD_URL, frozenset({"LitModel"}), "2.0.9")
    symptom.add(OLD_URL.replace("LitModel", "MyCallback"), frozenset({"MyCallback"}), "2.1.0")
    [new, old] = symptom.distinct_wordings()
    assert (new.text, new.releases) == (NEW_URL, ["2.6.6"])
    assert (old.text, old.releases) == (OLD_URL, ["2.2.5", "2.0.9", "2.1.0"])
    assert symptom_index.releases_phrase(old.releases) == "Lightning 2.0.9, 2.1.0 and 2.2.5"
    assert symptom_index.releases_phrase(["2.10.0", "2.9.1"]) == "Lightning 2.9.1 and 2.10.0"


def test_defined_classes_finds_nested_classes():
    source = "class A:\n    class B:\n        pass\n\ndef f():\n    class C(A):\n        pass\n"
    assert symptom_index.defined_classes(source) == {"A", "B", "C"}
    with pytest.raises(SyntaxError):
        symptom_index.defined_classes("class :\n")


def test_the_search_gets_each_distinct_wording_as_words_with_the_class_names_open():
    symptom = Symptom([], patterns=[pattern("module-on-train-epoch-end-outputs")])
    symptom.add(MODULE_TEXT, frozenset({"LitModel"}), "2.6.6")
    symptom.add(CALLBACK_TEXT, frozenset({"MyCallback"}), "2.6.6")
    [shape] = symptom_search.shapes([symptom])
    assert shape == {
        "fixes": ["examples/core/module_side_caching"],
        "wordings": [
            ["typeerror", None, "on_train_epoch_end", "missing", "1", "required", "positional", "argument", "outputs"]
        ],
    }


def test_a_fix_pages_folded_line_names_the_recorded_exception_classes_once_each_in_order():
    type_error = Symptom([Wording(MODULE_TEXT, frozenset({"LitModel"}))])
    callback = Symptom([Wording(CALLBACK_TEXT, frozenset({"MyCallback"}))])
    removed = Symptom([Wording(OLD_URL, frozenset({"LitModel"}))])
    assert symptom_index._rubric([type_error]) == "If you saw <code>TypeError</code>, this page shows the fix"
    assert symptom_index._rubric([type_error, callback, removed]) == (
        "If you saw <code>TypeError</code> or <code>NotImplementedError</code>, this page shows the fix"
    )
    warning = Symptom([Wording("UserWarning: <a>", frozenset())])
    assert symptom_index._rubric([type_error, removed, warning]) == (
        "If you saw <code>TypeError</code>, <code>NotImplementedError</code> or <code>UserWarning</code>, "
        "this page shows the fix"
    )
