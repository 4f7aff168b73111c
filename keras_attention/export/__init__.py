"""SavedModel export for TensorFlow Serving: strings in, strings out."""

from keras_attention.export.saved_model import export_translator
from keras_attention.export.saved_model import next_version
from keras_attention.export.translator_module import TranslatorModule

__all__ = ["TranslatorModule", "export_translator", "next_version"]
