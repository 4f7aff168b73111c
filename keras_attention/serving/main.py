"""`keras-attention serve` / `python -m keras_attention.serving`: the
command line of `tensorflow_model_server`, for its REST and gRPC APIs."""

import argparse
import errno
import logging
import os
import sys

# Errors print as `keras-attention: error: ...`, the `keras-attention`
# command's format, and exit with 2.
PROG = "keras-attention"

DESCRIPTION = """Serve SavedModels over TF Serving's REST and gRPC APIs
(the flags mirror tensorflow_model_server's). Either --model_name with
--model_base_path, or --model_config_file."""


def _boolean(text):
    """A boolean flag's value as tensorflow_model_server reads it: the flag
    alone, or `--flag=true|false` (also 1/0)."""
    value = {"true": True, "1": True, "false": False, "0": False}.get(
        text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true or false, received:"
                                         f" {text!r}")
    return value


def add_arguments(parser):
    add = parser.add_argument
    add("--rest_api_port", type=int, default=8501,
        help="port of the REST API (default: 8501, TF Serving's convention)")
    add("--host", default="127.0.0.1",
        help="address to bind (default: 127.0.0.1, this machine only; "
             "0.0.0.0 for every interface)")
    add("--port", type=int, default=8500,
        help="port of the gRPC API, PredictionService and ModelService "
             "(default: 8500, TF Serving's; 0: no gRPC)")
    add("--grpc_max_threads", type=int,
        default=max(32, 4 * (os.cpu_count() or 1)),
        help="gRPC requests worked on at once; more wait (default: 4 per "
             "CPU as TF Serving's gRPC threads, at least 32 so that batches "
             "can fill)")
    add("--grpc_channel_arguments", default="",
        help="comma-separated key=value gRPC server arguments, e.g. "
             "grpc.max_receive_message_length=1048576 (default limit of a "
             "request message: --max_request_bytes)")
    add("--enable_model_warmup", type=_boolean, nargs="?", const=True,
        default=True, metavar="true|false",
        help="replay a version's assets.extra/tf_serving_warmup_requests "
             "before it becomes AVAILABLE (default: true)")
    add("--model_name", default="default",
        help="name of the model when --model_base_path is given "
             "(default: 'default', as TF Serving)")
    add("--model_base_path", default=None,
        help="folder whose integer-named subfolders are versions of one "
             "SavedModel")
    add("--model_config_file", default=None,
        help="text-format ModelServerConfig (model_config_list with "
             "model_version_policy and version_labels); overrides "
             "--model_name/--model_base_path")
    add("--model_config_file_poll_wait_seconds", type=float, default=0,
        help="re-read --model_config_file this often (0: never)")
    add("--file_system_poll_wait_seconds", type=float, default=1,
        help="look for new and removed versions this often (default: 1; "
             "0: once, at start)")
    add("--enable_batching", type=_boolean, nargs="?", const=True,
        default=False, metavar="true|false",
        help="merge concurrent requests into batches")
    add("--batching_parameters_file", default=None,
        help="text-format BatchingParameters (needs --enable_batching)")
    add("--rest_api_timeout_in_ms", type=int, default=30000,
        help="a request still running after this answers 504 (default: "
             "30000)")
    add("--rest_api_num_threads", type=int,
        default=max(4, 2 * (os.cpu_count() or 1)),
        help="threads running model calls when batching is off")
    add("--monitoring_config_file", default=None,
        help="text-format MonitoringConfig; prometheus_config { enable: "
             "true } serves metrics at /monitoring/prometheus/metrics")
    add("--allow_version_labels_for_unavailable_models", type=_boolean,
        nargs="?", const=True, default=False, metavar="true|false",
        help="accepted for compatibility: labels here always resolve at "
             "request time")
    add("--max_request_bytes", type=int, default=64 << 20,
        help="largest REST request body, after gzip inflation, and "
             "largest gRPC request message, in bytes; larger ones answer "
             "413 / RESOURCE_EXHAUSTED (default: 64 MiB)")


