"""The report's sections, one module per table, and the figures every row is made of."""

from __future__ import annotations

import statistics


def summary(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def spread(samples: list[float]) -> tuple[float, float]:
    """The 10th and 90th percentiles."""
    if len(samples) < 3:
        return min(samples), max(samples)
    deciles = statistics.quantiles(samples, n=10)
    return deciles[0], deciles[-1]
