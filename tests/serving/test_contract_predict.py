"""TF Serving's REST contract for `:predict` on the numeric model
(tests/serving/numeric_model.py): the row and columnar formats, versions
and labels, and the errors in TF Serving's order and words.

The inputs are small dyadic numbers, so every product and sum is exact in
float32 and the answers are compared for equality.
"""

import numpy as np
import pytest

from tests.serving import http
from tests.serving.numeric_model import expected_y

X = [[1.0, 2.0, 0.5], [-4.0, 0.5, 0.25], [0.0, 0.0, 0.0]]
LATEST = 2
WHERE = [({}, LATEST), ({"version": 1}, 1), ({"version": 2}, 2),
         ({"label": "stable"}, 1), ({"label": "canary"}, 2)]
WHERE_IDS = ["latest", "version 1", "version 2", "stable", "canary"]


def expected_total(x, version):
    return np.sum(np.asarray(x, np.float32), axis=1) + np.float32(version)


def assert_exact(answer, expected):
    np.testing.assert_array_equal(np.asarray(answer, np.float32), expected)


def predict(server_url, document, **where):
    reply = http.call(server_url, "predict", document, **where)
    assert reply.status == 200, reply.raw
    return reply.json


# -- answers -------------------------------------------------------------------

@pytest.mark.parametrize("where, version", WHERE, ids=WHERE_IDS)
def test_row_format(server_url, where, version):
    answer = predict(server_url, {"instances": X}, **where)
    assert set(answer) == {"predictions"}
    assert_exact(answer["predictions"], expected_y(X, version))


@pytest.mark.parametrize("where, version", WHERE, ids=WHERE_IDS)
def test_columnar_format(server_url, where, version):
    answer = predict(server_url, {"inputs": X}, **where)
    assert set(answer) == {"outputs"}
    assert_exact(answer["outputs"], expected_y(X, version))


def test_versions_answer_differently(server_url):
    first = predict(server_url, {"instances": X}, version=1)["predictions"]
    second = predict(server_url, {"instances": X}, version=2)["predictions"]
    assert_exact(np.subtract(second, first), np.ones((3, 2), np.float32))


def test_row_format_with_objects_named_after_the_input(server_url):
    answer = predict(server_url, {"instances": [{"x": row} for row in X]})
    assert_exact(answer["predictions"], expected_y(X, LATEST))


def test_columnar_format_with_a_named_input(server_url):
    answer = predict(server_url, {"inputs": {"x": X}})
    assert_exact(answer["outputs"], expected_y(X, LATEST))


def test_row_format_with_two_outputs_gives_objects(server_url):
    answer = predict(server_url, {"signature_name": "two_outputs",
                                  "instances": X}, version=1)
    rows = answer["predictions"]
    assert [set(row) for row in rows] == [{"y", "total"}] * 3
    assert_exact([row["y"] for row in rows], expected_y(X, 1))
    assert_exact([row["total"] for row in rows], expected_total(X, 1))


def test_columnar_format_with_two_outputs_gives_an_object(server_url):
    answer = predict(server_url, {"signature_name": "two_outputs",
                                  "inputs": {"x": X}}, version=1)
    outputs = answer["outputs"]
    assert set(outputs) == {"y", "total"}
    assert_exact(outputs["y"], expected_y(X, 1))
    assert_exact(outputs["total"], expected_total(X, 1))


def test_signature_name_selects_the_signature(server_url):
    named = predict(server_url, {"signature_name": "serving_default",
                                 "instances": X})
    assert named == predict(server_url, {"instances": X})
    # An empty name is the default signature, as in TF Serving's ModelSpec.
    assert named == predict(server_url, {"signature_name": "", "instances": X})
    doubled = predict(server_url, {"signature_name": "sequence",
                                   "instances": X})
    assert_exact(doubled["predictions"], 2 * np.asarray(X, np.float32))


@pytest.mark.parametrize("length", [1, 2, 7])
def test_sequence_takes_any_length(server_url, length):
    rows = [[0.5 * i for i in range(length)], [-1.0] * length]
    answer = predict(server_url, {"signature_name": "sequence",
                                  "instances": rows})
    assert answer == {"predictions": [[1.0 * i for i in range(length)],
                                      [-2.0] * length]}


def test_extra_keys_are_ignored(server_url):
    answer = predict(server_url, {"inputs": {"x": X, "unused": [1, 2]},
                                  "output_filter": ["nothing"], "other": 3})
    assert_exact(answer["outputs"], expected_y(X, LATEST))
    answer = predict(server_url, {"instances": X, "other": {"a": 1}})
    assert_exact(answer["predictions"], expected_y(X, LATEST))


def test_gzip_encoded_body(server_url):
    url = http.model_url(server_url, "numeric", version=1) + ":predict"
    reply = http.post_gzip(url, {"instances": X})
    assert reply.status == 200
    assert_exact(reply.json["predictions"], expected_y(X, 1))


# -- errors --------------------------------------------------------------------

