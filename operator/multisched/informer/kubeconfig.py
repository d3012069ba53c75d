"""Moved to ``multisched.transport.kubeconfig`` (kept while the move lands)."""

from multisched.transport.kubeconfig import KubeconfigError, kubeconfig_path, load_configuration

__all__ = ["KubeconfigError", "kubeconfig_path", "load_configuration"]
