"""The PostgreSQL backends of the chaos harness: a server of our own and its
faults (`postgres`), and the same behind a PgBouncer (`pgbouncer`). Each host reaches it through a Link of its own (chaos_lib/proxy.py:
plain TCP, so the wire protocol passes as it is), so every network fault
applies to PostgreSQL as to Redis.

The server is made as tests/e2e/postgres_server.sh makes it: initdb,
loopback TCP only, scram-sha-256, fsync off; as the user simba-pg when we
are root, since the server refuses root. It runs under setpriv
--pdeathsig KILL like every process of the run: a harness killed by
SIGKILL takes the postmaster with it, and its backends see the postmaster
die and exit.
"""
import glob
import os
import shutil
import signal
import socket
import subprocess
import time

from .proxy import Network
from .servers import Backend, free_port

PG_USER = "simba-pg"
MUTEX = "chaos"  # harness.MUTEX (harness imports servers: no import back)


def pg_bin_dir():
    """postgresql-15's binaries (any installed major, the newest next), or None."""
    dirs = ["/usr/lib/postgresql/15/bin"] + sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                                                   reverse=True)
    return next((d for d in dirs if os.path.exists(os.path.join(d, "postgres"))), None)


def as_pg_user(tmp):
    """The setpriv prefix that runs a command as simba-pg (made when
    missing), when we are root; [] otherwise."""
    if os.geteuid() != 0:
        return []
    os.chmod(tmp, 0o711)  # the server's user reaches its directory
    if subprocess.run(["id", "-u", PG_USER], capture_output=True).returncode:
        subprocess.run(["useradd", "--system", "--no-create-home", "--user-group",
                        "--shell", "/usr/sbin/nologin", PG_USER], check=True)
    gid = subprocess.run(["id", "-g", PG_USER], capture_output=True, text=True,
                         check=True).stdout.strip()
    return ["--reuid=" + PG_USER, f"--regid={gid}", "--clear-groups"]


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


