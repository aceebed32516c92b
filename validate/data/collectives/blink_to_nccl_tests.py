#!/usr/bin/env python3
"""Writes lumi_<N>x8_all_reduce.txt and alps_<N>x4_all_reduce.txt from the raw data of De Sensi et al., SC24
(arXiv 2408.14090).

Source: github.com/DanieleDeSensi/blink at 30eeaeeea279c31dfadf22909891b30a03cf07e8 (the last commit with data/;
the next one removed it), data/description.csv and data/lumi/<session>/data.csv of the "ar-nccl" runs: Blink-GPU's
ar_Nccl benchmark (HicrestLaboratory/Blink-GPU src/ar_Nccl.cu): ncclAllReduce of 2^x bytes (uint8, max) over all
ranks, MPI_Barrier before each call, the time of a call the slowest rank's, 100 timed calls per run, up to 3 runs.
LUMI-G: RCCL with LUMI/22.08's aws-ofi-rccl module over Slingshot-11, one rank per GCD (ppn 8). Alps: NCCL of
CSCS's prgenv-gnu 24.2 NCCL user environment (conf/alps.sh; its version is not stated) over Slingshot-11, one rank
per GH200 (ppn 4).

What this script does with it, so that the tables are reproducible:
- keeps the runs with one rank per GPU (GCD) and no "extra" label (the labelled ones change a setting);
- groups them by node count and session (the hour a run started);
- drops every session whose 1-byte all-reduce takes 1 ms or more: LUMI's runs of 2024-03-19 to 2024-03-26 16:00 on
  2 or more nodes show a 12-16 ms floor at every size, 1 byte included (a set-up fault of those days, fixed for the
  later sessions; no all-reduce of one byte costs milliseconds); Alps has no such session;
- per node count and size, the median of each clean session's calls (all its runs together), then the median of
  those over the node count's clean sessions (one to three), written as a nccl-tests table (time in us; algbw and
  busbw as nccl-tests computes them, GB/s);
- marks LUMI's 1- and 8-node tables role=fit (the frontier preset's RCCL network is fitted to them), the others
  role=check.

Usage: blink_to_nccl_tests.py GIT_DIR OUT_DIR   (GIT_DIR: a clone of DanieleDeSensi/blink)
"""
import collections
import csv
import io
import os
import statistics
import subprocess
import sys

COMMIT = "30eeaeeea279c31dfadf22909891b30a03cf07e8"
# system: (ranks per node, file prefix, cluster tag, nodes, nodes fitted, hardware line, library line)
SYSTEMS = {
    "lumi": (8, "lumi", "frontier", (1, 4, 8, 16, 32, 64), (1, 8),
             "LUMI-G, 4 x MI250X (8 GCDs) and 4 x Slingshot-11 200 Gb/s NICs per node: the node of Frontier "
             "(frontier preset)",
             "RCCL with LUMI/22.08's aws-ofi-rccl (libfabric CXI), NCCL_NET_GDR_LEVEL=3"),
    "alps": (4, "alps", "machines/alps-gh200.yaml", (1, 4, 8, 16, 32, 64, 128, 256, 512), (1, 8),
             "CSCS Alps, 4 x GH200 (NVLink between the four) and 4 x Slingshot-11 200 Gb/s NICs per node",
             "NCCL of CSCS's prgenv-gnu 24.2 NCCL environment (version not stated), libfabric CXI"),
}


def show(git_dir, path):
    r = subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def size_bytes(label):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)):
        if label.endswith(unit):
            return int(label[: -len(unit)]) * scale
    raise ValueError(label)


def main():
    git_dir, out_dir = sys.argv[1], sys.argv[2]
    description = list(csv.DictReader(io.StringIO(show(git_dir, "data/description.csv"))))
    for system, (ppn, prefix, cluster, node_counts, fit, hardware, library) in SYSTEMS.items():
        sessions = collections.defaultdict(lambda: collections.defaultdict(list))  # (nodes, session) -> size -> times
        for r in description:
            if r["system"] != system or "/ar-nccl/" not in r["app_mix"] or r["ppn"] != str(ppn) or r["extra"]:
                continue
            path = r["path"].removeprefix("./")
            data = show(git_dir, path + "/data.csv")
            if not data:
                continue
            times = [float(line.split(",")[0]) for line in data.strip().split("\n")[1:] if line.strip()]
            session = os.path.basename(path)[:13]
            sessions[(int(r["numnodes"]), session)][size_bytes(r["app_mix"].rstrip("/").split("/")[-1])] += times
        for nodes in node_counts:
            clean = sorted((k[1], s) for k, s in sessions.items()
                           if k[0] == nodes and 1 in s and statistics.median(s[1]) < 1e-3)
            if not clean:
                continue
            sizes = collections.defaultdict(list)
            for _, s in clean:
                for b, times in s.items():
                    sizes[b].append(statistics.median(times))
            ranks = nodes * ppn
            role = " role=fit" if nodes in fit else ""
            with open(os.path.join(out_dir, f"{prefix}_{nodes}x{ppn}_all_reduce.txt"), "w") as f:
                f.write(f"# shardsim: cluster={cluster} op=all_reduce ranks={ranks}{role}\n")
                f.write(f"# source: https://github.com/DanieleDeSensi/blink @ {COMMIT} : data/{system}/ sessions "
                        f"{', '.join(c[0] for c in clean)} (De Sensi et al., SC24, arXiv 2408.14090: Blink-GPU's "
                        f"ar_Nccl on {'LUMI' if system == 'lumi' else 'Alps'})\n")
                f.write(f"# hardware: {hardware}\n")
                f.write(f"# library: {library}\n")
                f.write(f"# ranks: {ranks} ({nodes} nodes x {ppn}); uint8 max; each time the median of the calls "
                        "(slowest rank of each) of a session, the median over sessions; written by "
                        "validate/data/collectives/blink_to_nccl_tests.py\n")
                f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong\n")
                f.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n")
                for b in sorted(sizes):
                    t = statistics.median(sizes[b])
                    algbw = b / t / 1e9
                    busbw = algbw * 2 * (ranks - 1) / ranks
                    f.write(f"{b:13d} {b:13d}     uint8     max      -1 {t * 1e6:8.1f} {algbw:7.2f} {busbw:7.2f}      0\n")


if __name__ == "__main__":
    main()
