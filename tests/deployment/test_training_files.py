"""The training manifests in deploy/training/ parse and agree with each
other and with the package.

No network, no container engine, no cluster: nothing is built or applied.
These tests catch syntax errors and drift: images, commands (parsed with
the real `keras-attention` parser), worker counts, names, ports and the
shared run folder.
"""

import importlib.metadata
import json
import pathlib
import re
import sys

import pytest
import tomllib
import yaml

from keras_attention.cli import build_parser
from keras_attention.cli import config_from_arguments
from keras_attention.training.cluster import DEFAULT_PORT
from keras_attention.training.cluster import tf_config_from_environment
from keras_attention.training.config import TrainingConfig
from keras_attention.version import __version__

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRAINING = ROOT / "deploy" / "training"
PLACEHOLDER_IMAGE = f"registry.example.com/keras-attention:{__version__}"
# The downward-API fields each manifest takes the worker's index from.
INDEX_FIELDS = {
    "Job": "metadata.annotations['batch.kubernetes.io/job-completion-index']",
    "TFJob": "metadata.labels['training.kubeflow.org/replica-index']",
}


@pytest.fixture(autouse=True)
def _reset_keras_state():
    """These tests build no Keras model: no per-test Keras reset."""
    yield


def _documents(name):
    return list(yaml.safe_load_all((TRAINING / name).read_text()))


def _by_kind(name):
    return {document["kind"]: document for document in _documents(name)}


def _job():
    return _by_kind("indexed-job.yaml")["Job"]


def _service():
    return _by_kind("indexed-job.yaml")["Service"]


def _tfjob():
    return _by_kind("tfjob.yaml")["TFJob"]


def _pod_templates():
    """{kind: the pod template} of the two ways to run the workers."""
    return {"Job": _job()["spec"]["template"],
            "TFJob": _tfjob()["spec"]["tfReplicaSpecs"]["Worker"]["template"]}


def _container(template):
    (container,) = template["spec"]["containers"]
    return container


def _dockerfile():
    """{instruction: [its arguments, one line each]}."""
    lines = (TRAINING / "Dockerfile").read_text().splitlines()
    instructions = {}
    for line in lines:
        if line.strip() and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            instructions.setdefault(word, []).append(rest)
    return instructions


def _pod_environment(container, kind, index):
    """The container's variables as the kubelet resolves them in pod
    `index` (the downward API for the index)."""
    fields = {INDEX_FIELDS[kind]: str(index)}
    environment = {}
    for variable in container.get("env", []):
        if "value" in variable:
            environment[variable["name"]] = variable["value"]
        else:
            path = variable["valueFrom"]["fieldRef"]["fieldPath"]
            assert path in fields, f"{variable['name']}: {path}"
            environment[variable["name"]] = fields[path]
    if kind == "Job":  # the Job controller's own, whether named or not
        environment.setdefault("JOB_COMPLETION_INDEX", str(index))
    return environment


def _expanded(args, environment):
    """`$(NAME)` in the args replaced as the kubelet does; a name that is
    not defined would stay as it is, which the tests refuse."""
    expanded = [re.sub(r"\$\((\w+)\)",
                       lambda match: environment.get(match.group(1),
                                                     match.group(0)), arg)
                for arg in args]
    assert not any("$(" in arg for arg in expanded), expanded
    return expanded


def _train_options(template, kind, index):
    container = _container(template)
    args = _expanded(container["args"],
                     _pod_environment(container, kind, index))
    parsed = build_parser().parse_args(args)
    assert parsed.command == "train"
    return config_from_arguments(TrainingConfig, parsed)


# -- syntax -------------------------------------------------------------------

def test_kinds():
    kinds = {path.name: [(d["apiVersion"], d["kind"])
                         for d in _documents(path.name)]
             for path in TRAINING.glob("*.yaml")}
    assert kinds == {
        "pvc.yaml": [("v1", "PersistentVolumeClaim")],
        "indexed-job.yaml": [("v1", "Service"), ("batch/v1", "Job")],
        "tfjob.yaml": [("kubeflow.org/v1", "TFJob")],
    }


# -- image and commands -----------------------------------------------------------

def test_image_is_the_dockerfiles_placeholder_everywhere():
    for kind, template in _pod_templates().items():
        assert _container(template)["image"] == PLACEHOLDER_IMAGE, kind
    for text in ((TRAINING / "Dockerfile").read_text(),
                 (TRAINING / "README.md").read_text()):
        assert PLACEHOLDER_IMAGE in text
        assert "docker build -f deploy/training/Dockerfile" in text


def test_dockerfile_installs_this_package_on_the_tested_python():
    instructions = _dockerfile()
    (base,) = instructions["FROM"]
    assert base == f"python:{sys.version_info[0]}.{sys.version_info[1]}-slim"
    # What it copies exists (pyproject.toml reads README.md and the
    # version).
    for line in instructions["COPY"]:
        *sources, _ = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source
    # With the extras that training and beam search need.
    assert any('pip install --no-cache-dir ".[translate,official]"' in line
               for line in instructions["RUN"])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert {"translate", "official"} <= set(extras)


