"""What the gang e2e tests and the gang benchmark (bench/e2e, scenario g) both use."""

from __future__ import annotations

from typing import Any


def gang_profile_spec(
    scheduler_name: str, permit_seconds: int = 30, reject_percentage: int | None = None
) -> dict[str, Any]:
    """scheduler-plugins' documented Coscheduling configuration, as a SchedulerProfile spec
    (``reject_percentage``: podGroupRejectPercentage, upstream's default 10 when None)."""
    args: dict[str, Any] = {"permitWaitingTimeSeconds": permit_seconds}
    if reject_percentage is not None:
        args["podGroupRejectPercentage"] = reject_percentage
    return {
        "profiles": [
            {
                "schedulerName": scheduler_name,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
                "pluginConfig": [{"name": "Coscheduling", "args": args}],
            }
        ]
    }
