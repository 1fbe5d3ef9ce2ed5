# SPDX-License-Identifier: Apache-2.0
"""The `mlos` console script: runs the mlos CLI shipped inside the package
(mlos_training/mlos/mlos, the C++ tools/mlos binary), replacing this
process, so signals, exit status and the terminal are the CLI's own."""
import os
import sys
from typing import List, NoReturn, Optional

BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlos", "mlos")


def main(argv: Optional[List[str]] = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"mlos: the CLI binary {BINARY} is missing or not executable; reinstall mlos-training")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(BINARY, ["mlos", *args])


if __name__ == "__main__":
    main()
