"""A Spark failure as one line naming its cause.

What pyspark raises when a job fails (py4j's Py4JJavaError, pyspark's captured exceptions) carries
the JVM's stack trace, often with a Python worker's traceback inside: kilobytes of text whose
cause is one line of it. ``spark_failure`` finds that line (the CLI shows it, and the whole trace
only with KSEG_DEBUG=1). pyspark is never imported here: an exception is recognised by the module
of its class.
"""

from __future__ import annotations

import re

_TRACEBACK = "Traceback (most recent call last):"
_PY4J_CALL = re.compile(r"^An error occurred while calling [\w.$]+\.?$")
_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)|^Driver stacktrace:")
# "Job aborted due to stage failure: Task 1 in stage 0.0 failed 4 times, most recent failure:
# Lost task 1.3 in stage 0.0 (TID 7) (127.0.0.1 executor 1): <cause>"
_ABORTED = re.compile(
    r"Job aborted due to stage failure: Task \S+ in stage \S+ failed (\d+) times?, most recent "
    r"failure: Lost task \S+ in stage \S+ \(TID \d+\) \(([^)]*)\): "
)
# a Java class name before its message; Spark's wrappers say nothing more than what they wrap
_JAVA_CLASS = re.compile(r"\b(?:[a-z_][\w$]*\.)+([A-Z][\w$]*): ")
_WRAPPERS = {"SparkException", "PythonException", "AnalysisException", "Py4JJavaError"}
_PYTHON_WORKER = "An exception was thrown from the Python worker. Please see the stack trace below."
_MAX = 500


def is_spark_error(exc: BaseException) -> bool:
    """Raised by pyspark or py4j (a failed job, a JVM that did not start, a lost gateway)."""
    return any(c.__module__.split(".")[0] in ("pyspark", "py4j") for c in type(exc).__mro__)


def spark_failure(exc: BaseException) -> str | None:
    """One line naming the cause of a Spark failure; None for any other exception."""
    if not is_spark_error(exc):
        return None
    try:
        text = str(exc)  # py4j asks the JVM for its stack trace here
    except Exception:  # noqa: BLE001 - the gateway is gone: the class still says something
        text = ""
    return summarize(text) or type(exc).__name__


def _aborted(m: re.Match) -> str:
    return f"a task failed {m[1]} time{'' if m[1] == '1' else 's'} (last on {m[2]}): "


def summarize(text: str) -> str:
    """The cause in a Spark error's text: the exception line of the first Python traceback in
    it (a Python worker failed), else the first line of the JVM's message (its first
    "Caused by" when that line ends in a colon), without stack frames, Spark's wrapper class
    names or the SQLSTATE."""
    lines = [
        line
        for line in text.splitlines()
        if line.strip() and not _FRAME.match(line) and not _PY4J_CALL.match(line.strip())
    ]
    head, cause = "", ""
    for i, line in enumerate(lines):
        if _TRACEBACK in line:
            head = line.split(_TRACEBACK, 1)[0]
            # the exception line ends the traceback: the first line not indented after it
            cause = next((later for later in lines[i + 1 :] if not later[0].isspace()), "")
            break
    else:
        head = lines[0] if lines else ""
        if head.rstrip().endswith(":"):
            caused = [line for line in lines[1:] if line.startswith("Caused by: ")]
            cause = caused[0][len("Caused by: ") :] if caused else ""
    head = head.replace(_PYTHON_WORKER, "").strip().lstrip(":").strip()
    head = _ABORTED.sub(_aborted, head)
    line = f"{head.rstrip(':').strip()}: {cause.strip()}" if cause.strip() else head
    line = re.sub(r"\s*SQLSTATE: \w+\s*$", "", line.strip(": "))
    line = _JAVA_CLASS.sub(lambda m: "" if m[1] in _WRAPPERS else f"{m[1]}: ", line)
    line = " ".join(line.split())
    return line if len(line) <= _MAX else line[: _MAX - 1] + "…"
