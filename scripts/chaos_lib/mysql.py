"""The MySQL backend of the chaos harness: a MariaDB server of our own and
its faults (`mysql`). Each host reaches it through a Link of its own
(chaos_lib/proxy.py: plain TCP), so every network fault applies to it as to
Redis and PostgreSQL.

The server is made as tests/e2e/mysql_server.sh makes it: mariadb-install-db,
loopback TCP and a Unix socket, a user with a password,
innodb_flush_log_at_trx_commit=0; as the user simba-mysql when we are root
(mariadbd refuses root), under setpriv --pdeathsig KILL like every process
of the run. Not part of `--backend all`: run it by name.
"""
import os
import shutil
import signal
import subprocess
import time

from .proxy import Network
from .servers import Backend, free_port

MY_USER = "simba-mysql"
MUTEX = "chaos"  # harness.MUTEX


def mysql_installed():
    return bool(shutil.which("mariadbd") or os.path.exists("/usr/sbin/mariadbd")) and \
        bool(shutil.which("mariadb-install-db"))


def as_my_user(tmp):
    if os.geteuid() != 0:
        return []
    os.chmod(tmp, 0o711)
    if subprocess.run(["id", "-u", MY_USER], capture_output=True).returncode:
        subprocess.run(["useradd", "--system", "--no-create-home", "--user-group",
                        "--shell", "/usr/sbin/nologin", MY_USER], check=True)
    gid = subprocess.run(["id", "-g", MY_USER], capture_output=True, text=True,
                         check=True).stdout.strip()
    return ["--reuid=" + MY_USER, f"--regid={gid}", "--clear-groups"]


class MysqlServer:
    PASSWORD = "chaos-pw"

    def __init__(self, tmp):
        self.dir, self.port, self.proc = os.path.join(tmp, "my"), free_port(), None
        self.sock = os.path.join(self.dir, "mysqld.sock")
        os.makedirs(self.dir)
        self.user = as_my_user(tmp)
        with open(os.path.join(self.dir, "init.sql"), "w") as f:
            f.write("CREATE DATABASE IF NOT EXISTS simba;\n"
                    f"CREATE USER IF NOT EXISTS 'simba'@'%' IDENTIFIED BY '{self.PASSWORD}';\n"
                    "GRANT ALL ON simba.* TO 'simba'@'%';\n")
        if self.user:
            subprocess.run(["chown", "-R", MY_USER + ":", self.dir], check=True)
        subprocess.run(self.setpriv() + [
            "mariadb-install-db", "--no-defaults", "--datadir=" + self.data(),
            "--auth-root-authentication-method=socket", "--skip-test-db",
            "--skip-name-resolve", "--innodb-log-file-size=8M"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def setpriv(self):
        return ["setpriv", "--pdeathsig", "KILL"] + self.user + ["--"]

    def data(self):
        return os.path.join(self.dir, "data")

    def start(self, tcp=True):
        """Starts the server; with tcp=False on its Unix socket only."""
        binary = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(self.sock):
                os.unlink(self.sock)
            self.proc = subprocess.Popen(self.setpriv() + [
                binary, "--no-defaults", "--datadir=" + self.data(), "--socket=" + self.sock,
                f"--port={self.port}", "--bind-address=127.0.0.1", "--skip-name-resolve",
                "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin",
                "--performance-schema=OFF", "--max-connections=400",
                "--init-file=" + os.path.join(self.dir, "init.sql"),
                "--log-error=" + os.path.join(self.dir, "error.log")]
                + ([] if tcp else ["--skip-networking"]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while self.proc.poll() is None and time.monotonic() < deadline:
                if os.path.exists(self.sock) and self.sql("SELECT 1") == "1\n":
                    return
                time.sleep(0.05)
            time.sleep(0.1)
        raise RuntimeError("mariadbd did not start")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def shut_down(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def uri(self, port, timeout):
        return (f"mysql://simba:{self.PASSWORD}@127.0.0.1:{port}/simba"
                f"?prefix=chaos_&timeout={timeout}")

    def sql(self, statement):
        """One statement as simba's user over the Unix socket (no Link)."""
        try:
            return subprocess.run(
                ["mariadb", "--no-defaults", "-N", "-B", "-S", self.sock, "-u", "simba",
                 "-p" + self.PASSWORD, "simba", "-e", statement],
                timeout=10, capture_output=True, text=True).stdout
        except subprocess.TimeoutExpired:
            return ""


class MysqlBackend(Backend):
    """One MariaDB server; each host reaches it through a Link of its own."""
    name = "mysql"
    in_all = False
    TIMEOUT = "500ms"

    def __init__(self, tmp, rng, harness):
        super().__init__(tmp, rng, harness)
        self.server = MysqlServer(tmp)
        self.server.start()
        self.net = Network()
        self.by_host = {h: self.net.link(h, "mysql", self.server.port) for h in harness.hosts}

    def uri(self, host):
        timeout = "3s" if host == self.harness.hosts[-1] and len(self.by_host) > 1 \
            else self.TIMEOUT
        return self.server.uri(self.by_host[host].port, timeout)

    def admin_uri(self):
        return self.server.uri(self.server.port, "2s")

    def links(self):
        return self.by_host

    def fault_kinds(self):
        return ["sigstop_mysql", "restart_mysql", "lose_lease_mysql", "kill_connections_mysql"]

    def inject(self, kind):
        s = self.server
        if kind == "sigstop_mysql":
            s.proc.send_signal(signal.SIGSTOP)
            pause = 1.0 + self.rng.uniform(0.3, 1.0)  # longer than the transition
            self.hold(pause, lambda: s.proc.send_signal(signal.SIGCONT))
        elif kind == "restart_mysql":
            s.kill()
            s.start()
        elif kind == "lose_lease_mysql":
            # A server that comes back without its last writes: kill -9, the
            # lease rows deleted while no simba can reach it (the Unix
            # socket only), then a start as usual: a new run, which simba
            # must quarantine.
            s.kill()
            s.start(tcp=False)
            s.sql(f"DELETE FROM chaos_leases WHERE mutex = '{MUTEX}' OR mutex LIKE '{MUTEX}#%'")
            s.kill()
            s.start()
        elif kind == "kill_connections_mysql":
            # simba's connections die under it (KILL CONNECTION): the
            # harness's own session is spared.
            ids = s.sql("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'simba' "
                        "AND ID <> CONNECTION_ID()").split()
            if ids:
                s.sql(";".join(f"KILL CONNECTION {i}" for i in ids))
        if kind in ("restart_mysql", "lose_lease_mysql"):
            self.busy_until = max(self.busy_until, time.monotonic() + 4.0)
        return True

    def hold(self, seconds, then):
        self.busy_until = time.monotonic() + seconds + 0.5
        self.harness.later(seconds, then)

    def stop(self):
        self.server.shut_down()
        self.net.close()
