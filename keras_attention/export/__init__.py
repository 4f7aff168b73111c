"""SavedModel export for TensorFlow Serving: strings in, strings out."""

from keras_attention.export.captioner_module import CaptionerModule
from keras_attention.export.captioner_module import export_captioner
from keras_attention.export.saved_model import export_translator
from keras_attention.export.saved_model import next_version
from keras_attention.export.translator_module import TranslatorModule

__all__ = [
    "CaptionerModule",
    "TranslatorModule",
    "export_captioner",
    "export_translator",
    "next_version",
]
