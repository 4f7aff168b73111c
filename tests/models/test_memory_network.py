"""MemoryNetwork: hops against a NumPy reference with the same weights,
empty memories, weight tying, linear start, random noise, saving, and a
short training run on generated bAbI task 1."""

import keras
import numpy as np
import pytest

from keras_attention.data import babi
from keras_attention.models import MemoryNetwork
from keras_attention.models.memory_network import memory_ages
from keras_attention.models.memory_network import position_encoding
from keras_attention.models.memory_network import reference_position_encoding
from tests.backend import as_numpy
from tests.backend import gradient

VOCABULARY = 13
# Two stories of up to 4 sentences of up to 5 words; the second has an
# empty slot between two sentences and an empty last slot.
STORY = np.array(
    [
        [[1, 2, 3, 0, 0], [4, 5, 6, 7, 0], [2, 8, 0, 0, 0], [9, 10, 11, 12, 3]],
        [[5, 6, 0, 0, 0], [0, 0, 0, 0, 0], [7, 1, 2, 3, 0], [0, 0, 0, 0, 0]],
    ],
    "int32",
)
QUESTION = np.array([[3, 4, 5, 0, 0], [8, 9, 0, 0, 0]], "int32")
INPUTS = {"story": STORY, "question": QUESTION}


def reference_pe(words, dim):
    """l_kj = (1 - j/J) - (k/d)(1 - 2j/J), written out word by word."""
    weights = np.zeros(words.shape + (dim,))
    for index in np.ndindex(words.shape[:-1]):
        real = [j for j, word in enumerate(words[index]) if word]
        for j_1, position in enumerate(real, start=1):
            for k in range(1, dim + 1):
                weights[index + (position, k - 1)] = (
                    (1 - j_1 / len(real)) - (k / dim) * (1 - 2 * j_1 / len(real))
                )
    return weights


def matlab_pe(words, dim):
    """build_model.m's encoding, loop for loop: `config.weight(i, j) = (i -
    (d+1)/2) * (j - (J+1)/2)`, then `1 + 4 * weight / d / J`, J the
    padded width plus the time word."""
    width = words.shape[-1] + 1
    weight = np.ones((dim, width))
    for i in range(1, dim + 1):
        for j in range(1, width + 1):
            weight[i - 1, j - 1] = (i - (dim + 1) / 2) * (j - (width + 1) / 2)
    weight = 1 + 4 * weight / dim / width
    return weight[:, :-1].T * (words != 0)[..., None]  # (..., W, D)


def reference(model, story, question, linear=False):
    """The paper's equations in NumPy, from the model's weights."""
    dim, hops = model.embedding_dim, model.hops
    tables = [as_numpy(layer.embeddings) for layer in model.word_embeddings]
    temporal = [as_numpy(layer.embeddings)
                for layer in model.temporal_embeddings]

    def embed(table, words):
        if model.position_encoding == "reference":
            weights = matlab_pe(words, dim)
        elif model.position_encoding:
            weights = reference_pe(words, dim)
        else:
            weights = (words != 0)[..., None] * np.ones(dim)
        return (table[words] * weights).sum(-2)

    used = story.any(-1)  # (B, M)
    ages = np.array([[used[b, m + 1:].sum() for m in range(story.shape[1])]
                     for b in range(len(story))])
    state = embed(tables[0], question)
    attention = []
    for hop in range(hops):
        if model.weight_tying == "adjacent":
            key_table, value_table = tables[hop], tables[hop + 1]
            key_time, value_time = (temporal[hop:hop + 2]
                                    if temporal else (None, None))
        else:
            key_table, value_table = tables[1], tables[2]
            key_time, value_time = temporal if temporal else (None, None)
        keys, values = embed(key_table, story), embed(value_table, story)
        if key_time is not None:
            keys, values = keys + key_time[ages], values + value_time[ages]
        if model.attend_to_empty:  # empty slots: key and value zero
            keys, values = keys * used[..., None], values * used[..., None]
        scores = np.einsum("bd,bmd->bm", state, keys)
        if linear:
            weights = scores * used
        else:
            if not model.attend_to_empty:
                scores = np.where(used, scores, -np.inf)
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
        output = np.einsum("bm,bmd->bd", weights, values)
        if model.hop_map is not None:
            state = state @ as_numpy(model.hop_map.kernel)
        state = state + output
        attention.append(weights)
    answer = (as_numpy(model.answer.kernel) if model.answer is not None
              else tables[-1].T)
    return state @ answer, np.stack(attention, 1)


