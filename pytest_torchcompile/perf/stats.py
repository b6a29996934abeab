"""Summary statistics for timings, with no dependency beyond the stdlib.

Benchmarks on shared machines have skewed, outlier-heavy samples (a
neighbour's compile lands in one round), so everything here is built on
order statistics: the median and quartiles, and a distribution-free
confidence interval for the median from the binomial distribution of ranks.
No normality is assumed until two independent intervals are combined in the
gate, where it is the least bad approximation available without scipy.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

#: contiguous batches for the batch-means interval, and the fewest samples per batch.
BATCHES = 10
MIN_PER_BATCH = 3

#: significant digits kept in baseline files: enough for a 0.1% change,
#: few enough that a re-recorded baseline diffs only where it moved.
DIGITS = 5


@dataclass(frozen=True)
class Summary:
    """One measured quantity: median, spread and a confidence interval of the median."""

    median: float
    min: float
    q1: float
    q3: float
    ci_low: float
    ci_high: float
    n: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def to_json(self) -> dict[str, Any]:
        return {k: (v if isinstance(v, int) else round_sig(v)) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        """A summary as stored; a ValueError names the first field that is missing or not a number.

        Values must be finite and non-negative (times, ratios and bytes all
        are), `n` a positive count, and the interval ordered; anything else
        is a damaged file, not a measurement.
        """
        if not isinstance(data, Mapping):
            raise FieldError(
                "", f"{data!r} is not an object with {', '.join(cls.__dataclass_fields__)}"
            )
        values = {name: _stored_number(name, data) for name in cls.__dataclass_fields__}
        if isinstance(values["n"], float) or values["n"] < 1:
            raise FieldError("n", f"{data['n']!r} is not a positive count")
        if values["ci_low"] > values["ci_high"]:
            raise FieldError(
                "ci_low", f"{values['ci_low']!r} is above ci_high {values['ci_high']!r}"
            )
        return cls(**values)

    @classmethod
    def exact(cls, value: float) -> Summary:
        """A quantity measured once (compile time, peak memory): no interval.
        An int (bytes) stays an int, so baseline files keep it whole (`to_json`)."""
        return cls(value, value, value, value, value, value, 1)


class FieldError(ValueError):
    """A stored field is missing or of the wrong kind; `field` is its dotted path ('' for the whole)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem

    def within(self, prefix: str) -> FieldError:
        """The same error, its path under `prefix` (`metrics.speedup` + `median`)."""
        return FieldError(f"{prefix}.{self.field}" if self.field else prefix, self.problem)


def _stored_number(name: str, data: Mapping[str, Any]) -> float:
    if name not in data:
        raise FieldError(name, "missing")
    value = data[name]
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise FieldError(name, f"{value!r} is not a finite non-negative number")
    return value


def round_sig(value: float, digits: int = DIGITS) -> float:
    """`value` to `digits` significant digits (0 and non-finite values unchanged)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def summarize(samples: Sequence[float], confidence: float) -> Summary:
    """Median, min, quartiles and a `confidence` interval of the median.

    `samples` are in the order they were taken. The interval is the wider of
    the order-statistic interval (exact for independent samples) and a
    batch-means interval (for samples that are not: see `batch_spread`).
    """
    if not samples:
        raise ValueError("no samples to summarize")
    data = sorted(samples)
    median = statistics.median(data)
    low, high = median_ci(data, confidence)
    spread = batch_spread(samples, confidence)
    if spread is not None and median > 0:
        low, high = min(low, median * math.exp(-spread)), max(high, median * math.exp(spread))
    return Summary(
        median, data[0], quantile(data, 0.25), quantile(data, 0.75), low, high, len(data)
    )


def batch_spread(
    samples: Sequence[float], confidence: float, batches: int = BATCHES
) -> float | None:
    """Half-width, in log space, of the median's interval from batch medians.

    Timings on a shared machine are not independent: a neighbour's burst
    slows a run of consecutive rounds, so intervals that treat rounds as
    independent are too narrow (measured here: about half the spread seen
    between runs). Cutting the rounds, in time order, into `batches`
    contiguous batches and using the spread of their medians (Student's t
    with batches - 1 degrees of freedom) accounts for noise that lasts up to
    a batch. None when there are too few samples or a non-positive one.
    """
    if len(samples) < MIN_PER_BATCH * batches or min(samples) <= 0:
        return None
    size = len(samples) // batches
    logs = [math.log(statistics.median(samples[i * size : (i + 1) * size])) for i in range(batches)]
    return t_value(confidence, batches - 1) * statistics.stdev(logs) / math.sqrt(batches)


def quantile(data: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics of sorted `data`."""
    position = q * (len(data) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(data) - 1)
    return data[lower] + (data[upper] - data[lower]) * (position - lower)


