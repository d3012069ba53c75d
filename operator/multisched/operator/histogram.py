"""``LocklessHistogram``: a histogram family whose observations take no lock.

A prometheus_client child locks twice per observation and walks its buckets in Python: about
1 us on a busy core. The operator observes some 15 to 25 times per pod (every extension
point, the attempt, the sampled plugin calls), always on its event loop's thread, which is
also where /metrics is rendered: a bisect into a list of counts does the same work in a
seventh of the time. The exposition stays the library's (``HistogramMetricFamily``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class HistogramSeries:
    """One label combination's counts: per bucket (not cumulative), then above the last."""

    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # An upper bound is inclusive: the first bound >= value is the value's bucket.
        self.counts[bisect_left(self._bounds, value)] += 1
        self.sum += value


class LocklessHistogram(Collector):
    """Registered in ``registry`` as it is built, as the library's metrics are."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._bounds = tuple(buckets)
        self._le = [floatToGoString(b) for b in self._bounds]  # type: ignore[no-untyped-call]
        self._series: dict[tuple[str, ...], HistogramSeries] = {}
        if not self.labelnames:  # one series, there from the start
            self._series[()] = HistogramSeries(self._bounds)
        registry.register(self)

    def labels(self, *values: str) -> HistogramSeries:
        """The series of these label values (bind it once: each call looks it up)."""
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: label values {values} for labels {self.labelnames}")
        series = self._series.get(values)
        if series is None:
            series = self._series[values] = HistogramSeries(self._bounds)
        return series

    def observe(self, value: float) -> None:
        """For a histogram without labels."""
        self._series[()].observe(value)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in sorted(self._series.items()):
            cumulative: list[tuple[str, float]] = []
            seen = 0
            for le, count in zip(self._le, series.counts, strict=False):
                seen += count
                cumulative.append((le, float(seen)))
            cumulative.append(("+Inf", float(seen + series.counts[-1])))
            family.add_metric(list(values), cumulative, series.sum)
        yield family
