"""The server process: the core (`core.py`) behind TF Serving's REST API
(`rest.py`, on aiohttp) and, with `--port`, its gRPC API (`grpc_api.py`,
on grpcio's asyncio server), both in one event loop.

Model calls run on a thread pool (TensorFlow releases the GIL), optionally
through server-side batching. SIGTERM stops accepting new connections on
both APIs while requests already accepted finish.
"""

import asyncio

from keras_attention._extras import require

require(__name__, "serving", "aiohttp")

from aiohttp import web

from keras_attention.serving.core import ModelServer
from keras_attention.serving.core import ServerOptions
from keras_attention.serving.rest import RestApi
from keras_attention.serving.versions import LOG

__all__ = ["ModelServer", "ServerOptions", "run_server"]


async def run_server(server, ready=None):
    """Serve until SIGTERM/SIGINT, then finish accepted requests."""
    import signal

    options = server.options
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    grpc_server = None
    if options.port:
        from keras_attention.serving.grpc_api import start_grpc_server

        grpc_server = await start_grpc_server(server)
    runner = web.AppRunner(RestApi(server).application(), access_log=None,
                           shutdown_timeout=options.shutdown_timeout_seconds)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.rest_api_port)
    try:
        await site.start()
    except OSError:
        if grpc_server is not None:
            await grpc_server.stop(None)
        raise
    LOG.info("REST API listening on http://%s:%d", options.host,
             options.rest_api_port)
    if ready is not None:
        ready()
    await stop.wait()
    LOG.info("shutting down: finishing requests already accepted")
    stopping = [runner.cleanup()]
    if grpc_server is not None:
        stopping.append(grpc_server.stop(options.shutdown_timeout_seconds))
    await asyncio.gather(*stopping)
    server.close()
    LOG.info("stopped")
