"""Run a command and report its wall time and the peak RSS summed over its process tree.

    python tools/peak_rss.py [--interval S] -- bash tests/run_all.sh

The tree is sampled from /proc every ``--interval`` seconds (default 1); the figure is the
largest sum seen, so a spike shorter than the interval can be missed. The report (one line,
also as JSON with ``--json FILE``) goes to stderr after the command exits; the command's own
exit code is returned.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kb(root: int) -> tuple[int, int]:
    """(summed RSS in kB, number of processes) of ``root`` and all its descendants."""
    tree = _children()
    total, n, stack = 0, 0, [root]
    while stack:
        pid = stack.pop()
        total += _rss_kb(pid)
        n += 1
        stack.extend(tree.get(pid, ()))
    return total, n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--json", help="also write the report to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    started = time.monotonic()
    proc = subprocess.Popen(command)
    peak_kb, peak_procs = 0, 0
    while proc.poll() is None:
        kb, n = tree_rss_kb(proc.pid)
        if kb > peak_kb:
            peak_kb, peak_procs = kb, n
        time.sleep(args.interval)
    report = {
        "command": command,
        "exit_code": proc.returncode,
        "wall_seconds": round(time.monotonic() - started, 1),
        "peak_tree_rss_mb": round(peak_kb / 1024),
        "processes_at_peak": peak_procs,
    }
    print(
        f"peak_rss: exit {report['exit_code']}, {report['wall_seconds']} s wall, "
        f"peak {report['peak_tree_rss_mb']} MB summed over {peak_procs} processes",
        file=sys.stderr,
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
