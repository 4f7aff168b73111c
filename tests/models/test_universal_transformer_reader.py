"""UniversalTransformerReader: sentence vectors by hand, empty slots change
nothing, newest-first order, the answer reads the mean or the question's
state, two hops need two steps (a learning test), training, saving."""

import json
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_attention.data import babi
from keras_attention.models import UniversalTransformerReader
from keras_attention.models.memory_network import position_encoding
from keras_attention.models.universal_transformer_reader import newest_first
from tests.backend import as_numpy
from tests.backend import assert_allclose

ROOT = pathlib.Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(3)
VOCABULARY, WORDS = 20, 4


def _reader(**kwargs):
    options = dict(vocabulary_size=VOCABULARY, sentence_size=WORDS,
                   hidden_dim=16, num_heads=2, intermediate_dim=32,
                   max_steps=3)
    options.update(kwargs)
    return UniversalTransformerReader(**options)


def _story(slots=5, filled=3):
    story = np.zeros((2, slots, WORDS), "int32")
    story[:, :filled, :3] = RNG.integers(1, VOCABULARY, (2, filled, 3))
    question = np.zeros((2, WORDS), "int32")
    question[:, :2] = RNG.integers(1, VOCABULARY, (2, 2))
    return {"story": story, "question": question}


def test_sentence_vectors_are_position_weighted_sums():
    reader = _reader()
    inputs = _story()
    reader(inputs)
    mask = as_numpy(reader.position_mask)
    np.testing.assert_allclose(
        mask, as_numpy(position_encoding(np.ones(WORDS, bool), 16)),
        atol=1e-6)
    # tensor2tensor's "sqrt_depth": the table (drawn N(0, 1/D)) times √D.
    table = as_numpy(reader.word_embedding.embeddings) * 16 ** 0.5
    assert 0.15 < table[1:].std() * 16 ** -0.5 < 0.35  # 1/√16 = 0.25
    words = inputs["story"][0, 1]
    expected = sum(table[w] * mask[j] for j, w in enumerate(words) if w)
    assert_allclose(reader._sentences(words), expected, atol=1e-5)


@pytest.mark.parametrize("act, act_style", [
    (False, "graves"), (True, "graves"), (True, "tensor2tensor")])
def test_empty_story_slots_change_nothing(act, act_style):
    """Trailing empty slots change no answer, ponder time or ponder cost:
    a batch may be cut to its longest story
    (`babi.batches_by_length`)."""
    reader = _reader(act=act, act_style=act_style)
    inputs = _story(slots=5, filled=3)
    wider = {"story": np.concatenate(
        [inputs["story"], np.zeros((2, 4, WORDS), "int32")], 1),
        "question": inputs["question"]}
    logits, ponder, steps = reader(inputs, return_ponder=True,
                                   return_steps=True)
    cost = [as_numpy(loss) for loss in reader.losses]
    assert tuple(ponder.shape) == (2, 6) and len(cost) == int(act)
    wide_logits, wide_ponder, wide_steps = reader(
        wider, return_ponder=True, return_steps=True)
    assert_allclose(wide_logits, logits, atol=1e-5)
    assert_allclose(as_numpy(wide_ponder)[:, :4], as_numpy(ponder)[:, :4],
                    atol=1e-5)  # the question and the 3 sentences
    assert_allclose(as_numpy(wide_steps)[:, :4], as_numpy(steps)[:, :4],
                    atol=1e-5)
    for wide, narrow in zip(reader.losses, cost, strict=True):
        assert_allclose(wide, narrow, atol=1e-6)
    # The question (position 0) and the real sentences, not the padding.
    changed = {"story": inputs["story"].copy(),
               "question": inputs["question"]}
    changed["story"][:, 1, 0] = (changed["story"][:, 1, 0] % 19) + 1
    assert not np.allclose(as_numpy(reader(changed)), as_numpy(logits),
                           atol=1e-5)


