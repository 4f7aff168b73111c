import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Training runs say precision="auto" by default, which picks bfloat16 only
# on some CPUs: the suite's numbers must not depend on the CPU it runs on
# (tests/training/test_precision.py checks "auto" itself).
os.environ.setdefault("KERAS_ATTENTION_PRECISION", "float32")
if os.environ.get("KERAS_BACKEND") == "jax":
    # Eager JAX compiles every op for every new shape; on CPU, XLA's
    # backend optimizations take most of that time and buy nothing for
    # inputs this small: `make test-jax` runs in about half the time.
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """Every test starts from float32, a fixed seed and fresh layer names."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")
    keras.backend.clear_session()


def pytest_collection_finish(session):
    """Freeze what the imports and the collection made (TensorFlow's and
    Keras's modules, the test modules): the `gc.collect()` that
    `clear_session()` runs after every test then walks only what the tests
    made, not the whole heap again (it was 16% of the suite's time, more
    than the layer tests' own calls). Nothing frozen is ever freed, and
    nothing of it would be: it lives as long as the process."""
    import gc

    gc.collect()
    gc.freeze()


_FILE = {"current": None}


def pytest_runtest_setup(item):
    """At each test file's first test, after the last file's module
    fixtures have gone: collect, then freeze what survives. TensorFlow
    keeps every graph a test traced (a fit's step, Keras's scratch graphs)
    alive after `clear_session()`, some ten thousand objects a file; left
    in the collected heap they made every later `gc.collect()` walk all
    of them, and a test's teardown late in a worker's run took seconds
    (a fifth of the suite's time, measured on one worker). Frozen, each
    test's collection walks only what its own file made."""
    import gc

    path = item.nodeid.split("::")[0]
    if path != _FILE["current"]:
        _FILE["current"] = path
        gc.collect()
        gc.freeze()


def _spread(count, keep):
    """`keep` indices of `range(count)`, evenly spread, the first and the
    last among them: `_spread(7, 3) == [0, 3, 6]`."""
    if count <= keep:
        return list(range(count))
    if keep == 1:
        return [0]
    return sorted({round(i * (count - 1) / (keep - 1)) for i in range(keep)})


# The files that take longest, run first: `--dist loadfile` hands each
# worker whole files in collection order, so one of these last would keep
# one worker busy while the other has nothing left (the translators' files
# also start training the shared tiny translators on both workers at once).
SLOW_FIRST = ("tests/translator/", "tests/training/test_resume.py",
              "tests/training/test_distributed.py", "tests/packaging/",
              "tests/test_examples.py",
              "tests/models/test_translator_quantization.py",
              "tests/models/test_universal_transformer_reader.py",
              "tests/test_benchmarks_babi.py")


def _slow_rank(item):
    path = item.nodeid.split("::")[0]
    return next((rank for rank, prefix in enumerate(SLOW_FIRST)
                 if path.startswith(prefix)), len(SLOW_FIRST))


def pytest_collection_modifyitems(config, items):
    """The slowest files first (`SLOW_FIRST`; each file's tests keep their
    order). With `KERAS_ATTENTION_MAX_PARAMS=N` each parametrized test keeps N
    of its cases, the first, the last and evenly between; with `last`, its
    last case only. `make test-jax` keeps the first (1) and `make
    test-torch` the last: every test runs on the other backends, each
    grid's two ends among them, and its whole grid on TensorFlow (`make
    test`'s first run), where the grid's numbers are checked. Unset, every
    case runs."""
    items.sort(key=_slow_rank)  # stable: the same order on every worker
    limit = os.environ.get("KERAS_ATTENTION_MAX_PARAMS")
    if not limit:
        return
    if limit != "last" and (not limit.isdigit() or int(limit) < 1):
        raise pytest.UsageError("KERAS_ATTENTION_MAX_PARAMS must be a "
                                "positive int or 'last', received: "
                                f"{limit!r}")
    groups = {}
    for item in items:
        key = (item.nodeid.split("::")[0], getattr(item, "originalname",
                                                    item.name))
        groups.setdefault(key, []).append(item)
    kept, dropped = [], []
    for group in groups.values():
        chosen = ({len(group) - 1} if limit == "last"
                  else set(_spread(len(group), int(limit))))
        for index, item in enumerate(group):
            (kept if index in chosen else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in gone]
