"""The durable engines whose current run a hook can name itself."""

from __future__ import annotations

from turnlog.errors import UsageError

#: The durable engines whose current run a hook can name itself (tested
#: with each): DBOS runs the agent's hooks in its workflow and Prefect in
#: its flow, in-process, and both run it again from the top after a crash.
ENGINES = ("dbos", "prefect")


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise UsageError(
            f"unknown engine {engine!r}; a hook names the runs of {', '.join(ENGINES)}",
            hint="under Temporal, whose workflow code may not write files, use "
            "TurnlogTemporalCapability (turnlog.integrations.pydantic_ai.temporal), which "
            "writes through activities (docs/engines.md)",
        )


def engine_run_id(engine: str) -> str:
    """The id of the engine's run this code runs in (the DBOS workflow, the
    Prefect flow run). Raises outside one: a run the engine does not own
    could not be found again after a crash."""
    run_id: str | None = None
    if engine == "dbos":
        from dbos import DBOS

        run_id = DBOS.workflow_id
    elif engine == "prefect":
        from prefect.runtime import flow_run

        run_id = flow_run.id
    if not run_id:
        raise UsageError(
            f"the run is not inside a {engine} workflow",
            hint=f"run the agent inside the {engine} workflow (or flow) that owns it",
        )
    return str(run_id)