def build(**options):
    model = MemoryNetwork(VOCABULARY, **{"embedding_dim": 6, "hops": 3,
                                         "memory_size": 6, **options})
    model(INPUTS)
    return model


CONFIGURATIONS = {
    "one-hop": dict(hops=1),
    "adjacent": dict(),
    "adjacent-untied-answer": dict(tie_answer=False),
    "layer-wise": dict(weight_tying="layer_wise", hops=2),
    "layer-wise-tied-answer": dict(weight_tying="layer_wise",
                                   tie_answer=True),
    "bag-of-words": dict(position_encoding=False, temporal_encoding=False),
    "reference-encoding": dict(position_encoding="reference"),
    "attended-empty-slots": dict(position_encoding="reference",
                                 attend_to_empty=True),
}


@pytest.mark.parametrize("options", CONFIGURATIONS.values(),
                         ids=CONFIGURATIONS.keys())
def test_hops_match_the_numpy_reference(options):
    model = build(embeddings_stddev=0.5, **options)
    logits, attention = model(INPUTS, return_attention=True)
    expected_logits, expected_attention = reference(model, STORY, QUESTION)
    np.testing.assert_allclose(as_numpy(attention), expected_attention,
                               atol=1e-6)
    np.testing.assert_allclose(as_numpy(logits), expected_logits,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(as_numpy(model(INPUTS)), expected_logits,
                               rtol=1e-5, atol=1e-5)
    # The hops do attend differently (the reference is not trivially met).
    assert np.ptp(expected_attention[0, 0]) > 0.05


def test_position_encoding_and_ages():
    words = np.array([[4, 7, 9, 0, 0], [0, 0, 0, 0, 0], [3, 0, 0, 0, 0]])
    np.testing.assert_allclose(as_numpy(position_encoding(words != 0, 4)),
                               reference_pe(words, 4), atol=1e-6)
    # J = 3: word j = 1, feature k = 1 of d = 4: (1 - 1/3) - (1/4)(1 - 2/3).
    assert as_numpy(position_encoding(words != 0, 4))[0, 0, 0] == (
        pytest.approx(2 / 3 - 1 / 12))
    used = np.array([[True, False, True, True], [True, True, False, False]])
    assert as_numpy(memory_ages(used)).tolist() == [[2, 2, 1, 0],
                                                    [1, 0, 0, 0]]


def test_the_reference_codes_position_encoding():
    words = np.array([[4, 7, 9, 0, 0], [3, 0, 0, 0, 0]])
    got = as_numpy(reference_position_encoding(words != 0, 4))
    np.testing.assert_allclose(got, matlab_pe(words, 4), atol=1e-6)
    # J = 6 (5 words and the time word): word 1, feature 1 of d = 4:
    # 1 + 4 (1 - 2.5)(1 - 3.5) / 24.
    assert got[0, 0, 0] == pytest.approx(1 + 4 * 1.5 * 2.5 / 24)
    assert np.all(got[0, 3:] == 0) and np.all(got[1, 1:] == 0)
    with pytest.raises(ValueError, match="position_encoding"):
        MemoryNetwork(10, position_encoding="matlab")


def test_empty_memories_get_zero_attention_and_change_nothing():
    model = build()
    logits, attention = model(INPUTS, return_attention=True)
    attention = as_numpy(attention)
    assert np.all(attention[1, :, [1, 3]] == 0.0)
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-6)
    # More empty slots, empty slots moved, wider sentences: same answer.
    story = STORY[1:, [0, 2]]  # the two sentences alone
    for variant in (
        story,
        np.concatenate([np.zeros_like(story), story], 1),
        np.pad(story, ((0, 0), (0, 4), (0, 3))),
    ):
        question = np.pad(QUESTION[1:], ((0, 0), (0, variant.shape[2] - 5)))
        alone, weights = model({"story": variant, "question": question},
                               return_attention=True)
        np.testing.assert_allclose(as_numpy(alone), as_numpy(logits)[1:],
                                   rtol=1e-5, atol=1e-5)
        weights = as_numpy(weights)[0]
        used = variant[0].any(-1)
        np.testing.assert_allclose(weights[:, used], attention[1][:, [0, 2]],
                                   atol=1e-6)
        assert np.all(weights[:, ~used] == 0.0)
    # An empty story: no attention at all, the answer from the question.
    empty = {"story": np.zeros_like(STORY[:1]), "question": QUESTION[:1]}
    assert np.all(as_numpy(model(empty, return_attention=True)[1]) == 0.0)


