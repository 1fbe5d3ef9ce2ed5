#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the size rules of mlosd's floor (docs/architecture.md, "Sizes"):
no file of src/daemon over 500 lines, no function there over 80 lines.
Function lengths are lizard's (https://github.com/terryyin/lizard), the
maintained counter of C++ functions; a machine without it skips (exit 77,
ctest's SKIP_RETURN_CODE) and says so.

  python3 scripts/check_code_size.py          # exit 1 and what is too big
"""
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = [
    # (folder, most lines a file may have, most lines a function may have)
    ("src/daemon", 500, 80),
]


def main():
    try:
        import lizard
    except ImportError:
        print("check_code_size: skipped: lizard is not installed (scripts/setup.sh installs it)")
        return 77
    problems = []
    for folder, max_file, max_function in RULES:
        for path in sorted(glob.glob(os.path.join(ROOT, folder, "*.[ch]*"))):
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as f:
                lines = sum(1 for _ in f)
            if lines > max_file:
                problems.append(f"{rel}: {lines} lines (at most {max_file})")
            for fn in lizard.analyze_file(path).function_list:
                if fn.length > max_function:
                    problems.append(f"{rel}:{fn.start_line}: {fn.long_name.split('(')[0]} is {fn.length} lines "
                                    f"(at most {max_function})")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
