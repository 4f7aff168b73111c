"""TransformerTranslator: structure, weight tying, cached step == full pass."""

import keras
import numpy as np
import pytest

from keras_attention.models import PRESETS
from keras_attention.models import TransformerTranslator

RNG = np.random.default_rng(0)
SOURCE = RNG.integers(4, 30, size=(2, 6)).astype("int32")
SOURCE[1, 4:] = 0
TARGET = RNG.integers(4, 30, size=(2, 5)).astype("int32")
TARGET[0, 0] = TARGET[1, 0] = 2  # BOS
TARGET[1, 3:] = 0


def small(**kwargs):
    config = dict(source_vocabulary_size=30, target_vocabulary_size=30,
                  num_layers=2, hidden_dim=16, num_heads=2,
                  intermediate_dim=32, dropout=0.0)
    config.update(kwargs)
    model = TransformerTranslator(**config)
    model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    return model


@pytest.mark.parametrize(
    "options",
    [{}, {"normalize_first": True},
     {"max_relative_position": 2, "relative_values": True},
     {"rope_max_wavelength": 100.0, "num_key_value_heads": 1}],
    ids=["post-norm", "pre-norm", "relative", "rope, one kv head"],
)
def test_cached_steps_equal_the_teacher_forced_pass(options):
    model = small(**options)
    memory, source_mask = model.encode(SOURCE)
    full, scores = model.decode(TARGET[:1], memory[:1], source_mask[:1],
                                return_attention_scores=True)
    cache = model.initial_cache(memory[:1], source_mask[:1],
                                max_length=TARGET.shape[1])
    for index in range(TARGET.shape[1]):
        logits, cache, step_scores = model.decode_step(
            TARGET[:1, index:index + 1], index, cache, source_mask[:1]
        )
        np.testing.assert_allclose(logits, full[:, index], atol=1e-4)
        # The step returns the heads' average (the decoding protocol).
        np.testing.assert_allclose(
            step_scores, np.array(scores)[:, :, index].mean(1), atol=1e-5)


def test_scores_are_the_last_blocks_and_do_not_change_the_logits():
    model = small(num_layers=3)
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    memory, source_mask = model.encode(SOURCE)
    logits, scores = model.decode(TARGET, memory, source_mask,
                                  return_attention_scores=True)
    np.testing.assert_allclose(model(inputs), logits, atol=1e-6)
    every_block = np.array(model.cross_attention(SOURCE, TARGET))
    assert every_block.shape == (2, 3, 2, 5, 6)  # (B, L, N, T, S)
    np.testing.assert_allclose(every_block[:, -1], scores, atol=1e-6)
    assert not np.allclose(every_block[:, 0], scores, atol=1e-3)


def test_tied_and_shared_embeddings():
    tied = small(share_embeddings=True)
    names = [w.path for w in tied.weights]
    assert sum("embedding" in n for n in names) == 1, names
    assert not any("output_projection" in n for n in names)
    # Logits are the last hidden states times the embedding matrix.
    hidden = RNG.normal(size=(2, 3, 16)).astype("float32")
    embeddings = keras.ops.convert_to_numpy(tied.target_embedding.embeddings)
    np.testing.assert_allclose(tied._logits(hidden), hidden @ embeddings.T,
                               atol=1e-5)
    assert tied.source_embedding is tied.target_embedding
    untied = small(tie_embeddings=False)
    assert any("output_projection" in w.path for w in untied.weights)
    assert len(untied.weights) == len(tied.weights) + 2 + 1  # proj + 2nd emb


def test_padding_does_not_change_real_positions():
    model = small()
    logits = np.array(model({"encoder_tokens": SOURCE,
                             "decoder_tokens": TARGET}))
    wider = np.pad(SOURCE, [(0, 0), (0, 3)])
    logits_wide = np.array(model({"encoder_tokens": wider,
                                  "decoder_tokens": TARGET}))
    np.testing.assert_allclose(logits, logits_wide, atol=1e-5)


def test_presets_and_config_round_trip():
    assert PRESETS["base"] == dict(num_layers=6, hidden_dim=512, num_heads=8,
                                   intermediate_dim=2048, dropout=0.1)
    model = TransformerTranslator.from_preset("tiny", 40, 40)
    clone = TransformerTranslator.from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    with pytest.raises(ValueError, match="preset='huge'"):
        TransformerTranslator.from_preset("huge", 40, 40)


