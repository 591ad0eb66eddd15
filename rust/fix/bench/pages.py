#!/usr/bin/env python3
"""What populating 2 MiB costs on this machine, in one huge page and in
512 base pages: the two ways fix's evaluation gets its chunks of small
blocks (docs/fix.md, "Values").

Each round maps CHUNKS chunks of each kind, aligned to 2 MiB, taking
turns, asks for huge pages (MADV_HUGEPAGE) or refuses them
(MADV_NOHUGEPAGE), and times MADV_POPULATE_WRITE on each. The chunks
stay mapped until the process ends, as an evaluation's do. In a virtual
machine whose balloon reports free memory to its host, a huge page taken
from a reported block costs the host backing it again: huge pages then
read many times their warm cost while base pages do not change.

usage: pages.py [--rounds N] [--chunks N] [--pause SECONDS]
"""

import argparse
import ctypes
import time

CHUNK = 2 << 20
PROT_READ_WRITE = 0x3
MAP_PRIVATE_ANONYMOUS = 0x22
MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_POPULATE_WRITE = 14, 15, 23

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def populate(huge):
    """Milliseconds to populate one fresh chunk."""
    reserved = libc.mmap(None, 2 * CHUNK, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0)
    if reserved in (None, ctypes.c_void_p(-1).value):
        raise SystemExit("mmap failed")
    chunk = (reserved + CHUNK - 1) // CHUNK * CHUNK
    libc.madvise(chunk, CHUNK, MADV_HUGEPAGE if huge else MADV_NOHUGEPAGE)
    start = time.perf_counter()
    if libc.madvise(chunk, CHUNK, MADV_POPULATE_WRITE) != 0:
        raise SystemExit("MADV_POPULATE_WRITE refused (Linux 5.14 or later needed)")
    return (time.perf_counter() - start) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=17)
    parser.add_argument("--pause", type=float, default=0.3)
    args = parser.parse_args()
    for n in range(args.rounds):
        huge, base = [], []
        for _ in range(args.chunks):
            huge.append(populate(True))
            base.append(populate(False))
        print(
            f"round {n}: {args.chunks} chunks in huge pages {sum(huge):6.1f} ms (at most {max(huge):.2f} each), "
            f"in base pages {sum(base):6.1f} ms (at most {max(base):.2f} each)"
        )
        time.sleep(args.pause)


if __name__ == "__main__":
    main()
