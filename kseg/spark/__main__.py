"""spark-submit entry point: ``spark-submit ... kseg/spark/__main__.py export INPUT --out DIR``.

The same options as ``kseg spark ...``; under spark-submit the master comes from spark-submit.
"""

import sys

from kseg.cli import main

if __name__ == "__main__":
    sys.argv[1:1] = ["spark"]
    if "--master" not in sys.argv:
        sys.argv += ["--master", "from-spark-submit"]
    main()
