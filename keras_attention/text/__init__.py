"""Text: corpora, subword tokenizers applied in the graph, tf.data pipelines."""

from keras_attention.text.corpora import MULTI30K_ALIASES
from keras_attention.text.corpora import MULTI30K_LANGUAGES
from keras_attention.text.corpora import MULTI30K_SPLITS
from keras_attention.text.corpora import load_corpus
from keras_attention.text.corpora import load_multi30k
from keras_attention.text.parallel_files import CorpusError
from keras_attention.text.parallel_files import load_parallel
from keras_attention.text.pipeline import PipelineReport
from keras_attention.text.pipeline import make_dataset
from keras_attention.text.tokenizer import BOS_ID
from keras_attention.text.tokenizer import EOS_ID
from keras_attention.text.tokenizer import PAD_ID
from keras_attention.text.tokenizer import UNK_ID
from keras_attention.text.tokenizer import SubwordTokenizer
from keras_attention.text.tokenizer import train_sentencepiece

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "MULTI30K_ALIASES",
    "MULTI30K_LANGUAGES",
    "MULTI30K_SPLITS",
    "PAD_ID",
    "UNK_ID",
    "CorpusError",
    "PipelineReport",
    "SubwordTokenizer",
    "load_corpus",
    "load_multi30k",
    "load_parallel",
    "make_dataset",
    "train_sentencepiece",
]
