"""The regression guard of `make bench`: each figure of the newest run against
the run before it, judged by that figure's own run-to-run noise.

For every series of runs in target/bench/ (`bench-<ms>.json` from the Rust
rows, `sdks-<ms>.json` from row 13), every number of the newest run is
compared with the same number in the run before. It has moved when the
change is larger than the noise measured for it: the largest change between
two consecutive earlier runs, over the last `HISTORY` of them. A figure with
fewer than two earlier runs has no measured noise yet and is only listed as
such; counts that describe the run rather than measure it (sample sizes,
records written, the machine) are not compared. Runs with a different
`BENCH_SCALE` or machine are not compared with each other.

Prints what moved and writes it, with the noise used, to
`target/bench/moved-<ms>.json`. It never fails the build: a figure that
moved is a lead to follow, not a verdict (timing belongs to the bench, never
to the tests).
"""

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY = 5
# Keys that describe the run, not its speed.
NOT_FIGURES = {"n", "machine", "pause_us", "hosts", "records", "calls", "connections", "skipped"}


def figures(run: dict, prefix: str = "") -> dict[str, float]:
    """Every number in a run's JSON, by its dotted path."""
    found = {}
    for key, value in run.items():
        if key in NOT_FIGURES:
            continue
        path = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            found[path] = float(value)
        elif isinstance(value, dict):
            found.update(figures(value, path + "."))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    found.update(figures(item, f"{path}.{i}."))
    return found


def relative(now: float, before: float) -> float | None:
    if before == 0:
        return None if now == 0 else float("inf")
    return abs(now - before) / abs(before)


def noise(series: list[float]) -> float | None:
    """The largest relative change between consecutive values, or None with
    fewer than two values."""
    changes = [relative(b, a) for a, b in zip(series, series[1:])]
    changes = [c for c in changes if c is not None]
    return max(changes) if changes else None


def comparable(a: dict, b: dict) -> bool:
    return a.get("machine") == b.get("machine") and a.get("scale", 1) == b.get("scale", 1)


def compare(runs: list[dict]) -> dict:
    """`runs` oldest first; judges the last against the one before."""
    newest, *rest = reversed(runs)
    earlier = [r for r in reversed(rest) if comparable(r, newest)]
    verdict = {"moved": [], "steady": 0, "unmeasured": []}
    if not earlier:
        return verdict
    previous = figures(earlier[-1])
    history = [figures(r) for r in earlier[-(HISTORY + 1):]]
    for path, now in figures(newest).items():
        if path not in previous:
            continue
        before = previous[path]
        spread = noise([h[path] for h in history if path in h])
        change = relative(now, before)
        if spread is None:
            verdict["unmeasured"].append(path)
        elif change is not None and change > spread:
            verdict["moved"].append({"figure": path, "before": before, "now": now,
                                     "change": round(change, 3) if change != float("inf") else "new",
                                     "noise": round(spread, 3)})
        else:
            verdict["steady"] += 1
    return verdict


def series(directory: Path, prefix: str) -> list[tuple[Path, dict]]:
    runs = []
    for file in sorted(directory.glob(f"{prefix}-*.json"), key=lambda f: int(f.stem.split("-")[-1])):
        try:
            runs.append((file, json.loads(file.read_text())))
        except (OSError, ValueError) as e:
            print(f"   skipped {file.name}: {e}")
    return runs


def main(directory: Path) -> None:
    report = {}
    for prefix in ["bench", "sdks"]:
        runs = series(directory, prefix)
        if len(runs) < 2:
            print(f"guard, {prefix}: no earlier run to compare with")
            continue
        verdict = compare([run for _, run in runs])
        report[prefix] = {"run": runs[-1][0].name, **verdict}
        print(f"guard, {prefix}: {runs[-1][0].name} against {runs[-2][0].name}: "
              f"{len(verdict['moved'])} moved beyond their noise, {verdict['steady']} within it, "
              f"{len(verdict['unmeasured'])} without noise measured yet (two earlier runs needed)")
        for moved in verdict["moved"]:
            change = moved["change"]
            shown = "appeared" if change == "new" else f"{'+' if moved['now'] > moved['before'] else '-'}{change:.0%}"
            print(f"   {moved['figure']}: {moved['before']:g} -> {moved['now']:g} ({shown}; noise ±{moved['noise']:.0%})")
    file = directory / f"moved-{int(time.time() * 1000)}.json"
    file.write_text(json.dumps(report, indent=2))
    print(f"guard written to {file}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "bench")
