"""What the gang e2e tests and the gang benchmark (bench/e2e, scenario g) both use."""

from __future__ import annotations

from typing import Any


def gang_profile_spec(scheduler_name: str, permit_seconds: int = 30) -> dict[str, Any]:
    """scheduler-plugins' documented Coscheduling configuration, as a SchedulerProfile spec."""
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
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_seconds}}
                ],
            }
        ]
    }
