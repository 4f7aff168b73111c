"""Greedy and beam decoding with the cache, against uncached decoding."""

import numpy as np
import pytest
import tensorflow as tf

from keras_attention.decoding import beam_search_decode
from keras_attention.decoding import forced_attention
from keras_attention.decoding import greedy_decode
from keras_attention.text import BOS_ID
from keras_attention.text import EOS_ID
from keras_attention.text import synthetic

SENTENCES = [pair[0] for pair in synthetic.generate_pairs(8, seed=7)]


def _ids(translator):
    """The special ids decoding takes: the tokenizer's."""
    tokenizer = translator.tokenizer
    return dict(bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id)


def _source(translator):
    return translator.module.encode_text(tf.constant(SENTENCES))[0]


def _until_eos(row):
    """The output up to and including EOS, without padding."""
    row = list(row)
    row = row[: row.index(EOS_ID) + 1] if EOS_ID in row else row
    return [token for token in row if token != 0]


def test_cached_greedy_equals_uncached_greedy(trained):
    translator, _ = trained
    ids = _ids(translator)
    model = translator.model
    source = _source(translator)
    tokens, attention = greedy_decode(model, source, **ids, max_length=40)
    tokens = tokens.numpy()
    # Uncached: re-run the whole decoder on the prefix at every step, in
    # one graph for every prefix length (eagerly, the RNN runs its steps
    # op by op from Python, the square of the length).
    full_pass = tf.function(
        lambda source, prefix: model({"encoder_tokens": source,
                                      "decoder_tokens": prefix}),
        input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    prefix = np.full((len(SENTENCES), 1), BOS_ID, "int32")
    for _ in range(tokens.shape[1]):
        logits = full_pass(source, prefix)
        prefix = np.concatenate(
            [prefix, np.argmax(logits[:, -1], -1)[:, None].astype("int32")], 1
        )
    for cached, uncached in zip(tokens, prefix[:, 1:]):
        # Each row stops at EOS or at its own length limit.
        cached = _until_eos(cached)
        assert cached == list(uncached[: len(cached)])
    assert len({tuple(_until_eos(r)) for r in tokens}) > 1, "degenerate model"
    rows = attention.numpy().sum(-1)  # (B, T): each step attends once
    real = tokens != 0
    np.testing.assert_allclose(rows[real], 1.0, atol=1e-4)


def test_forced_attention_equals_what_greedy_decoding_computed(trained):
    """`translate_with_attention` returns greedy decoding's own attention;
    beam search's comes from running the steps over its output. Both
    agree on greedy's output."""
    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator)
    tokens, attention = greedy_decode(translator.model, source, **ids,
                                      max_length=40)
    forced = forced_attention(translator.model, source, tokens,
                              bos_id=ids["bos_id"])
    np.testing.assert_allclose(forced, attention, atol=1e-5)


def test_greedy_in_a_graph_equals_eager(trained):
    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator)
    eager, _ = greedy_decode(translator.model, source, **ids, max_length=40)
    graph = tf.function(
        lambda s: greedy_decode(translator.model, s, **ids, max_length=40)[0],
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    np.testing.assert_array_equal(graph(source), eager)


def test_beam_width_one_is_greedy(trained):
    """Beam search of width 1 follows the greedy path token for token. In
    tf-models' search a finished hypothesis (EOS as the runner-up at some
    step) stays a candidate, so the beam may stop earlier, at an EOS that
    outscores greedy's longer ending; it never takes another token."""
    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator)
    greedy, _ = greedy_decode(translator.model, source, **ids,
                              max_length=40)
    beam = beam_search_decode(translator.model, source, **ids,
                              beam_size=1, alpha=0.0, max_length=40)
    identical = 0
    for g, b in zip(greedy.numpy(), beam.numpy()):
        g, b = _until_eos(g), _until_eos(b)
        identical += g == b
        if g != b:  # the beam stopped early with EOS on greedy's path
            assert b[-1] == EOS_ID and b[:-1] == g[: len(b) - 1], (g, b)
    # An early stop is the exception: a beam that always stopped at once
    # would pass the property above on every row.
    assert identical > len(SENTENCES) // 2, identical


