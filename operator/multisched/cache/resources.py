"""``framework.Resource``: the resource vector kube-scheduler compares on every node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .quantity import QuantityError, to_int, to_milli

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

#: Requests assumed for scoring when a container sets none (upstream ``schedutil``).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


class Resource:
    """CPU in millicores, memory and storage in bytes, pods as a count, the rest by name."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, raw: Mapping[str, Any] | None) -> Resource:
        """A ``v1.ResourceList`` (quantity strings) as a Resource."""
        res = cls()
        for name, qty in (raw or {}).items():
            try:
                res.set(name, to_milli(qty) if name == CPU else to_int(qty))
            except QuantityError as exc:
                raise QuantityError(f"{name}: {exc}") from None
        return res

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.allowed_pod_number = value
        else:
            self.scalar[name] = value

    def names(self) -> list[str]:
        """Names of the resources this vector sets (non-zero or scalar present)."""
        out = [
            n
            for n, v in (
                (CPU, self.milli_cpu),
                (MEMORY, self.memory),
                (EPHEMERAL_STORAGE, self.ephemeral_storage),
            )
            if v
        ]
        return out + list(self.scalar)

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * value

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, value in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), value)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v}
            == {k: v for k, v in other.scalar.items() if v}
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
            f"ephemeral_storage={self.ephemeral_storage}, pods={self.allowed_pod_number}, "
            f"scalar={self.scalar})"
        )


def format_amount(name: str, value: int) -> str:
    """One resource's amount as a quantity: CPU from millicores (``1500m``, ``2``), the
    others in their unit. What the gang and quota messages and ``status.used`` show."""
    if name == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    return str(value)
