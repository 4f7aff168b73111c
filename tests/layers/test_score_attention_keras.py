"""The score-function family called the Keras way (`keras.layers.Attention`'s
`layer([query, value(, key)], mask=[...])`, masks Keras fills from implicit
masks), and parity with `keras.layers.Attention`."""

import os
import tempfile

import keras
import numpy as np
import pytest

from keras_attention.layers import AdditiveAttention
from keras_attention.layers import DotAttention
from keras_attention.layers import GeneralAttention
from keras_attention.layers import ScaledDotAttention
from tests.backend import as_numpy
from tests.backend import assert_allclose
from tests.backend import assert_array_equal
from tests.backend import compiled_variants
from tests.harness import assert_all_close
from tests.layers.test_score_attention import BATCH
from tests.layers.test_score_attention import DIM
from tests.layers.test_score_attention import IDS
from tests.layers.test_score_attention import KEY
from tests.layers.test_score_attention import KEY_LEN
from tests.layers.test_score_attention import KEY_PADDING
from tests.layers.test_score_attention import LAYERS
from tests.layers.test_score_attention import QUERY
from tests.layers.test_score_attention import QUERY_LEN
from tests.layers.test_score_attention import QUERY_PADDING
from tests.layers.test_score_attention import RNG
from tests.layers.test_score_attention import VALUE


def masked_by_keras(array, mask):
    """`array` with its masked positions zeroed, through `Masking`: a tensor
    carrying `mask` as its Keras implicit mask."""
    masked = keras.layers.Masking(mask_value=0.0)(
        array * mask[..., None].astype("float32")
    )
    assert_array_equal(
        keras.ops.convert_to_numpy(masked._keras_mask), mask
    )
    return masked


def zeroed(array, mask):
    return array * mask[..., None].astype("float32")


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
@pytest.mark.parametrize("with_key", [False, True], ids=["qv", "qvk"])
def test_keras_form_equals_ours_eager_functional_compiled_saved(
    layer_cls, kwargs, with_key
):
    layer = layer_cls(**kwargs)
    arrays = [QUERY, VALUE] + ([KEY] if with_key else [])
    masks = [QUERY_PADDING, KEY_PADDING]
    ours = layer(QUERY, VALUE, KEY if with_key else None,
                 padding_mask=QUERY_PADDING, key_padding_mask=KEY_PADDING,
                 return_attention_scores=True)
    eager = layer(arrays, mask=masks, return_attention_scores=True)
    assert_all_close(eager, ours, what="Keras form, eager")

    symbolic = [keras.Input(a.shape[1:]) for a in arrays]
    symbolic_masks = [keras.Input(m.shape[1:], dtype="bool") for m in masks]
    model = keras.Model(
        symbolic + symbolic_masks,
        layer(symbolic, mask=symbolic_masks, return_attention_scores=True),
    )
    assert_all_close(model(arrays + masks), ours, what="functional model")
    for name, compile_with, _ in compiled_variants():
        function = compile_with(
            lambda inputs, mask: layer(inputs, mask=mask,
                                       return_attention_scores=True)
        )
        assert_all_close(function(arrays, masks), ours, 1e-4, 1e-4,
                         what=name)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    assert type(restored.layers[-1]) is layer_cls
    assert_all_close(restored(arrays + masks), ours, what=".keras")


