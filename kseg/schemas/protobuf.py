"""Protobuf: a registered ``.proto`` schema compiled into descriptors, and payloads decoded by
the protobuf runtime.

The registry stores Protobuf schemas as ``.proto`` text, so the text must be compiled. kseg
runs protoc (the one bundled in grpcio-tools: the reference compiler, every proto2/proto3/
editions rule and the well-known types' files with it) in a child process with a time and
memory limit: a hostile schema costs at most COMPILE_SECONDS and COMPILE_MEMORY, and a
compiler crash is a finding, not kseg's end. That costs ~0.1 s per schema id a dump meets
(compiled once, on first use). The alternative, a pure-Python ``.proto`` parser feeding
hand-built descriptors, would be kseg's own reading of the language: proto2 groups, options,
extensions, editions, imports; the compiler is the rule.

Each schema gets its own descriptor pool: two versions of one subject declare the same message
names, and both must decode. The payload is parsed by the runtime (upb: nesting bounded at 100,
every length checked against the bytes), and shown as Protobuf's JSON mapping with the field
names as the ``.proto`` writes them, fields that hold their default value included (what a
consumer's message object reads).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any

COMPILE_SECONDS = 20
COMPILE_MEMORY = 1 << 30  # bytes of address space protoc's process may have
MAIN = "kseg_registered_schema.proto"  # the file name the schema is compiled under

# Confluent's own imports, known to its serializers without a reference (confluent/meta.proto:
# field and message metadata options; confluent/type/decimal.proto): written here from their
# published field numbers, so schemas that import them compile
BUILTIN_FILES = {
    "confluent/meta.proto": """syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
option java_package = "io.confluent.protobuf";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
""",
    "confluent/type/decimal.proto": """syntax = "proto3";
package confluent.type;
option java_package = "io.confluent.protobuf.type";
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
""",
}


class ProtobufSchema:
    """One registered Protobuf schema; ``references``: (import name, ``.proto`` text) of every
    file it imports, directly or not, that the registry holds."""

    def __init__(self, text: str, references: list[tuple[str, str]]) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool

        fds = descriptor_pb2.FileDescriptorSet.FromString(_compile(text, references))
        self.pool = pool = descriptor_pool.DescriptorPool()
        try:
            for fd in fds.file:  # dependencies first (protoc's --include_imports order)
                pool.Add(fd)
        except Exception as exc:  # TypeError, KeyError: descriptors the runtime refuses
            raise ValueError(f"the compiled schema does not load: {exc}") from None
        # the schema's file as declared: message indexes count in declaration order
        self.proto = next(f for f in fds.file if f.name == MAIN)
        self._classes: dict[tuple, Any] = {}

    def message_type(self, indexes: list[int]):
        """The message class the frame's indexes name: the file's message ``indexes[0]``, its
        nested type ``indexes[1]``, and so on."""
        key = tuple(indexes)
        cls = self._classes.get(key)
        if cls is None:
            from google.protobuf import message_factory

            types = self.proto.message_type
            names = [self.proto.package] if self.proto.package else []
            for i in indexes:
                if i >= len(types):
                    where = ".".join(names) or "the schema"
                    raise ValueError(f"message index {i} of {len(types)} message types in {where}")
                names.append(types[i].name)
                types = types[i].nested_type
            desc = self.pool.FindMessageTypeByName(".".join(names))
            cls = self._classes[key] = message_factory.GetMessageClass(desc)
        return cls

    def decode(self, data: bytes, start: int, indexes: list[int]) -> Any:
        from google.protobuf import json_format, message

        cls = self.message_type(indexes)
        try:
            msg = cls.FromString(data[start:])
        except message.DecodeError as exc:
            raise ValueError(f"not a {cls.DESCRIPTOR.full_name}: {exc}") from None
        try:
            return json_format.MessageToDict(
                msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        except Exception as exc:  # an Any of a type the schema does not know, a Timestamp
            # out of the JSON mapping's range (SerializeToJsonError, TypeError, ValueError)
            raise ValueError(f"no JSON for this {cls.DESCRIPTOR.full_name}: {exc}") from None


def _limits() -> None:  # pragma: no cover - runs in protoc's child process
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (COMPILE_MEMORY, COMPILE_MEMORY))


def _compile(text: str, references: list[tuple[str, str]]) -> bytes:
    """The FileDescriptorSet protoc makes of the schema and its imports; ValueError with
    protoc's own message when it cannot."""
    try:
        return _run_protoc(text, references)
    except OSError as exc:  # an import name no file can have (too long, a directory's)
        raise ValueError(
            f"cannot write the schema's files for protoc: {exc.strerror or exc}"
        ) from None


def _run_protoc(text: str, references: list[tuple[str, str]]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="kseg-proto-") as tmp:
        files = {**BUILTIN_FILES, **dict(references), MAIN: text}
        for name, body in files.items():
            path = os.path.normpath(os.path.join(tmp, name))
            if not path.startswith(tmp + os.sep):  # an import name that climbs out of the dir
                raise ValueError(f"import name {name!r} leaves the schema's directory")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
                f.write(body)
        out = os.path.join(tmp, "set.pb")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", "--include_imports",
               f"--descriptor_set_out={out}", MAIN]  # fmt: skip
        try:
            done = subprocess.run(
                cmd, cwd=tmp, capture_output=True, timeout=COMPILE_SECONDS, preexec_fn=_limits
            )
        except subprocess.TimeoutExpired:
            raise ValueError(f"protoc did not finish in {COMPILE_SECONDS} s") from None
        except OSError as exc:
            raise ValueError(f"cannot run protoc: {exc}") from None
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").replace(tmp + os.sep, "").strip()
            if "No module named grpc_tools" in said:
                raise ValueError("protoc is not installed (pip install grpcio-tools)")
            if done.returncode < 0:
                said = f"protoc died of signal {-done.returncode}"
            raise ValueError(said.splitlines()[0] if said else f"protoc exit {done.returncode}")
        with open(out, "rb") as f:
            return f.read()
