#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Apply deliberate faults one at a time, build, run the tests that should catch each, restore.

Proves that tests fail when the behaviour they are named after is removed. See
docs/testing-faults.md for the faults file format and what the report means.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

RESULTS = ("caught", "NOT CAUGHT", "stale", "build-broken", "no-tests", "baseline-fails")


class Fault:
    def __init__(self, fault_id, line):
        self.id = fault_id
        self.line = line
        self.desc = ""
        self.file = ""
        self.tests = ""
        self.filter = ""
        self.edits = []  # (find, replace) pairs, applied in order to the one file


def parse_faults(path):
    """Parse the faults file: `[fault ID]` headers, `key: value` lines, then one or more
    `--- find` / `--- replace` / `--- end` blocks whose lines are taken verbatim."""
    faults, cur, block, buf, find = [], None, None, [], None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if block == "find":
            if line == "--- replace":
                find, buf, block = "\n".join(buf), [], "replace"
            elif line.startswith("--- "):
                sys.exit(f"{path}:{n}: expected --- replace in fault {cur.id}")
            else:
                buf.append(line)
            continue
        if block == "replace":
            if line == "--- end":
                cur.edits.append((find, "\n".join(buf)))
                buf, block = [], None
            elif line.startswith("--- "):
                sys.exit(f"{path}:{n}: expected --- end in fault {cur.id}")
            else:
                buf.append(line)
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"\[fault ([A-Za-z0-9_.-]+)\]\s*", line)
        if m:
            cur = Fault(m.group(1), n)
            faults.append(cur)
            continue
        if cur is None:
            sys.exit(f"{path}:{n}: expected [fault ID]")
        if line == "--- find":
            block, buf = "find", []
            continue
        m = re.fullmatch(r"(desc|file|tests|filter):\s*(.*)", line)
        if not m:
            sys.exit(f"{path}:{n}: unexpected line: {line!r}")
        setattr(cur, m.group(1), m.group(2).strip())
    if block is not None:
        sys.exit(f"{path}: fault {cur.id}: block not closed with --- end")
    seen = set()
    for f in faults:
        missing = [k for k in ("desc", "file", "tests") if not getattr(f, k)]
        if not f.edits:
            missing.append("a find/replace block")
        if missing:
            sys.exit(f"{path}:{f.line}: fault {f.id} lacks {', '.join(missing)}")
        if f.id in seen:
            sys.exit(f"{path}:{f.line}: duplicate fault id {f.id}")
        seen.add(f.id)
    return faults


class Progress:
    """One overwritten status line on a terminal; nothing otherwise."""

    def __init__(self):
        self.tty = sys.stderr.isatty()

    def show(self, text):
        if self.tty:
            sys.stderr.write("\r\033[K" + text[:150])
            sys.stderr.flush()

    def clear(self):
        self.show("")


def test_targets(build_dir, regex):
    """Ninja targets (executables) of the CTest tests matching regex."""
    out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1", "-R", regex],
                         capture_output=True, text=True, check=True).stdout
    targets = []
    for t in json.loads(out).get("tests", []):
        cmd = t.get("command") or []
        if not cmd:
            continue
        exe = os.path.relpath(cmd[0], os.path.abspath(build_dir))
        if exe.startswith(".."):
            continue  # a system command (bash, python3): nothing to build
        if exe not in targets:
            targets.append(exe)
    return targets


def run_logged(cmd, log, env=None, timeout=None):
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    try:
        return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                              timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        log.write(f"\n(killed after {timeout}s)\n")
        return 124


def build(args, targets, log):
    if not targets:
        return 0
    return run_logged(["ninja", "-C", args.build_dir, f"-j{args.jobs}"] + targets, log)


def run_tests(args, fault, log):
    """Returns (ctest exit status, number of tests run)."""
    env = dict(os.environ)
    if fault.filter:
        env["GTEST_FILTER"] = fault.filter
    cmd = ["ctest", "--test-dir", args.build_dir, "-R", fault.tests, "--timeout",
           str(args.timeout), "--output-on-failure", "--no-tests=error"]
    # A whole-run bound too, in case a test ignores ctest's timeout (a hung child process).
    rc = run_logged(cmd, log, env=env, timeout=args.timeout * 4 + 60)
    return rc