def test_attended_empty_slots_score_zero_and_count():
    """The reference code's empty slots: score 0 in the softmax, nothing
    in the output; so each one added takes weight from the sentences."""
    model = build(attend_to_empty=True, embeddings_stddev=0.5)
    logits, attention = model(INPUTS, return_attention=True)
    attention = as_numpy(attention)
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-6)
    # Story 2's two empty slots share one weight, that of a zero score.
    first = attention[1, 0]
    assert first[1] == pytest.approx(first[3]) and first[1] > 0.01
    masked = build(embeddings_stddev=0.5)
    masked.set_weights(model.get_weights())
    assert np.all(as_numpy(masked(INPUTS, return_attention=True)[1])[
        1, :, [1, 3]] == 0.0)
    # Two more empty slots: less weight on each sentence, other logits.
    wider = {"story": np.pad(STORY, ((0, 0), (0, 2), (0, 0))),
             "question": QUESTION}
    more = as_numpy(model(wider, return_attention=True)[1])
    assert np.all(more[1, 0, [0, 2]] < attention[1, 0, [0, 2]])
    assert not np.allclose(as_numpy(model(wider)), as_numpy(logits))
    # An empty story: uniform weight on nothing; the answer is W u.
    empty = {"story": np.zeros_like(STORY[:1]), "question": QUESTION[:1]}
    weights = as_numpy(model(empty, return_attention=True)[1])
    np.testing.assert_allclose(weights, 0.25, atol=1e-6)
    state = reference(model, STORY[:1] * 0, QUESTION[:1])[0]
    np.testing.assert_allclose(as_numpy(model(empty)), state, atol=1e-5)


@pytest.mark.parametrize(
    "options, trainable, answer_is_last_table",
    [
        (dict(hops=1), 2 + 2, True),
        (dict(hops=3), 4 + 4, True),
        (dict(hops=3, tie_answer=False), 4 + 4 + 1, False),
        (dict(hops=3, temporal_encoding=False), 4, True),
        (dict(weight_tying="layer_wise", hops=1), 3 + 2 + 1 + 1, False),
        (dict(weight_tying="layer_wise", hops=4), 3 + 2 + 1 + 1, False),
        (dict(weight_tying="layer_wise", tie_answer=True), 3 + 2 + 1, True),
    ],
)
def test_weight_tying(options, trainable, answer_is_last_table):
    model = build(**options)
    assert len(model.trainable_weights) == trainable
    assert len(model.non_trainable_weights) == 1  # the softmax gate
    assert (model.answer is None) == answer_is_last_table
    hops = [model.hop_tables(hop) for hop in range(model.hops)]
    if model.weight_tying == "adjacent":
        # A^1 = B (the question's table), A^{k+1} = C^k, W = C^K.
        assert hops[0][0][0] is model.word_embeddings[0]
        for ((_, value), _), ((key, _), _) in zip(hops, hops[1:]):
            assert key is value
        if model.temporal_encoding:
            for (_, (_, value)), (_, (key, _)) in zip(hops, hops[1:]):
                assert key is value
        assert hops[-1][0][1] is model.word_embeddings[-1]
    else:
        # Every hop reads A and C; the question has its own B.
        assert all(tables == hops[0] for tables in hops)
        assert model.word_embeddings[0] not in hops[0][0]
    # Every weight is used: each one gets a gradient.
    fixed = [as_numpy(w) for w in model.non_trainable_variables]

    def loss(*values):
        logits, _ = model.stateless_call(list(values), fixed, INPUTS)
        return keras.ops.sum(logits**2)

    values = [as_numpy(w) for w in model.trainable_variables]
    assert all(np.abs(g).sum() > 0 for g in gradient(loss, *values))


