"""Progress for people: a bar per stage on a terminal, a line now and then in a log.

A :class:`Reporter` is a progress callback of the library (``progress(stage, done, total)``,
:data:`coreselect.selection.spec.Progress`) that draws it: on a terminal a tqdm bar per stage (its
elapsed time kept moving while a stage waits), elsewhere (a pipe, a log file, CI) one plain
line per stage every ``interval`` seconds, as pip and Dask do, and a last line when a stage
that was reported ends. Stages without counts (loading a file, starting a cluster) are
:meth:`Reporter.stage` blocks. The core never draws anything: it calls the callback it is
given, and the command line passes a Reporter (``-q``: none).

``$CORESELECT_PROGRESS_INTERVAL`` sets the seconds between lines in a log (default
:data:`DEFAULT_INTERVAL`; ``0``: a line at every update; ``off``: no lines).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from typing import IO, Iterator, Mapping

#: Seconds between two lines of a stage in a log (stages shorter than this print nothing).
DEFAULT_INTERVAL = 10.0
INTERVAL_ENV = "CORESELECT_PROGRESS_INTERVAL"
_TTY_REFRESH = 0.5  # seconds between redraws of a terminal bar that gets no update

__all__ = ["Reporter", "DEFAULT_INTERVAL", "INTERVAL_ENV", "interval_from_env", "format_seconds"]


def interval_from_env(default: float = DEFAULT_INTERVAL) -> float:
    """The seconds of ``$CORESELECT_PROGRESS_INTERVAL`` (``inf`` for ``off``; the default
    when unset or not a number)."""
    raw = os.environ.get(INTERVAL_ENV, "").strip().lower()
    if raw in ("off", "none", "never"):
        return math.inf
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if value >= 0 and not math.isnan(value) else default


def format_seconds(seconds: float) -> str:
    """``9.2 s``, ``3 min 05 s``, ``1 h 02 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class _Stage:
    def __init__(self, label: str, total: int | None, now: float, unit: str = ""):
        self.label = label
        self.unit = unit  # "B": done and total are bytes (shown in MiB, with MiB/s)
        self.done = 0
        self.total = total
        self.started = now
        self.last_line = now  # a log's first line comes one interval after the start
        self.lines = 0
        self.bar = None

    def _count(self, n: int) -> str:
        return f"{n / 2**20:.1f} MiB" if self.unit == "B" else str(n)

    def text(self, now: float, final: bool = False) -> str:
        elapsed = now - self.started
        if final:
            count = f" {self._count(self.done)}/{self._count(self.total)}" if self.total else ""
            return f"{self.label}{count} done in {format_seconds(elapsed)}"
        if not self.total:
            return f"{self.label}: {format_seconds(elapsed)} elapsed"
        parts = [f"{self.label} {self._count(self.done)}/{self._count(self.total)} "
                 f"({100 * self.done / self.total:.0f}%)"]
        if self.done > 0 and elapsed > 0:
            rate = self.done / elapsed
            if self.unit == "B":
                parts.append(f"{rate / 2**20:.3g} MiB/s")
            else:
                parts.append(f"{rate:.3g}/s" if rate >= 1 else f"{1 / rate:.3g} s each")
        parts.append(f"{format_seconds(elapsed)} elapsed")
        if 0 < self.done < self.total:
            parts.append(f"~{format_seconds(elapsed * (self.total - self.done) / self.done)} left")
        return ", ".join(parts)


