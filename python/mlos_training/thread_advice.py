# SPDX-License-Identifier: Apache-2.0
"""Keeps torch's intra-op pool at the size the job's policy modules advise.

Why: an intra-op pool (OpenMP) splits every operator into one chunk per
thread and waits for the slowest. If another process takes one of the
pool's CPUs, the thread sharing it finishes late on every operator, and the
whole job runs at the speed of its slowest thread (a 2-thread CNN on 2 CPUs
dropped from about 3000 to 240 samples/s next to one CPU-bound process
here, while 1 thread ran at about 1650).

Who decides: the thread-governor policy (policies/thread-governor; how it
measures is in src/core/thread_governor.h), which every job gets by
default, in mlosd or, in embedded mode, in a policy host that libmlos
starts for this process. It advises fewer threads while other processes
take some of the job's CPUs, and all of them again when they are free; it
smooths its advice itself.

What this does: from the training loop (no extra thread), at most once per
`interval` (0.5 s), it reads the allocation's advice and returns the pool
size to use when it changed. A count a policy advised is used as it is;
when none is advised (no policy attached, the policy failed, or the engine
serves no policies) the pool gets the allocation's recommended_threads."""
import time

from .errors import CODES, MLOSError


class AdvisedThreads:
    """poll() returns the pool size to use now when it should change, else
    None. `threads` is the current size, `source` where it came from
    ("advice": a policy; "grant": the allocation's recommended_threads),
    `changes` lists (monotonic time, threads) of every change."""

    def __init__(self, advice, recommended_threads, max_threads, interval=0.5, clock=time.monotonic):
        self.advice = advice  # callable returning the allocation's advice dict
        self.recommended = max(1, int(recommended_threads))
        self.max_threads = max(1, int(max_threads))
        self.interval, self.clock = interval, clock
        self.threads = self.recommended
        self.source = "grant"
        self.changes = []
        self._polled_at = None

    def _advised(self):
        """The count a policy advised, else None. UNSUPPORTED (an engine
        that serves no policies) turns asking off for good."""
        if self.advice is None:
            return None
        try:
            advice = self.advice()
        except MLOSError as e:
            if e.code == CODES["UNSUPPORTED"]:
                self.advice = None
            return None
        if not advice.get("threads_advised"):
            return None
        # The engine keeps advice within the job's CPUs; the bound here only
        # guards against a nonsensical value.
        return min(max(1, int(advice["threads"])), self.max_threads)

    def poll(self):
        now = self.clock()
        if self._polled_at is not None and now - self._polled_at < self.interval:
            return None
        self._polled_at = now
        advised = self._advised()
        self.source = "grant" if advised is None else "advice"
        threads = self.recommended if advised is None else advised
        if threads == self.threads:
            return None
        self.threads = threads
        self.changes.append((now, threads))
        return threads
