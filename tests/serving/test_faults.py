"""Our server given bad requests, too much work, and SIGTERM.

Every bad request gets its documented 4xx and a JSON `{"error": ...}`
body, and the server answers the next good request. The batching
parameters of the fault server make its queue observable from outside:
batches of at most 2 rows, one batch thread, one enqueued batch and a
60 s batch timeout, so a lone one-row request waits in the open batch
(deterministically: the 504 and 503 cases), while good requests of two
rows fill a batch and run at once.

These tests start our server (skipped with TF_SERVING_URL set).
"""

import http.client
import json
import signal
import socket
import threading
import time
import urllib.parse
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.serving.conftest import EXTERNAL_URL
from tests.serving.load_tools import PREDICT
from tests.serving.load_tools import answered_version
from tests.serving.load_tools import get_json
from tests.serving.load_tools import serve
from tests.serving.load_tools import wait_for
from tests.serving.load_tools import write_batching_file
from tests.serving.model_repository import TEXTS

pytestmark = [
    pytest.mark.skipif(EXTERNAL_URL is not None,
                       reason="fault tests are about our server"),
    # One xdist worker runs a module, so its servers start once.
    pytest.mark.xdist_group("serving"),
]

MAX_REQUEST_BYTES = 100_000
TIMEOUT_MS = 5000
GOOD = [[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]]  # two rows: a full batch
NUMERIC = PREDICT.format("numeric")


@pytest.fixture(scope="module")
def server(repository, tmp_path_factory):
    """The numeric model (version 2) with the batching described above."""
    parameters = write_batching_file(
        tmp_path_factory.mktemp("faults") / "batching.txt",
        max_batch_size=2, batch_timeout_micros=60_000_000,
        max_enqueued_batches=1, num_batch_threads=1)
    with serve(f"--model_base_path={repository / 'numeric'}",
               "--model_name=numeric", "--enable_batching",
               f"--batching_parameters_file={parameters}",
               f"--max_request_bytes={MAX_REQUEST_BYTES}",
               f"--rest_api_timeout_in_ms={TIMEOUT_MS}") as running:
        yield running