class PostgresServer:
    PASSWORD = "chaos-pw"

    def __init__(self, tmp, clock_rate=None):
        self.dir, self.port, self.proc = os.path.join(tmp, "pg"), free_port(), None
        # A server clock that runs `clock_rate` times as fast as the hosts'
        # (libfaketime, package libfaketime): drift between the server and
        # the hosts, which simba's margin (1% + 2 ms) covers up to 1%.
        # Set after setpriv (which runs as root): a libfaketime loaded there
        # would make its shared memory root's, which the server may not open.
        self.faketime = []
        if clock_rate:
            if not os.path.exists(FAKETIME_LIB):
                raise RuntimeError("--server-clock-rate needs libfaketime (package libfaketime)")
            self.faketime = ["env", "LD_PRELOAD=" + FAKETIME_LIB, f"FAKETIME=+0 x{clock_rate}",
                             "FAKETIME_DISABLE_SHM=1"]
        self.bin = pg_bin_dir()
        os.makedirs(self.dir)
        self.user = as_pg_user(tmp)
        pw = os.path.join(self.dir, "pw")
        with open(pw, "w") as f:
            f.write(self.PASSWORD + "\n")
        if self.user:
            shutil.chown(self.dir, PG_USER, PG_USER)
            shutil.chown(pw, PG_USER, PG_USER)
        subprocess.run(self.setpriv() + [
            os.path.join(self.bin, "initdb"), "-D", self.data(), "-U", "simba",
            "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "--pwfile=" + pw,
            "--no-sync"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def setpriv(self):
        # One setpriv: the user change comes before the parent-death signal
        # is set (a credential change would clear it).
        return ["setpriv", "--pdeathsig", "KILL"] + self.user + ["--"]

    def data(self):
        return os.path.join(self.dir, "data")

    def start(self, tcp=True):
        """Starts the server; with tcp=False on its Unix socket only (which
        simba, reaching it through the Links, cannot use)."""
        # After a kill -9 the old server's backends may hold its shared
        # memory for a moment: a start that fails is tried again.
        deadline = time.monotonic() + 20
        address = "127.0.0.1" if tcp else ""
        while time.monotonic() < deadline:
            self.proc = subprocess.Popen(self.setpriv() + self.faketime + [
                os.path.join(self.bin, "postgres"), "-D", self.data(), "-p", str(self.port),
                "-k", self.dir, "-c", "listen_addresses=" + address, "-c", "fsync=off"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while self.proc.poll() is None and time.monotonic() < deadline:
                if subprocess.run([os.path.join(self.bin, "pg_isready"), "-q", "-h",
                                   address or self.dir, "-p", str(self.port),
                                   "-t", "1"]).returncode == 0:
                    return
                time.sleep(0.05)
            time.sleep(0.1)
        raise RuntimeError("postgres did not start")

    def pids(self):
        """The postmaster and its processes (for SIGSTOP)."""
        kids = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                              text=True).stdout.split()
        return [self.proc.pid] + [int(k) for k in kids]

    def signal_all(self, sig):
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.signal_all(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def shut_down(self):
        """A fast shutdown (SIGINT): the postmaster ends its backends and
        removes its shared memory itself."""
        if self.proc and self.proc.poll() is None:
            self.signal_all(signal.SIGCONT)
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def uri(self, port, timeout):
        return (f"postgres://simba:{self.PASSWORD}@127.0.0.1:{port}/postgres"
                f"?prefix=chaos_&timeout={timeout}")

    def sql(self, statement):
        """One statement through the Unix socket (no Link); its output."""
        return subprocess.run(
            [os.path.join(self.bin, "psql"), "-X", "-q", "-At", "-h", self.dir, "-p",
             str(self.port), "-U", "simba", "-d", "postgres", "-c", statement],
            env=dict(os.environ, PGPASSWORD=self.PASSWORD), timeout=10,
            capture_output=True, text=True).stdout


class PostgresBackend(Backend):
    """One PostgreSQL server; each host reaches it through a Link of its own."""
    name = "postgres"
    TIMEOUT = "500ms"

    def __init__(self, tmp, rng, harness):
        super().__init__(tmp, rng, harness)
        self.server = PostgresServer(tmp, harness.opts.server_clock_rate)
        self.server.start()
        self.net = Network()
        self.by_host = {h: self.net.link(h, "postgres", self.server.port)
                        for h in harness.hosts}

    def uri(self, host):
        # As on Redis: the last host waits 3 s, so delayed replies reach it late.
        timeout = "3s" if host == self.harness.hosts[-1] and len(self.by_host) > 1 \
            else self.TIMEOUT
        return self.server.uri(self.by_host[host].port, timeout)

    def admin_uri(self):
        return self.server.uri(self.server.port, "2s")

    def links(self):
        return self.by_host

    def fault_kinds(self):
        return ["sigstop_postgres", "restart_postgres", "lose_lease_postgres",
                "terminate_postgres"]

    def inject(self, kind):
        s = self.server
        if kind == "sigstop_postgres":
            s.signal_all(signal.SIGSTOP)
            pause = 1.0 + self.rng.uniform(0.3, 1.0)  # longer than the transition
            self.hold(pause, lambda: s.signal_all(signal.SIGCONT))
        elif kind == "restart_postgres":
            s.kill()
            s.start()
        elif kind == "lose_lease_postgres":
            # A server that comes back without its last writes: a kill -9,
            # the lease row deleted while no simba can reach the server (a
            # start on the Unix socket only), then a start as usual: a new
            # run of the server, whose first acquisition simba must
            # quarantine rather than grant at once. (Deleted on a live
            # server, the row could be taken by a waiter before the kill:
            # an admin's break-lock that nobody is told of, not lost writes.)
            # With --slots, the slots' rows ("m#k") go with the marker's.
            s.kill()
            s.start(tcp=False)
            s.sql(f"DELETE FROM chaos_leases WHERE split_part(mutex, '#', 1) = '{MUTEX}'")
            s.kill()
            s.start()
        elif kind == "terminate_postgres":
            # simba's connections die under it (an admin, a failover, an
            # idle timeout): the harness's own psql is spared.
            s.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE usename = 'simba' AND pid <> pg_backend_pid()")
        if kind in ("restart_postgres", "lose_lease_postgres"):
            # A new server run: the quarantine (longest lease + 1 s) counts
            # as a fault under way.
            self.busy_until = max(self.busy_until, time.monotonic() + 4.0)
        return True

    def hold(self, seconds, then):
        self.busy_until = time.monotonic() + seconds + 0.5
        self.harness.later(seconds, then)

    def stop(self):
        self.server.shut_down()
        self.net.close()


class PgBouncer:
    """A PgBouncer in transaction mode in front of `server` (as
    tests/e2e/postgres_server.sh starts it), as the server's user."""

    def __init__(self, server):
        self.server, self.port, self.proc = server, free_port(), None
        self.ini = os.path.join(server.dir, "pgbouncer.ini")
        users = os.path.join(server.dir, "userlist.txt")
        with open(users, "w") as f:
            f.write(f'"simba" "{server.PASSWORD}"\n')
        # options: the session timeouts simba sends at start-up, which
        # PgBouncer does not pass on (docs/backends/postgres.md, "PgBouncer").
        with open(self.ini, "w") as f:
            f.write(f"[databases]\n* = host=127.0.0.1 port={server.port}\n[pgbouncer]\n"
                    f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\n"
                    f"unix_socket_dir =\nauth_type = scram-sha-256\nauth_file = {users}\n"
                    "pool_mode = transaction\nignore_startup_parameters = options\n"
                    "max_client_conn = 300\ndefault_pool_size = 20\n")
        if server.user:
            shutil.chown(self.ini, PG_USER, PG_USER)
            shutil.chown(users, PG_USER, PG_USER)

    def start(self):
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        self.proc = subprocess.Popen(self.server.setpriv() + [binary, "-q", self.ini],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while self.proc.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("pgbouncer did not start")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class PgBouncerBackend(PostgresBackend):
    """PostgreSQL behind a PgBouncer in transaction mode (listen=off: no
    LISTEN through a pooler); each host reaches PgBouncer through its Link.
    Not part of `--backend all`: run it by name."""
    name = "pgbouncer"
    in_all = False

    def __init__(self, tmp, rng, harness):
        Backend.__init__(self, tmp, rng, harness)
        self.server = PostgresServer(tmp, harness.opts.server_clock_rate)
        self.server.start()
        self.bouncer = PgBouncer(self.server)
        self.bouncer.start()
        self.net = Network()
        self.by_host = {h: self.net.link(h, "pgbouncer", self.bouncer.port)
                        for h in harness.hosts}

    def uri(self, host):
        return super().uri(host) + "&listen=off"

    def fault_kinds(self):
        return super().fault_kinds() + ["restart_pgbouncer"]

    def inject(self, kind):
        if kind != "restart_pgbouncer":
            return super().inject(kind)
        # kill -9 of the pooler and a start: every client connection and
        # every transaction in flight through it is cut.
        self.bouncer.kill()
        self.bouncer.start()
        return True

    def stop(self):
        self.bouncer.kill()
        super().stop()
