"""Text: corpora, subword tokenizers applied in the graph, tf.data pipelines.

The names load on first use (PEP 562): the corpus readers
(`keras_attention.text.corpora`, `parallel_files`) import no TensorFlow, so
the command line checks split names and data folders before it loads.
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
    "BabiSample": "babi",
    "BabiVocabulary": "babi",
    "BabiTask": "babi",
    "TASK_NAMES": "babi",
    "answer_token": "babi",
    "load_task": "babi",
    "load_tasks": "babi",
    "split_validation": "babi",
    "task_file": "babi",
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
    "generate_babi": "babi",
    "generate_scenes": "digit_scenes",
    "load_parallel": "parallel_files",
    "make_dataset": "pipeline",
    "mask_tokens": "bert_data",
    "next_sentence_pairs": "bert_data",
    "pack_segments": "bert_data",
    "pretraining_batch": "bert_data",
    "parse_babi": "babi",
    "read_babi": "babi",
    "train_sentencepiece": "tokenizer",
    "vectorize_babi": "babi",
    "write_babi": "babi",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
