"""Real services for the Spark tests, started once per test session and stopped by PID: an S3 API
server (moto's standalone server) and a standalone Spark cluster (a master and two workers from
the installed pyspark distribution), all on 127.0.0.1. The commands here are the README's.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# fake credentials: moto accepts any; the variables are the AWS chain's, which pyarrow reads
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "kseg-test",
    "AWS_SECRET_ACCESS_KEY": "kseg-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # no instance-role probe (seconds of timeouts)
}
BUCKET = "kseg"


@dataclass
class Service:
    """Processes started in their own session (a process group each), and their logs."""

    procs: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def start(self, argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
        out = open(log, "wb")  # noqa: SIM115 - held open for the process's life
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        out.close()
        self.procs.append(proc)
        self.logs.append(log)
        return proc

    def wait_for(self, log: Path, pattern: str, timeout: float = 180) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, log.read_text(errors="replace"))
            if m:
                return m
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        self.stop()
        tails = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-3000:]}" for p in self.logs)
        raise RuntimeError(f"{log.name}: no {pattern!r} within {timeout} s\n{tails}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


@dataclass
class S3Server:
    endpoint: str
    env: dict[str, str]
    service: Service

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"],
            region_name=S3_ENV["AWS_DEFAULT_REGION"],
        )

    def upload(self, root: Path, prefix: str) -> str:
        """Every file under ``root`` as s3://BUCKET/prefix/...; returns that URI."""
        s3 = self.client()
        for path in sorted(root.rglob("*")):
            if path.is_file():
                s3.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(root)}")
        return f"s3://{BUCKET}/{prefix}"


def start_s3(workdir: Path) -> S3Server:
    """moto's S3 server on a free port of 127.0.0.1, with the bucket made."""
    server = Path(sys.executable).with_name("moto_server")
    service = Service()
    log = workdir / "moto.log"
    service.start([str(server), "-H", "127.0.0.1", "-p", "0"], log, dict(os.environ))
    port = service.wait_for(log, r"Running on http://127\.0\.0\.1:(\d+)", timeout=60).group(1)
    endpoint = f"http://127.0.0.1:{port}"
    s3 = S3Server(endpoint, {**S3_ENV, "AWS_ENDPOINT_URL": endpoint}, service)
    s3.client().create_bucket(Bucket=BUCKET)
    return s3


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Cluster:
    master: str
    env: dict[str, str]
    service: Service

    def submit(self, *args: str, timeout: float = 600, cwd=None) -> subprocess.CompletedProcess:
        """``spark-submit --master spark://... kseg/cli/spark_submit.py ARGS`` (the README's way),
        from ``cwd`` (this process's working directory by default)."""
        import kseg.cli.spark_submit

        argv = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            self.master,
            "--conf",
            "spark.ui.enabled=false",
            # both executors registered before the first task (the ratio counts against
            # spark.cores.max): every job runs on both
            "--conf",
            "spark.cores.max=2",
            "--conf",
            "spark.scheduler.minRegisteredResourcesRatio=1.0",
            "--conf",
            "spark.scheduler.maxRegisteredResourcesWaitingTime=120s",
            "--conf",
            "spark.executor.memory=512m",
            # short-lived executor JVMs: the client compiler only (as tests/conftest.py FAST_JVM)
            "--conf",
            "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            kseg.cli.spark_submit.__file__,
            *args,
        ]
        return subprocess.run(argv, capture_output=True, env=self.env, timeout=timeout, cwd=cwd)


def start_cluster(workdir: Path, extra_env: dict[str, str]) -> Cluster:
    """A standalone master and two one-core workers on 127.0.0.1 (separate JVMs; their executors
    start their own Python workers with this interpreter)."""
    home = spark_home()
    env = {
        **os.environ,
        **extra_env,
        "SPARK_HOME": str(home),
        "SPARK_LOG_DIR": str(workdir),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
    }
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    cls = str(home / "bin" / "spark-class")
    service = Service()
    log = workdir / "master.log"
    service.start(
        [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0"]
        + ["--webui-port", "0"],
        log,
        env,
    )
    master = service.wait_for(log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")[1]
    for n in (1, 2):
        work = workdir / f"worker{n}"
        work.mkdir()
        service.start(
            [cls, "org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1"]
            + ["--cores", "1", "--memory", "1g", "--webui-port", "0", "--work-dir", str(work)],
            workdir / f"worker{n}.log",
            env,
        )
    for n in (1, 2):
        service.wait_for(workdir / f"worker{n}.log", "Successfully registered with master")
    return Cluster(master, env, service)


def workers_with_tasks(cluster: Cluster, stderr: bytes) -> set[str]:
    """The workers whose executors finished tasks of the application spark-submit ran (read
    from each executor's own log in its worker's work dir)."""
    m = re.search(rb"Connected to Spark cluster with app ID (app-[\w-]+)", stderr)
    if m is None:
        return set()
    app = m[1].decode()
    return {
        log.parts[-4]
        for log in Path(cluster.env["SPARK_LOG_DIR"]).glob(f"worker*/{app}/*/stderr")
        if "Finished task" in log.read_text(errors="replace")
    }
