"""SubwordTokenizer and train_sentencepiece: ids, round trips, errors.

One small SentencePiece model is trained per module (a few hundred synthetic
sentence pairs) and shared as bytes. The `SubwordTokenizer` itself is built in
every test: its in-graph SentencePiece resource does not survive
`keras.utils.set_random_seed` / `keras.backend.clear_session` (documented in
the class docstring; see the last tests of this module).
"""

import collections
import unicodedata

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from keras_attention.text import BOS_ID
from keras_attention.text import EOS_ID
from keras_attention.text import PAD_ID
from keras_attention.text import UNK_ID
from keras_attention.text import SubwordTokenizer
from keras_attention.text import train_sentencepiece
from keras_attention.text.synthetic import generate_pairs

VOCABULARY_SIZE = 400
GERMAN_EXTRAS = [
    "Zoë isst Käse über dem Tisch.",
    "Zoë sieht den Hund im Garten.",
    "Der Bär trägt einen großen Käse.",
    "Über dem Tisch hängt eine Uhr.",
]
PAIRS = generate_pairs(300, seed=0)
SENTENCES = [text for pair in PAIRS for text in pair] + GERMAN_EXTRAS
TRAINING_CHARACTERS = set("".join(SENTENCES))
# Held-out pairs (another seed): every character occurs in the training text.
HELD_OUT = [text for pair in generate_pairs(8, seed=123) for text in pair]


@pytest.fixture(scope="module")
def model_bytes():
    return train_sentencepiece(SENTENCES, VOCABULARY_SIZE)


@pytest.fixture
def tokenizer(model_bytes):
    return SubwordTokenizer(model_bytes)


def decode(strings):
    return [s.decode("utf-8") for s in strings.numpy().tolist()]


def ids_of(tokenizer, texts):
    return tokenizer.tokenize(tf.constant(texts)).to_list()


# --------------------------------------------------------------------------
# vocabulary and reserved ids


def test_model_bytes_are_a_sentencepiece_model_with_reserved_ids(model_bytes):
    assert isinstance(model_bytes, bytes) and model_bytes
    processor = sentencepiece.SentencePieceProcessor(model_proto=model_bytes)
    assert (processor.pad_id(), processor.unk_id(), processor.bos_id(),
            processor.eos_id()) == (PAD_ID, UNK_ID, BOS_ID, EOS_ID) == (0, 1, 2, 3)


def test_vocabulary_size_is_at_most_the_requested_size(tokenizer, model_bytes):
    assert 4 < tokenizer.vocabulary_size <= VOCABULARY_SIZE
    processor = sentencepiece.SentencePieceProcessor(model_proto=model_bytes)
    assert tokenizer.vocabulary_size == processor.get_piece_size()


def test_small_corpus_gets_a_smaller_vocabulary():
    sentences = ["the cat sat on the mat", "the dog sat on the log"] * 50
    tokenizer = SubwordTokenizer(train_sentencepiece(sentences, 500))
    assert 4 < tokenizer.vocabulary_size < 500


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_model_types_respect_vocabulary_size(model_type):
    model = train_sentencepiece(SENTENCES, 150, model_type=model_type)
    tokenizer = SubwordTokenizer(model)
    assert 4 < tokenizer.vocabulary_size <= 150
    texts = HELD_OUT[:4]
    assert decode(tokenizer.detokenize(tokenizer.tokenize(texts))) == texts


def test_special_pieces(tokenizer):
    pieces = decode(tokenizer.id_to_piece(tf.constant([0, 1, 2, 3])))
    assert pieces == ["<pad>", "<unk>", "<s>", "</s>"]


