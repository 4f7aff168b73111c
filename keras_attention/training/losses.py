"""Label-smoothed cross-entropy and accuracy with padding masked out.

Letters: B batch, T target length, V vocabulary size.
"""

from keras_attention._extras import require

require(__name__, "translate", "tensorflow")

import keras
import tensorflow as tf
from keras import ops

from keras_attention import _validation


def _per_token_crossentropy(labels, logits, label_smoothing):
    """`(B, T)` label-smoothed cross-entropy of integer labels.

    `-((1 - e) log p[label] + e mean_v log p[v])`, with its gradient with
    respect to the logits written out: `softmax - (1 - e) one_hot - e / V`.
    Differentiated automatically, the gather of the labels' log-probability
    scatters into a `(B, T, V)` zero tensor, which on CPU took longer than
    the log-softmax and its gradient together.
    """
    labels = ops.cast(labels, "int32")

    @tf.custom_gradient
    def crossentropy(logits):
        log_probs = tf.nn.log_softmax(tf.cast(logits, "float32"))  # (B, T, V)
        # (B, T, V) gathered at the labels -> (B, T)
        target = tf.gather(log_probs, labels, batch_dims=labels.shape.rank)
        uniform = tf.reduce_mean(log_probs, axis=-1)
        losses = -((1.0 - label_smoothing) * target + label_smoothing * uniform)

        def gradient(upstream):  # (B, T) -> (B, T, V)
            vocabulary = tf.shape(log_probs)[-1]
            smoothed = tf.one_hot(labels, vocabulary,
                                  on_value=1.0 - label_smoothing,
                                  off_value=0.0)
            uniform_share = label_smoothing / tf.cast(vocabulary, "float32")
            grad = upstream[..., None] * (
                tf.exp(log_probs) - uniform_share - smoothed)
            return tf.cast(grad, logits.dtype)

        return losses, gradient

    return crossentropy(logits)


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedCrossentropy(keras.losses.Loss):
    """Sparse cross-entropy from logits with label smoothing, averaged over
    the non-padding target tokens of the *global* batch.

    Under a `tf.distribute` strategy each replica returns its token-loss sum
    divided by the token count of all replicas, so the gradients summed
    across replicas are those of the global mean, and the loss equals the
    single-device loss for the same global batch, however the tokens are
    split between replicas.

    Args:
        label_smoothing: float in [0, 1), 0.1 in the paper. The smoothed
            target puts `label_smoothing` uniformly over the vocabulary.
        pad_id: the label id to ignore.
    """

    def __init__(self, label_smoothing=0.1, pad_id=0, name="masked_crossentropy",
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = _validation.rate(
            "label_smoothing", label_smoothing
        )
        self.pad_id = int(pad_id)

    def call(self, y_true, y_pred):
        mask = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")
        losses = _per_token_crossentropy(y_true, y_pred, self.label_smoothing)
        local_sum = ops.sum(losses * mask)
        count = ops.sum(mask)
        context = tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return local_sum / ops.maximum(count, 1.0)
        replicas = context.num_replicas_in_sync
        sentences = ops.cast(ops.shape(y_true)[0], "float32")
        count, all_sentences = context.all_reduce(
            tf.distribute.ReduceOp.SUM, [count, sentences])
        loss = local_sum / ops.maximum(count, 1.0)
        # Keras logs sum_r(sentences_r * replicas * loss_r) / all_sentences
        # (Model.train_step); that is sum_r(loss_r), the global loss, only if
        # every replica has as many sentences. Rescale the logged value, not
        # the gradient, so that uneven splits log the global loss too.
        share = tf.math.divide_no_nan(all_sentences, replicas * sentences)
        return loss + tf.stop_gradient(loss * (share - 1.0))

    def get_config(self):
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing,
                       "pad_id": self.pad_id})
        return config


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedAccuracy(keras.metrics.Mean):
    """Token accuracy over the non-padding labels."""

    def __init__(self, pad_id=0, name="accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.pad_id = int(pad_id)

    def update_state(self, y_true, y_pred, sample_weight=None):
        mask = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        correct = ops.cast(ops.equal(predicted, ops.cast(y_true, "int32")),
                           "float32")
        return super().update_state(correct, sample_weight=mask)

    def get_config(self):
        return {**super().get_config(), "pad_id": self.pad_id}
