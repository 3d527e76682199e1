"""A strict reader of the Prometheus text exposition format (version 0.0.4), as kube-apiserver's
`/metrics` writes it, and the arithmetic a bench does on two scrapes: deltas and quantiles
estimated from histogram buckets.

Strict: every line is a comment (`# HELP`, `# TYPE` or free text), blank, or one sample
`name{label="value",...} value [timestamp]`; a `# TYPE` comes at most once per family and before
its samples; a series appears once; a histogram's buckets carry `le` and do not decrease, and its
`+Inf` bucket equals its `_count`. Anything else raises PromTextError naming the line and why.
prometheus_client's parser (the one tests/integration reads the webhook's metrics with) accepts
`foo 1 2 3` and repeated series, so a scrape read with it could hide a broken exposition.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs
Series = tuple[str, Labels]  # (sample name, labels)

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_SAMPLE = re.compile(rf"({_NAME})(\{{.*\}})?[ \t]+(\S+)(?:[ \t]+(-?[0-9]+))?[ \t]*")
_PAIR = re.compile(rf'[ \t]*({_LABEL})[ \t]*=[ \t]*"((?:[^"\\\n]|\\[\\"n])*)"[ \t]*(,|$)')
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count", "")}
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class PromTextError(ValueError):
    """A line of the exposition that is not the format; the message names the line and why."""


@dataclass(frozen=True, slots=True)
class Scrape:
    """One exposition: each series' value, and each family's declared type."""

    samples: dict[Series, float]
    types: dict[str, str]

    def select(self, name: str, **labels: str) -> dict[Labels, float]:
        """The series of sample `name` whose labels include `labels`, by their labels."""
        want = set(labels.items())
        return {
            lab: value
            for (sample, lab), value in self.samples.items()
            if sample == name and want <= set(lab)
        }


def parse(text: str) -> Scrape:
    """Read a whole exposition; PromTextError at the first line that is not the format."""
    samples: dict[Series, float] = {}
    types: dict[str, str] = {}
    names: set[str] = set()  # sample names seen so far
    for number, line in enumerate(text.split("\n"), start=1):
        try:
            _read_line(line, samples, types, names)
        except PromTextError as err:
            raise PromTextError(f"line {number}: {err}: {line[:200]!r}") from None
    for family, kind in sorted(types.items()):
        if kind == "histogram":
            _check_histogram(family, samples)
    return Scrape(samples, types)


def _read_line(
    line: str, samples: dict[Series, float], types: dict[str, str], names: set[str]
) -> None:
    if not line.strip():
        return
    if line.startswith("#"):
        _read_comment(line, names, types)
        return
    match = _SAMPLE.fullmatch(line)
    if match is None:
        raise PromTextError("not a sample (name{labels} value [timestamp])")
    name, labels, value = match.group(1), _labels(match.group(2) or ""), _value(match.group(3))
    series = (name, labels)
    if series in samples:
        raise PromTextError(f"series {name}{dict(labels)} repeated")
    family = _family(name, types)
    if types.get(family) == "histogram" and name == f"{family}_bucket":
        if "le" not in dict(labels):
            raise PromTextError("histogram bucket without an le label")
        _value(dict(labels)["le"])
    samples[series] = value
    names.add(name)


def _read_comment(line: str, names: AbstractSet[str], types: dict[str, str]) -> None:
    words = line.split(None, 3)
    if len(words) < 2 or words[1] not in ("HELP", "TYPE"):
        return  # a free comment
    if len(words) < 3 or not re.fullmatch(_NAME, words[2]):
        raise PromTextError(f"# {words[1]} without a metric name")
    if words[1] == "HELP":
        return
    name, kind = words[2], (words[3].strip() if len(words) == 4 else "")
    if kind not in _TYPES:
        raise PromTextError(f"unknown type {kind!r}")
    if name in types:
        raise PromTextError(f"second # TYPE for {name}")
    if any(f"{name}{suffix}" in names for suffix in ("", *_SUFFIXES.get(kind, ()))):
        raise PromTextError(f"# TYPE for {name} after its samples")
    types[name] = kind


def _family(name: str, types: Mapping[str, str]) -> str:
    """The declared family a sample name belongs to (a histogram's `_bucket` to its base)."""
    if name in types:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        base = name.removesuffix(suffix)
        if base != name and suffix in _SUFFIXES.get(types.get(base, ""), ()):
            return base
    return name


def _labels(text: str) -> Labels:
    if not text:
        return ()
    body, pairs, at = text[1:-1], {}, 0
    while at < len(body):
        match = _PAIR.match(body, at)
        if match is None:
            raise PromTextError(f"bad label set at {body[at : at + 40]!r}")
        name, raw = match.group(1), match.group(2)
        if name in pairs:
            raise PromTextError(f"label {name} repeated")
        pairs[name] = re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], raw)
        at = match.end()
        if match.group(3) == "" and at < len(body):
            raise PromTextError(f"bad label set at {body[at : at + 40]!r}")
    return tuple(sorted(pairs.items()))


