"""Keras models built only from `keras_attention.layers`.

The translators share one decoding protocol (see `keras_attention.decoding`):
`encode`, `initial_cache`, `decode_step`. `TRANSLATORS` maps the names the
command line uses (`--model`) to their classes; each class owns its
`PRESETS`. `MemoryNetwork` (end-to-end memory network, bAbI) and
`DualEncoder` (two encoders pooled by `SelfAttentivePooling`, for
retrieval) are the other models, with `BertEncoder` / `BertPretrainer`
(the BERT encoder, its masked-LM + next-sentence pretraining heads
and its fine-tuning classifier)
and `ImageTransformer` (pixel-by-pixel generation of small images with
local 2-D or full causal attention). `Captioner` (Show, Attend and Tell:
a CNN's feature map read by an LSTM with soft attention) follows the
decoding protocol too, so the translators' greedy and beam search caption
images; so does `VideoCaptioner` (Yao et al.'s temporal attention over a
clip's frames, with optional local 3-D convolution features), for clips.
`RecurrentAttentionModel` (Mnih et al.'s RAM) classifies an image from a
few glimpses and learns where to look with REINFORCE.
`TransformerLanguageModel` is a decoder-only Transformer whose blocks'
self-attention is chosen by name (full, relative, local or
memory-compressed: the Music Transformer's and Liu et al.'s T-DMCA).
`DecoderOnlyTranslator` is Liu et al.'s T-D: source, separator and
target as one sequence through that language model, decoded and served
as the translators are. `UniversalTransformerReader` answers bAbI
questions with a Universal Transformer encoder (one block over depth,
with ACT). `SAGAN` is Zhang et al.'s spectrally normalized GAN with
`SelfAttention2D` in its generator and discriminator (trained by
`keras_attention.training.gan`).
"""

from keras_attention.models.bert_classifier import BertClassifier
from keras_attention.models.bert_encoder import BertEncoder
from keras_attention.models.bert_pretrainer import BertPretrainer
from keras_attention.models.captioner import Captioner
from keras_attention.models.decoder_only_translator import DecoderOnlyTranslator
from keras_attention.models.dual_encoder import DualEncoder
from keras_attention.models.image_transformer import ImageTransformer
from keras_attention.models.memory_network import MemoryNetwork
from keras_attention.models.recurrent_attention import RecurrentAttentionModel
from keras_attention.models.rnn_translator import RNNTranslator
from keras_attention.models.sagan import SAGAN
from keras_attention.models.transformer_language_model import TransformerLanguageModel
from keras_attention.models.transformer_translator import PRESETS
from keras_attention.models.transformer_translator import TransformerTranslator
from keras_attention.models.universal_transformer_reader import (
    UniversalTransformerReader,
)
from keras_attention.models.video_captioner import VideoCaptioner

TRANSLATORS = {"transformer": TransformerTranslator, "rnn": RNNTranslator,
               "decoder_only": DecoderOnlyTranslator}
"""The translator classes by the name the command line's `--model` uses."""

__all__ = [
    "BertClassifier",
    "BertEncoder",
    "BertPretrainer",
    "Captioner",
    "DecoderOnlyTranslator",
    "DualEncoder",
    "ImageTransformer",
    "MemoryNetwork",
    "PRESETS",
    "RNNTranslator",
    "RecurrentAttentionModel",
    "SAGAN",
    "TRANSLATORS",
    "TransformerLanguageModel",
    "TransformerTranslator",
    "UniversalTransformerReader",
    "VideoCaptioner",
]
