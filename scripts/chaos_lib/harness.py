"""One chaos run on one backend: contenders on hosts, faults, the verdict."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import checker
from .faults import NetworkFaults
from .backends import BACKENDS
from .servers import orphan_proof

TTL_MS, TRANSITION_MS, KILL_AFTER_MS = 1000, 1000, 500
# The slowest delivery a network fault of faults.py makes (delay + jitter).
SLOWEST_LINK_S = 2.3
MUTEX = "chaos"
HOST_FAULTS = ["kill9_simba", "kill9_cmd", "sigstop_simba", "force_release",
               "kill9_simba_daemon"]


def log(msg):
    print(f"chaos: {msg}", file=sys.stderr, flush=True)


class Chaos:
    log = staticmethod(log)

    def __init__(self, simba, cmd, backend, seed, opts):
        self.simba, self.cmd, self.kind = simba, cmd, backend
        # Faults and contenders draw from streams of their own: a replay
        # gets the same faults whatever the contenders drew meanwhile.
        self.rng = random.Random(seed)
        self.contender_rng = random.Random(seed + 1)
        self.seed, self.opts = seed, opts
        self.tmp = tempfile.mkdtemp(prefix=f"simba-chaos-{backend}-")
        self.log_path = os.path.join(self.tmp, "cmd.log")
        self.lock_path = os.path.join(self.tmp, "cmd.lock")
        self.hosts = [f"h{i}" for i in range(opts.hosts)]
        self.pending = []                # (monotonic s, fn): heals, resumes
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SIMBA_")}
        self.runners = [None] * opts.runners  # slot i runs on host i % hosts
        self.leaders = [None] * opts.leaders
        self.lead_ms = [self.contender_rng.randint(300, 1500) for _ in range(opts.leaders)]
        self.faults = {}                 # kind -> count
        self.kills = []                  # (monotonic ns, another fault active) of kill -9s
        self.fault_times = []            # monotonic ns of every fault and heal
        # The same with their kinds, in the run's files (kept when it fails):
        # "NS KIND", "NS heal", "NS kill PID" (a kill -9 of a holder's simba,
        # with " active" when another fault lasted), on cmd.log's clock; the
        # first line, "NS clock MS", is that clock against the wall clock
        # (ms since the epoch) of simba's JSON log lines in simba-N.err.
        self.fault_journal = open(os.path.join(self.tmp, "faults.log"), "a", buffering=1)
        self.fault_journal.write(f"{time.monotonic_ns()} clock {time.time_ns() // 1_000_000}\n")
        self.spawned = 0
        self.backend = BACKENDS[backend](self.tmp, self.rng, self)
        self.net = NetworkFaults(self.backend.links(), self.rng, self.later)

    def later(self, seconds, fn, mark=True):
        """fn in `seconds`; marked as a fault time (a heal) unless mark=False
        (the rest of a server fault that was counted when injected)."""
        def marked():
            if mark:
                self.fault_times.append(time.monotonic_ns())
                self.fault_journal.write(f"{self.fault_times[-1]} heal\n")
            fn()
        self.pending.append((time.monotonic() + seconds, marked))

    def run_pending(self, everything=False):
        now = time.monotonic()
        for entry in sorted(self.pending, key=lambda e: e[0]):
            if everything or entry[0] <= now:
                self.pending.remove(entry)
                try:
                    entry[1]()
                except (OSError, ProcessLookupError) as e:
                    log(f"{self.kind}: a heal failed: {e}")

    # ---- contenders ----------------------------------------------------------
    def host_of(self, slot):
        return self.hosts[slot % len(self.hosts)]

    def spawn(self, argv):
        self.spawned += 1
        err = open(os.path.join(self.tmp, f"simba-{self.spawned}.err"), "w")
        p = subprocess.Popen(orphan_proof(argv), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=err, env=self.env)
        err.close()
        return p

    def common(self, uri):
        slots = ["--slots", str(self.opts.slots)] if self.opts.slots > 1 else []
        return ["--mutex", MUTEX, "--backend", uri, "--ttl", f"{TTL_MS}ms",
                "--transition", f"{TRANSITION_MS}ms", "--kill-after", f"{KILL_AFTER_MS}ms",
                "-v", "--log-format", "json"] + slots

    def run_argv(self, slot):
        # Most CMDs end within their first ttl; a fifth outlive it, so that
        # their guard renews under the faults.
        r = self.contender_rng
        ms = r.randint(50, 400) if r.random() < 0.8 else r.randint(1000, 3000)
        # Some CMDs leave a setsid'd daemon that holds the flock (chaos_cmd.cpp).
        daemon = ["daemon"] if self.contender_rng.random() < 0.5 else []
        host = self.host_of(slot)
        return self.backend.command_prefix(host) + [self.simba, "run"] + \
            self.common(self.backend.uri(host)) + \
            ["--", self.cmd, self.log_path, self.lock_path, str(ms)] + daemon

    def lead_argv(self, i):
        # Some leaders restart their CMD for ever (until a fault takes the
        # lease); the others release and exit after one run and are started
        # again, so that leadership moves often.
        restart = "always" if self.contender_rng.random() < 0.3 else "never"
        host = self.host_of(len(self.runners) + i)
        return self.backend.command_prefix(host) + [self.simba, "lead"] + \
            self.common(self.backend.uri(host)) + \
            ["--restart", restart, "--restart-delay", "100ms",
             "--", self.cmd, self.log_path, self.lock_path, str(self.lead_ms[i])]

    def keep_contending(self):
        for i, p in enumerate(self.runners):
            if p is None or p.poll() is not None:
                self.runners[i] = self.spawn(self.run_argv(i))
        for i, p in enumerate(self.leaders):
            if p is None or p.poll() is not None:
                self.leaders[i] = self.spawn(self.lead_argv(i))

    def simbas(self):
        return [p for p in self.runners + self.leaders if p is not None and p.poll() is None]

    @staticmethod
    def stat(pid):
        """(comm, state, ppid) of a process, or None."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            return None
        fields = stat[stat.rindex(")") + 2:].split()
        return stat[stat.index("(") + 1:stat.rindex(")")], fields[0], int(fields[1])

    def holder(self, with_daemon=False):
        """(simba pid, CMD pid, host) of a running CMD (one that left a
        daemon), or None. CMD's parent is simba's watchdog, whose parent is
        simba (setpriv execs simba: same pid)."""
        ours = {p.pid: slot for slot, p in enumerate(self.runners + self.leaders)
                if p is not None and p.poll() is None}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            st = self.stat(entry)
            if not st or st[0] != "simba_chaos_cmd" or st[1] == "Z":
                continue
            parent = self.stat(st[2])
            simba = parent[2] if parent and parent[0] == "simba-watchdog" else st[2]
            if simba not in ours:
                continue
            if with_daemon:
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        if not f.read().endswith(b"daemon\0"):
                            continue
                except OSError:
                    continue
            return simba, int(entry), self.host_of(ours[simba])
        return None

    # ---- faults --------------------------------------------------------------
    def fault(self):
        kinds = HOST_FAULTS + self.backend.fault_kinds() + self.net.kinds()
        kind = self.rng.choice(kinds)
        if kind in self.net.kinds():
            if self.net.busy():
                return  # one network fault at a time
            h = self.holder()
            # Mostly the holder's host: that is where a partition bites.
            host = h[2] if h and self.rng.random() < 0.7 else self.rng.choice(self.hosts)
            self.count(kind)
            self.net.inject(kind, host)
            return
        if kind in self.backend.fault_kinds():
            if self.backend.busy():
                return  # one server fault at a time
            if self.backend.inject(kind):
                self.backend.injected(kind, self.count(kind))
            return
        # A kill while another fault lasts times no failover (checker).
        active = bool(self.pending) or self.net.busy() or self.backend.busy()
        h = self.holder()
        if kind == "kill9_simba_daemon":
            # Wait a little for a holder whose CMD left a daemon.
            until = time.monotonic() + 3
            while (h := self.holder(with_daemon=True)) is None and time.monotonic() < until:
                self.keep_contending()
                time.sleep(0.02)
        if kind != "force_release" and h is None:
            return  # nobody holds it right now: try again at the next fault
        self.count(kind)
        if kind in ("kill9_simba", "kill9_simba_daemon"):
            self.kills.append((self.fault_times[-1], active))
            self.fault_journal.write(
                f"{self.fault_times[-1]} kill {h[0]}{' active' if active else ''}\n")
            os.kill(h[0], signal.SIGKILL)
        elif kind == "kill9_cmd":
            os.kill(h[1], signal.SIGKILL)
        elif kind == "sigstop_simba":
            os.kill(h[0], signal.SIGSTOP)
            pause = (TTL_MS + TRANSITION_MS) / 1000 + self.rng.uniform(0.3, 1.5)
            self.later(pause, lambda pid=h[0]: os.kill(pid, signal.SIGCONT))
        elif kind == "force_release":
            subprocess.run([self.simba, "release", "--mutex", MUTEX, "--backend",
                            self.backend.admin_uri(), "--force", "-q"], env=self.env,
                           timeout=30, stderr=subprocess.DEVNULL)

    def count(self, kind):
        """Counts a fault of `kind` and marks its time (monotonic ns, returned)."""
        self.faults[kind] = self.faults.get(kind, 0) + 1
        self.fault_times.append(time.monotonic_ns())
        self.fault_journal.write(f"{self.fault_times[-1]} {kind}\n")
        return self.fault_times[-1]

    # ---- the run -------------------------------------------------------------
    def run(self):
        o = self.opts
        goal = f", until {o.handovers} faulted hand-overs" if o.handovers else ""
        more = f" (longer, up to {o.max_duration:g} s, until {o.min_handovers} hand-overs)" \
            if o.max_duration > o.duration else ""
        slots = f", --slots {o.slots}" if o.slots > 1 else ""
        log(f"{self.kind}: seed {self.seed}, at most {o.duration:g} s{more}{goal}, "
            f"{o.runners} run loops + {o.leaders} leaders on {o.hosts} hosts{slots}, "
            f"in {self.tmp}")
        try:
            start = time.monotonic()
            self.contend(start + o.duration, start + max(o.max_duration, o.duration))
            self.wind_down()
        finally:
            self.cleanup()
        return self.check()

    def contend(self, end, last):
        """Until `end`; then on while the run has fewer than --min-handovers
        hand-overs (a slow machine makes fewer in the time: the run waits
        for its evidence instead of failing on a rate), never past `last`
        (monotonic s). --handovers ends it once that many were faulted."""
        o = self.opts
        next_fault = time.monotonic() + self.rng.uniform(1.5, 4.0)
        next_count = time.monotonic() + 5
        enough = said = False
        while time.monotonic() < last and (time.monotonic() < end or not enough):
            self.keep_contending()
            self.run_pending()
            if time.monotonic() >= next_fault:
                self.fault()
                next_fault = time.monotonic() + self.rng.uniform(1.5, 4.0)
            now = time.monotonic()
            if now >= next_count or (now >= end and not enough):
                next_count = now + 5
                total, faulted = self.hand_over_counts()
                if o.handovers and faulted >= o.handovers:
                    break
                enough = total >= o.min_handovers
                if now >= end and not enough and not said:
                    said = True
                    log(f"{self.kind}: {total} hand-overs in {o.duration:g} s, fewer than "
                        f"{o.min_handovers}: going on, for {last - now:.0f} s at most")
                if now >= end and not enough:
                    next_count = now + 1
            time.sleep(0.02)

    def hand_over_counts(self):
        """(hand-overs, faulted ones) so far."""
        if not os.path.exists(self.log_path):
            return 0, 0
        starts = checker.read_log(self.log_path)[0]
        return checker.hand_overs(starts, self.fault_times)

    def stop_contenders(self, grace):
        for p in self.simbas():
            p.send_signal(signal.SIGCONT)
            p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for p in self.runners + self.leaders:
            if p is None:
                continue
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def wind_down(self):
        self.run_pending(everything=True)  # every fault healed
        self.stop_contenders(10)
        # Nobody is alive: the mutex must be free once any lease ran out. A
        # renewal still in flight on a slow link (a chunk is delivered up to
        # SLOWEST_LINK_S after it was sent, even after its sender died) may
        # still extend the last lease by ttl + transition: poll until then.
        lease_s = (TTL_MS + TRANSITION_MS) / 1000
        give_up = time.monotonic() + SLOWEST_LINK_S + lease_s + 1.0
        time.sleep(lease_s + 0.5)
        while True:
            self.final_state = self.mutex_state()
            if self.final_state in ("free", "quarantine") or time.monotonic() > give_up:
                break
            time.sleep(0.2)
        self.leftover_cmds = len(subprocess.run(["pgrep", "-f", self.log_path],
                                                capture_output=True, text=True).stdout.split())

    def mutex_state(self):
        st = subprocess.run([self.simba, "status", "--mutex", MUTEX, "--backend",
                             self.backend.admin_uri(), "--json"], env=self.env,
                            capture_output=True, text=True, timeout=30)
        return json.loads(st.stdout)["mutexes"][0]["state"] \
            if st.returncode == 0 else f"status failed: {st.stderr.strip()}"

    def cleanup(self):
        """Also on SIGTERM/SIGINT (raised as SystemExit/KeyboardInterrupt)."""
        self.final_state = getattr(self, "final_state", "not reached")
        self.leftover_cmds = getattr(self, "leftover_cmds", -1)
        self.pending.clear()
        self.stop_contenders(3)
        self.backend.stop()

    # ---- the verdict ---------------------------------------------------------
    def check(self):
        starts, overlaps, fenced = checker.read_log(self.log_path) \
            if os.path.exists(self.log_path) else ([], [], [])
        bad_tokens = checker.token_inversions(starts, self.opts.slots)
        total, faulted = checker.hand_overs(starts, self.fault_times)
        bound_ms = TTL_MS + TRANSITION_MS + 1000
        fo = checker.failovers(starts, self.kills, self.fault_times, bound_ms)
        worst = max(fo) if fo else None
        # A Redis that lost data near the end shows the mutex in quarantine.
        ok = not overlaps and not bad_tokens and not fenced and \
            self.final_state in ("free", "quarantine") and self.leftover_cmds == 0 and \
            (worst is None or worst <= bound_ms + 1000)
        k = self.kind
        faults = ", ".join(f"{n} {v}" for n, v in sorted(self.faults.items())) or "none"
        log(f"{k}: {len(starts)} CMD starts, {total} hand-overs, {faulted} faulted; "
            f"{sum(self.faults.values())} faults: {faults}")
        log(f"{k}: overlaps: {len(overlaps)}; tokens going back: {len(bad_tokens)}; "
            f"fencing rejections: {len(fenced)} (0 expected with 0 overlaps); "
            f"mutex at the end: {self.final_state}; CMDs left running: {self.leftover_cmds}")
        if self.opts.slots > 1:
            most = checker.most_at_once(self.log_path) if os.path.exists(self.log_path) else 0
            log(f"{k}: --slots {self.opts.slots}: at most {most} CMDs seen at once (of those "
                f"that recorded their end); more than {self.opts.slots} would be an overlap")
        if fo:
            log(f"{k}: failover after kill -9 of the holder: worst {worst:.0f} ms, mean "
                f"{sum(fo) / len(fo):.0f} ms over {len(fo)} (bound ttl + transition + 1 s = "
                f"{bound_ms} ms)")
        server_faults = getattr(self.backend, "server_faults", None)
        if server_faults is not None and os.path.exists(self.log_path):
            sbound = self.backend.failover_bound_ms(TTL_MS + TRANSITION_MS)
            sfo = checker.server_failovers(self.log_path, server_faults, self.fault_times,
                                           sbound)
            if sfo:
                log(f"{k}: next lease after a server failover: worst {max(sfo):.0f} ms, mean "
                    f"{sum(sfo) / len(sfo):.0f} ms over {len(sfo)} (bound down-after + "
                    f"election + 0.5 s + longest lease + 1 s = {sbound} ms)")
                ok = ok and max(sfo) <= sbound
        for line in (overlaps[:10] + bad_tokens[:10] + fenced[:10]):
            log(f"  {line}")
        if total < self.opts.min_handovers:
            log(f"{k}: {total} hand-overs, fewer than {self.opts.min_handovers} even after "
                f"{max(self.opts.max_duration, self.opts.duration):g} s: the run proves nothing")
            ok = False
        log(f"{k}: {'PASS' if ok else 'FAIL'} (replay: scripts/chaos --backend {k} "
            f"--seed {self.seed}{self.opts.replay}; logs in {self.tmp})")
        if ok and not self.opts.keep_logs:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return ok
