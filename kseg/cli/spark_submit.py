"""spark-submit entry point: ``spark-submit ... kseg/cli/spark_submit.py export INPUT --out DIR``.

The same options as ``kseg spark ...`` (it is the CLI's; kseg.spark never imports the CLI);
under spark-submit the master comes from spark-submit.
"""

import sys

if __name__ == "__main__":
    # run as a file, Python put kseg/cli/ itself first on sys.path: its modules must not shadow
    # top-level names (kseg/cli/exit.py would be `exit`), so it goes
    import os

    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]
    from kseg.cli.entry import run_app

    sys.argv[1:1] = ["spark"]
    if "--master" not in sys.argv:
        sys.argv += ["--master", "from-spark-submit"]
    run_app()