@pytest.mark.parametrize("layer_cls, kwargs", LAYERS, ids=IDS)
def test_implicit_masks_apply_in_both_forms(layer_cls, kwargs):
    """`Masking` gives query and value implicit masks: Keras fills `mask`
    (list form) or `query_mask`/`value_mask` (ours) from them; each form
    equals the explicit masks, also with another tensor argument (then
    Keras fills `query_mask` with the list's masks instead of `mask`)."""
    layer = layer_cls(**kwargs)
    query, value = zeroed(QUERY, QUERY_PADDING), zeroed(VALUE, KEY_PADDING)
    explicit = layer(query, value, padding_mask=QUERY_PADDING,
                     key_padding_mask=KEY_PADDING)
    unmasked = layer(query, value)
    assert not np.allclose(as_numpy(unmasked), as_numpy(explicit))  # the masks matter
    masked_query = masked_by_keras(QUERY, QUERY_PADDING)
    masked_value = masked_by_keras(VALUE, KEY_PADDING)
    every_key = np.ones((BATCH, QUERY_LEN, KEY_LEN), bool)
    for what, output in [
        ("list", layer([masked_query, masked_value])),
        ("list, key", layer([masked_query, masked_value, value])),
        ("list, attention_mask",
         layer([masked_query, masked_value], attention_mask=every_key)),
        ("ours", layer(masked_query, masked_value)),
        ("ours, key", layer(masked_query, masked_value, value)),
    ]:
        assert_all_close(output, explicit, what=what)
        assert_array_equal(
            keras.ops.convert_to_numpy(output._keras_mask), QUERY_PADDING,
            err_msg=what,
        )

    # In a model: Keras fills the masks from `Masking` in the graph.
    inputs = [keras.Input((None, DIM)), keras.Input((None, DIM))]
    masking = keras.layers.Masking(mask_value=0.0)
    model = keras.Model(
        inputs, layer([masking(inputs[0]), masking(inputs[1])])
    )
    assert_all_close(model([query, value]), explicit, what="model")


def test_keras_names_and_our_masks_combine():
    """`padding_mask` and `query_mask` (or `mask[0]`) both apply (logical
    AND); likewise `key_padding_mask`, `value_mask`, `key_mask` and the
    mask list's entries on the key side."""
    layer = DotAttention()
    other_query = np.array([[0, 1, 1], [1, 0, 1]], bool)
    other_key = np.array([[1, 0, 1, 1, 1], [1, 1, 0, 1, 1]], bool)
    want = layer(QUERY, VALUE, padding_mask=QUERY_PADDING & other_query,
                 key_padding_mask=KEY_PADDING & other_key)
    for what, output in [
        ("keyword names", layer(
            QUERY, VALUE, padding_mask=QUERY_PADDING, query_mask=other_query,
            key_padding_mask=KEY_PADDING, value_mask=other_key)),
        ("key_mask", layer(
            QUERY, VALUE, VALUE, query_mask=QUERY_PADDING & other_query,
            value_mask=KEY_PADDING, key_mask=other_key)),
        ("mask list", layer(
            [QUERY, VALUE], mask=[other_query, other_key],
            padding_mask=QUERY_PADDING, key_padding_mask=KEY_PADDING)),
        ("key's mask entry", layer(
            [QUERY, VALUE, VALUE], mask=[other_query, KEY_PADDING, other_key],
            padding_mask=QUERY_PADDING)),
        ("mask list, our form", layer(
            QUERY, VALUE, mask=[QUERY_PADDING & other_query, other_key],
            key_padding_mask=KEY_PADDING)),
    ]:
        assert_all_close(output, want, what=what)
    # An explicit entry stands for the implicit mask it replaces (as in
    # Keras): with `mask[0]` given, `query`'s implicit mask is not read.
    masked_query = masked_by_keras(QUERY, QUERY_PADDING)
    every_query = np.ones((BATCH, QUERY_LEN), bool)
    assert_all_close(
        layer([masked_query, VALUE], mask=[every_query, None]),
        layer(zeroed(QUERY, QUERY_PADDING), VALUE),
        what="mask[0] replaces the implicit mask",
    )


