"""benchmarks/image_structure.py: ink share, bounding box and far
correlation of a dataset's images, against a brute-force count; the
SAGAN page states the committed file's figures."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from tests.test_benchmarks_summary import BENCHMARKS
from tests.test_benchmarks_summary import load_script


@pytest.fixture
def module(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return load_script("image_structure", monkeypatch)


def test_structure_against_brute_force(module):
    rng = np.random.default_rng(0)
    images = rng.uniform(-1, 1, size=(50, 5, 5))
    images[:, :, 0] = -1.0  # a column that never varies, never ink
    images[3] = -1.0  # an image with no ink: a box of 0
    found = module.structure(images[..., None], far=3.0)
    assert found["ink_share"] == pytest.approx(np.mean(images > 0))
    boxes = []
    for image in images:
        rows, cols = np.nonzero(image > 0)
        boxes.append(0 if len(rows) == 0 else
                     (rows.max() - rows.min() + 1)
                     * (cols.max() - cols.min() + 1))
    assert found["bounding_box_pixels"] == pytest.approx(np.mean(boxes))
    assert boxes[3] == 0
    flat = images.reshape(50, -1)
    pixels = [p for p in range(25) if flat[:, p].std() > 0]
    values = [abs(np.corrcoef(flat[:, a], flat[:, b])[0, 1])
              for a, b in itertools.combinations(pixels, 2)
              if np.hypot(*np.subtract(divmod(a, 5), divmod(b, 5))) >= 3]
    assert found["far_pairs"] == len(values)
    assert found["varying_pixels"] == 20 and found["pixels"] == 25
    assert found["far_abs_correlation"] == pytest.approx(np.mean(values))


def test_a_wrong_option_is_one_line():
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "image_structure.py"),
         "--datasets", "cifar"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert ("--datasets must name mnist and/or fashion, received: 'cifar'"
            in result.stderr)
    assert "Traceback" not in result.stderr


def test_the_sagan_page_states_the_files_figures():
    record = json.loads((BENCHMARKS / "results" / "image_structure.json")
                        .read_text())
    found = {row["dataset"]: row for row in record["rows"]}
    mnist, fashion = found["mnist"], found["fashion"]
    text = (BENCHMARKS.parent / "docs" / "models" / "sagan.md").read_text()
    page = " ".join(text.split())
    assert "<!-- results image_structure -->" in text
    assert f"the {mnist['train_images']:,} training images" in page
    assert (f"covers {fashion['ink_share']:.1%} of the pixels against "
            f"{mnist['ink_share']:.1%} for the digits") in page
    assert (f"covers {fashion['bounding_box_pixels']:.0f} of the "
            f"{fashion['pixels']} pixels against "
            f"{mnist['bounding_box_pixels']:.0f}") in page
    ratio = fashion["far_abs_correlation"] / mnist["far_abs_correlation"]
    assert (f"correlate {ratio:.1f} times as much, a mean |r| of "
            f"{fashion['far_abs_correlation']:.3f} against "
            f"{mnist['far_abs_correlation']:.3f}") in page
