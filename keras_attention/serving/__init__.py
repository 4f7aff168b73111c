"""A TF Serving-compatible server for SavedModels (its REST and gRPC
APIs), and its client.

`keras-attention serve --model_base_path models/translator --model_name
translator` serves the exported translator; `Client` speaks the same REST
(`http://`) or gRPC (`grpc://`) API to this server or to a real
`tensorflow_model_server`. The server
knows nothing of the translator: it serves any SavedModel.
"""

from keras_attention.serving.client import Client
from keras_attention.serving.client import ServingClientError

__all__ = ["Client", "ServingClientError"]
