"""A live display of a run: the step, its elapsed time, the run's requests and streamed chunks so
far, and the limits of the harness that is running."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from audit.observer import Observer

__all__ = ["LiveProgress"]


class LiveProgress:
    """Use as a context manager; pass :meth:`step` and :meth:`watch` to ``run_qualification``."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._begun = time.monotonic()
        self._step = "starting"
        self._step_begun = self._begun
        self._observer: Observer | None = None
        self._done: list[tuple[str, float]] = []
        self._live = Live(console=console, refresh_per_second=4, get_renderable=self._render)

    def step(self, text: str) -> None:
        """A new step of the run begins."""
        now = time.monotonic()
        self._done.append((self._step, now - self._step_begun))
        self._step, self._step_begun = text, now

    def watch(self, observer: Observer) -> None:
        """Count the run's requests and chunks from this observer."""
        self._observer = observer

    def _render(self) -> Table:
        now = time.monotonic()
        requests, chunks = self._observer.counts() if self._observer else (0, 0)
        table = Table(title=f"audit run: {now - self._begun:.1f} s, {requests} requests, "
                      f"{chunks} streamed chunks", title_justify="left")  # fmt: skip
        table.add_column("step")
        table.add_column("elapsed", justify="right")
        for text, seconds in self._done[1:]:
            table.add_row(f"[dim]{text}[/]", f"[dim]{seconds:.1f} s[/]")
        table.add_row(f"[bold]{self._step}[/]", f"{now - self._step_begun:.1f} s")
        return table

    def __enter__(self) -> LiveProgress:
        self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._live.stop()
        self._console.line()