def test_commands_are_the_console_script_and_parse(capsys):
    (script,) = importlib.metadata.entry_points(group="console_scripts",
                                                name="keras-attention")
    instructions = _dockerfile()
    (entrypoint,) = instructions["ENTRYPOINT"]
    assert json.loads(entrypoint) == [script.name]
    for kind, template in _pod_templates().items():
        assert _container(template)["command"] == [script.name], kind
        config = _train_options(template, kind, 0)
        assert (config.preset, config.epochs) == ("small", 8), kind
        assert config.verbose == 2  # a line per epoch in `kubectl logs`
    (default,) = instructions["CMD"]
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(json.loads(default))
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("usage: keras-attention")


def test_a_wrong_option_would_be_caught(capsys):
    """The parser the tests above use refuses what train does not take."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--output_dir=/runs"])
    assert "unrecognized arguments" in capsys.readouterr().err


# -- the shared run folder ------------------------------------------------------

def test_each_worker_has_its_own_run_folder_on_the_shared_volume():
    (claim,) = _documents("pvc.yaml")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for kind, template in _pod_templates().items():
        (volume,) = template["spec"]["volumes"]
        assert volume["persistentVolumeClaim"] == {
            "claimName": claim["metadata"]["name"]}, kind
        (mount,) = _container(template)["volumeMounts"]
        assert mount["name"] == volume["name"]
        assert not mount.get("readOnly", False)
        job_name = (_job() if kind == "Job" else _tfjob())["metadata"]["name"]
        folders = [_train_options(template, kind, index).output_dir
                   for index in range(3)]
        assert folders == [f"{mount['mountPath']}/{job_name}/worker-{index}"
                           for index in range(3)], kind


def test_the_index_comes_from_the_right_field():
    for kind, template in _pod_templates().items():
        fields = [variable["valueFrom"]["fieldRef"]["fieldPath"]
                  for variable in _container(template)["env"]
                  if "valueFrom" in variable]
        assert fields == [INDEX_FIELDS[kind]], kind


# -- workers, names and ports ---------------------------------------------------------

def test_worker_counts_agree():
    job = _job()["spec"]
    environment = _pod_environment(_container(job["template"]), "Job", 0)
    workers = int(environment["KERAS_ATTENTION_WORKERS"])
    assert workers >= 2
    assert job["completionMode"] == "Indexed"
    assert job["completions"] == job["parallelism"] == workers
    assert _tfjob()["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == workers


def test_restarts_resume_from_the_backups():
    tfjob = _tfjob()["spec"]
    assert tfjob["tfReplicaSpecs"]["Worker"]["restartPolicy"] == "OnFailure"
    assert list(tfjob["tfReplicaSpecs"]) == ["Worker"]  # worker 0 is chief
    job = _job()["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert job["backoffLimit"] == tfjob["runPolicy"]["backoffLimit"] > 0
    for kind, template in _pod_templates().items():
        # Backups, hence resuming, need steps between backups.
        assert _train_options(template, kind, 0).checkpoint_every > 0


def test_the_headless_service_names_the_jobs_pods():
    service, job = _service(), _job()
    template = job["spec"]["template"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    labels = template["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    # ... and not the TFJob's pods.
    tfjob_labels = _pod_templates()["TFJob"]["metadata"]["labels"]
    assert not service["spec"]["selector"].items() <= tfjob_labels.items()
    assert template["spec"]["subdomain"] == service["metadata"]["name"]


def test_every_pod_builds_the_tf_config_of_the_job():
    """Pod i's hostname is JOB-i (Indexed Job), its DNS name
    JOB-i.SUBDOMAIN; each worker listens on the port the Service and the
    container name."""
    job, service = _job(), _service()
    template = job["spec"]["template"]
    container = _container(template)
    (container_port,) = container["ports"]
    (service_port,) = service["spec"]["ports"]
    port = container_port["containerPort"]
    assert port == service_port["port"] == service_port["targetPort"]
    assert port == DEFAULT_PORT
    workers = job["spec"]["completions"]
    expected = [f"{job['metadata']['name']}-{index}."
                f"{template['spec']['subdomain']}:{port}"
                for index in range(workers)]
    for index in range(workers):
        environment = _pod_environment(container, "Job", index)
        assert int(environment["KERAS_ATTENTION_PORT"]) == port
        assert tf_config_from_environment(environment) == {
            "cluster": {"worker": expected},
            "task": {"type": "worker", "index": index}}


def test_tfjob_follows_the_operators_conventions():
    template = _pod_templates()["TFJob"]
    container = _container(template)
    assert container["name"] == "tensorflow"
    assert container["ports"] == [{"name": "tfjob-port",
                                   "containerPort": DEFAULT_PORT}]
    assert template["metadata"]["annotations"] == {
        "sidecar.istio.io/inject": "false"}
    # The operator sets TF_CONFIG: no Indexed Job variables here.
    names = {variable["name"] for variable in container["env"]}
    assert not any(name.startswith("KERAS_ATTENTION_") for name in names)
    assert "TF_CONFIG" not in names


def test_readme_applies_the_files_that_exist():
    text = (TRAINING / "README.md").read_text()
    applied = re.findall(r"kubectl apply -f (\S+)", text)
    assert applied
    for path in applied:
        assert (ROOT / path).exists(), path
    assert "Never run on a cluster" in text