def test_linear_start_removes_the_hops_softmax():
    model = build(embeddings_stddev=0.5)
    assert not model.linear_start
    softmax = as_numpy(model(INPUTS))
    model.linear_start = True
    logits, attention = model(INPUTS, return_attention=True)
    expected_logits, expected_attention = reference(model, STORY, QUESTION,
                                                    linear=True)
    np.testing.assert_allclose(as_numpy(attention), expected_attention,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(as_numpy(logits), expected_logits,
                               rtol=1e-4, atol=1e-5)
    model.linear_start = False
    np.testing.assert_allclose(as_numpy(model(INPUTS)), softmax, atol=1e-6)


def test_random_noise_shifts_ages_in_training_only():
    model = build(random_noise=0.5, seed=3)
    plain = build(seed=3)
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(as_numpy(model(INPUTS)),
                               as_numpy(plain(INPUTS)), atol=1e-6)
    trained = [as_numpy(model(INPUTS, training=True)) for _ in range(4)]
    assert max(np.abs(t - as_numpy(plain(INPUTS))).max() for t in trained) > 0
    # The gaps only add: the most recent sentence may get older, the empty
    # slots still get nothing.
    attention = as_numpy(model(INPUTS, training=True,
                               return_attention=True)[1])
    assert np.all(attention[1, :, [1, 3]] == 0.0)


def test_config_round_trip_and_keras_file(tmp_path):
    model = build(weight_tying="layer_wise", tie_answer=True, hops=2,
                  random_noise=0.1, seed=5, attend_to_empty=True)
    config = model.get_config()
    clone = MemoryNetwork.from_config(config)
    assert clone.get_config() == config
    path = tmp_path / "memory.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is MemoryNetwork
    for got, want in zip(loaded(INPUTS, return_attention=True),
                         model(INPUTS, return_attention=True)):
        np.testing.assert_array_equal(as_numpy(got), as_numpy(want))


def test_argument_errors():
    with pytest.raises(ValueError, match="weight_tying='rnn'"):
        MemoryNetwork(10, weight_tying="rnn")
    with pytest.raises(ValueError, match="hops=0"):
        MemoryNetwork(10, hops=0)
    with pytest.raises(ValueError, match="random_noise=1.5"):
        MemoryNetwork(10, random_noise=1.5)
    model = MemoryNetwork(VOCABULARY, memory_size=3)
    with pytest.raises(ValueError, match=r"4 slots, more than memory_size=3"):
        model(INPUTS)
    with pytest.raises(ValueError, match="'story' and 'question'"):
        model({"story": STORY})
    with pytest.raises(ValueError, match=r"story.shape=\(2, 5\)"):
        model({"story": QUESTION, "question": QUESTION})


def test_learns_generated_task_1_in_a_few_epochs():
    train = babi.parse_babi(babi.generate_babi(1, 500, seed=1))
    test = babi.parse_babi(babi.generate_babi(1, 200, seed=2))
    vocabulary = babi.BabiVocabulary.from_samples(train, test)
    inputs, answers = babi.vectorize_babi(train, vocabulary, memory_size=10)
    test_inputs, test_answers = babi.vectorize_babi(
        test, vocabulary, memory_size=10,
        sentence_size=inputs["story"].shape[-1])
    model = MemoryNetwork(len(vocabulary), hops=1, memory_size=10)
    model.compile(optimizer=keras.optimizers.Adam(0.02),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    model.fit(inputs, answers, batch_size=32, epochs=8, verbose=0)
    predicted = np.argmax(as_numpy(model.predict(test_inputs, verbose=0)), -1)
    accuracy = np.mean(predicted == test_answers)
    assert accuracy > 0.6, accuracy  # chance: 1/6
