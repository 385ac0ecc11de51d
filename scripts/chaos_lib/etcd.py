"""The etcd backend under chaos: a 3-member cluster of our own on free
loopback ports (quick elections: heartbeat 50 ms, election timeout 500 ms),
each host reaching every member through a Link of its own (a LinkGroup:
the network faults cut or slow a host's way to the whole cluster). Its
server faults: kill -9 of the leader (started again on its data after a
while), and a member paused with SIGSTOP (the leader, often). No
quarantine is expected: etcd keeps leases across a change of leader
(src/backend/etcd/README.md)."""
import json
import os
import signal
import subprocess
import time
import urllib.request

from .proxy import LinkGroup, Network
from .servers import Backend, free_port, orphan_proof


class EtcdBackend(Backend):
    name = "etcd"
    in_all = False  # scripts/chaos --backend etcd
    TIMEOUT = "500ms"

    def __init__(self, tmp, rng, harness):
        super().__init__(tmp, rng, harness)
        self.client = [free_port() for _ in range(3)]
        self.peer = [free_port() for _ in range(3)]
        self.procs = [None] * 3
        for i in range(3):
            self.start(i, "new")
        deadline = time.monotonic() + 20
        while self.leader() is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the etcd cluster elected no leader")
            time.sleep(0.05)
        self.net = Network()
        self.by_host = {h: LinkGroup([self.net.link(h, f"m{i}", self.client[i])
                                      for i in range(3)]) for h in harness.hosts}

    def start(self, i, state):
        cluster = ",".join(f"m{j}=http://127.0.0.1:{self.peer[j]}" for j in range(3))
        log = open(os.path.join(self.tmp, f"etcd-m{i}.log"), "a")
        self.procs[i] = subprocess.Popen(orphan_proof(
            ["etcd", "--name", f"m{i}", "--data-dir", os.path.join(self.tmp, f"etcd-m{i}"),
             "--listen-client-urls", f"http://127.0.0.1:{self.client[i]}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.client[i]}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer[i]}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[i]}",
             "--initial-cluster", cluster, "--initial-cluster-state", state,
             "--heartbeat-interval", "50", "--election-timeout", "500",
             "--logger", "zap", "--log-level", "error"]),
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)

    def status(self, i):
        req = urllib.request.Request(f"http://127.0.0.1:{self.client[i]}/v3/maintenance/status",
                                     data=b"{}", method="POST")
        with urllib.request.urlopen(req, timeout=1) as r:
            return json.load(r)

    def leader(self):
        """The index of the leader, by the first member that answers; None."""
        for i in range(3):
            try:
                s = self.status(i)
                ids = {}
                for j in range(3):
                    try:
                        ids[self.status(j)["header"]["member_id"]] = j
                    except (OSError, KeyError, ValueError):
                        pass
                return ids.get(s.get("leader"))
            except (OSError, KeyError, ValueError):
                continue
        return None

    def uri(self, host):
        ports = ",".join(f"127.0.0.1:{link.port}" for link in self.by_host[host].members)
        return f"etcd://{ports}/chaos?timeout={self.TIMEOUT}"

    def admin_uri(self):
        ports = ",".join(f"127.0.0.1:{p}" for p in self.client)
        return f"etcd://{ports}/chaos?timeout=2s"

    def links(self):
        return self.by_host

    def fault_kinds(self):
        return ["kill_leader", "sigstop_member"]

    def inject(self, kind):
        if kind == "kill_leader":
            i = self.leader()
            if i is None:
                return False
            self.procs[i].kill()
            self.procs[i].wait()
            self.hold(self.rng.uniform(0.3, 1.5), lambda: self.start(i, "existing"))
        elif kind == "sigstop_member":
            i = self.leader() if self.rng.random() < 0.5 else self.rng.randrange(3)
            if i is None or self.procs[i].poll() is not None:
                return False
            p = self.procs[i]
            p.send_signal(signal.SIGSTOP)
            self.hold(self.rng.uniform(0.5, 2.0), lambda: p.send_signal(signal.SIGCONT))
        return True

    def hold(self, seconds, then):
        self.busy_until = time.monotonic() + seconds + 1.0
        self.harness.later(seconds, then)

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
        self.net.close()
