"""`SubwordTokenizer`: a SentencePiece model applied inside the graph.

The vocabulary is trained with the `sentencepiece` package and applied with
`tensorflow_text.SentencepieceTokenizer`, whose model bytes live in the graph:
a SavedModel that holds the tokenizer takes raw strings, and the same text
tokenizes the same way in training (tf.data) and in serving.
"""

import io
import pathlib

from keras_attention._extras import require

require(__name__, "translate", "sentencepiece", "tensorflow", "tensorflow_text")

import sentencepiece
import tensorflow as tf
import tensorflow_text

from keras_attention import _validation

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def train_sentencepiece(sentences, vocabulary_size, model_type="unigram",
                        max_sentences=2_000_000):
    """Train a SentencePiece model on an iterable of strings.

    Ids 0-3 are reserved: pad, unk, bos, eos. The text is NFKC-normalised.

    Args:
        sentences: iterable of `str`.
        vocabulary_size: int, the number of pieces; a corpus with fewer
            distinct pieces gets a smaller vocabulary.
        model_type: `"unigram"` or `"bpe"`.
        max_sentences: sample at most this many sentences for training.

    Training is deterministic: the same sentences give the same model.

    Returns:
        The serialized model (`bytes`).
    """
    vocabulary_size = _validation.positive_int(
        "vocabulary_size", vocabulary_size
    )
    _validation.choice("model_type", model_type, ("unigram", "bpe"))
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise ValueError("`sentences` must hold some non-empty text, "
                         "received: no non-empty sentence")
    model = io.BytesIO()
    try:
        _train(sentences, model, vocabulary_size, model_type, max_sentences)
    except RuntimeError as error:
        raise ValueError(
            "SentencePiece could not train with "
            f"vocabulary_size={vocabulary_size}: {error}"
        ) from error
    return model.getvalue()


def _train(sentences, model, vocabulary_size, model_type, max_sentences):
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=model,
        vocab_size=vocabulary_size,
        hard_vocab_limit=False,  # a small corpus may hold fewer pieces
        model_type=model_type,
        pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
        character_coverage=1.0,
        input_sentence_size=max_sentences,
        shuffle_input_sentence=len(sentences) > max_sentences,
        normalization_rule_name="nmt_nfkc",
        num_threads=2,
        minloglevel=2,
    )


class SubwordTokenizer(tf.Module):
    """Strings to subword ids and back, in the TensorFlow graph.

    Args:
        model: serialized SentencePiece model bytes (see
            `train_sentencepiece`), with pad/unk/bos/eos at ids 0/1/2/3.

    The tensorflow-text op keeps the model in a TensorFlow resource of the
    eager context: `keras.utils.set_random_seed`, `tf.random.set_seed` and
    `keras.backend.clear_session` reset that context and free it. Seed
    first, then create tokenizers (`keras_attention.translator.train` does).

    Example:

    >>> from keras_attention.text import SubwordTokenizer
    >>> from keras_attention.text import train_sentencepiece
    >>> sentences = ["the cat sat on the mat", "the dog sat on the log"] * 50
    >>> tokenizer = SubwordTokenizer(train_sentencepiece(sentences, 30))
    >>> ids = tokenizer.tokenize(["the cat sat"])
    >>> tokenizer.detokenize(ids).numpy()
    array([b'the cat sat'], dtype=object)
    """

    def __init__(self, model, name=None):
        super().__init__(name=name)
        if not isinstance(model, bytes) or not model:
            raise ValueError(
                "`model` must be the bytes of a SentencePiece model, "
                f"received: {type(model).__name__}"
            )
        self.model = model
        try:
            processor = sentencepiece.SentencePieceProcessor(model_proto=model)
        except RuntimeError as error:
            raise ValueError(
                "`model` must be the bytes of a SentencePiece model, "
                f"received {len(model)} bytes that are not: {error}"
            ) from error
        special = (processor.pad_id(), processor.unk_id(), processor.bos_id(),
                   processor.eos_id())
        if special != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise ValueError(
                "The SentencePiece model must reserve pad/unk/bos/eos as ids "
                f"0/1/2/3, received: {special}"
            )
        # The special ids, read from the model: decoding, padding and the
        # pipeline take them from here rather than from shared constants.
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = special
        self.vocabulary_size = processor.get_piece_size()
        self._tokenizer = tensorflow_text.SentencepieceTokenizer(
            model=model, out_type=tf.int32
        )

    def tokenize(self, strings):
        """`(batch,)` strings -> ragged `(batch, None)` int32 ids."""
        return self._tokenizer.tokenize(strings)

    def detokenize(self, ids):
        """Ragged or dense `(batch, None)` ids -> `(batch,)` strings.

        Pad, BOS and EOS are dropped; an unknown piece shows as " ⁇ "."""
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        control = ((ids == self.pad_id) | (ids == self.bos_id)
                   | (ids == self.eos_id))
        ids = tf.ragged.boolean_mask(ids, tf.logical_not(control))
        return self._tokenizer.detokenize(ids)

    def id_to_piece(self, ids):
        """Ids -> their pieces (for display)."""
        return self._tokenizer.id_to_string(ids)

    def save(self, path):
        """Write the SentencePiece model to `path` (a `.model` file)."""
        pathlib.Path(path).write_bytes(self.model)

    @classmethod
    def load(cls, path):
        """Read a tokenizer written by `save`."""
        return cls(pathlib.Path(path).read_bytes())