def test_ordinary_text_never_gets_pad_bos_eos_or_unk(tokenizer):
    rows = ids_of(tokenizer, SENTENCES + HELD_OUT)
    counts = collections.Counter(i for row in rows for i in row)
    assert all(len(row) > 0 for row in rows)
    for reserved in (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
        assert counts[reserved] == 0, reserved
    assert min(counts) > EOS_ID
    assert max(counts) < tokenizer.vocabulary_size


def test_tokenize_returns_ragged_int32_with_one_row_per_string(tokenizer):
    ids = tokenizer.tokenize(tf.constant(HELD_OUT[:3] + [""]))
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.dtype == tf.int32
    assert ids.shape[0] == 4
    assert ids.to_list()[3] == []
    assert decode(tokenizer.detokenize(ids))[3] == ""


def test_pieces_spell_the_text(tokenizer):
    text = "Der Bär trägt einen großen Käse."
    ids = tokenizer.tokenize(tf.constant([text]))
    pieces = decode(tokenizer.id_to_piece(ids.flat_values))
    assert "".join(pieces).replace("\u2581", " ").strip() == text


# --------------------------------------------------------------------------
# round trips and normalisation


def test_held_out_characters_occur_in_training_text():
    """Precondition of the round trip tests: no unknown character."""
    assert set("".join(HELD_OUT)) <= TRAINING_CHARACTERS
    assert set("Zoë Käse über großen Bär") <= TRAINING_CHARACTERS


@pytest.mark.parametrize(
    "text",
    GERMAN_EXTRAS
    + [
        "Zoë isst Käse.",
        "Über den Bären.",
        "Käse ist über dem großen Tisch.",
    ],
)
def test_round_trip_non_ascii_german(tokenizer, text):
    assert unicodedata.normalize("NFKC", text) == text
    ids = tokenizer.tokenize(tf.constant([text]))
    assert decode(tokenizer.detokenize(ids)) == [text]


def test_round_trip_held_out_batch(tokenizer):
    ids = tokenizer.tokenize(tf.constant(HELD_OUT))
    assert decode(tokenizer.detokenize(ids)) == HELD_OUT


def test_round_trip_training_sentences(tokenizer):
    ids = tokenizer.tokenize(tf.constant(SENTENCES))
    assert decode(tokenizer.detokenize(ids)) == SENTENCES


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("Zoe\u0308 isst Ka\u0308se.", "Zoë isst Käse."),  # decomposed umlauts
        ("Der  Mann   sieht den Hund.", "Der Mann sieht den Hund."),
        ("  Der Mann sieht den Hund.  ", "Der Mann sieht den Hund."),
        ("\uff24er Mann.", "Der Mann."),  # full-width D
        ("Der\u3000Mann.", "Der Mann."),  # ideographic space
    ],
)
def test_text_is_nfkc_normalized(tokenizer, raw, normalized):
    raw_ids, normalized_ids = ids_of(tokenizer, [raw, normalized])
    assert raw_ids == normalized_ids
    ids = tokenizer.tokenize(tf.constant([raw]))
    assert decode(tokenizer.detokenize(ids)) == [normalized]


def test_unknown_character_maps_to_unk(tokenizer):
    assert "ñ" not in TRAINING_CHARACTERS and "€" not in TRAINING_CHARACTERS
    (row,) = ids_of(tokenizer, ["Der Mann zahlt 5€."])
    assert row.count(UNK_ID) == 1
    assert all(i > EOS_ID for i in row if i != UNK_ID)
    (row,) = ids_of(tokenizer, ["Señor"])
    assert row.count(UNK_ID) == 1


def test_detokenize_keeps_a_trace_of_unknown_characters(tokenizer):
    """Text with an unknown character must not decode as if it was absent."""
    (row,) = ids_of(tokenizer, ["Der Mann zahlt 5€."])
    assert UNK_ID in row
    without_unk = [i for i in row if i != UNK_ID]
    with_unk_text = decode(tokenizer.detokenize(tf.ragged.constant([row])))
    without_unk_text = decode(
        tokenizer.detokenize(tf.ragged.constant([without_unk]))
    )
    assert with_unk_text != without_unk_text


