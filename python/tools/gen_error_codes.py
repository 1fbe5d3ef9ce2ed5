# SPDX-License-Identifier: Apache-2.0
"""Writes mlos_training/_error_codes.py from include/mlos/errors.h.

    python gen_error_codes.py include/mlos/errors.h OUT.py

The build runs it (python/CMakeLists.txt), so the Python table is the
header's and cannot fall behind it. Which exception class each code raises
is decided in mlos_training/errors.py; tests/python/test_errors.py fails
when the header has a code that table does not place.
"""
import re
import sys

# `/* comment */` lines (optional) followed by `MLOS_ERR_NAME = -N,`
_ENTRY = re.compile(r"((?:[ \t]*/\*.*?\*/[ \t]*\n)*)[ \t]*MLOS_ERR_([A-Z0-9_]+)\s*=\s*(-\d+)\s*,?", re.S)
_ENUM = re.compile(r"typedef\s+enum\s+mlos_error\s*\{(.*?)\}\s*mlos_error_t\s*;", re.S)


def parse(header_text):
    """[(name, code, description)] of mlos_error_t, in header order. Raises
    ValueError if the enum is missing, empty or has a duplicate."""
    enum = _ENUM.search(header_text)
    if not enum:
        raise ValueError("no `typedef enum mlos_error {...} mlos_error_t;` in the header")
    out = []
    for comment, name, code in _ENTRY.findall(enum.group(1)):
        text = " ".join(re.sub(r"/\*|\*/|^\s*\*", " ", comment, flags=re.M).split())
        out.append((name, int(code), text))
    if not out:
        raise ValueError("mlos_error_t has no MLOS_ERR_ codes")
    for field in (0, 1):
        seen = [entry[field] for entry in out]
        if len(seen) != len(set(seen)):
            raise ValueError(f"duplicate {'name' if field == 0 else 'code'} in mlos_error_t: {seen}")
    return out


def render(entries):
    lines = [
        "# Generated from include/mlos/errors.h by python/tools/gen_error_codes.py",
        "# at build time. Do not edit: change the header.",
        "from typing import Dict",
        "",
        "# mlos_error_t values, by name (MLOS_ERR_ dropped).",
        "CODES: Dict[str, int] = {",
    ]
    lines += [f"    {name!r}: {code}," for name, code, _ in entries]
    lines += ["}", "", "# The header's comment on each code.", "DESCRIPTIONS: Dict[str, str] = {"]
    lines += [f"    {name!r}: {text!r}," for name, _, text in entries]
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv):
    if len(argv) != 3:
        sys.exit(f"usage: {argv[0]} include/mlos/errors.h OUT.py")
    with open(argv[1], encoding="utf-8") as f:
        text = render(parse(f.read()))
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv)
