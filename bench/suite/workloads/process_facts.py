# SPDX-License-Identifier: Apache-2.0
"""What the measured process really runs with, read from /proc/self/maps:
the malloc and the OpenMP runtime that are mapped, whatever the launcher
claimed to set."""


def runtime_libraries():
    names = {line.split()[-1].rsplit("/", 1)[-1] for line in open("/proc/self/maps") if ".so" in line}

    def has(prefix):
        return any(n.startswith(prefix) for n in names)

    malloc = "tcmalloc" if has("libtcmalloc") else "jemalloc" if has("libjemalloc") else "glibc"
    openmp = "iomp5" if has("libiomp5") else "llvm-omp" if has("libomp") else "gomp" if has("libgomp") else "none"
    return {"malloc": malloc, "openmp": openmp}
