"""SavedModel export for TensorFlow Serving: strings in, strings out."""

from keras_attention.export.bert_classifier_module import BertClassifierModule
from keras_attention.export.bert_classifier_module import export_bert_classifier
from keras_attention.export.captioner_module import CaptionerModule
from keras_attention.export.captioner_module import export_captioner
from keras_attention.export.saved_model import export_translator
from keras_attention.export.saved_model import next_version
from keras_attention.export.translator_module import TranslatorModule

__all__ = [
    "BertClassifierModule",
    "CaptionerModule",
    "TranslatorModule",
    "export_bert_classifier",
    "export_captioner",
    "export_translator",
    "next_version",
]
