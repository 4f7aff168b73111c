"""The translator's Python API: train, evaluate, translate, save, export.

    from keras_attention.translator import TrainingConfig, train
    translator = train(TrainingConfig(preset="tiny", epochs=8))
    translator.translate(["The man sees the dog."])
    translator.evaluate(pairs)          # sacreBLEU
    translator.evaluate(pairs, by_length=(10, 20))  # and by source length
    translator.export("models")         # models/translator/1/

The `keras-attention` command line is a thin layer over these functions.
"""

import dataclasses
import json
import pathlib
import time

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import keras
import tensorflow as tf

from keras_attention._batches import batches
from keras_attention._length_buckets import DEFAULT_EDGES
from keras_attention._length_buckets import bucket_index
from keras_attention._length_buckets import bucket_labels
from keras_attention._length_buckets import length_edges
from keras_attention.export import TranslatorModule
from keras_attention.export import export_translator
from keras_attention.models import TransformerTranslator
from keras_attention.text import SubwordTokenizer
from keras_attention.training import BleuCallback
from keras_attention.training import corpus_bleu
from keras_attention.training import seq2seq
from keras_attention.training.config import PRECISIONS  # noqa: F401
from keras_attention.training.config import TrainingConfig

__all__ = ["PRECISIONS", "TrainingConfig", "Translator", "bleu_by_length",
           "build", "quantization_config", "quantize_model", "train"]
build = seq2seq.build


def bleu_by_length(sources, hypotheses, references, edges=DEFAULT_EDGES):
    """sacreBLEU of the sentences in each source-length bucket: BLEU
    against sentence length, Bahdanau et al. (2015), Fig. 2.

    Args:
        sources: list of `str`, the source sentences; a sentence's length
            is its number of whitespace-separated words.
        hypotheses: list of `str`, their translations.
        references: list of `str`, one reference per source.
        edges: positive, strictly increasing ints: the last length of each
            bucket but the last. The default `(10, 15, 20, 25)` gives the
            buckets 1-10, 11-15, 16-20, 21-25 and 26+ words (an empty
            source counts in the first).

    Returns:
        One dict per bucket, shortest first: `words` (the bucket's label,
        e.g. `"11-15"`), `sentences` (how many fall in it) and `bleu`
        (the bucket's corpus sacreBLEU, as `corpus_bleu` scores the whole
        set; None for an empty bucket).

    Example:

    >>> rows = bleu_by_length(
    ...     ["Ein Hund läuft.", "Eine Katze sitzt auf der Matte."],
    ...     ["A dog runs in the park.", "A cat."],
    ...     ["A dog runs in the park.", "A cat sits on the mat."],
    ...     edges=(3, 5))
    >>> [(row["words"], row["sentences"], row["bleu"] and round(row["bleu"], 1))
    ...  for row in rows]
    [('1-3', 1, 100.0), ('4-5', 0, None), ('6+', 1, 0.0)]
    """
    edges = length_edges("edges", edges)
    sources, hypotheses, references = (
        list(sources), list(hypotheses), list(references))
    if not len(sources) == len(hypotheses) == len(references):
        raise ValueError(
            "`sources`, `hypotheses` and `references` must have the same "
            f"length, received: {len(sources)}, {len(hypotheses)} and "
            f"{len(references)}"
        )
    members = [[] for _ in range(len(edges) + 1)]
    for index, source in enumerate(sources):
        members[bucket_index(len(source.split()), edges)].append(index)
    rows = []
    for label, indices in zip(bucket_labels(edges), members):
        bleu = None  # an empty bucket has no score
        if indices:
            bleu, _ = corpus_bleu([hypotheses[i] for i in indices],
                                  [references[i] for i in indices])
        rows.append({"words": label, "sentences": len(indices), "bleu": bleu})
    return rows


