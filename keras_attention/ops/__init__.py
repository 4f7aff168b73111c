"""Pure functions on tensors: attention core, masks, position tables, memory
compression, hard attention's sampling and the REINFORCE estimator."""

from keras_attention.ops.attention import fused_attention
from keras_attention.ops.attention import head_diversity_penalty
from keras_attention.ops.attention import masked_softmax
from keras_attention.ops.attention import scaled_dot_product_scores
from keras_attention.ops.attention import weighted_sum
from keras_attention.ops.blockwise import blockwise_attention
from keras_attention.ops.cache import update_cache
from keras_attention.ops.compression import compressed_causal_mask
from keras_attention.ops.compression import group_positions
from keras_attention.ops.compression import group_validity
from keras_attention.ops.image_order import generation_order_2d
from keras_attention.ops.image_order import local_memory_2d
from keras_attention.ops.local import blocked_validity
from keras_attention.ops.local import blocks_needed
from keras_attention.ops.local import local_band_mask
from keras_attention.ops.local import local_bias
from keras_attention.ops.local import local_scores
from keras_attention.ops.local import local_weighted_sum
from keras_attention.ops.local import memory_blocks_2d
from keras_attention.ops.local import merge_blocks
from keras_attention.ops.local import merge_blocks_2d
from keras_attention.ops.local import neighbour_blocks
from keras_attention.ops.local import raster_mask_2d
from keras_attention.ops.local import split_blocks
from keras_attention.ops.local import split_blocks_2d
from keras_attention.ops.masking import band_mask
from keras_attention.ops.masking import build_attention_mask
from keras_attention.ops.masking import causal_mask
from keras_attention.ops.masking import check_head_shape
from keras_attention.ops.masking import check_mask_shape
from keras_attention.ops.masking import implicit_mask
from keras_attention.ops.masking import merge_checked_masks
from keras_attention.ops.masking import merge_masks
from keras_attention.ops.masking import resolve_attention_mask
from keras_attention.ops.positions import alibi_bias
from keras_attention.ops.positions import alibi_slopes
from keras_attention.ops.positions import coordinate_embedding
from keras_attention.ops.positions import rotary_embedding
from keras_attention.ops.positions import sinusoid_table
from keras_attention.ops.relative import relative_logits_gather
from keras_attention.ops.relative import relative_logits_skew
from keras_attention.ops.relative import relative_positions
from keras_attention.ops.relative import relative_values_gather
from keras_attention.ops.relative import relative_values_skew
from keras_attention.ops.stochastic import attention_entropy
from keras_attention.ops.stochastic import hard_weights
from keras_attention.ops.stochastic import location_log_prob
from keras_attention.ops.stochastic import reinforce_surrogate
from keras_attention.ops.stochastic import sample_locations

__all__ = [
    "attention_entropy",
    "hard_weights",
    "location_log_prob",
    "reinforce_surrogate",
    "sample_locations",
    "alibi_bias",
    "alibi_slopes",
    "band_mask",
    "blocked_validity",
    "blockwise_attention",
    "blocks_needed",
    "build_attention_mask",
    "causal_mask",
    "generation_order_2d",
    "check_head_shape",
    "check_mask_shape",
    "compressed_causal_mask",
    "coordinate_embedding",
    "group_positions",
    "group_validity",
    "head_diversity_penalty",
    "implicit_mask",
    "local_band_mask",
    "local_bias",
    "local_memory_2d",
    "local_scores",
    "local_weighted_sum",
    "masked_softmax",
    "memory_blocks_2d",
    "merge_blocks",
    "merge_blocks_2d",
    "merge_checked_masks",
    "merge_masks",
    "resolve_attention_mask",
    "neighbour_blocks",
    "raster_mask_2d",
    "relative_logits_gather",
    "relative_logits_skew",
    "relative_positions",
    "relative_values_gather",
    "relative_values_skew",
    "rotary_embedding",
    "scaled_dot_product_scores",
    "fused_attention",
    "sinusoid_table",
    "split_blocks",
    "split_blocks_2d",
    "update_cache",
    "weighted_sum",
]