@pytest.mark.parametrize("readout", ["mean", "question"])
def test_the_answer_reads_the_mean_or_the_question(readout):
    reader = _reader(readout=readout, act=True)
    inputs = _story(slots=5, filled=3)
    logits = reader(inputs)
    sequence = np.concatenate(
        [as_numpy(reader._sentences(inputs["question"]))[:, None],
         as_numpy(reader._sentences(inputs["story"]))], 1)  # (B, 1+M, D)
    mask = np.concatenate([np.ones((2, 1), bool),
                           (inputs["story"] != 0).any(-1)], 1)
    states = as_numpy(reader.encoder(sequence, padding_mask=mask))
    if readout == "mean":
        pooled = (states * mask[..., None]).sum(1) / mask.sum(1)[:, None]
    else:
        pooled = states[:, 0]
    assert_allclose(logits, reader.answer(pooled), atol=1e-5)


def test_newest_first_reverses_the_sentences_and_keeps_padding_last():
    story = np.zeros((2, 5, 3), "int32")
    story[0, :3, 0] = [1, 2, 3]
    story[1, :2, :2] = [[4, 5], [6, 7]]
    expected = np.zeros_like(story)
    expected[0, :3, 0] = [3, 2, 1]
    expected[1, :2, :2] = [[6, 7], [4, 5]]
    np.testing.assert_array_equal(as_numpy(newest_first(story)), expected)
    full = RNG.integers(1, VOCABULARY, (1, 4, 3)).astype("int32")
    np.testing.assert_array_equal(as_numpy(newest_first(full)),
                                  full[:, ::-1])


@pytest.mark.parametrize("act", [False, True])
def test_newest_first_reads_the_story_reversed(act):
    reader = _reader(act=act, newest_first=True)
    inputs = _story(slots=5, filled=3)
    logits, ponder = reader(inputs, return_ponder=True)
    oldest = _reader(act=act)
    oldest(inputs)
    oldest.set_weights(reader.get_weights())
    reversed_inputs = {"story": inputs["story"].copy(),
                       "question": inputs["question"]}
    reversed_inputs["story"][:, :3] = inputs["story"][:, 2::-1]
    old_logits, old_ponder = oldest(reversed_inputs, return_ponder=True)
    assert_allclose(old_logits, logits, atol=1e-5)
    # The ponder times come back in the inputs' slot order.
    old_ponder = as_numpy(old_ponder)
    assert_allclose(ponder[:, 1:4], old_ponder[:, 3:0:-1], atol=1e-5)
    assert_allclose(ponder[:, 0], old_ponder[:, 0], atol=1e-5)
    # The order matters: the same story oldest first answers otherwise.
    assert not np.allclose(as_numpy(oldest(inputs)), as_numpy(logits),
                           atol=1e-5)


def _two_hop_task(count, rng, people=12, places=8, objects=3, met=4):
    """A tiny two-hop task: `met` people of a pool of `people`, each at a
    different place ("p at L"), hold `objects` objects ("p has o"); the
    question "where o" is answered by the place of the object's holder:
    object -> holder -> holder's place. The names change from story to
    story, so no fixed head can learn the table of who is where."""
    first_person, first_place = 1, 1 + people
    first_object = first_place + places
    at, has, where = (first_object + objects + offset for offset in range(3))
    slots = met + objects
    story = np.zeros((count, slots, 3), "int32")
    question = np.zeros((count, 3), "int32")
    answers = np.zeros(count, "int32")
    for row in range(count):
        who = first_person + rng.choice(people, met, replace=False)
        place = first_place + rng.choice(places, met, replace=False)
        holder = rng.integers(0, met, objects)
        sentences = [[who[i], at, place[i]] for i in range(met)] + [
            [who[holder[o]], has, first_object + o] for o in range(objects)]
        story[row] = np.array(sentences)[rng.permutation(slots)]
        asked = rng.integers(objects)
        question[row, :2] = [where, first_object + asked]
        answers[row] = place[holder[asked]]
    return {"story": story, "question": question}, answers, where + 1


