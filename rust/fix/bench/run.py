#!/usr/bin/env python3
"""fix against Nix on the benchmark set, interleaved in the same run.

For each case in cases/*.nix, runs `chock eval --impure --strict CASE` and
`nix-instantiate --eval --strict CASE` alternately ROUNDS times, checks that
both print the same answer, and reports per case the median wall time and
the peak resident memory of each, with the ratios fix/Nix, plus the
geometric means. Wall time is what the goal is stated in; user+system CPU
time is shown too because shared machines are noisy.

The chock measured by default is the shipped build, `target/dist/chock`
as `scripts/build-dist` makes it (the `dist` profile, fat LTO and one
codegen unit, laid out by a profile of chock's own work, as
nix/package.nix builds it); `--chock target/release/chock` measures the
quicker-to-build release profile instead.

usage: run.py [--rounds N] [--chock PATH] [--nix PATH] [--lib DIR] [CASE...]
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_once(argv, env):
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        out = os.open(env["FIX_BENCH_OUT"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(devnull, 2)
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    output = Path(env["FIX_BENCH_OUT"]).read_bytes()
    return output, code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chock", default=os.environ.get("CHOCK_BIN", "target/dist/chock"))
    parser.add_argument("--nix", default="nix-instantiate")
    parser.add_argument("--lib", default=os.environ.get("FIX_BENCH_LIB"))
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()

    lib = args.lib
    if lib is None:
        shared = os.environ.get("CHOCK_SHARED", str(HERE.parents[3] / "shared"))
        lib = str(Path(shared) / "corpus/nixpkgs-lib/lib")
    if not os.access(args.chock, os.X_OK):
        sys.exit(f"{args.chock}: no chock binary there; build it with `cargo build --profile dist -p chock` or pass --chock")
    cases = [Path(c) for c in args.cases] or sorted((HERE / "cases").glob("*.nix"))
    env = dict(os.environ, FIX_BENCH_LIB=lib, FIX_BENCH_OUT=f"/tmp/fix-bench-{os.getpid()}.out")

    rows = []
    for case in cases:
        fix_argv = [args.chock, "eval", "--impure", "--strict", str(case)]
        nix_argv = [args.nix, "--eval", "--strict", str(case)]
        samples = {"fix": [], "nix": []}
        answers = {}
        for _ in range(args.rounds):
            for name, argv in (("fix", fix_argv), ("nix", nix_argv)):
                out, code, wall, cpu, rss = run_once(argv, env)
                if code != 0:
                    sys.exit(f"{case.name}: {name} failed (exit {code}); run {' '.join(argv)} to see why")
                answers[name] = out
                samples[name].append((wall, cpu, rss))
        if answers["fix"] != answers["nix"]:
            sys.exit(f"{case.name}: fix and Nix disagree:\n fix: {answers['fix'][:200]!r}\n nix: {answers['nix'][:200]!r}")
        med = {n: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v), max(s[2] for s in v))
               for n, v in samples.items()}
        rows.append((case.stem, med["fix"], med["nix"]))

    def ratio(a, b):
        return a / b if b else float("inf")

    lines = ["| case | fix wall | Nix wall | wall ratio | fix CPU | Nix CPU | fix peak RSS | Nix peak RSS | memory ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    wall_ratios, cpu_ratios, mem_ratios = [], [], []
    for name, f, n in rows:
        wr, cr, mr = ratio(f[0], n[0]), ratio(f[1], n[1]), ratio(f[2], n[2])
        wall_ratios.append(wr)
        cpu_ratios.append(cr)
        mem_ratios.append(mr)
        lines.append(f"| {name} | {f[0]*1000:.0f} ms | {n[0]*1000:.0f} ms | {wr:.2f}x | {f[1]*1000:.0f} ms | {n[1]*1000:.0f} ms "
                     f"| {f[2]/1024:.1f} MiB | {n[2]/1024:.1f} MiB | {mr:.2f}x |")
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    lines.append(f"| geometric mean | | | {geo(wall_ratios):.2f}x | | | | | {geo(mem_ratios):.2f}x |")
    print("\n".join(lines))
    print(f"\nCPU-time geometric mean ratio: {geo(cpu_ratios):.2f}x ({args.rounds} rounds, medians; memory is the peak)")


if __name__ == "__main__":
    main()
