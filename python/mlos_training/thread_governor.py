"""Sizes torch's intra-op thread pool to the CPUs of the allocation that
nothing else is using, and keeps it sized while the job runs.

Why: an intra-op pool (OpenMP) splits every operator into one chunk per
thread and waits for the slowest. If another process takes one of the
pool's CPUs, the thread sharing it finishes late on every operator, and the
whole job runs at the speed of its slowest thread: a 2-thread CNN on 2 CPUs
dropped from about 3000 to 240 samples/s (12x) next to one CPU-bound
process here, while 1 thread ran at about 1650. The fix is to use fewer
threads than CPUs while CPUs are taken, and all of them again when they are
free.

How: every `interval` seconds (0.5; checked from the training loop, so no
extra thread), the CPU time the allocation's CPUs spent busy (/proc/stat) minus
the CPU time of this process (/proc/self/stat: the pool, the main thread)
is the load of everything else on those CPUs: other processes, and this
job's own DataLoader workers, which compete with the pool the same way. A
CPU counts as taken when that load covers at least 40 % of one
(`taken = floor(other + 0.6)`). The pool gets the CPUs left, between 1 and
the allocation's recommended thread count, and a new size is adopted only
when two consecutive windows agree (a burst shorter than a window changes
nothing).

Under mlosd (interim state, until policies run in embedded mode too): the
node's thread-governor policy measures the same thing in the daemon, for C
and Python jobs alike. When `advice` is given (the context passes its
allocation's advice) and a policy advised a thread count
(advice()["threads_advised"]), that count is the pool size, read once per
window and adopted at once (the policy has smoothed it already); the
measurement here is not used. When no policy advises one (it failed, or the
job uses none), the measurement takes over again from a fresh first sample.
In embedded mode advice() raises MLOSError(UNSUPPORTED): it is not asked
again, and the governor measures as before."""
import os
import time

from .errors import CODES, MLOSError

TAKEN_SHARE = 0.4  # other load, in CPUs, from which a CPU counts as taken


def _ticks_per_second():
    return os.sysconf("SC_CLK_TCK")


def read_cpu_busy_seconds(cpus):
    """Busy seconds since boot of each CPU in `cpus` (/proc/stat: user,
    nice, system, irq, softirq, steal)."""
    tick = _ticks_per_second()
    busy = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu") or line.startswith("cpu "):
                continue
            name, *fields = line.split()
            cpu = int(name[3:])
            if cpu in cpus:
                v = [int(x) for x in fields]
                busy[cpu] = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / tick
    return busy


def read_own_cpu_seconds():
    """CPU seconds this process has used (all its threads)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _ticks_per_second()


class ThreadGovernor:
    """poll() returns the pool size to use now when it should change, else
    None. `changes` lists (monotonic time, threads) of every change.
    `source` says where the current size came from: "measured" (this
    process's measurement) or "advice" (a policy, through mlosd)."""

    def __init__(self, cpus, max_threads, interval=0.5, clock=time.monotonic,
                 cpu_busy=read_cpu_busy_seconds, own=read_own_cpu_seconds, advice=None):
        self.cpus, self.max_threads, self.interval = set(cpus), max(1, int(max_threads)), interval
        self.clock, self.cpu_busy, self.own = clock, cpu_busy, own
        self.advice = advice  # callable returning the allocation's advice dict, or None
        self.threads = self.max_threads
        self.source = "measured"
        self.changes = []
        self.other_load = 0.0  # CPUs' worth of other load in the last window
        self._polled_at = None
        self._last = None
        self._proposal = None

    def _sample(self):
        return self.clock(), sum(self.cpu_busy(self.cpus).values()), self.own()

    def _advised_threads(self):
        """The policy-advised thread count, else None (no policy advises
        one, or mlosd could not be asked this time). UNSUPPORTED (embedded
        mode) turns asking off for good."""
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
        # mlosd keeps advice within the job's CPUs; the bound here only
        # guards against a nonsensical value.
        return min(max(1, int(advice["threads"])), max(1, len(self.cpus)))

    def _adopt(self, when, threads):
        if threads == self.threads:
            return None
        self.threads = threads
        self.changes.append((when, threads))
        return threads

    def poll(self):
        now = self.clock()
        if self._polled_at is not None and now - self._polled_at < self.interval:
            return None
        self._polled_at = now
        advised = self._advised_threads()
        if advised is not None:
            # The measurement restarts from a first sample if advice stops.
            self._last = self._proposal = None
            self.source = "advice"
            return self._adopt(now, advised)
        self.source = "measured"
        sample = self._sample()
        last, self._last = self._last, sample
        if last is None:
            return None
        elapsed = sample[0] - last[0]
        self.other_load = max(0.0, (sample[1] - last[1]) - (sample[2] - last[2])) / elapsed
        taken = int(self.other_load + (1 - TAKEN_SHARE))
        target = min(self.max_threads, max(1, len(self.cpus) - taken))
        proposal, self._proposal = self._proposal, target
        if target == self.threads or proposal != target:
            return None
        return self._adopt(sample[0], target)