def test_beam_search_in_a_graph_equals_eager_and_is_well_formed(trained):
    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator)
    eager = beam_search_decode(translator.model, source, **ids, beam_size=4,
                               alpha=0.6, max_length=40).numpy()
    graph = tf.function(
        lambda s: beam_search_decode(translator.model, s, **ids, beam_size=4,
                                     alpha=0.6, max_length=40),
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    np.testing.assert_array_equal(graph(source), eager)
    for row in eager:
        row = list(row)
        if EOS_ID in row:  # nothing but padding after EOS, no BOS anywhere
            assert set(row[row.index(EOS_ID) + 1:]) <= {0}
        assert BOS_ID not in row


@pytest.mark.parametrize("length_ratio, length_offset", [(1.5, 10), (0.5, 1)])
def test_batched_beam_search_equals_the_per_sentence_search(
        trained, length_ratio, length_offset):
    """The batched search returns what tf-models' search of each sentence
    alone returns, also when the length limits (different per sentence)
    cut the search short (the second case)."""
    from keras_attention.decoding import _beam_search_per_sentence

    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator)
    options = dict(**ids, beam_size=4, alpha=0.6, length_ratio=length_ratio,
                   length_offset=length_offset, max_length=40)
    batched = beam_search_decode(translator.model, source, **options).numpy()
    # The reference in a graph, as exported: eagerly, tf.map_fn runs each
    # sentence's search op by op from Python, ten times slower.
    per_sentence = tf.function(lambda s: _beam_search_per_sentence(
        translator.model, s, **options))
    alone = per_sentence(source).numpy()
    np.testing.assert_array_equal(batched, alone)
    lengths = (batched != 0).sum(1)
    if length_offset == 1:  # the limits bind: rows of different lengths
        limits = np.ceil(0.5 * (source.numpy() != 0).sum(1)) + 1
        assert (lengths == limits).any() and len(set(lengths)) > 1


def test_output_length_limits_are_per_sentence():
    from keras_attention.decoding import output_length

    source = tf.constant([[5] * 10, [5] * 4 + [0] * 6])
    assert output_length(source, 1.5, 10, 256).numpy().tolist() == [25, 16]
    assert output_length(source, 1.5, 10, 20).numpy().tolist() == [20, 16]


def test_a_sentence_decodes_the_same_alone_and_in_a_batch(trained):
    """The batch decodes eagerly; each sentence alone in one graph of
    any input length, as exported (eagerly, a sentence alone takes as
    long as the batch: the steps run op by op from Python)."""
    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator).numpy()
    for decode in (
        lambda s: greedy_decode(translator.model, s, **ids,
                                max_length=40)[0],
        lambda s: beam_search_decode(translator.model, s, **ids,
                                     beam_size=3, max_length=40),
    ):
        together = decode(source).numpy()
        in_a_graph = tf.function(decode, input_signature=[
            tf.TensorSpec([None, None], tf.int32)])
        for row, sentence in enumerate(source):
            real = sentence[sentence != 0][None]
            alone = in_a_graph(real).numpy()[0]
            assert _until_eos(alone) == _until_eos(together[row])


def test_length_arguments_are_checked(trained):
    translator, _ = trained
    ids = _ids(translator)
    source = _source(translator)
    with pytest.raises(ValueError, match="length_offset=-1"):
        greedy_decode(translator.model, source, **ids, length_offset=-1)
    with pytest.raises(ValueError, match="length_ratio=0"):
        greedy_decode(translator.model, source, **ids, length_ratio=0)


@pytest.mark.parametrize(
    "model_name, options",
    [("transformer", {}), ("rnn", {}),
     ("rnn", {"cell": "lstm", "attention": "general", "query": "current"}),
     ("decoder_only", {})],
    ids=["transformer", "rnn", "rnn-luong-lstm", "decoder-only"])