# --------------------------------------------------------------------------
# detokenize: special ids, dense and ragged inputs


def test_detokenize_ignores_pad_bos_eos(tokenizer):
    text = "Zoë isst Käse über dem Tisch."
    (row,) = ids_of(tokenizer, [text])
    framed = [BOS_ID] + row + [EOS_ID, PAD_ID, PAD_ID]
    assert decode(tokenizer.detokenize(tf.constant([framed]))) == [text]
    assert decode(tokenizer.detokenize(tf.ragged.constant([framed]))) == [text]
    # specials in the middle are dropped as well
    middle = row[:2] + [PAD_ID, BOS_ID, EOS_ID] + row[2:]
    assert decode(tokenizer.detokenize(tf.ragged.constant([middle]))) == [text]


def test_detokenize_of_only_special_ids_is_empty(tokenizer):
    ids = tf.constant([[PAD_ID, PAD_ID, PAD_ID], [BOS_ID, EOS_ID, PAD_ID]])
    assert decode(tokenizer.detokenize(ids)) == ["", ""]
    assert decode(tokenizer.detokenize(tf.zeros((2, 0), tf.int32))) == ["", ""]


def test_dense_and_ragged_detokenize_agree(tokenizer):
    texts = HELD_OUT + [""]
    ragged = tokenizer.tokenize(tf.constant(texts))
    dense = ragged.to_tensor(default_value=PAD_ID)
    assert dense.shape[1] == max(len(r) for r in ragged.to_list())
    from_ragged = decode(tokenizer.detokenize(ragged))
    from_dense = decode(tokenizer.detokenize(dense))
    assert from_ragged == from_dense == texts
    # decoder-style dense rows: BOS, ids, EOS, padding
    framed = [[BOS_ID] + r + [EOS_ID] for r in ragged.to_list()]
    width = max(len(r) for r in framed) + 2
    padded = np.array([r + [PAD_ID] * (width - len(r)) for r in framed], "int32")
    assert decode(tokenizer.detokenize(tf.constant(padded))) == texts


# --------------------------------------------------------------------------
# graph mode, save/load, determinism


def test_tokenize_in_tf_function_equals_eager(tokenizer):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(strings):
        return tokenizer.tokenize(strings)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def detokenize(ids):
        return tokenizer.detokenize(ids)

    texts = tf.constant(HELD_OUT + GERMAN_EXTRAS)
    graph = tokenize(texts)
    eager = tokenizer.tokenize(texts)
    assert graph.to_list() == eager.to_list()
    assert decode(detokenize(graph.to_tensor())) == decode(
        tokenizer.detokenize(eager)
    )


def test_tokenize_inside_dataset_map_equals_eager(tokenizer):
    texts = HELD_OUT[:6]
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(3)
    dataset = dataset.map(tokenizer.tokenize)
    rows = [row for batch in dataset for row in batch.to_list()]
    assert rows == ids_of(tokenizer, texts)


def test_save_and_load_give_identical_ids(tokenizer, model_bytes, tmp_path):
    path = tmp_path / "tokenizer.model"
    tokenizer.save(path)
    assert path.read_bytes() == model_bytes
    loaded = SubwordTokenizer.load(path)
    assert loaded.model == model_bytes
    assert loaded.vocabulary_size == tokenizer.vocabulary_size
    texts = SENTENCES[:40] + HELD_OUT
    assert ids_of(loaded, texts) == ids_of(tokenizer, texts)
    # str path too
    tokenizer.save(str(tmp_path / "again.model"))
    again = SubwordTokenizer.load(str(tmp_path / "again.model"))
    assert ids_of(again, texts) == ids_of(tokenizer, texts)


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_training_is_deterministic(model_type):
    first = train_sentencepiece(SENTENCES, 200, model_type=model_type)
    second = train_sentencepiece(list(SENTENCES), 200, model_type=model_type)
    assert first == second
    texts = HELD_OUT
    assert ids_of(SubwordTokenizer(first), texts) == ids_of(
        SubwordTokenizer(second), texts
    )


