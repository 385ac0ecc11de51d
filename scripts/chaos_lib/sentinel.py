"""Redis through Sentinel (`sentinel`): a master, a replica and three
sentinels of our own, and each host in a network namespace of its own.

Sentinel names the master by the address it knows it at (127.0.0.1 and the
server's port), so a host cannot be given a proxy port of its own for it.
Instead each host is a network namespace (no interface but its loopback:
no route out, made by a process of ours that holds it and dies with the
harness), and in it every server's port on 127.0.0.1 is a Link of that
host (chaos_lib/proxy.py) forwarding to the real server in the harness's
namespace: the addresses the sentinels give work unchanged in every host,
and a host's network faults hit all its links (master, replica,
sentinels) at once. simba runs in its host's namespace (nsenter).

Server faults: SENTINEL FAILOVER (the old master goes on for a while: the
split brain docs/backends/redis.md "Redis Sentinel" describes), kill -9 of the master (a
new one is elected after down-after-milliseconds; the old one comes back
empty and Sentinel makes it a replica), and SIGSTOP of the master longer
than down-after (it wakes as a master beside the promoted one until
Sentinel demotes it). Each is timed to the next CMD (`failovers()`): at
most down-after + the election + 0.5 s (simba's re-asking) + the longest
lease + 1 s (the quarantine), the bound of docs/backends/redis.md.
"""
import os
import shutil
import signal
import socket
import subprocess
import time

from .proxy import LinkGroup, Network
from .servers import Backend, free_port, orphan_proof

DOWN_AFTER_MS = 1000
ELECTION_MS = 2500  # Sentinel's election and promotion, with room (~1.3 s measured)
NAME = "mymaster"


