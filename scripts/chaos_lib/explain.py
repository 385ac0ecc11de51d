"""`scripts/chaos --explain DIR`: the timeline around each slow failover of
a run whose files were kept (DIR: the run's directory, printed when it
fails or with --keep-logs). For each kill -9 of a holder followed by the
next CMD later than the bound, it prints the faults of the 15 s before and
what every simba logged from 3 s before the kill to that start, on one
clock (faults.log's first line maps simba's JSON times to cmd.log's)."""
import datetime
import glob
import json
import os


def _faults(path):
    offset, faults = None, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[1] == "clock":
                offset = int(parts[0]) / 1e6 - int(parts[2])  # monotonic ms - wall ms
            else:
                faults.append((int(parts[0]) / 1e6, " ".join(parts[1:])))
    return offset, faults


def _starts(path):
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[0] == "start":
                out.append((int(parts[3]) / 1e6, parts[2]))
    return sorted(out)


def _logs(run_dir, offset):
    out = []
    for path in glob.glob(os.path.join(run_dir, "simba-*.err")):
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    j = json.loads(line)
                    wall = datetime.datetime.strptime(j["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
                except (ValueError, KeyError):
                    continue  # a text line (an older run) or a cut one
                ms = wall.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
                out.append((ms + offset, j.get("pid"), j.get("level"), j.get("message", "")))
    return sorted(out, key=lambda e: e[0])


def explain(run_dir, bound_ms=3000):
    offset, faults = _faults(os.path.join(run_dir, "faults.log"))
    if offset is None:
        print(f"{run_dir}: faults.log has no clock line (a run before it was written)")
        return 1
    starts = _starts(os.path.join(run_dir, "cmd.log"))
    logs = _logs(run_dir, offset)
    times = [t for t, _ in faults]
    slow = 0
    for t, what in faults:
        if what.split()[0] != "kill":  # "kill PID [active]", not a fault kind
            continue
        later = [s for s in starts if s[0] > t]
        if not later or later[0][0] - t <= bound_ms:
            continue
        slow += 1
        clean = "active" not in what and not any(
            f != t and t - bound_ms <= f <= t + bound_ms for f in times)
        print(f"=== {what} at {t:.0f} ms: next CMD {later[0][0] - t:.0f} ms later "
              f"({'a clean kill: counted' if clean else 'not clean: not counted'}), "
              f"by {later[0][1]}")
        for ft, fw in faults:
            if t - 15000 <= ft <= later[0][0]:
                print(f"  {ft - t:+8.0f} ms  fault  {fw}")
        for lt, pid, level, msg in logs:
            if t - 3000 <= lt <= later[0][0] + 50:
                print(f"  {lt - t:+8.0f} ms  {pid} {level}: {msg[:160]}")
    print(f"{slow} kill(s) followed by the next CMD after more than {bound_ms} ms")
    return 0
