"""multisched: a Kubernetes scheduler with live-editable profiles, run as a kopf operator."""

__version__ = "0.1.0"