def test_build_takes_the_list_of_shapes_keras_passes():
    layer = GeneralAttention()
    layer.build([[None, 3, 6], [None, 5, 4], [None, 5, 2]])  # as in JSON
    assert tuple(layer.kernel.shape) == (6, 2)
    layer = AdditiveAttention(units=3)
    layer.build(((2, 3, 6), (2, 5, 4)))
    assert tuple(layer.key_kernel.shape) == (4, 3)
    assert layer([QUERY[..., :2].repeat(3, -1), VALUE]).shape == (2, 3, 4)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda layer: layer([QUERY]),
         r"list of 1: query=\[<shape \(2, 3, 4\)>\]"),
        (lambda layer: layer([QUERY, VALUE, KEY, KEY]), "list of 4"),
        (lambda layer: layer([QUERY, VALUE], value=VALUE),
         r"not both.*value=<shape \(2, 5, 4\)>, key=None"),
        (lambda layer: layer([QUERY, VALUE], key=KEY),
         r"not both.*value=None, key=<shape"),
        (lambda layer: layer(QUERY), "needs a `value`.*value=None"),
        (lambda layer: layer([QUERY, VALUE], mask=[QUERY_PADDING]),
         r"`mask` must be a list.*mask=\[<shape \(2, 3\)>\]"),
        (lambda layer: layer([QUERY, VALUE],
                             mask=[QUERY_PADDING, KEY_PADDING, KEY_PADDING]),
         r"\[query_mask, value_mask\]`, a mask"),
        (lambda layer: layer([QUERY, VALUE], mask=QUERY_PADDING),
         r"mask=<shape \(2, 3\)>"),
        (lambda layer: layer([QUERY, VALUE], mask=[KEY_PADDING, None]),
         r"mask\[0\].shape=\(2, 5\)"),
        (lambda layer: layer([QUERY, VALUE, KEY], mask=[None, None, None,
                                                        None]),
         "mask=\\[None, None, None, None\\]"),
        (lambda layer: layer(QUERY, VALUE, value_mask=QUERY_PADDING),
         r"value_mask.shape=\(2, 3\)"),
        (lambda layer: layer(QUERY, VALUE, query_mask=KEY_PADDING),
         r"query_mask.shape=\(2, 5\)"),
        (lambda layer: layer(QUERY[:, 0], VALUE, query_mask=QUERY_PADDING),
         r"`query_mask` is for a query sequence"),
    ],
    ids=["list-1", "list-4", "list-and-value", "list-and-key", "no-value",
         "mask-1", "mask-3-for-2-inputs", "mask-tensor", "mask-entry-shape",
         "mask-4", "value_mask-shape", "query_mask-shape", "vector-query"],
)
def test_bad_keras_form_inputs_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call(DotAttention())


# Parity with `keras.layers.Attention`: the same numbers wherever the two
# are defined to agree (see the `ScoreAttention` docstring). No query row
# below has all its keys masked.


def keras_attention_pair(scaled):
    """(ours, Keras's) with the same score."""
    if not scaled:
        return DotAttention(), keras.layers.Attention(use_scale=False)
    theirs = keras.layers.Attention(use_scale=True)
    theirs.build([QUERY.shape, VALUE.shape])
    theirs.scale.assign(1.0 / np.sqrt(DIM))
    return ScaledDotAttention(), theirs


