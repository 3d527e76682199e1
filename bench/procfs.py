"""What the benches read of a process in /proc: its resident memory and its CPU time."""

from __future__ import annotations

import os
from pathlib import Path


def rss_of(status: str) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MB from the text of /proc/PID/status."""
    fields = {}
    for line in status.splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(rest.split()[0]) / 1024
    if set(fields) != {"VmRSS", "VmHWM"}:
        raise ValueError("/proc/PID/status: no VmRSS or VmHWM line")
    return fields["VmRSS"], fields["VmHWM"]


def cpu_of(stat: str) -> float:
    """User plus system CPU seconds from the text of /proc/PID/stat."""
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    if len(fields) < 13:
        raise ValueError("/proc/PID/stat: too few fields")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process `pid` so far."""
    return cpu_of(Path(f"/proc/{pid}/stat").read_text())