def median_ci(data: Sequence[float], confidence: float) -> tuple[float, float]:
    """Distribution-free interval for the median of sorted `data`.

    The number of samples below the true median is Binomial(n, 1/2), so the
    interval between the k-th smallest and k-th largest sample covers the
    median with probability 1 - 2 P(B <= k - 1). We take the largest k that
    keeps that at least `confidence`; with too few samples for any k, the
    whole range (which then covers it with less than `confidence`).
    """
    n = len(data)
    alpha = 1.0 - confidence
    k, tail = 0, 0.0
    while k < n // 2:
        tail += _half_binomial_pmf(n, k)
        if 2 * tail > alpha:
            break
        k += 1
    k = max(k, 1)
    return data[k - 1], data[n - k]


def _half_binomial_pmf(n: int, k: int) -> float:
    """P(Binomial(n, 1/2) = k), in log space so thousands of rounds do not overflow."""
    return math.exp(
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)
    )


def z_value(confidence: float) -> float:
    """The two-sided normal quantile for `confidence` (1.96 for 0.95)."""
    return statistics.NormalDist().inv_cdf((1.0 + confidence) / 2.0)


def t_value(confidence: float, df: int) -> float:
    """Student's t two-sided quantile: exact for 1 and 2 degrees of freedom, else Cornish-Fisher
    from the normal one to the third order (2.26 for 0.95 and 9 df; 3.16 for 3 df, exact 3.18)."""
    p = (1.0 + confidence) / 2.0
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) * math.sqrt(2.0 / (4 * p * (1 - p)))
    z = z_value(confidence)
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def log_se(summary: Summary, confidence: float) -> float:
    """Standard error of log(median) read back from its confidence interval.

    Treats the interval as normal in log space, so intervals of two
    independent measurements (a baseline and this run) can be combined.
    """
    if summary.ci_low <= 0 or summary.ci_high <= 0:
        return 0.0
    return (math.log(summary.ci_high) - math.log(summary.ci_low)) / (2.0 * z_value(confidence))


def pass_noise(passes: Sequence[Sequence[float]]) -> float | None:
    """Spread between passes measured one after another: sd of their log medians.

    Load on a shared machine changes over seconds, slower than the batches of
    one pass can see; measured here, a 1 s pass's median moved ~5% between
    passes while batch-means intervals saw less than that. None with fewer
    than 3 passes or a non-positive value.
    """
    if len(passes) < 3 or any(not p or min(p) <= 0 for p in passes):
        return None
    return statistics.stdev(math.log(statistics.median(p)) for p in passes)


def summarize_runs(samples: Sequence[float], confidence: float) -> Summary:
    """Median and spread of a few independent runs (a compile each), its interval at least
    Student's t interval of their log mean: with 5 runs the order statistics alone give the
    whole range at 94%, and the t interval says how wide few runs really leave it."""
    summary = summarize(samples, confidence)
    if len(samples) < 2 or min(samples) <= 0:
        return summary
    logs = [math.log(s) for s in samples]
    half = t_value(confidence, len(samples) - 1) * statistics.stdev(logs) / math.sqrt(len(samples))
    return widen(summary, half / z_value(confidence), confidence)


def widen(summary: Summary, se: float, confidence: float) -> Summary:
    """The summary with its interval at least +-z*se wide in log space."""
    if se <= 0 or summary.median <= 0:
        return summary
    spread = z_value(confidence) * se
    low, high = summary.median * math.exp(-spread), summary.median * math.exp(spread)
    return replace(summary, ci_low=min(summary.ci_low, low), ci_high=max(summary.ci_high, high))