class Translator:
    """A trained model with its tokenizer and decoding settings.

    Args:
        model: a trained model that follows the decoding protocol of
            `keras_attention.decoding` (`TransformerTranslator`,
            `RNNTranslator`).
        tokenizer: the joint `SubwordTokenizer`.
        max_source_length: longer inputs are truncated.
        beam_size: 1 for greedy decoding, more for beam search.
        alpha: the beam search length penalty.
    """

    def __init__(self, model, tokenizer, max_source_length=128, beam_size=1,
                 alpha=0.6):
        self.model = model
        self.tokenizer = tokenizer
        self.max_source_length = max_source_length
        # {"mode", "activations"} once `quantize` has run, else None
        self.quantization = None
        self.module = TranslatorModule(
            model, tokenizer, tokenizer, max_source_length=max_source_length,
            beam_size=beam_size, alpha=alpha,
        )

    def with_decoding(self, beam_size=1, alpha=0.6):
        """The same translator with other decoding settings."""
        translator = Translator(self.model, self.tokenizer,
                                self.max_source_length, beam_size, alpha)
        translator.quantization = self.quantization
        return translator

    def quantize(self, mode="int8", activations=False):
        """Quantize the model in place with Keras's `Model.quantize` and
        return this translator, whose `translate`, `save` and `export` then
        use the quantized model.

        Modes, each a Keras quantization config (`quantization_config`):

        - `"int8"` (the default): weight-only int8, `keras.quantizers.
          Int8QuantizationConfig(activation_quantizer=None)`: the kernels
          and embeddings stored as int8 with a scale per output channel
          (per token), each product a float one of the dequantized kernel;
          about a quarter of the float32 weights.
        - `"int4"`: weight-only int4 (`Int4QuantizationConfig`, groups of
          128 inputs) for the projections and feed-forwards; the
          embeddings (looked up, and read by the tied output projection)
          weight-only int8.
        - `"int8"` with `activations=True`: Keras's default int8, the
          inputs of each product quantized per row too and the product an
          int8 x int8 one. Its file is the size of weight-only int8's; on
          TensorFlow's CPU kernels it translates slower (see the
          benchmarks page).

        The mode is recorded by `save`, and `load` restores it."""
        quantize_model(self.model, mode, activations)
        self.quantization = {"mode": mode, "activations": activations}
        # A module of its own: the old one's functions read the float model.
        self.module = self.with_decoding(self.module.beam_size,
                                         self.module.alpha).module
        return self

    def translate_iter(self, texts, batch_size=64):
        """Translate any iterable of strings (a list, a file, stdin) batch by
        batch, in the graph as exported; yields each batch's translations,
        in order, as soon as they are ready."""
        for batch in batches(texts, batch_size):
            yield self._translate_batch(batch)

    def _translate_batch(self, texts):
        result = self.module.translate(tf.constant(texts, tf.string))
        return [t.decode("utf-8") for t in result["translation"].numpy()]

    def translate(self, texts, batch_size=64, on_batch=None):
        """Translate a list of strings (in the graph, as exported).

        The texts are batched in order of length (and the translations
        returned in the order given): a batch decodes until its longest
        sentence is done, so sentences of like lengths waste fewest steps
        (`benchmarks/beam_search.py` against its `--unsorted`).
        `on_batch(done)`, if given, is called after each batch."""
        texts = list(texts)
        lengths = self.tokenizer.tokenize(tf.constant(texts, tf.string)
                                          ).row_lengths().numpy() if texts else []
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        translations = [None] * len(texts)
        done = 0
        for batch in batches(order, batch_size):
            for i, translation in zip(
                    batch, self._translate_batch([texts[i] for i in batch])):
                translations[i] = translation
            done += len(batch)
            if on_batch is not None:
                on_batch(done)
        return translations

    def attention(self, text, kind="cross"):
        """The translation of one `text` and the attention behind it.

        Decodes as `translate` does (greedy or beam search), then runs the
        model once over the chosen output for every layer's and head's
        weights of one `kind`:

        - `"cross"` (default): the decoder's attention over the source,
          `attention` `(L, N, T, S)` of layers, heads, target and source
          pieces (`(1, 1, T, S)` for an RNN's single attention); its last
          layer averaged over heads is the attention decoding reports
          (`translate_with_attention`);
        - `"encoder"`: the encoder's self-attention, `(L, N, S, S)`, rows
          and columns the source pieces;
        - `"decoder"`: the decoder's causal self-attention, `(L, N, T, T)`:
          row `t` is the position that writes target piece `t`, column `j`
          the piece it reads there (BOS, then the target's pieces but the
          last).

        Returns a dict: `translation` (str), `source_pieces` and
        `target_pieces` (subword pieces as the tokenizer writes them, the
        target's up to and including EOS, no padding), `kind`,
        `row_pieces` and `column_pieces` (the labels of the attention's
        last two axes) and `attention`, a float32 NumPy array.

        Raises:
            ValueError: for another `kind`, or a self-attention `kind` of
                a model without self-attention (`RNNTranslator`).
        """
        if not isinstance(text, str):
            raise ValueError(
                f"`text` must be one string, received: {type(text).__name__}"
            )
        methods = {"cross": "cross_attention",
                   "encoder": "encoder_self_attention",
                   "decoder": "decoder_self_attention"}
        if not isinstance(kind, str) or kind not in methods:
            raise ValueError(
                f"`kind` must be one of {', '.join(methods)}, "
                f"received: kind={kind!r}"
            )
        method = methods[kind]
        if not hasattr(self.model, method):
            raise ValueError(
                f"kind={kind!r} asks for self-attention, but this "
                f"{type(self.model).__name__} has no self-attention (only "
                "kind='cross' can be drawn)"
            )
        if kind == "cross" and getattr(self.model, "attention", "") is None:
            raise ValueError(  # before decoding: nothing to draw
                "This translator has no attention to show (its model was "
                "built with attention=None: the encoder-decoder without "
                "attention)"
            )
        result = self.module.translate_with_attention(tf.constant([text]))
        tokens = result["tokens"].numpy()[0]
        eos = self.tokenizer.eos_id
        length = list(tokens).index(eos) + 1 if eos in tokens else int(
            (tokens != self.tokenizer.pad_id).sum())
        tokens = tokens[:length]
        encoder_tokens, _ = self.module.encode_text(tf.constant([text]))
        source_length = int(tf.reduce_sum(tf.cast(
            encoder_tokens != self.tokenizer.pad_id, tf.int32)))
        decoder_tokens = tf.constant(
            [[self.tokenizer.bos_id, *tokens[:-1]]], tf.int32)
        if kind == "encoder":
            weights = self.model.encoder_self_attention(encoder_tokens)
        else:
            weights = getattr(self.model, method)(encoder_tokens,
                                                  decoder_tokens)
        weights = keras.ops.convert_to_numpy(weights)[0]  # (L, N, rows, columns)

        def pieces(values, count):
            return [p.decode("utf-8") for p in values.numpy()[0][:count]]

        source = pieces(result["source_pieces"], source_length)
        target = pieces(result["pieces"], length)
        rows, columns = target, source
        if kind == "encoder":
            rows = source
        elif kind == "decoder":  # the decoder reads BOS, then its output
            bos = self.tokenizer.id_to_piece(tf.constant(
                [self.tokenizer.bos_id])).numpy()[0].decode("utf-8")
            columns = [bos, *target[:-1]]
        return {
            "translation": result["translation"].numpy()[0].decode("utf-8"),
            "source_pieces": source,
            "target_pieces": target,
            "kind": kind,
            "row_pieces": rows,
            "column_pieces": columns,
            "attention": weights[..., :len(rows), :len(columns)],
        }

    def evaluate(self, pairs, batch_size=64, on_batch=None, by_length=None):
        """sacreBLEU of the translations of `pairs` against the references.

        `on_batch(done)`, if given, is called with the number of sentences
        translated after each batch (progress reports). Returns a dict:
        `bleu`, `signature`, `sentences`, decoding `sentences_per_second`
        and the `hypotheses`; with `by_length` (bucket edges, e.g.
        `(10, 15, 20, 25)`), also `by_length`, the rows of
        `bleu_by_length` for the same translations."""
        if by_length is not None:
            by_length = length_edges("by_length", by_length)
        started = time.perf_counter()
        hypotheses = self.translate([p[0] for p in pairs], batch_size,
                                    on_batch)
        seconds = time.perf_counter() - started
        references = [p[1] for p in pairs]
        bleu, signature = corpus_bleu(hypotheses, references)
        result = {"bleu": bleu, "signature": signature,
                  "sentences": len(pairs),
                  "sentences_per_second": len(pairs) / max(seconds, 1e-9),
                  "hypotheses": hypotheses}
        if by_length is not None:
            result["by_length"] = bleu_by_length(
                [p[0] for p in pairs], hypotheses, references, by_length)
        return result

    def export(self, base_path, name="translator", version=None):
        """Write `BASE/NAME/VERSION/` for TensorFlow Serving."""
        return export_translator(self.module, base_path, name, version)

    def save(self, directory):
        """Write `translator.json`, `model.weights.h5`, `tokenizer.model`."""
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {"model": keras.saving.serialize_keras_object(self.model),
                  "max_source_length": self.max_source_length}
        if self.quantization is not None:
            config["quantization"] = self.quantization
        (directory / "translator.json").write_text(json.dumps(config, indent=2))
        self.model.save_weights(directory / "model.weights.h5")
        self.tokenizer.save(directory / "tokenizer.model")
        return directory

    @classmethod
    def load(cls, directory, beam_size=1, alpha=0.6, dtype=None):
        """Read a translator written by `save` (or by `train`), whatever
        its model class; `dtype` (a Keras dtype policy name, e.g.
        `"float32"` for a model trained in `mixed_bfloat16`) replaces the
        policy it was saved with."""
        directory = pathlib.Path(directory)
        if not (directory / "translator.json").exists():
            raise FileNotFoundError(
                f"No translator in {directory}: translator.json is missing "
                "(train one with `keras-attention train`)"
            )
        config = json.loads((directory / "translator.json").read_text())
        quantization = config.get("quantization")
        model_config = config["model"]
        if "class_name" in model_config:
            model_config = model_config["config"]
        if quantization is not None:
            # Built in float and quantized as it was (Keras keeps a nested
            # layer's int8 policy in the config, not its quantization
            # config: weight-only would come back activation-quantized),
            # then the quantized weights loaded.
            model_config["dtype"] = _float_policy(model_config.get("dtype"),
                                                  dtype)
        elif dtype is not None:
            model_config["dtype"] = _with_policy(model_config.get("dtype"),
                                                 dtype)
        if "class_name" in config["model"]:
            model = keras.saving.deserialize_keras_object(config["model"])
        else:  # written before the RNN translator: a Transformer's config
            model = TransformerTranslator.from_config(config["model"])
        build(model)
        if quantization is not None:
            quantize_model(model, **quantization)
        model.load_weights(directory / "model.weights.h5")
        tokenizer = SubwordTokenizer.load(directory / "tokenizer.model")
        translator = cls(model, tokenizer, config["max_source_length"],
                         beam_size, alpha)
        translator.quantization = quantization
        return translator


