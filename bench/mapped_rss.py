"""How much of a cached, memory-mapped file the kernel counts in a process's
RSS after a few random reads: what the peak-RSS bar of a 1M store (LMDB's
data.mdb and the index are both mapped) runs into.

    python bench/mapped_rss.py                 # a 256 MB file, 64 to 4096 reads
    python bench/mapped_rss.py --mb 64 --touches 16,64

The file is written, then read once so that it is in the page cache (as
data.mdb is after the store's read-ahead or any earlier reader). Each trial
maps it afresh, optionally advises MADV_RANDOM (what LMDB's MDB_NORDAHEAD
does), reads one byte of each of T random pages, and reports how much the
process's RssFile (/proc/self/status) grew: the pages the kernel mapped
into the process for those reads. Linux only.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import sys
import tempfile

PAGE = mmap.PAGESIZE


def rss_file_kib() -> int:
    """This process's resident file-backed memory, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssFile:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/status has no RssFile line (not Linux?)")


def trial(path: str, size: int, touches: int, advice: str, seed: int) -> int:
    """KiB of RssFile that touches random page reads of a fresh mapping added."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) as m:
        if advice == "random":
            m.madvise(mmap.MADV_RANDOM)
        before = rss_file_kib()
        rng = random.Random(seed)
        pages = size // PAGE
        total = 0
        for _ in range(touches):
            total += m[rng.randrange(pages) * PAGE]
        grew = rss_file_kib() - before
    return grew


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=256, help="file size in MB (default 256)")
    ap.add_argument("--touches", default="64,256,1024,4096", help="random page reads per trial, comma-separated")
    ap.add_argument("--dir", default=None, help="where the file is written (default: a temporary directory)")
    args = ap.parse_args(argv)
    if not sys.platform.startswith("linux"):
        print("mapped_rss.py reads /proc/self/status: Linux only", file=sys.stderr)
        return 2
    if args.mb < 1:
        ap.error(f"--mb must be >= 1, got {args.mb}")
    counts = [int(t) for t in args.touches.split(",")]
    if any(t < 1 for t in counts):
        ap.error(f"--touches must be positive integers, got {args.touches}")
    size = args.mb << 20
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "mapped.bin")
        with open(path, "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        with open(path, "rb") as f:  # into the page cache
            while f.read(1 << 24):
                pass
        print(f"a {args.mb} MB file in the page cache, {PAGE} B pages; kernel {os.uname().release}")
        print("| reads | advice | bytes read, at most | RssFile grew | per read |")
        print("|---|---|---|---|---|")
        for t in counts:
            for advice in ("none", "random"):
                grew = trial(path, size, t, advice, seed=t)
                print(
                    f"| {t:,} | {advice} | {t * PAGE / 2**20:,.1f} MiB | {grew / 1024:,.1f} MiB "
                    f"({100 * grew * 1024 / size:.0f}% of the file) | {grew / t:,.0f} KiB |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