ERRORS = {
    "empty body": (b"", "JSON Parse error: The document is empty"),
    "blank body": (b"  \n", "JSON Parse error: The document is empty"),
    "malformed JSON": (b'{"instances": [[1, 2,', "JSON Parse error: "),
    "not an object": (b"[[1.0, 2.0, 0.5]]", "Is not object"),
    "non-string signature_name": (
        {"signature_name": 1, "instances": X},
        "'signature_name' key must be a string value."),
    "unknown signature": (
        {"signature_name": "nope", "instances": X},
        'Serving signature name: "nope" not found in signature def'),
    "both instances and inputs": (
        {"instances": X, "inputs": X},
        "expecting only one of 'inputs' or 'instances' keys to exist"),
    "neither instances nor inputs": (
        {"signature_name": "serving_default"},
        "Missing 'inputs' or 'instances' key"),
    "empty instances": ({"instances": []}, "No values in 'instances' array"),
    "instances not a list": (
        {"instances": {"a": 1}},
        "Excepting 'instances' to be an list/array"),
    "wrong input name": (
        {"instances": [{"bad": [1.0, 2.0, 0.5]}]},
        "does not have named input: bad"),
    "missing named input": (
        {"inputs": {"bad": X}}, "Missing named input: x in 'inputs' object."),
    "instances of different sizes": (
        {"instances": [[1.0, 2.0, 0.5], [1.0, 2.0]]},
        "Expecting tensor size: 3 but got: 2"),
    "ragged columnar input": (
        {"signature_name": "sequence", "inputs": [[1.0, 2.0], [1.0, 2.0, 3.0]]},
        "Encountered list at unexpected size: 3 at level: 1 expected size: 2"),
    "string for float": (
        {"instances": [["a", 2.0, 0.5]]},
        'JSON Value: "a" Type: String is not of expected type: float'),
    "float32 precision": (
        {"instances": [[16777217, 2.0, 0.5]]},
        "Cannot convert JSON value: 16777217 to float without loss of "
        "precision."),
    # IsLosslessDecimal takes JSON integers up to 2^24 - 1 only.
    "integer of 2^24 for float": (
        {"instances": [[16777216, 2.0, 0.5]]},
        "Cannot convert JSON value: 16777216 to float without loss of "
        "precision."),
    "float beyond float32": (
        {"inputs": [[1e39, 2.0, 0.5]]}, "to float without loss of precision."),
    "bad element of a plain list": (
        {"instances": [[1.0, 2.0, 0.5], [1.0, True, 0.5]]},
        "Failed to process element: 1 of 'instances' list. Error: "),
    "instances of different shapes": (
        {"instances": [[1.0, 2.0, 0.5], [[1.0, 2.0, 0.5]]]},
        "Expecting shape [3] but got: [1,3]"),
    "list deeper than the first element": (
        {"signature_name": "sequence", "inputs": [[1.0, [2.0]]]},
        "Encountered list at unexpected level: 2 expected < 2"),
    "value above the first element's depth": (
        {"signature_name": "sequence", "inputs": [[1.0, 2.0], 3.0]},
        "found at incorrect level: 2 in the JSON DOM. Expected at level: 2"),
}


@pytest.mark.parametrize("body, message", ERRORS.values(), ids=ERRORS.keys())
def test_request_errors(server_url, body, message):
    reply = http.call(server_url, "predict", body)
    assert reply.status == 400
    assert reply.content_type == "application/json"
    assert message in reply.error


def test_wrong_shape_is_a_400(server_url):
    # TF Serving reports the session's shape error; the words differ.
    reply = http.call(server_url, "predict", {"inputs": [[1.0, 2.0]]})
    assert reply.status == 400
    assert reply.error


@pytest.mark.parametrize("where, status, message", [
    ({"model": "foo"}, 404, "Servable not found for request: Latest(foo)"),
    ({"version": 50}, 404,
     "Servable not found for request: Specific(numeric, 50)"),
    ({"label": "nope"}, 400, "Unrecognized servable version label: nope"),
], ids=["unknown model", "unknown version", "unknown label"])
def test_servable_errors(server_url, where, status, message):
    reply = http.call(server_url, "predict", {"instances": X}, **where)
    assert reply.status == status
    assert message in reply.error


# Parse JSON -> read signature_name -> find the model and the signature ->
# convert the inputs.
ORDER = {
    "malformed JSON to an unknown model": (
        b"{", 400, "JSON Parse error: "),
    "empty body to an unknown model": (
        b"", 400, "JSON Parse error: The document is empty"),
    "non-object to an unknown model": (b"[1]", 400, "Is not object"),
    "bad signature_name to an unknown model": (
        {"signature_name": [], "instances": X}, 400,
        "'signature_name' key must be a string value."),
    "unknown signature of an unknown model": (
        {"signature_name": "nope", "instances": X}, 404,
        "Servable not found for request: Latest(foo)"),
    "bad inputs to an unknown model": (
        {"instances": []}, 404,
        "Servable not found for request: Latest(foo)"),
}


@pytest.mark.parametrize("body, status, message", ORDER.values(),
                         ids=ORDER.keys())
def test_order_of_checks(server_url, body, status, message):
    reply = http.call(server_url, "predict", body, model="foo")
    assert reply.status == status
    assert message in reply.error


def test_unknown_signature_is_checked_before_the_inputs(server_url):
    reply = http.call(server_url, "predict", {"signature_name": "nope",
                                              "instances": []})
    assert reply.status == 400
    assert 'Serving signature name: "nope" not found' in reply.error
