"""fairseq-generate whose log also gives the CPU time of its generation loop.

fairseq-generate times its generation loop by the wall clock (its ``StopwatchMeter``, ``time.perf_counter``) and
closes with ``Translated N sentences (T tokens) in Ws (... tokens/s)``. On a CPU that other work shares, or
while the process is stopped, that speed measures the machine as much as the model. This runs the same
``fairseq_cli.generate`` with its timer also counting the process's CPU time over the same intervals
(``time.process_time``, which does not advance while the process waits for a core or is stopped; it still counts
the slowing by other processes' use of the shared caches and memory), and, when it decoded on the CPU, logs one
line after fairseq's own::

    Generation CPU time: 10.200s for 13,759 target tokens (1348.9 tokens per CPU second)

The CPU time sums the process's threads: with one thread (``OMP_NUM_THREADS=1``, as the comparison runs) it is
the time the loop computed. On a GPU the CPU time is mostly launching kernels and waiting for them, so no line
is logged there. Arguments are fairseq-generate's; ``evaluate.sh`` always runs this in its place.
"""
from __future__ import annotations

import logging
import sys
import time
from typing import List, Optional

from fairseq.logging.meters import StopwatchMeter

from .outputs import generation_cpu_line

logger = logging.getLogger("fairseq_localness.evaluation.timed_generate")


class CPUTimedStopwatch(StopwatchMeter):
    """fairseq's stopwatch, also summing the process's CPU time between each ``start`` and ``stop``."""

    made: List["CPUTimedStopwatch"] = []  # every instance, so that the loop's timer can be read once it returns

    def __init__(self, round: Optional[int] = None):  # noqa: A002 (fairseq's name)
        super().__init__(round)
        self.cpu_sum = 0.0
        self.cpu_start: Optional[float] = None
        CPUTimedStopwatch.made.append(self)

    def start(self) -> None:
        self.cpu_start = time.process_time()
        super().start()

    def stop(self, n=1, prehook=None) -> None:
        if self.start_time is not None and self.cpu_start is not None:
            super().stop(n, prehook)
            self.cpu_sum += time.process_time() - self.cpu_start

    def reset(self) -> None:
        self.cpu_sum = 0.0
        super().reset()  # zeroes the wall-clock sum and starts again, on both clocks


def decoded_on_cpu(argv: List[str]) -> bool:
    import torch

    return "--cpu" in argv or not torch.cuda.is_available()


def main(argv: Optional[List[str]] = None) -> None:
    import fairseq_cli.generate as generate

    argv = sys.argv[1:] if argv is None else argv
    sys.argv = [sys.argv[0], *argv]
    generate.StopwatchMeter = CPUTimedStopwatch  # the loop's timer (generate builds it as StopwatchMeter())
    generate.cli_main()
    timers = [t for t in CPUTimedStopwatch.made if t.n]
    if timers and decoded_on_cpu(argv):
        logger.info(generation_cpu_line(timers[-1].cpu_sum, int(timers[-1].n)))


if __name__ == "__main__":
    main()
