#!/usr/bin/env python3
"""Meta-test: no CTest test that prints gtest's "[  SKIPPED ]" may be reported Passed.

Two checks, each preceded by a self-test on synthetic input that must be flagged (so the check cannot pass
vacuously):
  properties CTEST BUILD_DIR   (CTest test skip_reporting_meta_test) every registered test whose executable is
                               gtest-based (it holds gtest's "[  SKIPPED ]" string) must carry SKIP_RETURN_CODE 77
                               and the main() that returns it (tests/support/gtest_skip_main.cpp), and no
                               SKIP_REGULAR_EXPRESSION: CTest reports a run that matches it Skipped even when the
                               run failed, which masks failures.
  junit JUNIT_XML              (scripts/test.sh, after each ctest run with --output-junit) every test CTest ran and
                               reported as run (Passed or Failed) must not have printed "[  SKIPPED ]".
Stdlib only. Exit 0 when clean, 1 with one line per offending test otherwise.
"""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

GTEST_SKIP_MARK = b"[  SKIPPED ]"
MAIN_MARK = b"kvaudit_gtest_main:"  # printed by tests/support/gtest_skip_main.cpp
SKIP_EXIT = 77


def property_problems(tests, read_binary):
    """tests: ctest --show-only=json-v1's "tests"; read_binary(path) -> bytes or None (not built).
    Returns (problems, gtest_count, unbuilt)."""
    problems, gtest_count, unbuilt = [], 0, []
    for t in tests:
        command = t.get("command") or []  # ctest leaves it out when the executable is not built
        data = read_binary(command[0]) if command else None
        if data is None:
            unbuilt.append(t["name"])
            continue
        if GTEST_SKIP_MARK not in data:
            continue
        gtest_count += 1
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("SKIP_RETURN_CODE") != SKIP_EXIT:
            problems.append(f"{t['name']}: gtest executable without SKIP_RETURN_CODE {SKIP_EXIT} "
                            f"(has {props.get('SKIP_RETURN_CODE')!r}): a GTEST_SKIP() run would be reported Passed")
        if MAIN_MARK not in data:
            problems.append(f"{t['name']}: not linked with tests/support/gtest_skip_main.cpp: GTEST_SKIP() exits 0 "
                            "and is reported Passed")
        if "SKIP_REGULAR_EXPRESSION" in props:
            problems.append(f"{t['name']}: SKIP_REGULAR_EXPRESSION {props['SKIP_REGULAR_EXPRESSION']!r} makes CTest "
                            "report a failing run that printed it as Skipped")
    return problems, gtest_count, unbuilt


def junit_problems(xml_text):
    """Returns (problems, counts) for ctest's --output-junit file."""
    root = ET.fromstring(xml_text)
    problems, counts = [], {}
    for case in root.iter("testcase"):
        status = case.get("status", "?")
        counts[status] = counts.get(status, 0) + 1
        out = "".join(e.text or "" for e in case.iter("system-out"))
        if status in ("run", "fail") and GTEST_SKIP_MARK.decode() in out:
            verdict = "Passed" if case.find("failure") is None and status == "run" else "Failed"
            problems.append(f"{case.get('name')}: printed \"[  SKIPPED ]\" and was reported {verdict}, not Skipped")
    return problems, counts


def self_test():
    """The checks must flag the bugs they exist for; a checker that flags nothing is itself a failure."""
    gtest_plain = GTEST_SKIP_MARK + b" gtest_main"  # a gtest binary on gtest's own main()
    gtest_ours = GTEST_SKIP_MARK + b" " + MAIN_MARK
    binaries = {"/b/plain": gtest_plain, "/b/ours": gtest_ours, "/b/other": b"no gtest here"}
    tests = [
        {"name": "old_state", "command": ["/b/plain"], "properties": []},  # conform_kvpress_test before the fix
        {"name": "regex", "command": ["/b/ours"],
         "properties": [{"name": "SKIP_RETURN_CODE", "value": 77},
                        {"name": "SKIP_REGULAR_EXPRESSION", "value": ["\\[  SKIPPED \\]"]}]},
        {"name": "good", "command": ["/b/ours"], "properties": [{"name": "SKIP_RETURN_CODE", "value": 77}]},
        {"name": "script", "command": ["/b/other"], "properties": []},
    ]
    problems, n, _ = property_problems(tests, binaries.get)
    flagged = {p.split(":")[0] for p in problems}
    assert n == 3 and flagged == {"old_state", "regex"}, f"properties self-test: {problems}"
    xml_text = """<testsuite><testcase name="quiet" status="run"><system-out>[ RUN ] A.B
[  SKIPPED ] A.B
</system-out></testcase><testcase name="said" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
<system-out>[  SKIPPED ] A.B</system-out></testcase><testcase name="ran" status="run"><system-out>[  PASSED  ] 3 tests.
</system-out></testcase></testsuite>"""
    problems, _ = junit_problems(xml_text)
    assert [p.split(":")[0] for p in problems] == ["quiet"], f"junit self-test: {problems}"


def main(argv):
    self_test()
    if len(argv) == 4 and argv[1] == "properties":
        ctest, build = argv[2], argv[3]
        listing = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True,
                                 check=True).stdout

        def read_binary(path):
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError:
                return None

        problems, n, unbuilt = property_problems(json.loads(listing)["tests"], read_binary)
        if n == 0:
            problems.append("no gtest executable found: nothing was checked (is the build dir built?)")
        print(f"skip reporting: {n} gtest executables checked" +
              (f"; {len(unbuilt)} not built here, not checked: {' '.join(unbuilt)}" if unbuilt else ""))
    elif len(argv) == 3 and argv[1] == "junit":
        with open(argv[2], encoding="utf-8", errors="replace") as f:
            problems, counts = junit_problems(f.read())
        if not counts:
            problems.append(f"{argv[2]}: no test case in the JUnit file")
        print(f"skip reporting: {sum(counts.values())} ctest results checked ({counts})")
    else:
        sys.exit("usage: check_skip_reporting.py properties CTEST BUILD_DIR | junit JUNIT_XML")
    for p in problems:
        print("SKIP REPORTING: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
