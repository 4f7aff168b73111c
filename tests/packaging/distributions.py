"""What the packaging tests share: the sdist and wheel built once per test
run, fresh virtual environments with the wheel installed, and subprocesses
whose failures read well.

The distributions are built with `python -m build --no-isolation` by the
interpreter running the tests: the build then uses the setuptools and
wheel already installed (with `make install`, the ones `.[dev]` came
with), which takes about 3 s on 2 cores and needs no package index. An
isolated build first installs setuptools and wheel into a throw-away
environment (about 7 s here, and an index or a warm pip cache for every
test run). `build` itself checks that the installed versions satisfy
`[build-system] requires` ("Missing dependencies" otherwise); only then do
we fall back to an isolated build.

Under pytest-xdist every worker is a process of its own: the first that
needs the distributions builds them into a folder beside the workers' base
temporary folders (under a lock file, as tests/trained_translators.py
does); the others use that folder.
"""

import contextlib
import fcntl
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import venv

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DONE = "built"  # written last: the folder holds both distributions
TAIL = 3000  # characters of stdout and stderr an assertion message shows

# Variables of this test run that must not reach the interpreters of the
# fresh environments: they would point them at the source tree, at this
# run's virtual environment, or at a backend or data the test did not ask
# for.
LEAKY_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP",
                   "PYTHONSAFEPATH", "VIRTUAL_ENV", "KERAS_BACKEND",
                   "KERAS_HOME", "MULTI30K_DIR", "XLA_FLAGS", "PIP_USER",
                   "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")


def _tail(text):
    text = text or ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if len(text) <= TAIL else "..." + text[-TAIL:]


def describe(command, returncode, stdout, stderr, cwd=None):
    """A subprocess's command, status and output tails, for a message."""
    if not isinstance(command, str):
        command = shlex.join(str(part) for part in command)
    return (f"command: {command}\n"
            + (f"cwd: {cwd}\n" if cwd else "")
            + f"return code: {returncode}\n"
            f"--- stdout (tail) ---\n{_tail(stdout)}\n"
            f"--- stderr (tail) ---\n{_tail(stderr)}")


def run(command, *, cwd, env=None, timeout=300, check=True, input=None):
    """Run `command` (a list); returns the CompletedProcess (text). With
    `check`, a non-zero status fails the test with the command, its status
    and the tails of its output; a timeout always does."""
    try:
        result = subprocess.run([str(part) for part in command], cwd=cwd,
                                env=env, input=input, capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(
            f"timed out after {timeout} s\n" + describe(
                command, None, error.stdout, error.stderr, cwd)) from None
    if check:
        assert result.returncode == 0, describe(
            command, result.returncode, result.stdout, result.stderr, cwd)
    return result


def clean_environment(venv_dir=None, **variables):
    """This process's environment without `LEAKY_VARIABLES`, with
    `venv_dir`'s bin first on PATH (as `activate` does) and `variables`
    set."""
    environment = {name: value for name, value in os.environ.items()
                   if name not in LEAKY_VARIABLES}
    if venv_dir is not None:
        environment["PATH"] = (str(pathlib.Path(venv_dir) / "bin")
                               + os.pathsep + environment.get("PATH", ""))
        environment["VIRTUAL_ENV"] = str(venv_dir)
    environment.update(variables)
    return environment


def source_version():
    """`__version__` as keras_attention/version.py writes it (not
    imported)."""
    text = (REPO_ROOT / "keras_attention" / "version.py").read_text()
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text,
                      re.MULTILINE)
    assert match, "no __version__ = '...' line in keras_attention/version.py"
    return match.group(1)


@contextlib.contextmanager
def _lock(path):
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _shared_folder(tmp_path_factory, name):
    base = tmp_path_factory.getbasetemp()
    # Under xdist the workers' base folders share this run's folder.
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / name
    folder.mkdir(exist_ok=True)
    return folder


def _build(outdir):
    command = [sys.executable, "-m", "build", "--sdist", "--wheel",
               "--outdir", outdir]
    result = run([*command, "--no-isolation", REPO_ROOT], cwd=REPO_ROOT,
                 env=clean_environment(), check=False, timeout=300)
    if result.returncode != 0 and "Missing dependencies" in (
            result.stdout + result.stderr):
        # This interpreter lacks the build requirements: isolated build.
        result = run([*command, REPO_ROOT], cwd=REPO_ROOT,
                     env=clean_environment(), check=False, timeout=300)
    assert result.returncode == 0, describe(
        result.args, result.returncode, result.stdout, result.stderr)


def built_distributions(tmp_path_factory):
    """(sdist, wheel): the paths of this test run's distributions, built
    by the first worker that asks."""
    folder = _shared_folder(tmp_path_factory, "packaging-dist")
    with _lock(folder / "build.lock"):
        if not (folder / DONE).exists():
            for stale in folder.glob("*.*"):
                if stale.suffix in (".whl", ".gz"):
                    stale.unlink()
            _build(folder)
            (folder / DONE).touch()
    sdists = sorted(folder.glob("*.tar.gz"))
    wheels = sorted(folder.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(
        path.name for path in folder.iterdir())
    return sdists[0], wheels[0]


def new_virtual_environment(directory, *requirements, timeout=420):
    """A virtual environment in `directory` (no system site packages) with
    `requirements` installed by its own pip (from pip's cache when warm);
    returns its Python."""
    directory = pathlib.Path(directory)
    venv.EnvBuilder(with_pip=True, system_site_packages=False,
                    symlinks=(os.name != "nt")).create(directory)
    python = directory / "bin" / "python"
    run([python, "-m", "pip", "install", "--disable-pip-version-check",
         "--quiet", *requirements], cwd=directory,
        env=clean_environment(directory), timeout=timeout)
    return python


def remove_virtual_environment(directory):
    """Delete a virtual environment after its tests (the `[translate,
    serving]` one is 2.6 GB; pytest keeps the temporary folders of the
    last three runs). Deleting 2.6 GB takes 10 s on a busy machine: a
    detached `rm -rf` does it while the tests go on."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return
    doomed = directory.with_name(directory.name + ".deleting")
    try:
        directory.rename(doomed)  # gone at once from the tests' view
        subprocess.Popen(["rm", "-rf", "--", str(doomed)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        shutil.rmtree(directory, ignore_errors=True)


# The packages whose versions a packaging environment reports.
REPORTED = ("tensorflow", "tensorflow-text", "tensorflow-serving-api",
            "keras", "jax", "jaxlib", "numpy", "protobuf")
# `.ci/run` sets it: each environment appends its versions there, and the
# run prints them (the versions of every stage, in the CI log).
VERSIONS_LOG = "KERAS_ATTENTION_VERSIONS_LOG"

_VERSIONS = """
import importlib.metadata, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        found[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        pass
print(json.dumps(found))
"""


def installed_versions(python, packages=REPORTED):
    """{package: version} of `packages` installed for `python` (the absent
    ones left out), read from their metadata: nothing is imported."""
    result = run([python, "-c", _VERSIONS, *packages], cwd=REPO_ROOT,
                 env=clean_environment(), timeout=60)
    return json.loads(result.stdout.splitlines()[-1])


def report_versions(stage, versions):
    """Append `stage: name version, ...` to the file VERSIONS_LOG names,
    where it is set."""
    path = os.environ.get(VERSIONS_LOG)
    if not path:
        return
    line = ", ".join(f"{name} {version}"
                     for name, version in sorted(versions.items()))
    with open(path, "a", encoding="utf-8") as log:
        log.write(f"{stage}: {line}\n")