QUANTIZATION_MODES = ("int8", "int4")


def quantization_config(mode="int8", activations=False):
    """The Keras quantization config of a `Translator.quantize` mode (see
    there): a weight-only `keras.quantizers.Int8QuantizationConfig` or
    `Int4QuantizationConfig`, or, with `activations=True`, Keras's default
    int8 config (the inputs quantized too).

    >>> quantization_config("int8").activation_quantizer is None
    True
    >>> quantization_config("int4").mode
    'int4'
    """
    if mode not in QUANTIZATION_MODES:
        raise ValueError(f"`mode` must be one of {QUANTIZATION_MODES}, "
                         f"received: mode={mode!r}")
    if activations not in (True, False):
        raise ValueError(f"`activations` must be True or False, received: "
                         f"activations={activations!r}")
    if mode == "int4":
        if activations:
            raise ValueError("`activations=True` quantizes the inputs of "
                             "int8 products only, received: mode='int4', "
                             "activations=True")
        return keras.quantizers.Int4QuantizationConfig()
    return keras.quantizers.Int8QuantizationConfig(
        activation_quantizer="default" if activations else None)


def quantize_model(model, mode="int8", activations=False):
    """`model.quantize` as `Translator.quantize(mode, activations)` does:
    the layers with weights to quantize (`Dense`, `EinsumDense` and
    `Embedding`, and their subclasses), so Keras warns about none of the
    others; in `"int4"` the embeddings weight-only int8, the rest int4."""
    config = quantization_config(mode, activations)

    def is_embedding(layer):
        return isinstance(layer, keras.layers.Embedding)

    def is_product(layer):
        return isinstance(layer, (keras.layers.Dense,
                                  keras.layers.EinsumDense))

    if mode != "int4":
        model.quantize(mode, config=config,
                       filters=lambda layer: is_product(layer)
                       or is_embedding(layer))
        return
    model.quantize("int8", config=quantization_config("int8"),
                   filters=is_embedding)
    model.quantize("int4", config=config, filters=is_product)


