"""Real digits: the loaders read what they are given (an .npz of x and y,
Keras's mnist.npz, Fashion-MNIST's IDX files), never download, and fail
with one line naming the file; the split is fixed by its seed; the
cluttered canvases hold the digit where the box says and fragments of the
same split's digits."""

import gzip
import subprocess
import sys

import numpy as np
import pytest

from keras_attention.data import mnist

RNG = np.random.default_rng(0)


def _digits(count=50):
    images = RNG.integers(0, 256, (count, 28, 28)).astype("uint8")
    return mnist.Digits(images, np.arange(count) % 10)


@pytest.fixture
def npz(tmp_path):
    digits = _digits()
    path = tmp_path / "mnist10k.npz"
    np.savez(path, x=digits.images, y=digits.labels.astype("uint8"))
    return path, digits


def test_reads_the_file_its_folder_or_the_environment(npz, monkeypatch):
    path, digits = npz
    for given in (path, path.parent, str(path)):
        loaded = mnist.load_mnist(given)
        np.testing.assert_array_equal(loaded.images, digits.images)
        np.testing.assert_array_equal(loaded.labels, digits.labels)
        assert loaded.labels.dtype == np.int64
    monkeypatch.setenv(mnist.MNIST_VARIABLE, str(path.parent))
    assert len(mnist.load_mnist()) == 50


def test_reads_keras_mnist_npz_train_then_test(tmp_path):
    train, test = _digits(6), _digits(4)
    np.savez(tmp_path / "mnist.npz", x_train=train.images,
             y_train=train.labels, x_test=test.images, y_test=test.labels)
    loaded = mnist.load_mnist(tmp_path)
    np.testing.assert_array_equal(
        loaded.images, np.concatenate([train.images, test.images]))


