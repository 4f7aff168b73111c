"""A client for TF Serving (ours or the real one): `Client(url, model)`
speaks its REST API (`http://`, `https://`; `rest_client.py`) or its
gRPC API (`grpc://host:port`; `grpc_client.py`) with the same methods
and answers. Timeouts, and errors that carry the server's status and
message (`ServingClientError`).

The choice by URL lives here, so that neither client imports the other's
module for it; the gRPC client (TensorFlow, grpcio) is imported only when
a `grpc://` URL asks for it.
"""

import abc

from keras_attention.serving.rest_client import SCHEMES  # noqa: F401
from keras_attention.serving.rest_client import RestClient
from keras_attention.serving.rest_client import ServingClientError

__all__ = ["Client", "ServingClientError"]


class Client(RestClient, metaclass=abc.ABCMeta):
    """Talks to `url` about `model`: `http://localhost:8501` (REST) or
    `grpc://localhost:8500` (gRPC; a `GrpcClient`, same methods and
    answers). Every client is a `Client` (`isinstance`).

    Example:

    >>> client = Client("http://localhost:8501", "translator", timeout=5)
    >>> client.model_url(label="stable")
    'http://localhost:8501/v1/models/translator/labels/stable'
    >>> type(Client("grpc://localhost:8500", "translator")).__name__
    'GrpcClient'
    >>> isinstance(Client("grpc://localhost:8500", "translator"), Client)
    True
    """

    def __new__(cls, url, *args, **kwargs):
        if cls is Client and isinstance(url, str) and url.startswith(
                "grpc://"):
            from keras_attention.serving.grpc_client import GrpcClient

            return GrpcClient(url, *args, **kwargs)
        return super().__new__(cls)

    @classmethod
    def __subclasshook__(cls, subclass):
        # The gRPC client subclasses the REST one, not this factory.
        if cls is Client and issubclass(subclass, RestClient):
            return True
        return NotImplemented
