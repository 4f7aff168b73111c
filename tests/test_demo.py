"""`make demo` (keras_attention.demo): the examples it shows are sentences
of the test split it reports BLEU on, each beside its reference. The
cheap part only: the full demo trains a translator for minutes."""

import pytest

from keras_attention import demo
from keras_attention.text import load_corpus


def test_the_examples_are_test_pairs_of_different_lengths():
    test = load_corpus("synthetic")["test"]
    examples = demo.pick_examples(test)
    assert len(examples) == 3
    assert all(pair in test for pair in examples)
    lengths = [len(source.split()) for source, _ in examples]
    assert lengths == sorted(lengths) and len(set(lengths)) == 3, lengths
    assert demo.pick_examples(load_corpus("synthetic")["test"]) == examples


def test_each_example_is_printed_beside_its_reference(capsys):
    test = load_corpus("synthetic")["test"]
    examples = demo.pick_examples(test)
    sources, translations = demo.show_examples(
        lambda texts: [f"<{text}>" for text in texts], test)
    printed = capsys.readouterr().out.splitlines()
    assert "test split" in printed[1]
    shown = printed[2:]
    assert len(shown) == 3 * len(sources) == 9
    assert sources == [source for source, _ in examples]
    for index, (source, reference) in enumerate(examples):
        assert (source, reference) in test
        line_source, line_reference, line_ours = shown[3 * index:3 * index + 3]
        assert line_source == f"  {source}"
        assert line_reference == f"    reference: {reference}"
        assert line_ours == f"    ours:      <{source}>"
    assert translations == [f"<{source}>" for source in sources]


def test_pick_examples_checks_count():
    with pytest.raises(ValueError, match="count=4"):
        demo.pick_examples([("a", "b")] * 3, count=4)
