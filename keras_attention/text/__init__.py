"""Text: corpora, subword tokenizers applied in the graph, tf.data pipelines.

The names load on first use (PEP 562): the corpus readers
(`keras_attention.text.corpora`, `parallel_files`) import no TensorFlow, so
the command line checks split names and data folders before it loads.
The bAbI names moved to `keras_attention.data.babi`.
"""

from keras_attention._lazy import lazy_exports

_EXPORTS = {
    "generate_kind_task": "stories",
    "generate_pronoun_task": "stories",
    "PRONOUN_CLASSES": "stories",
    "WOMEN": "stories",
    "MEN": "stories",
    "generate_statement_task": "stories",
    "generate_stories": "stories",
    "STATEMENT_CLASSES": "stories",
    "KIND_CLASSES": "stories",
    "THINGS": "stories",
    "FOODS": "stories",
    "BOS_ID": "tokenizer",
    "CaptionVocabulary": "digit_scenes",
    "EOS_ID": "tokenizer",
    "IS_NEXT": "bert_data",
    "NOT_NEXT": "bert_data",
    "MULTI30K_ALIASES": "corpora",
    "MULTI30K_LANGUAGES": "corpora",
    "MULTI30K_SPLITS": "corpora",
    "PAD_ID": "tokenizer",
    "UNK_ID": "tokenizer",
    "CorpusError": "parallel_files",
    "PipelineReport": "pipeline",
    "SubwordTokenizer": "tokenizer",
    "load_corpus": "corpora",
    "load_multi30k": "corpora",
    "generate_scenes": "digit_scenes",
    "load_parallel": "parallel_files",
    "make_dataset": "pipeline",
    "mask_tokens": "bert_data",
    "next_sentence_pairs": "bert_data",
    "pack_segments": "bert_data",
    "pretraining_batch": "bert_data",
    "train_sentencepiece": "tokenizer",
}

# bAbI moved to keras_attention.data.babi: these names still read from here,
# with a DeprecationWarning, for one more release.
_MOVED = dict.fromkeys((
    "BabiSample",
    "BabiTask",
    "BabiVocabulary",
    "TASK_NAMES",
    "answer_token",
    "generate_babi",
    "load_task",
    "load_tasks",
    "parse_babi",
    "read_babi",
    "split_validation",
    "task_file",
    "vectorize_babi",
    "write_babi",
), "keras_attention.data.babi")

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _MOVED)
