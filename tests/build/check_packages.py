#!/usr/bin/env python3
"""ctest's build/packages: the Debian packages of scripts/packages.sh are
what the build really uses.

    python3 tests/build/check_packages.py SOURCE_DIR BUILD_DIR
    python3 tests/build/check_packages.py --deb FILE.deb SOURCE_DIR

Fails (exit 1) when
  * the build includes a header or links a library (every system file in
    the compiler's depfiles, every absolute path on a link line) that no
    package of SIMBA_BUILD_PACKAGES provides, itself or through what it
    depends on (installed Depends and Pre-Depends: so libc's and libstdc++'s
    headers are build-essential's), or that no package provides at all;
  * a -dev package of SIMBA_BUILD_PACKAGES provides nothing the build uses
    (a stale entry);
  * a package of SIMBA_TOOL_PACKAGES is in neither list and not on every
    Debian (Essential, or Priority required).
With --deb (tests/e2e/test_package.sh): fails when a Depends, Pre-Depends
or Recommends of the .deb (each `a | b` by at least one alternative) is a
package that the lists (SIMBA_BUILD_PACKAGES, SIMBA_TEST_PACKAGES, and what
they depend on) do not install: what the package asks of its users' machines
is what the developers' and CI's machines have, and was tested with.
Exit 77, "not applicable here", on a system without dpkg: the lists are
Debian's names. Run it after a build of every target (scripts/test does).

The bug it is for: scripts/simba's list lacked libssl-dev; the machines
here have it preinstalled, so only a bare Debian saw the build fail.
"""
import glob
import os
import re
import shutil
import subprocess
import sys


def lists(source):
    """SIMBA_BUILD_PACKAGES, SIMBA_TEST_PACKAGES, SIMBA_TOOL_PACKAGES (values)."""
    script = ('source "$1"; printf "%s\\n" "${SIMBA_BUILD_PACKAGES[*]}" '
              '"${SIMBA_TEST_PACKAGES[*]}" "${SIMBA_TOOL_PACKAGES[*]}"')
    out = subprocess.run(["bash", "-c", script, "bash",
                          os.path.join(source, "scripts", "packages.sh")],
                         check=True, capture_output=True, text=True).stdout
    build, test, tools = (line.split() for line in out.splitlines()[:3])
    return build, test, tools


def depfile_paths(text):
    """The prerequisites of a make-syntax depfile (spaces escaped by \\)."""
    text = text.replace("\\\n", " ")
    deps = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        rest = line.split(": ", 1)[1] if ": " in line else line.split(":", 1)[1]
        for word in re.split(r"(?<!\\)\s+", rest.strip()):
            if word:
                deps.append(word.replace("\\ ", " "))
    return deps


def used_files(source, build):
    """{system file: [the sources that use it]} from depfiles and link lines."""
    used = {}
    objects = glob.glob(os.path.join(build, "**", "*.o"), recursive=True)
    # A link to a system object is no object of the build's, but a file it
    # uses: build/static-start/crtbeginT.o, gcc's crtbegin.o (CMakeLists.txt).
    for o in [o for o in objects if os.path.islink(o)]:
        objects.remove(o)
        used.setdefault(os.path.realpath(o), []).append(f"the link {os.path.relpath(o, build)}")
    depfiles = glob.glob(os.path.join(build, "**", "*.o.d"), recursive=True)
    if not objects:
        sys.exit(f"FAIL: no object files under {build}: build every target first")
    if len(depfiles) < len(objects):
        sys.exit(f"FAIL: {len(objects)} objects but {len(depfiles)} depfiles under {build} "
                 "(a generator other than Makefiles?): cannot see what the build includes")
    mine = (os.path.realpath(source) + os.sep, os.path.realpath(build) + os.sep)
    for d in depfiles:
        deps = depfile_paths(open(d).read())
        src = os.path.relpath(deps[0], source) if deps else d
        for p in deps:
            p = os.path.normpath(p if os.path.isabs(p) else os.path.join(build, p))
            if not os.path.realpath(p).startswith(mine):
                used.setdefault(p, []).append(src)
    for link in glob.glob(os.path.join(build, "**", "link.txt"), recursive=True):
        target = os.path.basename(os.path.dirname(link)).removesuffix(".dir")
        for word in open(link).read().split():
            if word.startswith("/") and re.search(r"\.(a|so(\.\d+)*)$", word):
                used.setdefault(os.path.normpath(word), []).append(f"the link of {target}")
    return used


