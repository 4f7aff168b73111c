"""Prometheus metrics under TF Serving's names and layout:
`:tensorflow:serving:request_count{model_name,status}` (a counter) and the
`:tensorflow:serving:request_latency` histogram (microseconds, labels
model_name, API, entrypoint "REST" or "GRPC"; successful requests only, as TF
Serving records it).

The page is Prometheus's text format as TF Serving writes it: `# TYPE`
lines without `# HELP`, counters named without a `_total` suffix. That
is a few lines of text; prometheus_client cannot write it (it renames a
counter family to `..._total`), so the page is written here.
"""

import bisect
import threading

# TF Serving's latency buckets: 10 * 1.8^i microseconds, i < 33.
BUCKETS = [10 * 1.8**i for i in range(33)]
REQUEST_COUNT = ":tensorflow:serving:request_count"
REQUEST_LATENCY = ":tensorflow:serving:request_latency"


def _labels(pairs):
    escaped = (
        f'{key}="{str(value).replace(chr(92), chr(92) * 2)}"'
        .replace("\n", "\\n")
        for key, value in pairs
    )
    return "{" + ",".join(escaped) + "}"


def _number(value):
    return f"{value:.6g}" if isinstance(value, float) else str(value)


class Metrics:
    """Counts requests by model and status; times successful ones."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = {}  # (model, status) -> requests
        # (model, api, entrypoint) -> [per-bucket counts..., sum]
        self._latency = {}

    def record(self, model_name, api, code, seconds, entrypoint="REST"):
        if not model_name:
            return
        with self._lock:
            key = (model_name, code)
            self._counts[key] = self._counts.get(key, 0) + 1
            if code != "OK":
                return
            micros = seconds * 1e6
            row = self._latency.setdefault(
                (model_name, api or "", entrypoint),
                [0] * (len(BUCKETS) + 1) + [0.0])
            row[bisect.bisect_left(BUCKETS, micros)] += 1
            row[-1] += micros

    def exposition(self):
        """The metrics page, `text/plain` (Prometheus format 0.0.4)."""
        with self._lock:
            counts = dict(self._counts)
            latency = {key: list(row) for key, row in self._latency.items()}
        lines = [f"# TYPE {REQUEST_COUNT} counter"]
        for (model, status), value in sorted(counts.items()):
            labels = _labels([("model_name", model), ("status", status)])
            lines.append(f"{REQUEST_COUNT}{labels} {value}")
        lines.append(f"# TYPE {REQUEST_LATENCY} histogram")
        for (model, api, entrypoint), row in sorted(latency.items()):
            common = [("model_name", model), ("API", api),
                      ("entrypoint", entrypoint)]
            cumulative = 0
            for bound, value in zip([*BUCKETS, "+Inf"], row[:-1]):
                cumulative += value
                labels = _labels([*common, ("le", _number(bound))])
                lines.append(f"{REQUEST_LATENCY}_bucket{labels} {cumulative}")
            lines.append(f"{REQUEST_LATENCY}_sum{_labels(common)} "
                         f"{_number(row[-1])}")
            lines.append(f"{REQUEST_LATENCY}_count{_labels(common)} "
                         f"{cumulative}")
        return ("\n".join(lines) + "\n").encode()
