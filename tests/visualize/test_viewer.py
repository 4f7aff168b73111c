import html
import re

import numpy as np
import pytest

from keras_attention.visualize import AttentionViewer
from keras_attention.visualize import read_data

SOURCE = ["▁Ein", "▁Schnee", "ball", "</script><b>x</b>"]
TARGET = ["▁A", "▁snow", "ball"]


def attention(*shape, seed=0):
    logits = np.random.default_rng(seed).normal(size=shape)
    exp = np.exp(logits)
    return exp / exp.sum(axis=-1, keepdims=True)


def test_embedded_json_is_the_input():
    weights = attention(2, 3, 3, 4).astype(np.float32)
    viewer = AttentionViewer(weights, TARGET, SOURCE, title="Layers")
    data = read_data(viewer.to_html())
    np.testing.assert_allclose(data["attention"], weights, atol=5e-7)
    assert data["layers"] == ["layer 0", "layer 1"]
    assert data["heads"] == ["head 0", "head 1", "head 2"]
    assert data["target"] == ["A", "snow", "·ball"]
    assert data["source"] == ["Ein", "Schnee", "·ball", "·</script><b>x</b>"]
    assert data["source_pieces"] == SOURCE


@pytest.mark.parametrize(
    ("shape", "expected"), [((3, 4), (1, 1, 3, 4)), ((2, 3, 4), (1, 2, 3, 4))]
)
def test_fewer_dimensions_are_one_layer_and_head(shape, expected):
    weights = attention(*shape)
    viewer = AttentionViewer(weights, TARGET, SOURCE)
    data = read_data(viewer.to_html())
    assert np.shape(data["attention"]) == expected
    np.testing.assert_allclose(np.reshape(data["attention"], shape), weights,
                               atol=5e-7)


def test_page_is_self_contained_and_escaped(tmp_path):
    viewer = AttentionViewer(attention(3, 4), TARGET, SOURCE,
                             title="<i>cross</i>")
    page = viewer.save(tmp_path / "attention.html").read_text(encoding="utf-8")
    # No server, no network: nothing is loaded from anywhere.
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", page)
    assert "http" not in page
    # A token cannot close the data script: two </script> in all, the
    # data's and the code's.
    assert page.count("</script>") == 2
    assert "<title>&lt;i&gt;cross&lt;/i&gt;</title>" in page


def test_repr_html_is_an_iframe_of_the_page():
    viewer = AttentionViewer(attention(3, 4), TARGET, SOURCE)
    frame = viewer._repr_html_()
    match = re.fullmatch(r'<iframe srcdoc="([^"]*)" (.*)></iframe>', frame)
    assert match, frame[:200]
    assert html.unescape(match.group(1)) == viewer.to_html()
    assert 'sandbox="allow-scripts"' in match.group(2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(attention=attention(3, 5)),
         r"`source_tokens`.*len\(source_tokens\)=4, attention.shape=\(3, 5\)"),
        (dict(attention=attention(1, 1, 1, 2, 4)),
         r"attention.shape=\(1, 1, 1, 2, 4\)"),
        (dict(attention=attention(2, 3, 4), head_names=["a"]),
         r"len\(head_names\)=1"),
        (dict(attention=attention(2, 1, 3, 4), layer_names=["a", "b", "c"]),
         r"len\(layer_names\)=3"),
        (dict(attention=attention(3, 4), decimals=-1), "decimals=-1"),
        (dict(attention=attention(3, 4), max_tokens=3),
         "source_tokens has 4 tokens"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AttentionViewer(target_tokens=TARGET, source_tokens=SOURCE, **kwargs)


def test_read_data_rejects_other_pages():
    with pytest.raises(ValueError, match="ka-attention-data"):
        read_data("<html></html>")
