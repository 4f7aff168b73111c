"""The `TF_CONFIG` of one worker of a Kubernetes Indexed Job.

A Kubeflow `TFJob` sets `TF_CONFIG` in each pod itself. A plain
`batch/v1` Job with `completionMode: Indexed` does not: its pods only know
their index. `deploy/training/indexed-job.yaml` runs N pods named
`JOB-0 ... JOB-(N-1)` (an Indexed Job's pod hostnames) whose subdomain is a
headless Service, so that pod i answers at `JOB-i.SERVICE`; from these
variables every pod builds the same cluster list and its own task:

- `JOB_COMPLETION_INDEX`: this pod's index, set by Kubernetes;
- `KERAS_ATTENTION_WORKERS`: N, the Job's `completions` and `parallelism`;
- `KERAS_ATTENTION_JOB_NAME`: the Job's name (the pods' hostname prefix);
- `KERAS_ATTENTION_SERVICE`: the headless Service named by the pods'
  `subdomain`;
- `KERAS_ATTENTION_PORT`: the port every worker listens on (default 2222,
  the port a TFJob's workers use).

`keras-attention tf-config` prints the result; `keras-attention train`
sets `TF_CONFIG` from it when `TF_CONFIG` is unset and
`KERAS_ATTENTION_WORKERS` is set. Worker 0 is the chief, as in a TFJob
without a Chief replica. This module imports no TensorFlow.
"""

import json
import os
import re

INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
WORKERS_VARIABLE = "KERAS_ATTENTION_WORKERS"
JOB_NAME_VARIABLE = "KERAS_ATTENTION_JOB_NAME"
SERVICE_VARIABLE = "KERAS_ATTENTION_SERVICE"
PORT_VARIABLE = "KERAS_ATTENTION_PORT"
VARIABLES = (INDEX_VARIABLE, WORKERS_VARIABLE, JOB_NAME_VARIABLE,
             SERVICE_VARIABLE, PORT_VARIABLE)
DEFAULT_PORT = 2222
# A DNS label (RFC 1123), as Kubernetes requires of hostnames and Service
# names: lowercase letters, digits and '-', 63 characters at most.
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _integer(name, value, low, high=None):
    """`value` (an int, or the text of an environment variable) as an int
    in `[low, high]`; the ValueError names `name` and the value."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[0-9]+\s*", value):
        number = int(value)
    if number is None or number < low or (high is not None and number > high):
        bounds = (f"an integer >= {low}" if high is None
                  else f"an integer from {low} to {high}")
        raise ValueError(f"{name} must be {bounds}, received: "
                         f"{name}={value!r}")
    return number


def _dns_label(name, value):
    if not isinstance(value, str) or not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"{name} must be a DNS label (lowercase letters, digits and '-', "
            f"starting and ending with a letter or digit, at most 63 "
            f"characters), received: {name}={value!r}")
    return value


# The names errors use for the arguments: the arguments' own, or the
# environment variables they came from.
_ARGUMENT_NAMES = {"index": "index", "num_workers": "num_workers",
                   "job_name": "job_name", "service": "service",
                   "port": "port"}
_VARIABLE_NAMES = {"index": INDEX_VARIABLE, "num_workers": WORKERS_VARIABLE,
                   "job_name": JOB_NAME_VARIABLE, "service": SERVICE_VARIABLE,
                   "port": PORT_VARIABLE}


def _addresses(job_name, service, num_workers, port, names):
    num_workers = _integer(names["num_workers"], num_workers, 1)
    port = _integer(names["port"], port, 1, 65535)
    _dns_label(names["service"], service)
    _dns_label(names["job_name"], job_name)
    last_host = f"{job_name}-{num_workers - 1}"
    if len(last_host) > 63:
        raise ValueError(
            f"{names['job_name']} is too long: the hostname of the last of "
            f"{num_workers} workers, {last_host!r}, has {len(last_host)} "
            f"characters (at most 63), received: "
            f"{names['job_name']}={job_name!r}")
    return [f"{job_name}-{index}.{service}:{port}"
            for index in range(num_workers)]


def _tf_config(index, num_workers, job_name, service, port, names):
    addresses = _addresses(job_name, service, num_workers, port, names)
    index = _integer(names["index"], index, 0, len(addresses) - 1)
    return {"cluster": {"worker": addresses},
            "task": {"type": "worker", "index": index}}


def worker_addresses(job_name, service, num_workers, port=DEFAULT_PORT):
    """`["JOB-0.SERVICE:PORT", ...]`: the N workers of an Indexed Job.

    Example:

    >>> worker_addresses("train", "workers", 2)
    ['train-0.workers:2222', 'train-1.workers:2222']
    """
    return _addresses(job_name, service, num_workers, port, _ARGUMENT_NAMES)


def tf_config(index, num_workers, job_name, service, port=DEFAULT_PORT):
    """The `TF_CONFIG` (a dict) of worker `index` of `num_workers`.

    Every worker gets the same cluster list and its own task index, which
    is what `MultiWorkerMirroredStrategy` reads.

    Example:

    >>> tf_config(1, 2, "train", "workers")
    {'cluster': {'worker': ['train-0.workers:2222', 'train-1.workers:2222']},
     'task': {'type': 'worker', 'index': 1}}
    """
    return _tf_config(index, num_workers, job_name, service, port,
                      _ARGUMENT_NAMES)


def tf_config_from_environment(environ=None):
    """`tf_config(...)` from the variables the Indexed Job sets (see the
    module docstring); a ValueError names the variable that is missing or
    wrong and its value.

    Example:

    >>> tf_config_from_environment({
    ...     "JOB_COMPLETION_INDEX": "0", "KERAS_ATTENTION_WORKERS": "1",
    ...     "KERAS_ATTENTION_JOB_NAME": "train",
    ...     "KERAS_ATTENTION_SERVICE": "workers"})
    {'cluster': {'worker': ['train-0.workers:2222']},
     'task': {'type': 'worker', 'index': 0}}
    """
    environ = os.environ if environ is None else environ
    for name in (INDEX_VARIABLE, WORKERS_VARIABLE, JOB_NAME_VARIABLE,
                 SERVICE_VARIABLE):
        if name not in environ:
            where = ("Kubernetes sets it in the pods of an Indexed Job "
                     "(completionMode: Indexed)" if name == INDEX_VARIABLE
                     else "deploy/training/indexed-job.yaml sets it")
            raise ValueError(f"{name} is not set: {where}; the variables "
                             f"read are {', '.join(VARIABLES)}")
    return _tf_config(
        environ[INDEX_VARIABLE], environ[WORKERS_VARIABLE],
        environ[JOB_NAME_VARIABLE], environ[SERVICE_VARIABLE],
        environ.get(PORT_VARIABLE, DEFAULT_PORT), _VARIABLE_NAMES,
    )


def indexed_job_tf_config(environ=None):
    """The `TF_CONFIG` JSON text `keras-attention train` should set, or
    None: only when `TF_CONFIG` is unset (a TFJob, or the user, sets it)
    and `KERAS_ATTENTION_WORKERS` is set (the Indexed Job's manifest)."""
    environ = os.environ if environ is None else environ
    if environ.get("TF_CONFIG") or WORKERS_VARIABLE not in environ:
        return None
    return json.dumps(tf_config_from_environment(environ))