def _trained_on_two_hops(epochs=25, **options):
    """A reader (d = 64, 4 heads, `options`) trained on 4,000 two-hop
    stories with Adam at 2e-3; returns it and 500 test stories."""
    rng = np.random.default_rng(0)
    inputs, answers, vocabulary = _two_hop_task(4000, rng)
    test_inputs, test_answers, _ = _two_hop_task(500, rng)
    keras.utils.set_random_seed(0)
    reader = UniversalTransformerReader(
        vocabulary_size=vocabulary, sentence_size=3, hidden_dim=64,
        num_heads=4, intermediate_dim=128, **options)
    reader.compile(optimizer=keras.optimizers.Adam(2e-3),
                   loss=keras.losses.SparseCategoricalCrossentropy(
                       from_logits=True))
    reader.fit(inputs, answers, epochs=epochs, batch_size=64, verbose=0)
    return reader, test_inputs, test_answers


@pytest.mark.parametrize("steps, learns", [(2, True), (1, False)],
                         ids=["two_steps", "one_step"])
def test_two_hops_need_two_steps(steps, learns):
    """A learning test: the question's state after two steps of the shared
    block answers a two-hop question (step 1: the object's sentence reads
    its holder's place; step 2: the question reads that sentence); after
    one step it cannot do better than guessing among the story's places
    (1/4). Fails if the steps do not compose, or if the sentence vectors
    are drowned by the coordinate embedding (Keras' default embedding
    scale: 24% after the same training)."""
    # Two steps sit near 40% for about 15 epochs, then learn the chain
    # (100% by epoch 20 on TensorFlow, seed 0).
    reader, test_inputs, test_answers = _trained_on_two_hops(
        max_steps=steps, readout="question")
    predicted = np.argmax(as_numpy(reader.predict(test_inputs, verbose=0)),
                          -1)
    accuracy = float(np.mean(predicted == test_answers))
    if learns:
        assert accuracy >= 0.9, accuracy
    else:
        assert accuracy <= 0.45, accuracy


def act_two_hops(epochs=25):
    """Train an ACT reader (3 steps at most, the mean readout, Adam at a
    constant 2e-3) on the two-hop task; returns its test accuracy, the
    questions' mean ponder time and the fraction of questions that took
    more than one step. Run in a subprocess per backend
    (`test_act_learns_two_hops_with_more_than_one_step`)."""
    reader, test_inputs, test_answers = _trained_on_two_hops(
        epochs, max_steps=3, act=True)
    logits, ponder = reader(test_inputs, return_ponder=True)
    question = as_numpy(ponder)[:, 0].astype("float64")
    predicted = np.argmax(as_numpy(logits), -1)
    return {"accuracy": float(np.mean(predicted == test_answers)),
            "question_ponder": float(question.mean()),
            "more_than_one_step": float(np.mean(question > 2.0 + 1e-6))}


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_act_learns_two_hops_with_more_than_one_step(backend):
    """A learning test of ACT on both backends: the two-hop question needs
    a second step (one step stays near 45%, `test_two_hops_need_two_steps`),
    and ACT must find it: accuracy and a ponder time above one step
    (N + R > 2). With the halting unit on the raw input and the zero
    kernel, this run collapsed (TensorFlow: 70.8%, the question's ponder
    2.00); on the raw input with a Glorot kernel it happened to learn at
    this seed (100%, ponder 2.51), the seed lottery the unit-norm input
    removed; now 100% with the question's ponder 3.4 on both backends."""
    script = ("import json; from tests.models.test_universal_transformer"
              "_reader import act_two_hops; print(json.dumps(act_two_hops()"
              "))")
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True,
        timeout=600, cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": backend,
             "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-3000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["accuracy"] >= 0.9, measured
    assert measured["question_ponder"] > 2.5, measured
    assert measured["more_than_one_step"] >= 0.9, measured


