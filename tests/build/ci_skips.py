#!/usr/bin/env python3
"""Under CI=true, a skipped test is a failure unless it said why it cannot
apply to this machine (scripts/test runs this after ctest):

    python3 tests/build/ci_skips.py CTEST_JUNIT.xml

Each test's own skip already fails under CI=true (tests/e2e/common.sh
skip, scripts/chaos, the python3 guard of add_python_test); this is the net
under them, for a test that exits 77 some other way (a conformance script,
a new test that forgot). A skip passes only when its output says "not
applicable here" (common.sh not_applicable, check_packages.py without dpkg).
Exit 1 naming each other skip and its first line of output, else 0.
"""
import sys
import xml.etree.ElementTree as ET


def main():
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
    bad = []
    for c in cases:
        if c.find("skipped") is None:
            continue
        out = (c.findtext("system-out") or "").strip()
        if "not applicable here" in out:
            continue
        bad.append(f"{c.get('name')}: {out.splitlines()[-1] if out else '(no output)'}")
    for b in bad:
        print(f"scripts/test: FAIL (CI=true, a skip is a failure): {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
