#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A read-only view of a directory in which every read waits: storage with
a network's or a busy disk's latency, for the data-loading benchmark.

    /usr/bin/python3 bench/dataload/slow_storage.py SRC MOUNTPOINT --latency-ms 4
    ... benchmark with --data MOUNTPOINT ...
    umount MOUNTPOINT

A FUSE passthrough (fusepy, Debian's python3-fusepy; root): lookups and
opens go straight to SRC, each read request sleeps --latency-ms and then
preads SRC. Requests are served by as many threads as the kernel sends
them, so reads issued together wait together, as on a device with a deep
queue; a loader that keeps many reads in flight hides the latency, one
that reads a file when it needs it pays it. The page cache is bypassed
(direct_io), so every pass over the data pays again: what a dataset far
larger than memory, or on remote storage, costs. Runs in the foreground
until unmounted."""
import argparse
import errno
import os
import time

import fusepy


class SlowView(fusepy.Operations):
    def __init__(self, root, latency):
        self.root = os.path.realpath(root)
        self.latency = latency

    def _path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._path(path))
        except OSError as e:
            raise fusepy.FuseOSError(e.errno)
        return {k: getattr(st, k) for k in ("st_mode", "st_size", "st_nlink", "st_uid", "st_gid", "st_atime",
                                             "st_mtime", "st_ctime")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def open(self, path, flags):
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise fusepy.FuseOSError(errno.EROFS)
        return os.open(self._path(path), os.O_RDONLY)

    def read(self, path, size, offset, fh):
        time.sleep(self.latency)
        return os.pread(fh, size, offset)

    def release(self, path, fh):
        os.close(fh)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("mountpoint")
    ap.add_argument("--latency-ms", type=float, default=4.0)
    a = ap.parse_args()
    os.makedirs(a.mountpoint, exist_ok=True)
    fusepy.FUSE(SlowView(a.source, a.latency_ms / 1000.0), a.mountpoint, foreground=True, ro=True,
                allow_other=True, direct_io=True, nothreads=False)


if __name__ == "__main__":
    main()