def check_fault(args, fault, progress, prefix):
    """Apply, build, test, restore. Returns (result, detail)."""
    path = os.path.join(args.source_dir, fault.file)
    try:
        with open(path, "rb") as f:
            original = f.read()
    except OSError as e:
        return "stale", f"cannot read {fault.file}: {e.strerror}"
    text = original.decode("utf-8")
    for k, (find, replace) in enumerate(fault.edits, 1):
        count = text.count(find)
        if count != 1:
            return "stale", f"find snippet {k} occurs {count} times in {fault.file}"
        if find == replace:
            return "stale", f"find and replace {k} are identical"
        text = text.replace(find, replace)
    os.makedirs(args.log_dir, exist_ok=True)
    log_path = os.path.join(args.log_dir, f"{fault.id}.log")
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            with open(path, "wb") as f:
                f.write(text.encode("utf-8"))
            progress.show(f"{prefix} {fault.id}: building")
            targets = test_targets(args.build_dir, fault.tests)
            args.touched_targets.update(targets)
            if not targets:
                return "no-tests", f"no ctest test matches {fault.tests!r}"
            if build(args, targets, log) != 0:
                return "build-broken", f"build failed, see {log_path}"
            progress.show(f"{prefix} {fault.id}: testing {fault.tests}")
            rc = run_tests(args, fault, log)
        finally:
            with open(path, "wb") as f:
                f.write(original)
    if rc == 0:
        return "NOT CAUGHT", f"all of {fault.tests} passed"
    if rc == 124:
        return "caught", f"timed out, see {log_path}"
    with open(log_path, encoding="utf-8", errors="replace") as log:
        tail = log.read()
    if "No tests were found" in tail:
        return "no-tests", f"no ctest test matches {fault.tests!r}"
    failed = re.findall(r"^\s*\d+ - (\S+) \(([^)]*)\)", tail, re.M)
    what = ", ".join(f"{name} ({why})" for name, why in failed) or f"ctest exit {rc}"
    # The GoogleTest cases that failed say which test caught it.
    cases = list(dict.fromkeys(re.findall(r"^\[  FAILED  \] (\S+\.\S+?)(?: \(|,|$)", tail, re.M)))
    if not cases:
        # A crash or timeout leaves no summary: name the cases that started and never ended.
        started = re.findall(r"^\[ RUN      \] (\S+)", tail, re.M)
        ended = set(re.findall(r"^\[       OK \] (\S+)", tail, re.M))
        cases = [c for c in dict.fromkeys(started) if c not in ended]
    if cases:
        more = f" and {len(cases) - 3} more" if len(cases) > 3 else ""
        what += ": " + ", ".join(cases[:3]) + more
    return "caught", what