def _value(text: str) -> float:
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.fullmatch(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", text):
        raise PromTextError(f"value {text!r} is not a number")
    return float(text)


def _check_histogram(family: str, samples: Mapping[Series, float]) -> None:
    for labels, buckets in _histograms(family, samples).items():
        counts = [count for _, count in buckets]
        where = f"{family}{dict(labels)}"
        if counts != sorted(counts):
            raise PromTextError(f"{where}: bucket counts decrease")
        if not buckets or buckets[-1][0] != math.inf:
            raise PromTextError(f"{where}: no +Inf bucket")
        total = samples.get((f"{family}_count", labels))
        if total != buckets[-1][1]:
            raise PromTextError(f"{where}: +Inf bucket {buckets[-1][1]} != _count {total}")


def _histograms(
    family: str, samples: Mapping[Series, float]
) -> dict[Labels, list[tuple[float, float]]]:
    """Each histogram series (its labels without `le`) -> its buckets as (le, count), by le."""
    out: dict[Labels, list[tuple[float, float]]] = {}
    for (name, labels), value in samples.items():
        if name != f"{family}_bucket":
            continue
        rest = tuple(p for p in labels if p[0] != "le")
        out.setdefault(rest, []).append((_value(dict(labels)["le"]), value))
    return {labels: sorted(buckets) for labels, buckets in out.items()}


@dataclass(frozen=True, slots=True)
class Histogram:
    """One histogram series between two scrapes: its observations and their buckets."""

    count: float
    total: float  # the `_sum`
    buckets: tuple[tuple[float, float], ...]  # (le, cumulative count), by le

    def quantile(self, q: float) -> float:
        """Estimated as Prometheus' histogram_quantile does: linear within the bucket that holds
        the q-th observation; the largest finite bound if it falls in the +Inf bucket; NaN when
        nothing was observed."""
        if self.count == 0:
            return math.nan
        rank, low, below = q * self.count, 0.0, 0.0
        for le, cumulative in self.buckets:
            if cumulative >= rank:
                if le == math.inf:
                    return low
                inside = cumulative - below
                return low + (le - low) * ((rank - below) / inside if inside else 0.0)
            low, below = le, cumulative
        return low


def histogram_deltas(before: Scrape, after: Scrape, family: str) -> dict[Labels, Histogram]:
    """Each series of histogram `family` observed between the two scrapes (new series count from
    zero), by its labels without `le`; series with no new observation are left out."""
    old, new = _histograms(family, before.samples), _histograms(family, after.samples)
    out = {}
    for labels, buckets in sorted(new.items()):
        was = dict(old.get(labels, []))
        moved = tuple((le, count - was.get(le, 0.0)) for le, count in buckets)
        count = moved[-1][1] if moved else 0.0
        if count:
            total = after.samples.get((f"{family}_sum", labels), 0.0) - before.samples.get(
                (f"{family}_sum", labels), 0.0
            )
            out[labels] = Histogram(count, total, moved)
    return out


def counter_deltas(
    before: Scrape, after: Scrape, name: str, keep: Iterable[str]
) -> dict[Labels, float]:
    """The increase of counter sample `name` between the two scrapes, summed over the labels
    not in `keep`; only the groups that increased."""
    kept = frozenset(keep)
    out: dict[Labels, float] = {}
    for labels, value in after.select(name).items():
        moved = value - before.samples.get((name, labels), 0.0)
        if moved:
            group = tuple(p for p in labels if p[0] in kept)
            out[group] = out.get(group, 0.0) + moved
    return dict(sorted(out.items()))