def test_decoding_under_a_mixed_policy(model_name, options):
    """bfloat16 models decode with float32 attention, and beam search of
    width 1 stays on greedy's path (its cache keeps each leaf's dtype)."""
    from keras_attention.models import TRANSLATORS

    model = TRANSLATORS[model_name].from_preset("tiny", 40, 40,
                                                dtype="mixed_bfloat16",
                                                **options)
    rng = np.random.default_rng(0)
    source = rng.integers(4, 40, (3, 6)).astype("int32")
    model({"encoder_tokens": source, "decoder_tokens": source})
    ids = dict(bos_id=BOS_ID, eos_id=EOS_ID)
    tokens, attention = greedy_decode(model, source, **ids, max_length=8)
    assert attention.dtype == tf.float32
    np.testing.assert_allclose(attention.numpy().sum(-1)[tokens.numpy() != 0],
                               1.0, atol=1e-2)
    beam = beam_search_decode(model, source, **ids, beam_size=1, alpha=0.0,
                              max_length=8)
    assert beam.dtype == tf.int32 and beam.shape[0] == 3
    for g, b in zip(tokens.numpy(), beam.numpy()):
        g, b = _until_eos(g), _until_eos(b)
        assert g == b or (b[-1] == EOS_ID and b[:-1] == g[: len(b) - 1])
    wide = beam_search_decode(model, source, **ids, beam_size=2, max_length=8)
    assert wide.shape[0] == 3


def test_attention_of_every_layer_and_head_is_what_decoding_computed(trained):
    """`Translator.attention` gives every layer and head, trimmed to the
    real pieces; its last layer averaged over heads is the attention
    greedy decoding reported for the same sentence."""
    translator, _ = trained
    text = SENTENCES[0]
    found = translator.attention(text)
    reported = translator.module.translate_with_attention(
        tf.constant([text]))
    tokens = _until_eos(reported["tokens"].numpy()[0])
    weights = found["attention"]
    model = translator.model
    layers, heads = 1, 1  # the RNN's one attention
    if hasattr(model, "decoder_blocks"):
        layers, heads = len(model.decoder_blocks), model.num_heads
    source = _source(translator)[:1]
    source_length = int(np.sum(source.numpy() != 0))
    assert weights.shape == (layers, heads, len(tokens), source_length)
    assert len(found["target_pieces"]) == len(tokens)
    assert len(found["source_pieces"]) == source_length
    assert found["translation"] == translator.translate([text])[0]
    np.testing.assert_allclose(
        weights[-1].mean(0),
        reported["attention"].numpy()[0, : len(tokens), :source_length],
        atol=1e-5)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-4)


@pytest.mark.parametrize(
    "options", [{"attention": None},
                {"attention": "general", "query": "current"}],
    ids=["no-attention", "luong"])
