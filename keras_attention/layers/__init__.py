"""Keras 3 attention layers, one public layer per module."""

from keras_attention.layers.additive_attention import AdditiveAttention
from keras_attention.layers.attention_rnn_decoder import AttentionRNNDecoder
from keras_attention.layers.dot_attention import DotAttention
from keras_attention.layers.general_attention import GeneralAttention
from keras_attention.layers.glimpse_sensor import GlimpseSensor
from keras_attention.layers.local_attention_2d import LocalAttention2D
from keras_attention.layers.local_self_attention import LocalSelfAttention
from keras_attention.layers.memory_compressed_attention import MemoryCompressedAttention
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.multi_head_self_attention import MultiHeadSelfAttention
from keras_attention.layers.relative_attention import RelativeAttention
from keras_attention.layers.scaled_dot_attention import ScaledDotAttention
from keras_attention.layers.score_attention import ScoreAttention
from keras_attention.layers.self_attention_2d import SelfAttention2D
from keras_attention.layers.self_attentive_pooling import SelfAttentivePooling
from keras_attention.layers.sequential_local_attention_2d import (
    SequentialLocalAttention2D,
)
from keras_attention.layers.sinusoidal_position_embedding import (
    SinusoidalPositionEmbedding,
)
from keras_attention.layers.transformer_decoder import TransformerDecoder
from keras_attention.layers.transformer_encoder import TransformerEncoder
from keras_attention.layers.universal_transformer_encoder import (
    UniversalTransformerEncoder,
)

__all__ = [
    "AdditiveAttention",
    "AttentionRNNDecoder",
    "DotAttention",
    "GeneralAttention",
    "GlimpseSensor",
    "LocalAttention2D",
    "LocalSelfAttention",
    "MemoryCompressedAttention",
    "MultiHeadAttention",
    "MultiHeadSelfAttention",
    "RelativeAttention",
    "ScaledDotAttention",
    "ScoreAttention",
    "SelfAttention2D",
    "SelfAttentivePooling",
    "SequentialLocalAttention2D",
    "SinusoidalPositionEmbedding",
    "TransformerDecoder",
    "TransformerEncoder",
    "UniversalTransformerEncoder",
]