def test_training_accepts_any_iterable_and_skips_blank_sentences(model_bytes):
    blanks = ["", "   ", "\t"]
    generator = (s for s in blanks + SENTENCES + blanks)
    assert train_sentencepiece(generator, VOCABULARY_SIZE) == model_bytes


def test_unigram_and_bpe_differ():
    unigram = train_sentencepiece(SENTENCES, 200, model_type="unigram")
    bpe = train_sentencepiece(SENTENCES, 200, model_type="bpe")
    assert unigram != bpe


# --------------------------------------------------------------------------
# bad inputs


@pytest.mark.parametrize(
    "model", [b"", "a model", None, bytearray(b"abc"), 123]
)
def test_model_must_be_non_empty_bytes(model):
    with pytest.raises(ValueError, match="`model`"):
        SubwordTokenizer(model)


def test_model_bytes_that_are_no_sentencepiece_model_raise_value_error():
    with pytest.raises(ValueError, match="`model`"):
        SubwordTokenizer(b"this is not a SentencePiece model")


def test_model_with_other_special_ids_is_rejected():
    """A model trained with SentencePiece's defaults (unk 0, bos 1, eos 2)."""
    import io

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(SENTENCES[:200]), model_writer=model,
        vocab_size=100, hard_vocab_limit=False, minloglevel=2,
    )
    with pytest.raises(ValueError, match="0/1/2/3"):
        SubwordTokenizer(model.getvalue())


@pytest.mark.parametrize("sentences", [[], ["  "], ["", "\t", "\n"], iter([])])
def test_train_without_text_raises(sentences):
    with pytest.raises(ValueError, match="`sentences`"):
        train_sentencepiece(sentences, 50)


@pytest.mark.parametrize("size", [0, -1, True, 2.5, "100", None])
def test_train_bad_vocabulary_size_raises(size):
    with pytest.raises(ValueError, match="vocabulary_size"):
        train_sentencepiece(SENTENCES[:20], size)


def test_train_bad_model_type_raises():
    with pytest.raises(ValueError, match="model_type"):
        train_sentencepiece(SENTENCES[:20], 50, model_type="word")


def test_train_vocabulary_smaller_than_the_alphabet_raises_value_error():
    with pytest.raises(ValueError, match="vocabulary_size"):
        train_sentencepiece(SENTENCES, 5)


# --------------------------------------------------------------------------
# lifetime of the in-graph resource


RESETS = pytest.mark.parametrize(
    "reset",
    [
        lambda: keras.utils.set_random_seed(7),
        lambda: tf.random.set_seed(7),
        keras.backend.clear_session,
    ],
    ids=["keras_set_random_seed", "tf_set_seed", "clear_session"],
)


@RESETS
def test_seed_reset_frees_the_resource_of_an_existing_tokenizer(
    model_bytes, reset
):
    """Documented limitation (SubwordTokenizer docstring): resetting the
    eager context frees the tensorflow-text resource of existing tokenizers."""
    tokenizer = SubwordTokenizer(model_bytes)
    ids_of(tokenizer, HELD_OUT[:2])
    reset()
    with pytest.raises(tf.errors.NotFoundError):
        tokenizer.tokenize(tf.constant(HELD_OUT[:2]))


@RESETS
def test_tokenizer_created_after_a_seed_reset_works(model_bytes, reset):
    """The documented order: seed first, then create tokenizers."""
    before = ids_of(SubwordTokenizer(model_bytes), HELD_OUT[:2])
    reset()
    tokenizer = SubwordTokenizer(model_bytes)
    assert ids_of(tokenizer, HELD_OUT[:2]) == before
    ids = tokenizer.tokenize(tf.constant(HELD_OUT[:2]))
    assert decode(tokenizer.detokenize(ids)) == HELD_OUT[:2]