@pytest.mark.parametrize("scaled", [False, True], ids=["dot", "scaled"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", ["keras", "ours"])
def test_parity_with_keras_attention(scaled, causal, form):
    ours, theirs = keras_attention_pair(scaled)
    query = RNG.normal(size=(BATCH, QUERY_LEN, DIM)).astype("float32")
    flags = {"use_causal_mask": causal, "return_attention_scores": True}
    want, want_weights = theirs([query, VALUE, KEY],
                                mask=[QUERY_PADDING, KEY_PADDING], **flags)
    if form == "keras":
        got, weights = ours([query, VALUE, KEY],
                            mask=[QUERY_PADDING, KEY_PADDING], **flags)
    else:
        got, weights = ours(query, VALUE, KEY, padding_mask=QUERY_PADDING,
                            key_padding_mask=KEY_PADDING, **flags)
    # Outputs: equal everywhere (Keras zeroes masked query rows, as we do).
    assert_allclose(got, want, atol=1e-5)
    # Weights: equal on the real query rows; Keras gives padded rows a
    # softmax, we give them zeros.
    weights, want_weights = as_numpy(weights), as_numpy(want_weights)
    assert_allclose(weights[QUERY_PADDING],
                    want_weights[QUERY_PADDING], atol=1e-6)
    assert_array_equal(weights[~QUERY_PADDING], 0.0)
    assert np.all(want_weights[~QUERY_PADDING].sum(-1) > 0.99)


@pytest.mark.parametrize(
    "keras_cls, ours_cls, same_numbers",
    [
        (keras.layers.Attention, DotAttention, True),
        # No numeric parity: Keras scores sum(scale * tanh(q + k)), ours
        # learns projections (the Bahdanau form).
        (keras.layers.AdditiveAttention,
         lambda: AdditiveAttention(units=DIM), False),
    ],
    ids=["Attention", "AdditiveAttention"],
)
def test_drop_in_for_keras_layers_in_a_model(keras_cls, ours_cls,
                                             same_numbers):
    """A model written for the Keras layer (Keras's call form, masks given
    and masks from `Embedding(mask_zero=True)`, the output mask read by the
    pooling) runs with our class swapped in: the same outputs for
    `Attention`, and for both, masked source positions are never read."""

    def build(attention_cls):
        target = keras.Input((None,), dtype="int32")
        source = keras.Input((None,), dtype="int32")
        source_mask = keras.Input((None,), dtype="bool")
        embedding = keras.layers.Embedding(20, DIM, mask_zero=True)
        query, value = embedding(target), embedding(source)
        self_attended = attention_cls()([query, query], use_causal_mask=True)
        cross = attention_cls()(
            [self_attended, value],
            mask=[keras.ops.not_equal(target, 0), source_mask],
        )
        pooled = keras.layers.GlobalAveragePooling1D()(cross)
        return keras.Model([target, source, source_mask],
                           keras.layers.Dense(3)(pooled))

    target = np.array([[3, 1, 4, 0], [5, 9, 0, 0]])
    source = np.array([[2, 6, 5, 3, 5], [8, 9, 7, 0, 0]])
    source_mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], bool)
    other_source = np.where(source_mask, source, 11)  # changed where masked
    theirs, ours = build(keras_cls), build(ours_cls)
    got = as_numpy(ours([target, source, source_mask]))
    assert_allclose(
        ours([target, other_source, source_mask]), got, atol=1e-6
    )
    if same_numbers:
        ours.set_weights(theirs.get_weights())  # the embedding and dense
        got = as_numpy(ours([target, source, source_mask]))
        assert_allclose(
            got, theirs([target, source, source_mask]), atol=1e-5
        )
    assert got.shape == (2, 3) and np.all(np.isfinite(got))


def test_documented_differences_from_keras_attention():
    """Where the two differ, as the `ScoreAttention` docstring says: a query
    whose keys are all masked gets (near-)uniform weights and the mean of
    the values from Keras, zero weights and zeros from us."""
    no_key = KEY_PADDING.copy()
    no_key[1] = False
    theirs, their_weights = keras.layers.Attention()(
        [QUERY, VALUE], mask=[None, no_key], return_attention_scores=True
    )
    ours, weights = DotAttention()(
        [QUERY, VALUE], mask=[None, no_key], return_attention_scores=True
    )
    assert_allclose(as_numpy(their_weights)[1], 1.0 / KEY_LEN,
                    atol=1e-6)
    assert_allclose(
        as_numpy(theirs)[1], np.broadcast_to(VALUE[1].mean(0), (3, DIM)),
        atol=1e-5,
    )
    assert_array_equal(as_numpy(weights)[1], 0.0)
    assert_array_equal(as_numpy(ours)[1], 0.0)
    assert_allclose(ours[0], theirs[0], atol=1e-5)


def test_output_mask_is_the_query_mask():
    layer = DotAttention()
    context, weights = layer([QUERY, VALUE], mask=[QUERY_PADDING, KEY_PADDING],
                             return_attention_scores=True)
    assert_array_equal(
        keras.ops.convert_to_numpy(context._keras_mask), QUERY_PADDING
    )
    assert getattr(weights, "_keras_mask", None) is None
    no_query_mask = layer([QUERY, VALUE], mask=[None, KEY_PADDING])
    assert getattr(no_query_mask, "_keras_mask", None) is None
    # Our form: the query's implicit mask, as before (explicit masks are
    # arguments, not carried by the output).
    assert getattr(layer(QUERY, VALUE, padding_mask=QUERY_PADDING),
                   "_keras_mask", None) is None