class Reporter:
    """A progress callback that shows itself: ``reporter(stage, done, total)``.

    Parameters
    ----------
    enabled : bool
        False: draw nothing (``-q``).
    stream : file, optional
        Where to draw (default ``sys.stderr``, looked up at each write).
    tty : bool, optional
        Draw bars (True) or lines (False); default: whether ``stream`` is a terminal.
    interval : float, optional
        Seconds between the lines of a stage in a log; default from
        ``$CORESELECT_PROGRESS_INTERVAL`` (:func:`interval_from_env`).
    labels : mapping, optional
        Stage name -> what to call it (e.g. ``{"select": "greedy steps"}``).
    units : mapping, optional
        Stage name -> ``"B"`` for stages that count bytes (drawn in MiB with MiB/s).
    prefix : str
        Starts every line (``"coreselect: "``).

    Notes
    -----
    While a stage is open a small thread keeps its elapsed time moving; it ends with the last
    open stage. :meth:`close` (or the context manager) ends the stages a failure left open.
    """

    def __init__(self, enabled: bool = True, stream: IO[str] | None = None, tty: bool | None = None,
                 interval: float | None = None, labels: Mapping[str, str] | None = None,
                 prefix: str = "coreselect: ", units: Mapping[str, str] | None = None):
        self.enabled = enabled
        self.units = dict(units or {})
        self._stream = stream
        self.tty = _is_tty(self.stream) if tty is None else bool(tty)
        self.interval = interval_from_env() if interval is None else float(interval)
        self.labels = dict(labels or {})
        self.prefix = prefix
        self._stages: dict[str, _Stage] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr

    # -- the callback ---------------------------------------------------------------------
    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        with self._lock:
            now = time.monotonic()
            if total <= 0:  # nothing to count (no parts left to run): no stage to show
                if stage in self._stages:
                    self._finish(stage, now)
                return
            s = self._open(stage, total, now)
            s.done, s.total = int(done), int(total)
            if s.total and s.done >= s.total:
                self._finish(stage, now)
                return
            if s.bar is not None:
                s.bar.total, s.bar.n = s.total, s.done
                s.bar.refresh()
            elif not self.tty and now - s.last_line >= self.interval:
                self._line(s, now)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """A stage without counts (loading a file, starting a cluster): its elapsed time is
        shown while it runs, and how long it took when it ends (if it was shown at all)."""
        if not self.enabled:
            yield
            return
        with self._lock:
            self._open(name, None, time.monotonic())
        ok = False
        try:
            yield
            ok = True
        finally:
            with self._lock:
                if ok:
                    self._finish(name, time.monotonic())
                else:
                    self._drop(name)

    def close(self) -> None:
        """Close every bar and stop the ticker (stages still open end without a line)."""
        self._stop.set()
        ticker = self._ticker
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()
        with self._lock:
            for name in list(self._stages):
                self._drop(name)
            self._ticker = None
            self._stop = threading.Event()  # a later stage may start a ticker again

    def __reduce__(self):
        # A copy (scikit-learn's clone of an estimator holding it, a pickle to a worker) is a
        # new reporter with the same settings, on the copy's stderr (no lock, thread or bar).
        return (Reporter, (self.enabled, None, self.tty, self.interval, self.labels, self.prefix,
                           self.units))

    def __enter__(self) -> "Reporter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- drawing ----------------------------------------------------------------------------
    def _open(self, name: str, total: int | None, now: float) -> _Stage:
        s = self._stages.get(name)
        if s is None:
            s = self._stages[name] = _Stage(self.labels.get(name, name), total, now,
                                            self.units.get(name, ""))
            if self.tty:
                s.bar = self._bar(s)
            self._start_ticker()
        return s

    def _bar(self, s: _Stage):
        from tqdm.auto import tqdm

        units = ({"unit": "B", "unit_scale": True, "unit_divisor": 1 << 20}
                 if s.unit == "B" else {})
        return tqdm(total=s.total, desc=s.label, leave=False, file=self.stream, dynamic_ncols=True,
                    bar_format=None if s.total else "{desc}: {elapsed}", mininterval=0.1, **units)

    def _line(self, s: _Stage, now: float, final: bool = False) -> None:
        s.last_line = now
        s.lines += 1
        try:
            self.stream.write(f"{self.prefix}{s.text(now, final)}\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: progress is not worth a failure
            pass

    def _finish(self, name: str, now: float) -> None:
        s = self._stages.pop(name, None)
        if s is None:  # ended already (its counts reached the total)
            return
        if s.bar is not None:
            s.bar.close()
        elif s.lines:  # a stage a log heard about ends with its time
            self._line(s, now, final=True)

    def _drop(self, name: str) -> None:
        s = self._stages.pop(name, None)
        if s is not None and s.bar is not None:
            s.bar.close()

    def _start_ticker(self) -> None:
        if self._ticker is not None or (not self.tty and math.isinf(self.interval)):
            return
        self._ticker = threading.Thread(target=self._tick, name="coreselect-progress", daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        """Keep a waiting stage alive: redraw its bar, or write its line once an interval
        passed without an update (a cluster starting, a file loading)."""
        period = _TTY_REFRESH if self.tty else max(min(self.interval, 5.0), 0.2)
        while not self._stop.wait(period):
            with self._lock:
                if not self._stages:  # nothing to keep alive: the next stage starts another
                    self._ticker = None
                    return
                now = time.monotonic()
                for s in list(self._stages.values()):
                    if s.bar is not None:
                        s.bar.refresh()
                    elif now - s.last_line >= max(self.interval, 1.0):
                        self._line(s, now)


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
