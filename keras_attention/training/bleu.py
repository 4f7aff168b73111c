"""Corpus BLEU with sacrebleu, and a callback that reports it each epoch."""

from keras_attention._extras import require

require(__name__, "translate", "sacrebleu")

import keras
import sacrebleu


def corpus_bleu(hypotheses, references):
    """sacreBLEU on detokenized text: `(score, signature)`.

    Args:
        hypotheses: list of `str`, the system outputs.
        references: list of `str`, one reference per hypothesis.
    """
    if len(hypotheses) != len(references):
        raise ValueError(
            "`hypotheses` and `references` must have the same length, "
            f"received: {len(hypotheses)} and {len(references)}"
        )
    metric = sacrebleu.BLEU()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return score.score, str(metric.get_signature())


class BleuCallback(keras.callbacks.Callback):
    """Translate held-out sources after every epoch and log `val_bleu`.

    Args:
        translate: a function from a list of source strings to a list of
            translations (e.g. a `TranslatorModule`'s in-graph decoding).
        sources, references: the held-out pairs.
        batch_size: sentences per `translate` call.
    """

    def __init__(self, translate, sources, references, batch_size=64):
        super().__init__()
        self.translate = translate
        self.sources = list(sources)
        self.references = list(references)
        self.batch_size = batch_size
        self.signature = None

    def on_epoch_end(self, epoch, logs=None):
        hypotheses = []
        for start in range(0, len(self.sources), self.batch_size):
            hypotheses.extend(
                self.translate(self.sources[start:start + self.batch_size])
            )
        score, self.signature = corpus_bleu(hypotheses, self.references)
        if logs is not None:
            logs["val_bleu"] = score
        print(f"\nepoch {epoch + 1}: val BLEU {score:.2f} on "
              f"{len(self.sources)} sentences ({self.signature})")
