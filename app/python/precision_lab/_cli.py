"""The `precision-lab-cli` command of a pip-installed package (an entry point): the core's CLI
binary, built by setup.py and installed beside this module (precision_lab/_bin), run with this
command's arguments. Debian's package and the CMake build install the binary itself instead."""

import os
import sys

BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "precision-lab-cli")


def main():
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"precision-lab-cli: {BINARY} is missing: this installation of precision_lab "
                 f"has no CLI (pip install it again from the source tree)")
    os.execv(BINARY, [BINARY] + sys.argv[1:])  # the CLI's own exit status and signals


if __name__ == "__main__":
    main()
