"""Watch every socket of a local ``--env-workers ray`` session, from before ``ray.init`` to shutdown.

Starts env workers the way ``agentworld train/eval --env-workers ray`` does (no address: a local
session bound to 127.0.0.1, see ``agentworld_envs/serving/workers.py``), plays a few retail steps, shuts
down, and meanwhile samples every inet socket of this process and all its descendants (gcs_server,
raylet, dashboard, agents, workers) every 20 ms. Prints ``ss -ltnpu`` while the session runs, every
listener seen, and every socket with a non-loopback local or remote address; exits 1 if there is one.

    PYTHONPATH=. python scripts/check_ray_loopback.py [--workers 2]

Short-lived connections can fall between samples: for a complete record also run
``ss -tuanp`` in a loop beside it (connections leave TIME-WAIT entries for a minute).
"""

from __future__ import annotations

import argparse
import ipaddress
import subprocess
import sys
import threading
import time

import psutil


def _loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    seen: set[tuple] = set()
    stop = threading.Event()
    me = psutil.Process()

    def sample() -> None:
        while not stop.is_set():
            for proc in [me, *me.children(recursive=True)]:
                try:
                    name = proc.name()
                    for c in proc.net_connections(kind="inet"):
                        seen.add((name, c.status, (c.laddr.ip, c.laddr.port), (c.raddr.ip, c.raddr.port) if c.raddr else None))
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
            time.sleep(0.02)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    from agentworld_envs.serving.workers import RayEnvWorkers

    workers = RayEnvWorkers(args.workers, {"max_turns": 4})
    opened = workers.open([{"slot": i, "env_id": "agentworld/retail-v0", "seed": i, "extras": True}
                           for i in range(2 * args.workers)])
    for turn in range(3):
        workers.step({i: ep["reference"][turn] for i, ep in enumerate(opened)})
    print("ss -ltnpu while the session runs (Ray's processes):")
    for line in subprocess.run(["ss", "-ltnpu"], capture_output=True, text=True).stdout.splitlines():
        if any(word in line for word in ("ray", "gcs", "python")):
            print("  " + " ".join(line.split()))
    workers.close()
    time.sleep(2)
    stop.set()
    watcher.join()
    print(f"sockets seen: {len(seen)}")
    for name, _, laddr, _ in sorted(s for s in seen if s[1] == psutil.CONN_LISTEN):
        print(f"  LISTEN {laddr[0]}:{laddr[1]} {name}")
    outside = sorted(s for s in seen if not _loopback(s[2][0]) or (s[3] and not _loopback(s[3][0])))
    print(f"sockets with a non-loopback address: {len(outside)}")
    for s in outside:
        print(f"  {s}")
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
