"""`kseg schemas`: the Schema Registry's subjects, versions and ids, read offline from its
``_schemas`` topic (kseg.schemas.run, imported only when the command runs)."""

from kseg.cli import options as o
from kseg.cli import payload_options as so
from kseg.cli.exit import exit_status, track


def schemas(
    paths: so.SchemasPathsArg,
    fmt: o.FormatOpt = o.OutputFormat.text,
) -> int:
    """List the Schema Registry's subjects, versions and schema ids, replayed from its _schemas
    topic as the registry replays it on start (latest record per key, soft and hard deletes,
    configs), found in or beside PATH; or from schemas exported from its REST API (a JSON file
    of GET /schemas, or a directory of them). With several replicas of _schemas (broker roots),
    the one that reached the highest offset is used. JSON carries each schema's text.

    Exit codes: 0 listed; 4 a _schemas record that does not parse, or damage in the topic (the
    replay stops there, as the registry's would); 8 unreadable input; 16 usage (also: no
    _schemas topic, or one that holds no schema).

    Example:

    \b
      kseg schemas /var/lib/kafka/data
      kseg schemas /var/lib/kafka/data -f json | jq -r 'select(.type=="schema" and .id==7).schema'
      kseg schemas schemas-export.json
    """
    from kseg.render import finish
    from kseg.schemas.run import SchemasRun

    run = SchemasRun(paths)
    track(run)
    return exit_status(finish("schemas", run, run.events(), fmt.value))
