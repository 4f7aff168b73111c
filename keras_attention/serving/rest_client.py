"""The REST client of TF Serving (ours or the real one), on the standard
library's urllib: timeouts, and errors that carry the server's status
and message. Its argument checks and methods are the ones every client
offers; `GrpcClient` (`grpc_client.py`) keeps them and replaces the
transport, and `Client` (`client.py`) picks one of the two by the URL."""

import json
import urllib.error
import urllib.parse
import urllib.request

SCHEMES = ("http://", "https://", "grpc://")


class ServingClientError(Exception):
    """The server answered with an error, or could not be reached.

    `status` is the HTTP status (None when there was no answer, and over
    gRPC); `code` the gRPC status code's name over gRPC."""

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.status = status
        self.code = code


class RestClient:
    """Talks to `url` about `model` over TF Serving's REST API
    (`http://` or `https://`); `GrpcClient` subclasses it for `grpc://`.
    Construct either through `Client`, which picks one by the URL.

    Example:

    >>> client = RestClient("http://localhost:8501", "translator", timeout=5)
    >>> client.model_url(label="stable")
    'http://localhost:8501/v1/models/translator/labels/stable'
    """

    def __init__(self, url, model, timeout=30.0):
        if not isinstance(url, str) or not url.startswith(SCHEMES):
            raise ValueError(f"url must start with http://, https:// or "
                             f"grpc://, received: url={url!r}")
        if not model:
            raise ValueError(f"model must be a model name, received: "
                             f"model={model!r}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, received: "
                             f"timeout={timeout}")
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout

    def model_url(self, version=None, label=None):
        """The REST URL of the model, of one `version` or of a `label`."""
        if version is not None and label is not None:
            raise ValueError(f"give version or label, not both, received: "
                             f"version={version}, label={label!r}")
        url = f"{self.url}/v1/models/{urllib.parse.quote(self.model, '')}"
        if version is not None:
            url += f"/versions/{int(version)}"
        elif label is not None:
            url += f"/labels/{urllib.parse.quote(label, '')}"
        return url

    def _request(self, url, document=None):
        data = None if document is None else json.dumps(document).encode()
        request = urllib.request.Request(
            url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                message = json.loads(body)["error"]
            except (ValueError, KeyError, TypeError):
                message = body.decode("utf-8", "replace")[:500]
            raise ServingClientError(f"{url}: HTTP {error.code}: {message}",
                                     error.code) from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ServingClientError(f"{url}: no answer: {reason}") from None

    def status(self, version=None, label=None):
        """The model's version status (`model_version_status`), as TF
        Serving's `GET /v1/models/NAME` answers it."""
        return self._request(self.model_url(version, label))

    def metadata(self, version=None, label=None):
        """The model's metadata: its signatures' inputs and outputs."""
        return self._request(self.model_url(version, label) + "/metadata")

    def predict(self, instances=None, inputs=None, signature_name=None,
                version=None, label=None):
        """Row format (`instances`) returns `predictions`; columnar
        (`inputs`) returns `outputs`."""
        if (instances is None) == (inputs is None):
            raise ValueError("give exactly one of instances and inputs")
        document = ({"instances": instances} if instances is not None
                    else {"inputs": inputs})
        if signature_name:
            document["signature_name"] = signature_name
        answer = self._request(self.model_url(version, label) + ":predict",
                               document)
        return answer["predictions" if instances is not None else "outputs"]

    def _examples(self, method, examples, context, signature_name, version,
                  label):
        document = {"examples": examples}
        if context is not None:
            document["context"] = context
        if signature_name:
            document["signature_name"] = signature_name
        url = self.model_url(version, label) + f":{method}"
        return self._request(url, document)["results"]

    def classify(self, examples, context=None, signature_name=None,
                 version=None, label=None):
        """`:classify` of tf.Example rows (`examples`, dicts of features):
        the `results`, one list of `[label, score]` pairs per example."""
        return self._examples("classify", examples, context, signature_name,
                              version, label)

    def regress(self, examples, context=None, signature_name=None,
                version=None, label=None):
        """`:regress` of tf.Example rows: the `results`, one value per
        example."""
        return self._examples("regress", examples, context, signature_name,
                              version, label)

    def translate(self, texts, version=None, label=None):
        """Translations of `texts` from an exported translator."""
        return self.predict(instances=list(texts), version=version,
                            label=label)