def owners(paths):
    """{path: package} by dpkg -S; a path no package owns is left out. Each
    path is asked as written, then resolved (symbolic links, the merged /usr)."""
    found = {}
    todo = {p: [p, os.path.realpath(p)] for p in paths}
    for p, names in list(todo.items()):
        for n in list(names):
            if n.startswith("/usr/"):
                names.append(n[4:])  # usrmerge: dpkg may list /lib/... for /usr/lib/...
            elif n.startswith("/"):
                names.append("/usr" + n)
    for attempt in range(3):
        ask = {}
        for p, names in todo.items():
            if p not in found and attempt < len(names):
                ask.setdefault(names[attempt], []).append(p)
        if not ask:
            break
        keys = sorted(ask)
        for i in range(0, len(keys), 500):
            out = subprocess.run(["dpkg-query", "-S", *keys[i:i + 500]],
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                if line.startswith("diversion ") or ": " not in line:
                    continue
                pkgs, path = line.split(": ", 1)
                for p in ask.get(path, []):
                    found.setdefault(p, pkgs.split(", ")[0].split(":")[0])
    return found


def installed_packages():
    """{package: (depends, provides, essential_or_required)} of what is installed."""
    fmt = "${Package}\t${db:Status-Abbrev}\t${Depends}, ${Pre-Depends}\t${Provides}\t" \
          "${Essential} ${Priority}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], check=True,
                         capture_output=True, text=True).stdout
    pkgs = {}
    for line in out.splitlines():
        name, status, deps, provides, prio = line.split("\t")
        if not status.startswith("ii"):
            continue
        alternatives = [[re.sub(r"[:\s(].*", "", a.strip()) for a in d.split("|")]
                        for d in deps.split(",") if d.strip()]
        provided = [re.sub(r"[:\s(].*", "", p.strip()) for p in provides.split(",") if p.strip()]
        words = prio.split()  # "yes required", "required", "optional"...
        pkgs[name] = (alternatives, provided, "yes" in words or "required" in words)
    return pkgs


def closure(roots, pkgs):
    """The roots and every installed package they depend on, recursively (an
    alternative or a virtual package counts through whichever is installed)."""
    providers = {}
    for name, (_, provided, _) in pkgs.items():
        for v in provided:
            providers.setdefault(v, []).append(name)
    seen, todo = set(), [r for r in roots if r in pkgs]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for alts in pkgs[p][0]:
            for a in alts:
                todo.extend(x for x in ([a] if a in pkgs else []) + providers.get(a, [])
                            if x not in seen)
    return seen


def deb_dependencies(deb):
    """[[alternatives...]...] of the .deb's Pre-Depends, Depends, Recommends."""
    groups = []
    for field in ("Pre-Depends", "Depends", "Recommends"):
        value = subprocess.run(["dpkg-deb", "-f", deb, field], check=True,
                               capture_output=True, text=True).stdout.strip()
        groups += [[re.sub(r"[:\s(].*", "", a.strip()) for a in d.split("|")]
                   for d in value.split(",") if d.strip()]
    return groups


def check_deb(deb, source):
    """The .deb's dependencies against the closure of both lists."""
    build_pkgs, test_pkgs, _ = lists(source)
    pkgs = installed_packages()
    allowed = closure(build_pkgs + test_pkgs, pkgs)
    groups = deb_dependencies(deb)
    problems = [f"the .deb needs {' | '.join(g)}, which neither list of scripts/packages.sh "
                "installs (nor anything they depend on)"
                for g in groups if not any(a in allowed for a in g)]
    print(f"build/packages --deb: {len(groups)} dependencies of {os.path.basename(deb)}: "
          f"{', '.join(' | '.join(g) for g in groups) or 'none'}", file=sys.stderr)
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0


def main():
    if not shutil.which("dpkg-query"):
        print("SKIP: not applicable here: no dpkg, and the lists name Debian packages",
              file=sys.stderr)
        return 77
    if sys.argv[1] == "--deb":
        return check_deb(sys.argv[2], sys.argv[3])
    source, build = sys.argv[1], sys.argv[2]
    build_pkgs, test_pkgs, tool_pkgs = lists(source)
    pkgs = installed_packages()
    problems = []
    not_installed = [p for p in build_pkgs if p not in pkgs]
    if not_installed:
        problems.append(f"listed build packages not installed: {' '.join(not_installed)}")
    allowed = closure(build_pkgs, pkgs)
    used = used_files(source, build)
    owner = owners(list(used))
    by_pkg = {}
    for path, who in sorted(used.items()):
        if path not in owner:
            problems.append(f"{path} (used by {who[0]}) belongs to no package")
            continue
        by_pkg.setdefault(owner[path], []).append(path)
    for pkg, paths in sorted(by_pkg.items()):
        if pkg not in allowed:
            users = sorted({u for p in paths for u in used[p]})
            problems.append(
                f"the build uses {len(paths)} file(s) of {pkg}, which no package of "
                f"SIMBA_BUILD_PACKAGES provides (scripts/packages.sh): {', '.join(paths[:3])}"
                f" (used by {', '.join(users[:3])})")
    for pkg in build_pkgs:
        if pkg.endswith("-dev") and pkg not in by_pkg:
            problems.append(f"{pkg} is listed but the build uses none of its files")
    for pkg in sorted(set(tool_pkgs)):
        if pkg not in build_pkgs + test_pkgs and not (pkg in pkgs and pkgs[pkg][2]):
            problems.append(f"SIMBA_TOOL_PACKAGES names {pkg}, which is in neither list "
                            "and not on every Debian")
    print(f"build/packages: {len(used)} system files of {len(by_pkg)} packages "
          f"({' '.join(sorted(by_pkg))}); listed: {' '.join(build_pkgs)}", file=sys.stderr)
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
