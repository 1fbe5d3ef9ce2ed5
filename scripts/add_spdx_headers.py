#!/usr/bin/env python3
"""Adds `SPDX-License-Identifier: Apache-2.0` to every tracked source file.

    python3 scripts/add_spdx_headers.py            # add where missing
    python3 scripts/add_spdx_headers.py --check    # list files without it, exit 1 if any

Source files are the ones `git ls-files` lists whose kind is known: C and
C++ (.c .h .cpp .hpp .cc), CMake (CMakeLists.txt, .cmake, .cmake.in),
Python (.py .pyi), shell (.sh .bash) and YAML (.yaml .yml), plus files
without one of those names whose first line is a shell or Python shebang.

The identifier becomes the first comment line: line 1, or line 2 after a
`#!` shebang (and after a Python coding cookie, which must stay on line 1
or 2). A file that already names an SPDX identifier in its first lines is
left alone, whichever licence it names, so running this twice changes
nothing. Bytes elsewhere in the file are never touched.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

IDENTIFIER = "SPDX-License-Identifier: Apache-2.0"
# How far down an existing identifier still counts as "the header".
HEADER_LINES = 5

# Public headers may be read by any C compiler (the strict-C test builds
# them as C11 -pedantic, users may go older): block comments there.
C_BLOCK = ("/* ", " */")
LINE_SLASH = ("// ", "")
LINE_HASH = ("# ", "")

BY_SUFFIX = {
    ".h": C_BLOCK,
    ".c": LINE_SLASH,
    ".cc": LINE_SLASH,
    ".cpp": LINE_SLASH,
    ".hpp": LINE_SLASH,
    ".cmake": LINE_HASH,
    ".py": LINE_HASH,
    ".pyi": LINE_HASH,
    ".sh": LINE_HASH,
    ".bash": LINE_HASH,
    ".yaml": LINE_HASH,
    ".yml": LINE_HASH,
}
CODING_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
SHEBANG_KINDS = re.compile(rb"^#!.*\b(ba|z|da|k)?sh\b|^#!.*\bpython[0-9.]*\b")


def comment_style(path: Path, first_line: bytes) -> tuple[str, str] | None:
    name = path.name
    if name == "CMakeLists.txt" or name.endswith(".cmake.in"):
        return LINE_HASH
    style = BY_SUFFIX.get(path.suffix)
    if style is not None:
        return style
    if not path.suffix and SHEBANG_KINDS.match(first_line):
        return LINE_HASH
    return None


def tracked_files(root: Path) -> list[Path]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                         capture_output=True).stdout
    return [root / p.decode() for p in out.split(b"\0") if p]


def insertion_point(lines: list[bytes]) -> int:
    """Index of the line the identifier goes before."""
    at = 0
    if lines and lines[0].startswith(b"#!"):
        at = 1
    # A Python encoding declaration counts only on line 1 or 2.
    while at < min(len(lines), 2) and CODING_COOKIE.match(lines[at]):
        at += 1
    return at


def has_identifier(lines: list[bytes]) -> bool:
    return any(b"SPDX-License-Identifier:" in line for line in lines[:HEADER_LINES])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; list files without an identifier and exit 1 if there are any")
    parser.add_argument("paths", nargs="*", type=Path,
                        help="files to consider (default: every tracked file)")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    paths = [p.resolve() for p in args.paths] if args.paths else tracked_files(root)

    missing: list[Path] = []
    for path in paths:
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        lines = data.splitlines(keepends=True)
        style = comment_style(path, lines[0] if lines else b"")
        if style is None or has_identifier(lines):
            continue
        missing.append(path)
        if args.check:
            continue
        newline = b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"
        header = f"{style[0]}{IDENTIFIER}{style[1]}".encode() + newline
        at = insertion_point(lines)
        if at and not lines[at - 1].endswith(b"\n"):  # a shebang-only file without a final newline
            lines[at - 1] += newline
        lines.insert(at, header)
        path.write_bytes(b"".join(lines))

    for path in missing:
        try:
            shown = path.relative_to(root)
        except ValueError:
            shown = path
        print(shown)
    if args.check:
        if missing:
            print(f"{len(missing)} file(s) without '{IDENTIFIER}'", file=sys.stderr)
            return 1
        return 0
    print(f"added the identifier to {len(missing)} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
