# SPDX-License-Identifier: Apache-2.0
"""Linux CPU lists ("0-3,8,10-11", as in sysfs, /proc and MLOS_CPUS)."""


def parse_cpu_list(text):
    """The set of CPUs in `text`; empty for an empty string."""
    cpus = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus
