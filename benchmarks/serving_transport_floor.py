"""What a request costs the transport alone, before any model runs: an
empty REST server (aiohttp) against empty gRPC servers (grpcio's asyncio
and thread-pool servers), each in its own process, under closed-loop load
from this one. Per request: the server's CPU time (from /proc, all its
threads), this client's CPU time, and the throughput.

This is the measurement behind the README's argument that gRPC cannot be
2x REST in a Python server: if the server's transport floor is higher
for gRPC than for REST, no request path built on top closes the gap.

Run: `python benchmarks/serving_transport_floor.py [--seconds 4]
[--concurrency 32]`. Linux only (/proc). Prints a table and writes
`benchmarks/results/serving_transport_floor.json`.
"""

import argparse
import asyncio
import concurrent.futures
import math
import os
import pathlib
import socket
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import harness  # noqa: E402

SERVERS = ("aiohttp", "grpc-asyncio", "grpc-threads")
BODY = b'{"instances": [[0.5, -1.0, 2.0]]}'
ANSWER = b'{"predictions": [[1.0, 2.0]]}'


# -- the servers (run in a child process: `--serve KIND PORT`) -----------------

def serve(kind, port):
    import grpc

    def echo(data, context):
        return data

    async def echo_async(data, context):
        return data

    if kind == "aiohttp":
        from aiohttp import web

        async def answer(request):
            await request.read()
            return web.Response(body=ANSWER, content_type="application/json")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        web.run_app(app, host="127.0.0.1", port=port, access_log=None,
                    print=None)
    elif kind == "grpc-asyncio":
        async def main():
            server = grpc.aio.server(handlers=[
                grpc.method_handlers_generic_handler("floor", {
                    "Echo": grpc.unary_unary_rpc_method_handler(echo_async)})])
            server.add_insecure_port(f"127.0.0.1:{port}")
            await server.start()
            await server.wait_for_termination()

        asyncio.run(main())
    else:
        server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(8), handlers=[
                grpc.method_handlers_generic_handler("floor", {
                    "Echo": grpc.unary_unary_rpc_method_handler(echo)})])
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        server.wait_for_termination()


# -- the clients -----------------------------------------------------------------

async def closed_loop(ask, concurrency, seconds):
    count = 0
    deadline = time.perf_counter() + seconds

    async def client():
        nonlocal count
        while time.perf_counter() < deadline:
            await ask()
            count += 1

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return count


async def load(kind, port, concurrency, seconds):
    if kind == "aiohttp":
        import aiohttp

        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def ask():
                async with session.post(
                        f"http://127.0.0.1:{port}/v1/models/m:predict",
                        data=BODY) as reply:
                    await reply.read()

            return await closed_loop(ask, concurrency, seconds)
    import grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        echo = channel.unary_unary("/floor/Echo")

        async def ask():
            await echo(BODY)

        return await closed_loop(ask, concurrency, seconds)


def cpu_seconds(pid):
    """User + system CPU time of process `pid`, all its threads."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1]
    user, system = fields.split()[11:13]
    return (int(user) + int(system)) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port, process, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"no server on port {port} after {timeout} s")


def measure(kind, concurrency, seconds):
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--serve", kind,
                                str(port)])
    try:
        wait_for_port(port, process)
        asyncio.run(load(kind, port, 4, min(seconds, 0.5)))  # warm up
        server_before, client_before = cpu_seconds(process.pid), \
            time.process_time()
        requests = asyncio.run(load(kind, port, concurrency, seconds))
        server = cpu_seconds(process.pid) - server_before
        client = time.process_time() - client_before
    finally:
        process.kill()
        process.wait()
    return {"server": kind, "concurrency": concurrency,
            "requests": requests, "requests_per_s": requests / seconds,
            "server_us_per_request": 1e6 * server / requests,
            "client_us_per_request": 1e6 * client / requests}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="load duration per server (default: 4)")
    parser.add_argument("--concurrency", type=int, default=32,
                        help="concurrent requests (default: 32)")
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "PORT"),
                        help=argparse.SUPPRESS)
    harness.add_results_arguments(parser, "serving_transport_floor")
    args = parser.parse_args()
    if args.serve:
        kind, port = args.serve
        if kind not in SERVERS:
            parser.error(f"--serve KIND must be one of {SERVERS}, received: "
                         f"{kind}")
        serve(kind, int(port))
        return
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        parser.error(f"--seconds must be a positive number, received: "
                     f"{args.seconds}")
    if args.concurrency < 1:
        parser.error(f"--concurrency must be >= 1, received: "
                     f"{args.concurrency}")
    rows = [measure(kind, args.concurrency, args.seconds) for kind in SERVERS]
    print("\n| server | req/s | server CPU us/request | client CPU us/request"
          " |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['server']} | {row['requests_per_s']:.0f} | "
              f"{row['server_us_per_request']:.0f} | "
              f"{row['client_us_per_request']:.0f} |")
    harness.write_results(args.results_name or "serving_transport_floor",
                          rows, directory=args.results_dir,
                          seconds=args.seconds)


if __name__ == "__main__":
    main()