def test_rnn_variants_decode_and_export_through_the_shared_path(
        options, tmp_path_factory):
    """The encoder-decoder without attention and Luong's decoder (not
    trained: only the path is under test) give cached greedy == the
    teacher-forced argmax, beam 1 == greedy, and an exported SavedModel
    translates as the in-memory translator does."""
    from keras_attention.models import RNNTranslator
    from keras_attention.translator import Translator
    from keras_attention.translator import build
    from tests.trained_translators import TEXTS
    from tests.trained_translators import trained_translator

    tokenizer = Translator.load(
        trained_translator(tmp_path_factory, "rnn")).tokenizer
    size = tokenizer.vocabulary_size
    rng = np.random.default_rng(3)
    model = RNNTranslator.from_preset("tiny", size, size, **options)
    build(model)
    model.set_weights([rng.normal(scale=0.3, size=w.shape)
                       for w in model.get_weights()])
    translator = Translator(model, tokenizer, max_source_length=32)
    ids = _ids(translator)
    source = _source(translator)
    tokens, attention = greedy_decode(model, source, **ids, max_length=12)
    forced = np.concatenate(
        [np.full((tokens.shape[0], 1), ids["bos_id"]), tokens.numpy()[:, :-1]],
        axis=1).astype("int32")
    logits = model({"encoder_tokens": source, "decoder_tokens": forced})
    real = tokens.numpy() != model.pad_id
    np.testing.assert_array_equal(
        np.argmax(logits, -1)[real], tokens.numpy()[real])
    if options["attention"] is None:
        assert np.abs(attention.numpy()).max() == 0.0
        with pytest.raises(ValueError, match="attention=None"):
            translator.attention(TEXTS[0])
    else:
        np.testing.assert_allclose(attention.numpy().sum(-1)[real], 1.0,
                                   atol=1e-4)
    beam = beam_search_decode(model, source, **ids, beam_size=1, alpha=0.0,
                              max_length=12)
    for g, b in zip(tokens.numpy(), beam.numpy()):
        assert _until_eos(g) == _until_eos(b)
    # Beams > 1 tile the constant cache (a (B, M) memory without
    # attention) once per beam, in the search's row order: reversing the
    # batch reverses the outputs (a mix-up of rows would not).
    options = dict(**ids, beam_size=3, alpha=0.6, max_length=12)
    wide = beam_search_decode(model, source, **options).numpy()
    backwards = beam_search_decode(model, source[::-1], **options).numpy()
    np.testing.assert_array_equal(wide[::-1], backwards)
    assert len({tuple(row) for row in wide}) > 1
    path = translator.export(tmp_path_factory.mktemp("variant"), "variant")
    loaded = tf.saved_model.load(str(path)).signatures["serving_default"]
    exported = loaded(text=tf.constant(TEXTS, tf.string))["translation"]
    assert [t.decode("utf-8") for t in exported.numpy()] == (
        translator.translate(TEXTS))


def test_self_attention_of_every_layer_and_head(trained):
    """`Translator.attention(text, kind=...)`: the encoder's self-attention
    over the source pieces, the decoder's causal one over its own
    positions, every layer and head, the same in a padded batch; an RNN
    has none and says so."""
    translator, _ = trained
    text = SENTENCES[0]
    model = translator.model
    with pytest.raises(ValueError, match="kind='sideways'"):
        translator.attention(text, kind="sideways")
    if not hasattr(model, "encoder_blocks"):
        for kind in ("encoder", "decoder"):
            with pytest.raises(ValueError,
                               match=f"kind='{kind}'.*no self-attention"):
                translator.attention(text, kind=kind)
        return
    cross = translator.attention(text)
    encoder = translator.attention(text, kind="encoder")
    decoder = translator.attention(text, kind="decoder")
    source, target = cross["source_pieces"], cross["target_pieces"]
    for found, kind in ((cross, "cross"), (encoder, "encoder"),
                        (decoder, "decoder")):
        assert found["kind"] == kind
        assert (found["translation"], found["source_pieces"],
                found["target_pieces"]) == (cross["translation"], source,
                                            target)
    assert (cross["row_pieces"], cross["column_pieces"]) == (target, source)
    assert encoder["row_pieces"] == encoder["column_pieces"] == source
    assert decoder["row_pieces"] == target
    assert decoder["column_pieces"] == ["<s>", *target[:-1]]
    layers, heads = len(model.encoder_blocks), model.num_heads
    assert encoder["attention"].shape == (layers, heads, len(source),
                                          len(source))
    assert decoder["attention"].shape == (layers, heads, len(target),
                                          len(target))
    for found in encoder, decoder:
        assert found["attention"].dtype == np.float32
        np.testing.assert_allclose(found["attention"].sum(-1), 1.0,
                                   atol=1e-4)
    above = np.triu(np.ones((len(target),) * 2, bool), k=1)
    assert np.all(decoder["attention"][..., above] == 0.0)
    # The sentence padded attends as it does alone.
    alone = translator.module.encode_text(tf.constant([text]))[0].numpy()
    padded = np.pad(alone, [(0, 0), (0, 3)])  # pad id 0
    batch = np.array(model.encoder_self_attention(padded))
    np.testing.assert_allclose(
        batch[0, ..., :len(source), :len(source)], encoder["attention"],
        atol=1e-5)
    assert np.all(batch[0, ..., len(source):] == 0.0)