def command(port, *words, timeout=2):
    """One command to 127.0.0.1:port (in the harness's namespace); the
    reply's lines, or None when nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"*%d\r\n" % len(words) +
                      b"".join(b"$%d\r\n%s\r\n" % (len(w.encode()), w.encode())
                               for w in words))
            data = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if _complete(data):
                    break
            return data.decode(errors="replace").split("\r\n")
    except OSError:
        return None


def _complete(data):
    """Whether `data` holds one whole reply (the kinds the harness reads)."""
    if data.startswith((b"+", b"-", b":")):
        return data.endswith(b"\r\n")
    if data.startswith(b"$"):
        head, _, rest = data.partition(b"\r\n")
        n = int(head[1:])
        return n < 0 or len(rest) >= n + 2
    if data.startswith(b"*"):
        head, _, rest = data.partition(b"\r\n")
        return int(head[1:]) <= 0 or rest.count(b"\r\n") >= 2 * int(head[1:])
    return False


class HostNamespace:
    """A network namespace with only its loopback, held by a process of
    ours (killed with the harness: the namespace goes with its last
    process and socket)."""

    def __init__(self):
        self.proc = subprocess.Popen(orphan_proof(
            ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && echo up && exec sleep 1d"]),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if self.proc.stdout.readline().strip() != "up":
            raise RuntimeError("cannot make a network namespace (unshare --net, ip)")
        self.path = f"/proc/{self.proc.pid}/ns/net"

    def prefix(self):
        return ["nsenter", f"--net={self.path}", "--"]

    def close(self):
        self.proc.kill()
        self.proc.wait()


class SentinelGroup:
    """The master, the replica and three sentinels, on loopback ports."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "sentinel")
        os.makedirs(self.dir)
        self.ports = [free_port(), free_port()]  # the two data servers
        self.procs = {}
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.start_server(self.ports[0])
        self.start_server(self.ports[1], replica_of=self.ports[0])
        for p in self.sentinel_ports:
            self.start_sentinel(p, self.ports[0])
        deadline = time.monotonic() + 40
        while not self.ready():
            if time.monotonic() > deadline:
                raise RuntimeError("the sentinel group did not come up")
            time.sleep(0.1)

    def start_server(self, port, replica_of=None):
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, "--dbfilename", f"dump-{port}.rdb",
                "--repl-diskless-sync-delay", "0",
                "--logfile", os.path.join(self.dir, f"redis-{port}.log")]
        if replica_of:
            argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        self.procs[port] = subprocess.Popen(orphan_proof(argv), stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while command(port, "PING") != ["+PONG", ""]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on {port} did not start")
            time.sleep(0.02)

    def start_sentinel(self, port, master):
        conf = os.path.join(self.dir, f"sentinel-{port}.conf")
        with open(conf, "w") as f:
            f.write(f"port {port}\nbind 127.0.0.1\ndir {self.dir}\n"
                    f"logfile {self.dir}/sentinel-{port}.log\n"
                    f"sentinel monitor {NAME} 127.0.0.1 {master} 2\n"
                    f"sentinel down-after-milliseconds {NAME} {DOWN_AFTER_MS}\n"
                    f"sentinel failover-timeout {NAME} 10000\n"
                    f"sentinel parallel-syncs {NAME} 1\n")
        self.procs[port] = subprocess.Popen(orphan_proof(["redis-server", conf, "--sentinel"]),
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def master(self):
        """The master's port as the first sentinel that answers names it."""
        for p in self.sentinel_ports:
            r = command(p, "SENTINEL", "get-master-addr-by-name", NAME)
            if r and len(r) >= 5 and r[0] == "*2":
                return int(r[4])
        return None

    def replica(self):
        m = self.master()
        return next((p for p in self.ports if p != m), None)

    def ready(self):
        """Both data servers up, one of them replicating the other, and
        every sentinel knowing both and the two other sentinels."""
        m, r = self.master(), self.replica()
        if m is None or r is None:
            return False
        info = command(r, "INFO", "replication") or []
        if "master_link_status:up" not in info:
            return False
        for p in self.sentinel_ports:
            master = command(p, "SENTINEL", "master", NAME) or []
            try:
                others = master[master.index("num-other-sentinels") + 2]
            except (ValueError, IndexError):
                return False
            replicas = " ".join(command(p, "SENTINEL", "replicas", NAME) or [])
            if others != "2" or str(r) not in replicas:
                return False
        return True

    def kill(self, port):
        proc = self.procs.get(port)
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()

    def stop(self):
        for port in list(self.procs):
            self.kill(port)


class SentinelBackend(Backend):
    """Not part of `--backend all`: run it by name."""
    name = "sentinel"
    in_all = False
    TIMEOUT = "500ms"

    def __init__(self, tmp, rng, harness):
        super().__init__(tmp, rng, harness)
        if not shutil.which("nsenter") or not shutil.which("unshare") or os.geteuid() != 0:
            raise RuntimeError("sentinel needs root, unshare and nsenter (network namespaces)")
        self.group = SentinelGroup(tmp)
        self.net = Network()
        self.hosts = {h: HostNamespace() for h in harness.hosts}
        self.by_host = {}
        for h, ns in self.hosts.items():
            ports = self.group.ports + self.group.sentinel_ports
            self.by_host[h] = LinkGroup([self.net.link(h, str(p), p, ns.path, p)
                                         for p in ports])
        self.server_faults = []  # (monotonic ns, clean) of each failover counted
        self.clean = False

    def uri_for(self, timeout):
        sentinels = ",".join(f"127.0.0.1:{p}" for p in self.group.sentinel_ports)
        return f"redis+sentinel://{sentinels}/{NAME}?prefix=chaos:&timeout={timeout}"

    def uri(self, host):
        # As on Redis: the last host waits 3 s, so delayed replies reach it late.
        timeout = "3s" if host == self.harness.hosts[-1] and len(self.by_host) > 1 \
            else self.TIMEOUT
        return self.uri_for(timeout)

    def admin_uri(self):
        return self.uri_for("2s")  # from the harness's namespace: the servers themselves

    def command_prefix(self, host):
        return self.hosts[host].prefix()

    def links(self):
        return self.by_host

    def fault_kinds(self):
        return ["sentinel_failover", "kill9_master", "sigstop_master"]

    def inject(self, kind):
        g = self.group
        master = g.master()
        if master is None or not g.ready():
            return False  # a failover still under way: one at a time
        # Timed to the next lease only when nothing else is under way.
        self.clean = not self.harness.net.busy() and not self.harness.pending
        if kind == "sentinel_failover":
            command(g.sentinel_ports[0], "SENTINEL", "FAILOVER", NAME)
        elif kind == "kill9_master":
            g.kill(master)
            # Back after the election, empty (no persistence): Sentinel
            # turns it into a replica of the new master.
            self.harness.later(DOWN_AFTER_MS / 1000 + self.rng.uniform(1.5, 4.0),
                               lambda: g.start_server(master), mark=False)
        elif kind == "sigstop_master":
            g.procs[master].send_signal(signal.SIGSTOP)
            pause = DOWN_AFTER_MS / 1000 + self.rng.uniform(1.0, 4.0)
            self.harness.later(pause, lambda: g.procs[master].send_signal(signal.SIGCONT),
                               mark=False)
        # The election, the split brain and the new master's quarantine:
        # a fault under way for that long (the longest lease + 1 s after it).
        self.busy_until = time.monotonic() + (DOWN_AFTER_MS + ELECTION_MS) / 1000 + 6.0
        return True

    def injected(self, kind, at):
        self.server_faults.append((at, self.clean))

    def failover_bound_ms(self, longest_lease_ms):
        return DOWN_AFTER_MS + ELECTION_MS + 500 + longest_lease_ms + 1000

    def stop(self):
        self.group.stop()
        self.net.close()
        for ns in self.hosts.values():
            ns.close()
