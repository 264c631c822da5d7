"""``python -m toolwarden_plugin.describe app``: what the host will read.

Imports the module in plain CPython and prints every tool it defines as
JSON (name, description, schemas, effects, risk, filesystem, network).
``toolwarden build`` reads it to pick the world to build against (the one
with ``wasi:http`` only when a tool declares origins: the host refuses a
plugin that imports what none of its tools declares); an author reads it
to see the schemas the type hints became.
"""

import importlib
import json
import sys

from . import definitions


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m toolwarden_plugin.describe MODULE", file=sys.stderr)
        return 2
    sys.path.insert(0, ".")
    importlib.import_module(argv[0])
    print(json.dumps([d.spec() for d in definitions()], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
