"""Progress of a long command (sentences done, sentences per second) on
stderr: redrawn in place on a terminal, a plain line now and then
otherwise."""

import sys
import time


class Progress:
    """Sentences done and sentences per second, reported on `stream`.

    On a terminal, one line redrawn in place with `\\r` (with a bar when
    `total` is known); otherwise a plain line every `interval` seconds,
    and one at `close()`.

    Args:
        label: what each line starts with (the command).
        total: the number of sentences, or None when not known.
        stream: where to write (default: `sys.stderr`).
        interval: seconds between plain lines.
        clock: returns seconds; `time.monotonic` by default.

    Example:

    >>> import io
    >>> seconds = iter([0.0, 4.0, 12.0, 16.0, 16.0])
    >>> stream = io.StringIO()
    >>> progress = Progress("evaluate", total=400, stream=stream,
    ...                     clock=lambda: next(seconds))
    >>> progress.update(100)  # 4 s in: not yet a line
    >>> progress.update(300)  # 12 s in
    >>> progress.update(400)
    >>> progress.close()
    >>> print(stream.getvalue(), end="")
    evaluate: 300/400 sentences, 25.0 sentences/s
    evaluate: 400/400 sentences in 16.0 s, 25.0 sentences/s
    """

    BAR = 24  # characters

    def __init__(self, label, total=None, stream=None, interval=10.0,
                 clock=time.monotonic):
        self.label = label
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.clock = clock
        self.terminal = bool(getattr(self.stream, "isatty", bool)())
        self.done = 0
        self.started = self._last = clock()
        self._width = 0  # of the line drawn on the terminal

    def _count(self):
        if self.total is None:
            return f"{self.done} sentences"
        return f"{self.done}/{self.total} sentences"

    def _rate(self, seconds):
        return f"{self.done / seconds if seconds > 0 else 0.0:.1f} sentences/s"

    def _draw(self, now):
        bar = ""
        if self.total:
            filled = min(self.BAR, self.BAR * self.done // self.total)
            bar = "[" + "#" * filled + "-" * (self.BAR - filled) + "] "
        line = (f"{self.label}: {bar}{self._count()}, "
                f"{self._rate(now - self.started)}")
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def update(self, done):
        """`done` sentences are translated (a running count)."""
        self.done = done
        now = self.clock()
        if self.terminal:
            if now - self._last >= 0.1 or done == self.total:
                self._draw(now)
                self._last = now
        elif now - self._last >= self.interval:
            self.stream.write(f"{self.label}: {self._count()}, "
                              f"{self._rate(now - self.started)}\n")
            self.stream.flush()
            self._last = now

    def clear(self):
        """Rub out the terminal line (before other output goes there)."""
        if self.terminal and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def close(self):
        """Report the end: sentences, seconds, sentences per second."""
        seconds = self.clock() - self.started
        self.clear()
        self.stream.write(f"{self.label}: {self._count()} in {seconds:.1f} "
                          f"s, {self._rate(seconds)}\n")
        self.stream.flush()