def test_missing_and_malformed_files_are_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(mnist.MNIST_VARIABLE, raising=False)
    with pytest.raises(FileNotFoundError, match="KERAS_ATTENTION_MNIST"):
        mnist.load_mnist()
    with pytest.raises(FileNotFoundError, match="No MNIST file at"):
        mnist.load_mnist(tmp_path / "nothing.npz")
    with pytest.raises(FileNotFoundError, match="holds none of"):
        mnist.load_mnist(tmp_path)
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="text.npz is not an .npz file"):
        mnist.load_mnist(tmp_path / "text.npz")
    np.savez(tmp_path / "keys.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match=r"must hold x and y.*\['a'\]"):
        mnist.load_mnist(tmp_path / "keys.npz")
    np.savez(tmp_path / "shape.npz", x=np.zeros((3, 8, 8), "uint8"),
             y=np.zeros(3))
    with pytest.raises(ValueError, match=r"\(N, 28, 28\).*\(3, 8, 8\)"):
        mnist.load_mnist(tmp_path / "shape.npz")
    np.savez(tmp_path / "float.npz", x=np.zeros((3, 28, 28)), y=np.zeros(3))
    with pytest.raises(ValueError, match="uint8.*float64"):
        mnist.load_mnist(tmp_path / "float.npz")
    np.savez(tmp_path / "labels.npz", x=np.zeros((3, 28, 28), "uint8"),
             y=np.zeros(2))
    with pytest.raises(ValueError, match=r"labels must be \(3,\)"):
        mnist.load_mnist(tmp_path / "labels.npz")


def _idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(
        int(n).to_bytes(4, "big") for n in array.shape)
    path.write_bytes(gzip.compress(header + array.astype("uint8").tobytes()))


def test_fashion_mnist_idx_files(tmp_path, monkeypatch):
    digits = _digits(7)
    _idx(tmp_path / "t10k-images-idx3-ubyte.gz", digits.images)
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", digits.labels)
    loaded = mnist.load_fashion_mnist(tmp_path, "test")
    np.testing.assert_array_equal(loaded.images, digits.images)
    np.testing.assert_array_equal(loaded.labels, digits.labels)
    monkeypatch.setenv(mnist.FASHION_VARIABLE, str(tmp_path))
    assert len(mnist.load_fashion_mnist(part="test")) == 7
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        mnist.load_fashion_mnist(tmp_path, "train")
    with pytest.raises(ValueError, match="part"):
        mnist.load_fashion_mnist(tmp_path, "valid")
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(
        gzip.compress(b"\x00\x00\x08\x03" + b"\x00" * 12))
    with pytest.raises(ValueError, match="not an IDX file of uint8 with 1"):
        mnist.load_fashion_mnist(tmp_path, "test")
    _idx(tmp_path / "t10k-labels-idx1-ubyte.gz", digits.labels)
    raw = gzip.decompress(
        (tmp_path / "t10k-images-idx3-ubyte.gz").read_bytes())
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(
        gzip.compress(raw[:-5]))
    with pytest.raises(ValueError, match="the header says"):
        mnist.load_fashion_mnist(tmp_path, "test")


def test_the_split_is_fixed_by_its_seed_disjoint_and_complete():
    digits = mnist.Digits(np.zeros((100, 28, 28), "uint8"), np.arange(100))
    parts = mnist.split(digits, seed=3, validation=10, test=20)
    again = mnist.split(digits, seed=3, validation=10, test=20)
    other = mnist.split(digits, seed=4, validation=10, test=20)
    for name in mnist.SPLITS:
        np.testing.assert_array_equal(parts[name].labels, again[name].labels)
    assert not np.array_equal(parts["test"].labels, other["test"].labels)
    assert [len(parts[n]) for n in mnist.SPLITS] == [70, 10, 20]
    seen = np.concatenate([parts[n].labels for n in mnist.SPLITS])
    assert sorted(seen.tolist()) == list(range(100))
    # A file sorted by label comes out shuffled.
    assert not np.all(np.diff(parts["train"].labels) > 0)
    with pytest.raises(ValueError, match="validation=50, test=50"):
        mnist.split(digits, validation=50, test=50)


def test_cluttered_canvases():
    digits = _digits(40)
    canvases = mnist.cluttered(digits, count=30, canvas_size=60, clutter=4,
                               fragment_size=8, seed=5)
    again = mnist.cluttered(digits, count=30, canvas_size=60, clutter=4,
                            fragment_size=8, seed=5)
    np.testing.assert_array_equal(canvases.images, again.images)
    assert canvases.images.shape == (30, 60, 60)
    assert canvases.images.dtype == np.float32
    grey = digits.images.astype("float32") / 255
    for image, label, (top, left, height, width) in zip(*canvases):
        assert (height, width) == (28, 28)
        assert 0 <= top <= 32 and 0 <= left <= 32
        inside = image[top:top + 28, left:left + 28]
        # The digit is there (clutter only brightens under it).
        matches = [index for index in np.flatnonzero(digits.labels == label)
                   if np.all(inside >= grey[index] - 1e-6)]
        assert matches
        # Ink outside the box is clutter only: at most 4 fragments of 8x8.
        outside = image.copy()
        outside[top:top + 28, left:left + 28] = 0
        assert np.count_nonzero(outside) <= 4 * 64
    translated = mnist.cluttered(digits, canvas_size=40, clutter=0, seed=1)
    assert len(translated.labels) == 40
    np.testing.assert_array_equal(translated.labels, digits.labels)
    for image, (top, left, _, _), index in zip(translated.images,
                                               translated.boxes, range(40)):
        np.testing.assert_allclose(image[top:top + 28, left:left + 28],
                                   grey[index])
        assert image.sum() == pytest.approx(grey[index].sum(), rel=1e-5)


@pytest.mark.parametrize("options, message", [
    (dict(canvas_size=20), "canvas_size=20"),
    (dict(clutter=-1), "clutter"),
    (dict(fragment_size=30), "fragment_size=30"),
    (dict(count=0), "count"),
])
def test_canvas_arguments_name_themselves(options, message):
    with pytest.raises(ValueError, match=message):
        mnist.cluttered(_digits(5), **options)


def test_binarize_dynamic_and_fixed():
    grey = np.array([[0, 64, 128, 255]], "uint8")
    np.testing.assert_array_equal(mnist.binarize(grey), [[0, 0, 1, 1]])
    draws = mnist.binarize(np.full((200, 28, 28), 64, "uint8"),
                           np.random.default_rng(0))
    assert draws.dtype == np.uint8 and set(np.unique(draws)) == {0, 1}
    assert draws.mean() == pytest.approx(64 / 255, abs=0.01)


def test_importing_needs_no_keras_or_tensorflow():
    code = ("import sys; import keras_attention.data.mnist; "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["False", "False"]