def test_relative_positions_replace_the_sinusoids():
    model = small(max_relative_position=3)
    assert model.positions is None
    names = [w.path for w in model.weights]
    # One key table per self-attention: 2 encoder and 2 decoder blocks.
    assert sum("key_relative" in n for n in names) == 4, names
    assert not any("value_relative" in n for n in names)
    clone = TransformerTranslator.from_config(model.get_config())
    clone({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    clone.set_weights(model.get_weights())
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)
    # The relative tables are the only source of order: with them, a
    # reversed source encodes differently; with them zero, reversing the
    # source reverses the encoder states.
    memory, _ = model.encode(SOURCE[:1, :4])
    reversed_memory, _ = model.encode(SOURCE[:1, :4][:, ::-1])
    assert not np.allclose(reversed_memory[:, ::-1], memory, atol=1e-3)
    for weight in model.weights:
        if "key_relative" in weight.path:
            weight.assign(np.zeros(weight.shape, "float32"))
    memory, _ = model.encode(SOURCE[:1, :4])
    reversed_memory, _ = model.encode(SOURCE[:1, :4][:, ::-1])
    np.testing.assert_allclose(reversed_memory[:, ::-1], memory, atol=1e-5)


def test_rope_replaces_the_sinusoids_and_grouped_heads_shrink_the_cache():
    model = small(num_key_value_heads=1, rope_max_wavelength=100.0)
    assert model.positions is None
    layer = model.decoder_blocks[0].self_attention
    assert (layer.key_value_heads, layer.rope_max_wavelength) == (1, 100.0)
    cache = model.initial_cache(*model.encode(SOURCE), max_length=5)
    # (B, L, kv heads, H) for every decoder block's self-attention
    assert {tuple(block["self_attention"][0].shape)
            for block in cache.values()} == {(2, 5, 1, 8)}
    clone = TransformerTranslator.from_config(model.get_config())
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    clone(inputs)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(inputs), model(inputs), atol=1e-6)
    # Order comes from RoPE alone: reversing the source does not just
    # reverse the encoder states.
    memory, _ = model.encode(SOURCE[:1, :4])
    reversed_memory, _ = model.encode(SOURCE[:1, :4][:, ::-1])
    assert not np.allclose(reversed_memory[:, ::-1], memory, atol=1e-3)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_a_model_policy_reaches_every_sub_layer(policy):
    # Under the float32 global policy: the model's own `dtype` decides, so
    # a model rebuilt from its config computes as the trained one did.
    model = small(dtype=policy, max_relative_position=2)
    compute = policy.split("_")[1]
    layers = model._flatten_layers(include_self=False, recursive=True)
    assert {layer.dtype_policy.name for layer in layers} == {policy}
    clone = TransformerTranslator.from_config(model.get_config())
    clone({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    clone.set_weights(model.get_weights())
    memory, _ = clone.encode(SOURCE)
    assert keras.backend.standardize_dtype(memory.dtype) == compute
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    logits = np.array(model(inputs))
    np.testing.assert_array_equal(np.array(clone(inputs)), logits)
    assert logits.dtype == np.float32 and np.isfinite(logits).all()


def test_mixed_precision_logits_are_float32():
    keras.config.set_dtype_policy("mixed_float16")
    model = small()
    logits = model({"encoder_tokens": SOURCE, "decoder_tokens": TARGET})
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.all(np.isfinite(np.array(logits)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_layers": 0}, "num_layers=0"),
        ({"dropout": 1.0}, "dropout=1.0"),
        ({"share_embeddings": True, "target_vocabulary_size": 31},
         "target_vocabulary_size=31"),
        ({"max_relative_position": 2, "rope_max_wavelength": 100.0},
         "Choose one position scheme"),
        ({"num_key_value_heads": 3}, "num_key_value_heads=3"),
    ],
)
def test_bad_arguments(kwargs, message):
    config = dict(source_vocabulary_size=30, target_vocabulary_size=30,
                  num_layers=1, hidden_dim=16, num_heads=2,
                  intermediate_dim=32)
    config.update(kwargs)
    with pytest.raises(ValueError, match=message):
        TransformerTranslator(**config)


# -- self-attention of every block --------------------------------------------

def _softmax_of_one_head(layer, inputs, allowed, head=0):
    """NumPy `softmax(q k^T / sqrt(H))` of head `head` of a
    `MultiHeadSelfAttention` from its weights: inputs `(T, D)`, allowed
    `(T, T)` booleans."""
    def project(dense):
        kernel = keras.ops.convert_to_numpy(dense.kernel)
        kernel = kernel.reshape(kernel.shape[0], -1, kernel.shape[-1])
        bias = keras.ops.convert_to_numpy(dense.bias).reshape(kernel.shape[1:])
        return (np.einsum("td,dnh->tnh", inputs, kernel) + bias)[:, head]
    query, key = project(layer.query_dense), project(layer.key_dense)
    logits = query @ key.T / np.sqrt(query.shape[-1])  # (T, T)
    logits = np.where(allowed, logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


@pytest.mark.parametrize(
    "options", [{}, {"normalize_first": True},
                {"max_relative_position": 2, "relative_values": True},
                {"rope_max_wavelength": 100.0, "num_key_value_heads": 1}],
    ids=["post-norm", "pre-norm", "relative", "rope, one kv head"])
def test_self_attention_of_every_block_is_masked_and_normalized(options):
    model = small(num_layers=3, **options)
    encoder = np.array(model.encoder_self_attention(SOURCE))
    decoder = np.array(model.decoder_self_attention(SOURCE, TARGET))
    assert encoder.shape == (2, 3, 2, 6, 6)  # (B, L, N, S, S)
    assert decoder.shape == (2, 3, 2, 5, 5)  # (B, L, N, T, T)
    assert encoder.dtype == decoder.dtype == np.float32
    for weights, tokens in ((encoder, SOURCE), (decoder, TARGET)):
        real = tokens != 0  # (B, length)
        for example in range(2):
            rows = weights[example][..., real[example], :]
            np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
            assert np.all(weights[example][..., ~real[example]] == 0.0)
    # The decoder's is causal: nothing above the diagonal.
    above = np.triu(np.ones((5, 5), bool), k=1)
    assert np.all(decoder[..., above] == 0.0)
    assert not np.allclose(decoder[:, 0], decoder[:, -1], atol=1e-3)
    # The logits do not change once the weights were asked for.
    inputs = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    logits = np.array(model(inputs))
    model.encoder_self_attention(SOURCE)
    np.testing.assert_allclose(model(inputs), logits, atol=1e-6)


def test_self_attention_equals_the_blocks_own_and_a_numpy_softmax():
    model = small(num_layers=3)
    encoder = np.array(model.encoder_self_attention(SOURCE))
    decoder = np.array(model.decoder_self_attention(SOURCE, TARGET))
    # The last encoder block called directly on its input.
    source_mask = SOURCE != 0
    x = model._embed(model.source_embedding, SOURCE)
    for block in model.encoder_blocks[:-1]:
        x = block(x, padding_mask=source_mask)
    _, direct = model.encoder_blocks[-1](x, padding_mask=source_mask,
                                         return_attention_scores=True)
    np.testing.assert_allclose(encoder[:, -1], direct, atol=1e-6)
    # Head 1 of the first blocks, from their weights: post-norm blocks see
    # the embeddings themselves.
    source = np.array(model._embed(model.source_embedding, SOURCE))
    target = np.array(model._embed(model.target_embedding, TARGET))
    causal = np.tril(np.ones((5, 5), bool))
    for example in range(2):
        real = SOURCE[example] != 0
        want = _softmax_of_one_head(
            model.encoder_blocks[0].self_attention, source[example],
            np.broadcast_to(real, (6, 6)), head=1)
        np.testing.assert_allclose(encoder[example, 0, 1][real], want[real],
                                   atol=1e-5)
        real = TARGET[example] != 0
        want = _softmax_of_one_head(
            model.decoder_blocks[0].self_attention, target[example],
            causal & real, head=1)
        np.testing.assert_allclose(decoder[example, 0, 1][real], want[real],
                                   atol=1e-5)


def test_decoder_blocks_return_self_attention_with_a_cache():
    """The block's `return_self_attention_scores` in an incremental step:
    one row of the full pass's weights, over the cache."""
    model = small()
    memory, _ = model.encode(SOURCE[:1])
    block = model.decoder_blocks[0]
    x = np.array(model._embed(model.target_embedding, TARGET[:1]))
    outputs, cross, full = block(x, memory, return_attention_scores=True,
                                 return_self_attention_scores=True)
    assert tuple(full.shape) == (1, 2, 5, 5)
    cache = block.initial_cache(memory, max_length=5)
    for index in range(3):
        step, weights, cache = block(
            x[:, index:index + 1], cache=cache, cache_update_index=index,
            return_self_attention_scores=True)
        np.testing.assert_allclose(step[:, 0], outputs[:, index], atol=1e-5)
        np.testing.assert_allclose(weights[:, :, 0], full[:, :, index],
                                   atol=1e-5)
