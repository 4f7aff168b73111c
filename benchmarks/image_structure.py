"""How much structure across the image each SAGAN dataset has: the
training images of `sagan_mnist.py`'s split (7,000 by default) of MNIST
and of Fashion-MNIST, measured three ways, no model involved.

- ink: the share of pixels whose grey level is above half;
- extent: the pixels of each image's bounding box of ink (mean over
  images), of the 784;
- far correlation: the mean |Pearson r| over the pairs of pixels 14 or
  more apart (Euclidean, in pixels) among the pixels that vary over the
  images; what a block that lets distant pixels depend on each other
  could use.

Loads through `sagan_mnist.load`, so the images and split are the
benchmark's. Writes `benchmarks/results/image_structure.json`, one row a
dataset.

Run: `python benchmarks/image_structure.py [--datasets mnist,fashion]
[--far 14]`.
"""

import argparse
import pathlib
import sys

import harness
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]
                       / "reproductions" / "systems"))
import sagan_mnist  # noqa: E402

NAME = "image_structure"


def structure(images, far=14.0):
    """`images` (N, H, W[, 1]) in [-1, 1] -> ink share, mean bounding-box
    pixels, mean |r| of the pixel pairs at least `far` apart, and the
    number of such pairs."""
    images = np.asarray(images, "float64").reshape(len(images), -1)
    side = int(round(np.sqrt(images.shape[1])))
    ink = images > 0.0  # above half of the grey range
    rows = ink.reshape(-1, side, side).any(axis=2)
    columns = ink.reshape(-1, side, side).any(axis=1)

    def extent(marks):
        first = np.argmax(marks, axis=1)
        last = marks.shape[1] - 1 - np.argmax(marks[:, ::-1], axis=1)
        return np.where(marks.any(axis=1), last - first + 1, 0)

    box = extent(rows) * extent(columns)
    varying = images.std(axis=0) > 0
    where = np.stack(np.divmod(np.arange(side * side), side), 1)[varying]
    r = np.corrcoef(images[:, varying], rowvar=False)
    apart = np.linalg.norm(where[:, None] - where[None], axis=-1) >= far
    return {"ink_share": float(ink.mean()),
            "bounding_box_pixels": float(box.mean()),
            "far_abs_correlation": float(np.abs(r[apart]).mean()),
            "far_pairs": int(apart.sum() // 2),
            "varying_pixels": int(varying.sum()), "pixels": side * side}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--datasets", default="mnist,fashion")
    p.add_argument("--far", type=float, default=14.0,
                   help="pixels at least this far apart are 'far'")
    harness.add_results_arguments(p, NAME)
    args = p.parse_args(argv)
    datasets = args.datasets.split(",")
    if not datasets or any(name not in ("mnist", "fashion")
                           for name in datasets):
        p.error(f"--datasets must name mnist and/or fashion, received: "
                f"{args.datasets!r}")
    if args.far <= 0:
        p.error(f"--far must be > 0, received: {args.far}")
    rows = []
    for name in datasets:
        bench = sagan_mnist.parser()
        loaded = bench.parse_args(["--dataset", name])
        images, _ = sagan_mnist.load(loaded, bench)["train"]
        found = structure(images, args.far)
        rows.append({"dataset": name, "train_images": len(images),
                     "far_pixels": args.far, **found,
                     "cpu": harness.machine()["cpu"]})
        print(f"{name}: ink {found['ink_share']:.1%}, bounding box "
              f"{found['bounding_box_pixels']:.0f} of {found['pixels']} "
              f"pixels, far |r| {found['far_abs_correlation']:.3f}",
              flush=True)
    harness.write_results(args.results_name or NAME, rows,
                          directory=args.results_dir)
    return rows


if __name__ == "__main__":
    main()