def baseline(args, faults, progress):
    """Run each distinct (tests, filter) once on the unmodified tree: a fault is only 'caught'
    if its tests pass without it."""
    failing = {}
    combos = []
    for f in faults:
        if (f.tests, f.filter) not in combos:
            combos.append((f.tests, f.filter))
    os.makedirs(args.log_dir, exist_ok=True)
    for i, (tests, filt) in enumerate(combos, 1):
        progress.show(f"baseline [{i}/{len(combos)}] {tests} {filt}")
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{tests}-{filt}")[:100]
        log_path = os.path.join(args.log_dir, f"baseline-{name}.log")
        with open(log_path, "w", encoding="utf-8") as log:
            fake = Fault("baseline", 0)
            fake.tests, fake.filter = tests, filt
            if build(args, test_targets(args.build_dir, tests), log) != 0:
                sys.exit(f"the unmodified tree does not build, see {log_path}")
            if run_tests(args, fake, log) != 0:
                failing[(tests, filt)] = log_path
    progress.clear()
    return failing


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ids", nargs="*", help="fault ids to run (default: all)")
    p.add_argument("--build-dir", default=os.path.join(root, "build", "release"))
    p.add_argument("--faults", default=os.path.join(root, "scripts", "faults.txt"))
    p.add_argument("--timeout", type=int, default=300, help="per-test timeout, seconds")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="ninja -j")
    p.add_argument("--report", help="JSON report (default: BUILD_DIR/fault-report.json)")
    p.add_argument("--baseline", action="store_true",
                   help="first check each fault's tests pass on the unmodified tree")
    p.add_argument("--baseline-only", action="store_true",
                   help="only run the faults' tests on the unmodified tree and report failures")
    p.add_argument("--no-rebuild", action="store_true",
                   help="leave the last fault's objects in the build dir (default: rebuild the "
                        "test targets from the restored sources at the end)")
    p.add_argument("--list", action="store_true", help="list the faults and exit")
    p.add_argument("--check", action="store_true",
                   help="only check that every find snippet occurs exactly once; no build")
    args = p.parse_args()
    args.source_dir = root
    args.build_dir = os.path.abspath(args.build_dir)
    args.log_dir = os.path.join(args.build_dir, "fault-logs")
    args.touched_targets = set()
    report_path = args.report or os.path.join(args.build_dir, "fault-report.json")

    faults = parse_faults(args.faults)
    if args.ids:
        known = {f.id for f in faults}
        unknown = [i for i in args.ids if i not in known]
        if unknown:
            sys.exit(f"unknown fault ids: {' '.join(unknown)}")
        faults = [f for f in faults if f.id in args.ids]
    if args.list:
        for f in faults:
            print(f"{f.id:38} {f.file:44} {f.tests}  {f.desc}")
        return 0
    if args.check:
        stale = 0
        for f in faults:
            try:
                with open(os.path.join(root, f.file), encoding="utf-8") as src:
                    text = src.read()
            except OSError as e:
                print(f"stale          {f.id}  cannot read {f.file}: {e.strerror}")
                stale += 1
                continue
            for k, (find, _) in enumerate(f.edits, 1):
                count = text.count(find)
                if count != 1:
                    print(f"stale          {f.id}  find snippet {k} occurs {count} times")
                    stale += 1
        print(f"{len(faults) - stale}/{len(faults)} faults apply")
        return 1 if stale else 0
    if not os.path.isfile(os.path.join(args.build_dir, "build.ninja")):
        sys.exit(f"{args.build_dir} is not a configured Ninja build directory")

    # SIGTERM restores like Ctrl-C does: both unwind through check_fault's finally.
    def on_term(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
    progress = Progress()
    records, interrupted = [], False
    try:
        failing = baseline(args, faults, progress) if args.baseline or args.baseline_only else {}
        if args.baseline_only:
            for (tests, filt), log_path in failing.items():
                print(f"baseline-fails {tests} {filt}  see {log_path}")
            print(f"baseline: {len(failing)} test selections fail without any fault")
            return 1 if failing else 0
        width = max(len(f.id) for f in faults) if faults else 0
        for i, fault in enumerate(faults, 1):
            start = time.monotonic()
            if (fault.tests, fault.filter) in failing:
                result = "baseline-fails"
                detail = f"tests fail without the fault, see {failing[(fault.tests, fault.filter)]}"
            else:
                result, detail = check_fault(args, fault, progress, f"[{i}/{len(faults)}]")
            seconds = round(time.monotonic() - start, 1)
            progress.clear()
            print(f"{result:14} {fault.id:{width}}  {detail}", flush=True)
            records.append({"id": fault.id, "description": fault.desc, "file": fault.file,
                            "tests": fault.tests, "filter": fault.filter, "result": result,
                            "detail": detail, "seconds": seconds})
    except KeyboardInterrupt:
        interrupted = True
        progress.clear()
        print("interrupted: the faulted file was restored", file=sys.stderr)

    if args.touched_targets and not interrupted and not args.no_rebuild:
        # Test binaries built from the last fault would otherwise wait for the next build.
        progress.show("rebuilding the test targets from the restored sources")
        with open(os.path.join(args.log_dir, "rebuild.log"), "w", encoding="utf-8") as log:
            if build(args, sorted(args.touched_targets), log) != 0:
                print(f"warning: rebuilding from the restored sources failed, see {log.name}",
                      file=sys.stderr)
        progress.clear()

    counts = {r: sum(1 for x in records if x["result"] == r) for r in RESULTS}
    gradable = counts["caught"] + counts["NOT CAUGHT"]
    summary = f"{counts['caught']}/{gradable} caught"
    others = [f"{counts[r]} {r}" for r in RESULTS[2:] if counts[r]]
    if others:
        summary += " (" + ", ".join(others) + ")"
    if interrupted:
        summary += f", interrupted after {len(records)}/{len(faults)}"
    print(summary)
    with open(report_path, "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "counts": counts, "interrupted": interrupted,
                   "build_dir": args.build_dir, "faults": records}, f, indent=2)
        f.write("\n")
    print(f"report: {report_path}")
    if interrupted:
        return 130
    return 0 if counts["caught"] == len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