def post(url, body, headers=None, path=NUMERIC):
    """POST raw bytes (or a JSON-able document): (status, headers, body)."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port,
                                            timeout=60)
    try:
        connection.request("POST", path, body, headers or {})
        reply = connection.getresponse()
        return reply.status, reply.headers, reply.read()
    finally:
        connection.close()


def predict_rows(url, rows):
    """(status, version that answered or the error message)."""
    status, _, body = post(url, {"instances": rows})
    document = json.loads(body)
    if status == 200:
        return status, answered_version(rows, document["predictions"])
    return status, document["error"]


def assert_still_answers(server):
    assert predict_rows(server.url, GOOD) == (200, 2), server.log_tail()


def nested(depth):
    return b'{"instances": ' + b"[" * depth + b"1" + b"]" * depth + b"}"


BAD_REQUESTS = {
    # name: (body, headers, path, HTTP status, part of the message)
    "malformed JSON": (b'{"instances": [[1, 2, 3]', {}, None, 400,
                       "JSON Parse error"),
    "empty body": (b"", {}, None, 400,
                   "JSON Parse error: The document is empty"),
    "not an object": (b"[1, 2, 3]", {}, None, 400, "Is not object"),
    "invalid UTF-8": (b'{"instances": ["\xff"]}', {}, None, 400,
                      "JSON Parse error"),
    "string for a float": ({"instances": [["a", "b", "c"]]}, {}, None, 400,
                           "is not of expected type: float"),
    "bool for a float": ({"instances": [[True, 1.0, 2.0]]}, {}, None, 400,
                         "is not of expected type: float"),
    "unknown input": ({"instances": [{"z": [1.0, 2.0, 3.0]}]}, {}, None, 400,
                      "does not have named input: z"),
    "missing input": ({"inputs": {"z": GOOD}}, {}, None, 400,
                      "Missing named input: x in 'inputs' object."),
    "unknown signature": ({"signature_name": "nope", "instances": GOOD}, {},
                          None, 400, 'Serving signature name: "nope" not '
                          "found in signature def"),
    "signature name not a string": ({"signature_name": 5, "instances": GOOD},
                                    {}, None, 400, "'signature_name' key "
                                    "must be a string value."),
    "ragged rows": ({"instances": [[1.0, 2.0, 3.0], [1.0, 2.0]]}, {}, None,
                    400, "Expecting tensor size: 3 but got: 2"),
    # The server does not compare shapes with the signature's (TF Serving
    # does not); the model refuses, and its error comes back as a 400.
    "wrong row width": ({"instances": [[1.0, 2.0], [3.0, 4.0]]}, {}, None,
                        400, "Matrix size-incompatible: In[0]: [2,2], In[1]: "
                        "[3,2]"),
    "neither key": ({"rows": GOOD}, {}, None, 400,
                    "Missing 'inputs' or 'instances' key"),
    "both keys": ({"inputs": GOOD, "instances": GOOD}, {}, None, 400,
                  "expecting only one of 'inputs' or 'instances' keys"),
    "no instances": ({"instances": []}, {}, None, 400,
                     "No values in 'instances' array"),
    "unknown model": ({"instances": GOOD}, {}, PREDICT.format("nope"), 404,
                      "Servable not found for request: Latest(nope)"),
    "more rows than max_batch_size": (
        {"instances": GOOD + GOOD[:1]}, {}, None, 400,
        "Task size 3 is larger than maximum input batch size 2"),
    "body over the limit": (
        b'{"instances": [' + b"[1.0, 2.0, 3.0], " * 10_000 + b"[1, 2, 3]]}",
        {}, None, 413, f"limit of {MAX_REQUEST_BYTES} bytes"),
    "gzip body that is not gzip": (b"plain text", {"Content-Encoding": "gzip"},
                                   None, 400, "Failed to read the request "
                                   "body"),
    "100000 open brackets": (b"[" * 100_000, {}, None, 400,
                             "JSON Parse error"),
    "valid JSON nested 5000 deep": (nested(5000), {}, None, 400,
                                    "JSON Parse error"),
    "instances of rank 99": (nested(100), {}, None, 400,
                             "tensors of rank above 32"),
}


@pytest.mark.parametrize("body, headers, path, status, message",
                         list(BAD_REQUESTS.values()), ids=list(BAD_REQUESTS))
def test_bad_request_gets_its_4xx_and_the_server_keeps_answering(
        server, body, headers, path, status, message):
    answer_status, answer_headers, answer = post(
        server.url, body, headers, path or NUMERIC)
    assert (answer_status, answer_headers["Content-Type"]) == (
        status, "application/json"), answer[:300]
    error = json.loads(answer)
    assert list(error) == ["error"] and isinstance(error["error"], str)
    assert message in error["error"]
    assert_still_answers(server)


def server_memory_peak(server):
    """The server process's peak resident memory (VmHWM), in bytes."""
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def gzip_of_zeros(size):
    """`size` zero bytes, gzip-compressed a megabyte at a time."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = bytes(1 << 20)
    parts = [compressor.compress(chunk) for _ in range(size >> 20)]
    return b"".join(parts) + compressor.flush()


def test_gzip_bomb_is_refused_without_inflating_it(server):
    bomb = gzip_of_zeros(256 << 20)  # ~260 KB that inflate to 256 MB
    assert len(bomb) < 300_000
    peak = server_memory_peak(server)

    status, _, body = post(server.url, bomb, {"Content-Encoding": "gzip"})

    assert status == 413, body[:300]
    assert f"limit of {MAX_REQUEST_BYTES} bytes" in json.loads(body)["error"]
    assert server_memory_peak(server) - peak < 100 << 20
    assert_still_answers(server)


def test_request_over_the_deadline_answers_504(server):
    started = time.monotonic()
    status, message = predict_rows(server.url, GOOD[:1])  # waits in a batch
    assert status == 504, message
    assert time.monotonic() - started >= TIMEOUT_MS / 1000
    # The abandoned task still holds a place in the open batch; a row
    # that fills it runs, and the abandoned one is skipped.
    assert predict_rows(server.url, [[4.0, 4.0, 4.0]]) == (200, 2)
    assert_still_answers(server)


def test_full_batching_queue_answers_503(server):
    one, other = [[0.5, 0.5, 0.5]], [[-1.0, 0.0, 1.0]]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(predict_rows, server.url, one)

        def refused():
            # Two rows do not fit the open batch of `waiting`, and that
            # batch is the one allowed in the queue. Until `waiting`
            # arrives, two rows fill a batch of their own and answer 200.
            nonlocal waiting
            if waiting.done():  # it came while such a batch was queued
                assert waiting.result()[0] == 503, waiting.result()
                waiting = pool.submit(predict_rows, server.url, one)
            status, answer = predict_rows(server.url, GOOD)
            assert status in (200, 503), answer
            return answer if status == 503 else None

        message = wait_for(refused, timeout=30, what="a 503")
        assert message == ("The batch scheduling queue to which this task "
                           "was submitted is full; currently 1 batches "
                           "enqueued and max_enqueued_batches is 1")
        assert not waiting.done()
        assert predict_rows(server.url, other) == (200, 2)  # fills it
        assert waiting.result(timeout=60) == (200, 2)
    assert_still_answers(server)


def connection_refused(url):
    address = urllib.parse.urlsplit(url)
    try:
        socket.create_connection((address.hostname, address.port),
                                 timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_sigterm_finishes_accepted_requests_then_exits(repository, tmp_path):
    """Four translator requests wait together in one batch (4 s batch
    timeout) when SIGTERM comes: new connections are refused at once,
    the four are answered, and the server exits with 0."""
    parameters = write_batching_file(
        tmp_path / "batching.txt", max_batch_size=64,
        batch_timeout_micros=4_000_000, max_enqueued_batches=10,
        num_batch_threads=1)
    expected = json.loads((repository / "translations.json").read_text())
    texts = [TEXTS[-1], TEXTS[0], TEXTS[2], TEXTS[-1]]
    with serve(f"--model_base_path={repository / 'translator'}",
               "--model_name=translator", "--enable_batching",
               f"--batching_parameters_file={parameters}",
               model="translator") as running:
        address = urllib.parse.urlsplit(running.url)
        sent = threading.Semaphore(0)

        def translate(text):
            connection = http.client.HTTPConnection(
                address.hostname, address.port, timeout=120)
            try:
                connection.request("POST", PREDICT.format("translator"),
                                   json.dumps({"instances": [text] * 4}).encode())
                sent.release()
                reply = connection.getresponse()
                return reply.status, json.loads(reply.read())
            finally:
                connection.close()

        with ThreadPoolExecutor(len(texts)) as pool:
            answers = [pool.submit(translate, text) for text in texts]
            for _ in texts:
                assert sent.acquire(timeout=60)
            # Connections are accepted in order: once this later request
            # is answered, the server has taken the four before it.
            assert get_json(running.url, "/v1/models/translator")[0] == 200
            running.process.send_signal(signal.SIGTERM)
            wait_for(lambda: connection_refused(running.url), timeout=30,
                     what="new connections to be refused")
            unfinished = sum(not answer.done() for answer in answers)
            replies = [answer.result(timeout=120) for answer in answers]
        assert running.process.wait(timeout=60) == 0, running.log_tail()

    assert unfinished == len(texts), "answered before SIGTERM took effect"
    for text, (status, body) in zip(texts, replies):
        assert status == 200, body
        assert body["predictions"] == [expected[text]] * 4
