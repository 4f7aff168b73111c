"""BertPretrainer: tied MLM head, NSP head, the loss on chosen positions."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.models.bert_pretrainer import BertPretrainer
from keras_attention.models.bert_pretrainer import masked_lm_loss
from keras_attention.text.bert_data import pretraining_batch
from tests.backend import as_numpy
from tests.backend import assert_allclose

VOCABULARY, HIDDEN = 30, 8
CONFIG = dict(vocabulary_size=VOCABULARY, num_layers=1, num_heads=2,
              hidden_dim=HIDDEN, intermediate_dim=16, max_sequence_length=10,
              dropout=0.0)
INPUTS = {
    "token_ids": np.array([[2, 29, 9, 3, 11, 3, 0, 0],
                           [2, 5, 29, 7, 3, 8, 9, 3]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 0, 0],
                             [0, 0, 0, 0, 0, 1, 1, 1]], "int32"),
    "padding_mask": np.array([[1] * 6 + [0] * 2, [1] * 8], bool),
    "mask_positions": np.array([[1, 0, 0], [2, 6, 0]], "int32"),
}
LABELS = {
    "mask_ids": np.array([[8, 0, 0], [4, 9, 0]], "int32"),
    "mask_weights": np.array([[1, 0, 0], [1, 1, 0]], "float32"),
    "next_sentence_labels": np.array([0, 1], "int32"),
}


def make_pretrainer():
    pretrainer = BertPretrainer(BertEncoder(**CONFIG))
    pretrainer(INPUTS)
    rng = np.random.default_rng(0)
    for weight in pretrainer.weights:  # non-trivial norms and biases
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.3)
    return pretrainer


def layer_norm(x, gamma, beta, epsilon):
    mean, variance = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def test_mlm_logits_use_the_tied_token_embedding():
    pretrainer = make_pretrainer()
    encoder = pretrainer.encoder
    outputs = pretrainer(INPUTS)
    encoder_inputs = {k: v for k, v in INPUTS.items() if k != "mask_positions"}
    sequence = as_numpy(encoder(encoder_inputs)["sequence_output"])
    chosen = np.take_along_axis(sequence, INPUTS["mask_positions"][..., None],
                                1)  # (B, P, D)
    dense = as_numpy(pretrainer.mlm_dense(chosen))
    normed = layer_norm(dense, as_numpy(pretrainer.mlm_layer_norm.gamma),
                        as_numpy(pretrainer.mlm_layer_norm.beta), 1e-12)
    table = as_numpy(encoder.token_embedding.embeddings)  # (V, D)
    want = normed @ table.T + as_numpy(pretrainer.mlm_bias)
    assert_allclose(outputs["mlm_logits"], want, atol=1e-4)
    # No output kernel of its own: the embedding table is the only (V, D)
    # or (D, V) weight, and it is the encoder's.
    big = [w for w in pretrainer.trainable_weights
           if sorted(w.shape) == sorted((VOCABULARY, HIDDEN))]
    assert big == [encoder.token_embedding.embeddings]
    assert len(pretrainer.trainable_weights) == len(encoder.trainable_weights) \
        + 2 + 2 + 1 + 2


def test_nsp_logits_are_a_dense_layer_on_the_pooled_output():
    pretrainer = make_pretrainer()
    encoder_inputs = {k: v for k, v in INPUTS.items() if k != "mask_positions"}
    pooled = as_numpy(pretrainer.encoder(encoder_inputs)["pooled_output"])
    want = pooled @ as_numpy(pretrainer.nsp_dense.kernel) + as_numpy(
        pretrainer.nsp_dense.bias)
    assert_allclose(pretrainer(INPUTS)["nsp_logits"], want, atol=1e-5)


def test_masked_lm_loss_golden_and_only_chosen_positions():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    ids = np.array([[1, 2, 3], [4, 0, 2]])
    weights = np.array([[1, 1, 0], [1, 0, 0]], "float32")
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xent = -np.take_along_axis(log_softmax, ids[..., None], -1)[..., 0]
    want = (xent * weights).sum() / 3
    assert_allclose(masked_lm_loss(ids, logits, weights), want, rtol=1e-5)
    # Other logits and ids at the unchosen slots: the same loss.
    changed = logits.copy()
    changed[weights == 0] = rng.normal(size=(3, 5)) * 100
    changed[0, 2, 0] = np.inf
    assert_allclose(masked_lm_loss(np.where(weights > 0, ids, 3), changed,
                                   weights), want, rtol=1e-5)
    # A chosen slot's logits do count.
    changed[0, 0] += 5 * np.eye(5)[0]
    assert abs(float(masked_lm_loss(ids, changed, weights)) - want) > 1e-2
    assert float(masked_lm_loss(ids, logits, np.zeros_like(weights))) == 0.0


def test_compute_loss_is_mlm_plus_nsp_and_ignores_unchosen_positions():
    pretrainer = make_pretrainer()
    outputs = pretrainer(INPUTS)
    loss = float(pretrainer.compute_loss(y=LABELS, y_pred=outputs))
    nsp = as_numpy(outputs["nsp_logits"])
    nsp = nsp - np.log(np.exp(nsp).sum(-1, keepdims=True))
    want = float(masked_lm_loss(LABELS["mask_ids"], outputs["mlm_logits"],
                                LABELS["mask_weights"])) - np.mean(
        nsp[[0, 1], LABELS["next_sentence_labels"]])
    assert abs(loss - want) < 1e-5
    # Pointing the unchosen slots elsewhere changes their logits, not the
    # loss.
    moved = dict(INPUTS, mask_positions=np.array([[1, 4, 5], [2, 6, 7]]))
    moved_outputs = pretrainer(moved)
    assert np.abs(as_numpy(moved_outputs["mlm_logits"])[0, 1:]
                  - as_numpy(outputs["mlm_logits"])[0, 1:]).max() > 1e-3
    assert abs(float(pretrainer.compute_loss(y=LABELS, y_pred=moved_outputs))
               - loss) < 1e-6


def test_fit_lowers_the_loss():
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(**dict(CONFIG, vocabulary_size=40,
                                 max_sequence_length=16))
    pretrainer = BertPretrainer(encoder)
    first = tf.ragged.constant([[10, 11, 12, 13], [14, 15, 16], [17, 18],
                                [19, 20, 21, 22, 23]] * 4)
    second = tf.ragged.constant([[24, 25], [26, 27, 28], [29, 30, 31],
                                 [32]] * 4)
    features, labels = pretraining_batch(
        first, second, [0, 1, 0, 1] * 4, sequence_length=12,
        vocabulary_size=40, mask_id=39, max_selections=3)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    history = pretrainer.fit(features, labels, batch_size=16, epochs=25,
                             verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < 0.6 * losses[0]


def test_save_and_load(tmp_path):
    pretrainer = make_pretrainer()
    path = tmp_path / "pretrainer.keras"
    pretrainer.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertPretrainer)
    assert isinstance(loaded.encoder, BertEncoder)
    for key in ("mlm_logits", "nsp_logits"):
        assert_allclose(loaded(INPUTS)[key], pretrainer(INPUTS)[key],
                        atol=1e-6)
    # Still tied after loading: the head reads the encoder's table.
    loaded.encoder.token_embedding.embeddings.assign(
        np.zeros((VOCABULARY, HIDDEN), "float32"))
    assert_allclose(loaded(INPUTS)["mlm_logits"],
                    np.broadcast_to(as_numpy(loaded.mlm_bias), (2, 3, 30)),
                    atol=1e-6)


def test_from_config_dict_encoder():
    pretrainer = BertPretrainer(BertEncoder(**CONFIG))
    clone = BertPretrainer.from_config(pretrainer.get_config())
    assert clone.encoder.get_config()["hidden_dim"] == HIDDEN


def test_bad_arguments():
    with pytest.raises(ValueError, match="encoder of type str"):
        BertPretrainer("bert")
    pretrainer = make_pretrainer()
    inputs = {k: v for k, v in INPUTS.items() if k != "mask_positions"}
    with pytest.raises(ValueError, match="'mask_positions'"):
        pretrainer(inputs)
    with pytest.raises(ValueError, match="next_sentence_labels"):
        pretrainer.compute_loss(y={"mask_ids": LABELS["mask_ids"]},
                                y_pred=pretrainer(INPUTS))