def _float_policy(saved, dtype):
    """The float policy to build a quantized model in: `dtype`'s, or the
    one the model was quantized from (a `DTypePolicyMap`'s default)."""
    if dtype is not None:
        return keras.dtype_policies.get(dtype).name
    if isinstance(saved, dict) and saved.get("class_name") == \
            "DTypePolicyMap":
        return saved["config"]["default_policy"]
    return saved


def _with_policy(saved, dtype):
    """The saved dtype config with `dtype`'s policy in place of the one
    it was trained in; a quantized model's map (`DTypePolicyMap`) keeps
    its int8 layers int8, now from `dtype`."""
    name = keras.dtype_policies.get(dtype).name
    if not (isinstance(saved, dict)
            and saved.get("class_name") == "DTypePolicyMap"):
        return name
    saved = json.loads(json.dumps(saved))
    saved["config"]["default_policy"] = name
    for policy in saved["config"]["policy_map"].values():
        if "source_name" in policy.get("config", {}):
            policy["config"]["source_name"] = name
    return saved


def train(config=None, callbacks=(), **overrides):
    """Train a translator as `config` says; returns a `Translator`.

    The model is `config.model` (`"transformer"`, `"rnn"` or
    `"decoder_only"`); all train
    with the one loop of `keras_attention.training.seq2seq`. The strategy
    comes from the environment (see `strategy_from_environment`). A run
    killed part-way resumes from its backup in `output_dir/backup` when
    started again with the same `output_dir` (weights, optimizer and epoch
    are restored). Extra Keras `callbacks` are added to the run's own.
    With `config.average_last` > 1 the returned (and saved) weights are the
    average of the last epoch checkpoints (`translator.averaged` lists
    them) and the last weights stay in `output_dir/last.weights.h5`.
    """
    config = (config or TrainingConfig()).replace(**overrides)
    _, data, model = seq2seq.setup(config)
    translator = Translator(model, data.tokenizer, config.max_length)
    bleu_pairs = data.corpus["val"][: config.bleu_sentences]
    callbacks = list(callbacks)
    if bleu_pairs:
        callbacks.insert(0, BleuCallback(
            translator.translate, [p[0] for p in bleu_pairs],
            [p[1] for p in bleu_pairs],
        ))
    history = seq2seq.fit(config, data, model, callbacks)
    translator.averaged = seq2seq.average_last_epochs(config, model, history)
    translator.history = history.history
    translator.report = data.report
    output_dir = pathlib.Path(config.output_dir)
    translator.save(output_dir)
    (output_dir / "training_config.json").write_text(
        json.dumps(dataclasses.asdict(config), indent=2)
    )
    return translator