def options_from_arguments(args):
    """`ServerOptions` from parsed flags; ValueError names a bad flag."""
    from keras_attention.serving import config as config_lib
    from keras_attention.serving.server import ServerOptions

    if args.model_config_file:
        models = config_lib.read_model_config(args.model_config_file)
    elif args.model_base_path:
        models = [config_lib.ModelSpec(args.model_name,
                                       os.path.abspath(args.model_base_path))]
    else:
        raise ValueError("give --model_base_path (with --model_name) or "
                         "--model_config_file")
    if args.batching_parameters_file and not args.enable_batching:
        raise ValueError("--batching_parameters_file needs --enable_batching,"
                         f" received: --batching_parameters_file="
                         f"{args.batching_parameters_file}")
    batching = None
    if args.enable_batching:
        batching = (config_lib.read_batching_parameters(
            args.batching_parameters_file)
            if args.batching_parameters_file
            else config_lib.BatchingParameters(
                num_batch_threads=os.cpu_count() or 1))
    metrics_path = (config_lib.read_monitoring_config(
        args.monitoring_config_file) if args.monitoring_config_file else None)
    for flag in ("rest_api_timeout_in_ms", "rest_api_num_threads",
                 "max_request_bytes", "grpc_max_threads"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag} must be >= 1, received: "
                             f"--{flag}={getattr(args, flag)}")
    for flag in ("rest_api_port", "port"):
        if not 0 <= getattr(args, flag) < 65536:
            raise ValueError(f"--{flag} must be in [0, 65535], received: "
                             f"--{flag}={getattr(args, flag)}")
    if args.port and args.port == args.rest_api_port:
        raise ValueError("--port (gRPC) and --rest_api_port must differ, "
                         f"received: both {args.port}")
    if args.file_system_poll_wait_seconds < 0:
        raise ValueError("--file_system_poll_wait_seconds must be >= 0 (0: "
                         "read the base paths once), "
                         "received: --file_system_poll_wait_seconds="
                         f"{args.file_system_poll_wait_seconds}")
    return ServerOptions(
        models=models, host=args.host, rest_api_port=args.rest_api_port,
        file_system_poll_wait_seconds=args.file_system_poll_wait_seconds,
        model_config_file=args.model_config_file,
        model_config_file_poll_wait_seconds=(
            args.model_config_file_poll_wait_seconds),
        batching=batching,
        rest_api_timeout_in_ms=args.rest_api_timeout_in_ms,
        rest_api_num_threads=args.rest_api_num_threads,
        metrics_path=metrics_path, max_request_bytes=args.max_request_bytes,
        port=args.port, grpc_max_threads=args.grpc_max_threads,
        grpc_channel_arguments=channel_arguments(args.grpc_channel_arguments),
        enable_model_warmup=args.enable_model_warmup,
    )


def channel_arguments(text):
    """`--grpc_channel_arguments` as (key, value) pairs; values that read
    as integers are integers, as tensorflow_model_server passes them.

    >>> channel_arguments("grpc.max_receive_message_length=1024,a=b")
    (('grpc.max_receive_message_length', 1024), ('a', 'b'))
    """
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ValueError("--grpc_channel_arguments must be comma-"
                             "separated key=value pairs, received: "
                             f"--grpc_channel_arguments={text}")
        value = value.strip()
        try:
            value = int(value)
        except ValueError:
            pass
        pairs.append((key.strip(), value))
    return tuple(pairs)


def _error(message):
    """Print a user's mistake as one line; the exit status is 2."""
    print(f"{PROG}: error: {' '.join(str(message).splitlines())}",
          file=sys.stderr)
    return 2


def _address_error(host, port, error, flag="--rest_api_port"):
    if error.errno == errno.EADDRINUSE:
        return (f"{host}:{port} is already in use (another server listens "
                f"there): choose another {flag} or --host")
    reason = error.strerror or error
    return f"cannot listen on {host}:{port} (--host, {flag}): {reason}"


def check_address(host, port):
    """Bind `host:port` for a moment, so that a port in use is reported at
    once, before the models load (seconds), instead of after.

    Raises OSError (errno EADDRINUSE for a port in use) as binding would.

    Example:

    >>> check_address("127.0.0.1", 0)  # any free port: nothing to say
    """
    import socket

    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    # SO_REUSEADDR, as the server sets it: a port whose last connections
    # are in TIME_WAIT is free.
    with socket.create_server(address[:2], family=family):
        pass


def serve(args):
    """Run the server the parsed flags describe until SIGTERM or SIGINT.

    Returns the exit status: 0, or 2 after printing a mistake in the flags
    or files (or a port in use) as one line `keras-attention: error: ...`.
    """
    import asyncio

    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("keras_attention.serving")
    try:
        options = options_from_arguments(args)
    except (OSError, ValueError) as error:
        return _error(error)
    ports = [("--rest_api_port", options.rest_api_port)]
    if options.port:
        ports.append(("--port", options.port))
    for flag, port in ports:
        try:
            check_address(options.host, port)
        except OSError as error:  # socket.gaierror too: an unknown host
            return _error(_address_error(options.host, port, error, flag))
    from keras_attention.serving.server import ModelServer
    from keras_attention.serving.server import run_server

    server = ModelServer(options)
    server.poll()  # the first versions load before the port opens
    for name, model in server.models.items():
        try:
            model.status()
        except Exception:
            log.warning("model %s: no versions under %s yet", name,
                        model.spec.base_path)
    server.start_polling()
    try:
        asyncio.run(run_server(server))
    except OSError as error:
        # Taken between check_address and now (the models loaded between).
        if error.errno != errno.EADDRINUSE:
            raise
        server.close()
        return _error(_address_error(options.host, options.rest_api_port,
                                     error))
    except RuntimeError as error:  # grpcio: "Failed to bind to address"
        if "bind" not in str(error):
            raise
        server.close()
        return _error(f"cannot listen on {options.host}:{options.port} "
                      f"(--host, --port): {error}")
    return 0


def main(argv=None):
    """`python -m keras_attention.serving`: parse `argv` (default:
    `sys.argv[1:]`) as `keras-attention serve`'s flags and `serve`; returns
    the exit status."""
    parser = argparse.ArgumentParser(prog="keras-attention serve",
                                     description=DESCRIPTION)
    add_arguments(parser)
    return serve(parser.parse_args(argv))