def test_tensor2tensor_act_style_sets_the_encoders_rule_and_saves(
        tmp_path):
    """`act_style="tensor2tensor"`: the encoder's halting unit reads the
    step input from a kernel of variance 2/(D + 1), stops at the cap
    without a remainder and interpolates; the style survives saving."""
    reader = _reader(act=True, act_style="tensor2tensor")
    inputs = _story()
    output, ponder = reader(inputs, return_ponder=True)
    encoder = reader.encoder
    assert (encoder.halting_input, encoder.halt_at_cap,
            encoder.act_output) == ("state", False, "interpolate")
    # tensor2tensor's uniform_unit_scaling: U(±√(3 / fan_avg)), fan_avg
    # the mean of the unit's D = 16 inputs and 1 output.
    kernel = as_numpy(encoder.halting.kernel)
    assert np.abs(kernel).max() <= (3 / 8.5) ** 0.5 + 1e-6
    assert np.abs(kernel).max() > 0
    assert encoder.halting.kernel_initializer.get_config()["mode"] == (
        "fan_avg")
    ponder = as_numpy(ponder)
    assert np.all(ponder >= 1.0) and np.all(ponder <= 3.0 + 1.0)
    # The steps taken, N: whole, at most the cap, N <= N + R.
    _, again, steps = reader(inputs, return_ponder=True, return_steps=True)
    steps = as_numpy(steps)
    assert steps.shape == ponder.shape and np.all(steps == np.round(steps))
    assert np.all((1 <= steps) & (steps <= 3) & (steps <= ponder + 1e-6))
    assert _reader(act=True).encoder.halting_input == "unit_norm"
    path = os.path.join(tmp_path, "reader.keras")
    reader.save(path)
    restored = keras.saving.load_model(path)
    assert restored.get_config()["act_style"] == "tensor2tensor"
    assert_allclose(restored(inputs), output, atol=1e-5)
    with pytest.raises(ValueError, match="act_style='t2t'"):
        _reader(act_style="t2t")


def test_learns_babi_task_1_and_saves(tmp_path):
    samples = babi.parse_babi(babi.generate_babi(1, 60, seed=0))
    vocabulary = babi.BabiVocabulary.from_samples(samples)
    inputs, answers = babi.vectorize_babi(samples, vocabulary, memory_size=10)
    reader = UniversalTransformerReader(
        vocabulary_size=len(vocabulary),
        sentence_size=inputs["story"].shape[-1], hidden_dim=16,
        num_heads=2, intermediate_dim=32, max_steps=2, act=True)
    reader.compile(optimizer=keras.optimizers.Adam(3e-3),
                   loss=keras.losses.SparseCategoricalCrossentropy(
                       from_logits=True))
    history = reader.fit(inputs, answers, epochs=4, batch_size=32, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    path = os.path.join(tmp_path, "reader.keras")
    reader.save(path)
    restored = keras.saving.load_model(path)
    assert restored.get_config() == reader.get_config()
    assert_allclose(restored(inputs), reader(inputs), atol=1e-5)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="hidden_dim=15, num_heads=2"):
        _reader(hidden_dim=15)
    with pytest.raises(ValueError, match="sentence_size=0"):
        _reader(sentence_size=0)
    with pytest.raises(ValueError, match="newest_first='yes'"):
        _reader(newest_first="yes")
    with pytest.raises(ValueError, match="readout='last'"):
        _reader(readout="last")
    with pytest.raises(ValueError, match="normalize_first=1"):
        _reader(normalize_first=1)
    reader = _reader()
    with pytest.raises(ValueError, match=r"sentence_size=4.*\(2, 5, 6\)"):
        reader({"story": np.ones((2, 5, 6), "int32"),
                "question": np.ones((2, 6), "int32")})
