"""
Title: Image Transformer: local 2-D self-attention on 8x8 digits
Description: pixel-by-pixel generation (Parmar et al., 2018), local vs full
attention, against a model of independent pixels.

scikit-learn's digits are 1,797 images of 8x8 pixels, each pixel one of 17
intensities (0..16). We treat each intensity as a token and model an image
as a sequence of 64 tokens, each predicted from the pixels before it: a
decoder-only Transformer with a softmax over the 17 levels. The order is the
Image Transformer's: the image is cut into query blocks of 2x4 pixels,
taken in raster order, pixels in raster order inside a block.

Two models of the same size and training budget differ only in their
self-attention:

- *local*: `LocalAttention2D`'s masked local 2-D attention (as
  `SequentialLocalAttention2D`, which takes the image as a sequence and
  decodes with a cache): each pixel attends its memory block, the query
  block extended by 2 rows above and 2 columns on each side, up to itself;
- *full*: causal `MultiHeadSelfAttention` over every earlier pixel.

Both are compared with a baseline that models each pixel independently
(per-position counts on the training images, add-one smoothing). The
measure is the held-out negative log-likelihood in bits per pixel
("bits/dim"; lower is better; log2(17) = 4.09 is a uniform guess).

Sampling draws one pixel at a time. With the cache, each step computes the
new pixel's query, key and value only and attends the cached keys it may
see (for local attention, the keys of its memory block only); without it,
every step re-runs the whole model. The script checks that both draw the
same images from one seed, and saves a grid of samples.

What it measures, over three seeds at the defaults
(`reproductions/systems/image_transformer_digits.py`, which runs this script and
writes `benchmarks/results/image_transformer_digits.json`), is on the
Image Transformer page of the docs. Full attention sees every earlier
pixel, which on an 8x8 image costs little; local attention lets each
pixel see at most 24 of the 63 earlier pixels (in a 32-pixel memory
block), and its cost grows linearly with the number of pixels where full
attention's grows quadratically.

Run: `python examples/image_transformer_digits.py [--epochs N]
[--output samples.png] [--results FILE]`.
"""

import argparse
import json
import pathlib
import time

from keras_attention.logs import quiet_tensorflow

quiet_tensorflow()  # before TensorFlow loads: no start-up log lines

import keras
import numpy as np
from matplotlib.figure import Figure
from sklearn.datasets import load_digits

from keras_attention.models.image_transformer import PRESETS
from keras_attention.models.image_transformer import ImageTransformer
from keras_attention.models.image_transformer import independent_pixel_bits_per_dim
from keras_attention.models.image_transformer import independent_pixel_model

LEVELS = 17  # the digits' intensities 0..16
TRAIN_SIZE = 1500  # the first 1500 images; the last 297 are held out


def load_split(train_size):
    """`(train, test)` int32 `(B, 8, 8)` images: the first `train_size`
    of the first 1500, and the last 297."""
    images = load_digits().images.astype("int32")
    return images[:TRAIN_SIZE][:train_size], images[TRAIN_SIZE:]


def train(model, images, args):
    """Fit the pixels' cross-entropy; returns the seconds taken."""
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    started = time.perf_counter()
    model.fit(images, images, batch_size=args.batch_size, epochs=args.epochs,
              verbose=0)
    return time.perf_counter() - started


def save_grid(path, panels):
    """One row of panels, each a 2-row grid of images (white = 16)."""
    figure = Figure(figsize=(4.2 * len(panels), 1.4))
    for number, (title, images) in enumerate(panels.items()):
        columns = len(images) // 2
        # (2·C, 8, 8) -> (2, 8, C·8), with a 1-pixel gap between images.
        padded = np.pad(images, ((0, 0), (1, 0), (1, 0)))
        grid = padded.reshape(2, columns, 9, 9).transpose(0, 2, 1, 3)
        axes = figure.add_subplot(1, len(panels), number + 1)
        axes.imshow(grid.reshape(18, columns * 9), cmap="gray", vmin=0,
                    vmax=LEVELS - 1)
        axes.set_title(title, fontsize=9)
        axes.axis("off")
    figure.savefig(path, dpi=120, bbox_inches="tight")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.strip().splitlines()[0]
    )
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--train-size", type=int, default=TRAIN_SIZE,
                        help="training images, at most 1500 (default: all)")
    parser.add_argument("--num-layers", type=int,
                        default=PRESETS["digits_local"]["num_layers"])
    parser.add_argument("--hidden-dim", type=int,
                        default=PRESETS["digits_local"]["hidden_dim"])
    parser.add_argument("--samples", type=int, default=16,
                        help="samples per model in the grid (even)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="image_transformer_samples.png",
                        help="the PNG grid of samples")
    parser.add_argument("--results", metavar="FILE",
                        help="also write the figures printed to FILE (JSON)")
    args = parser.parse_args(argv)
    if args.samples < 2 or args.samples % 2:
        parser.error(f"--samples must be an even int >= 2, received: "
                     f"{args.samples}")
    keras.utils.set_random_seed(args.seed)
    train_images, test_images = load_split(args.train_size)
    started = time.perf_counter()

    # ## The baseline: independent pixels
    baseline = independent_pixel_bits_per_dim(
        independent_pixel_model(train_images, LEVELS), test_images
    )
    results = {"independent_bits_per_dim": baseline}
    print(f"{len(train_images)} training / {len(test_images)} test digits; "
          f"held-out bits/dim: independent pixels {baseline:.3f}")

    # ## Full and local attention, same size, same budget
    panels = {"held-out digits": test_images[:args.samples]}
    for attention in ("full", "local"):
        model = ImageTransformer.from_preset(
            f"digits_{attention}", num_layers=args.num_layers,
            hidden_dim=args.hidden_dim, intermediate_dim=2 * args.hidden_dim,
        )
        seconds = train(model, train_images, args)
        bits = model.bits_per_dim(test_images)
        train_bits = model.bits_per_dim(train_images)
        cached = model.sample(args.samples, seed=args.seed)
        uncached = model.sample(args.samples, seed=args.seed, use_cache=False)
        same = bool(np.array_equal(cached, uncached))
        results[f"{attention}_bits_per_dim"] = bits
        results[f"{attention}_train_bits_per_dim"] = train_bits
        results[f"{attention}_seconds"] = seconds
        results[f"{attention}_parameters"] = model.count_params()
        results[f"{attention}_cached_equals_uncached"] = same
        panels[f"{attention} attention samples"] = cached
        print(f"{attention} attention: trained {args.epochs} epochs in "
              f"{seconds:.0f} s; held-out bits/dim {bits:.3f} (training "
              f"{train_bits:.3f}); cached sampling equals uncached for seed "
              f"{args.seed}: {same}")

    save_grid(args.output, panels)
    results["seconds"] = time.perf_counter() - started
    print(f"samples saved to {args.output}; total {results['seconds']:.0f} s")
    if args.results:
        pathlib.Path(args.results).write_text(
            json.dumps(results, indent=1, default=float))
    return results


if __name__ == "__main__":
    main()
