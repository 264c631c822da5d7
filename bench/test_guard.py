"""The bench's regression guard judges each figure by its own noise."""

import json

from guard import compare, figures, main

MACHINE = {"cores": 2}


def run(median: float, rate: float, n: int = 5000) -> dict:
    return {"machine": MACHINE, "governed": {"median_us": median, "n": n},
            "calls_per_second": {"calc": rate}, "audit": {"levels": [{"records": n, "verify_s": 1.0}]}}


def test_figures_are_the_numbers_that_measure_and_not_the_counts():
    assert figures(run(18.0, 50000)) == {"governed.median_us": 18.0, "calls_per_second.calc": 50000.0,
                                         "audit.levels.0.verify_s": 1.0}


def test_a_change_beyond_the_measured_noise_moves_and_one_within_does_not():
    # median_us wandered by at most 10% between earlier runs; the rate by 2%.
    runs = [run(20.0, 50000), run(22.0, 50500), run(20.0, 50000), run(21.5, 50900)]
    verdict = compare(runs)
    [moved] = verdict["moved"]
    assert moved["figure"] == "calls_per_second.calc" and moved["noise"] == 0.01
    assert verdict["steady"] == 2  # the median within its 10%, verify_s unchanged


def test_without_two_earlier_runs_the_noise_is_unmeasured():
    verdict = compare([run(20.0, 1), run(40.0, 1)])
    assert verdict["moved"] == [] and "governed.median_us" in verdict["unmeasured"]


def test_runs_of_another_scale_or_machine_are_not_compared():
    other = {**run(5.0, 1), "scale": 10}
    verdict = compare([run(20.0, 1), run(20.0, 1), other])
    assert verdict == {"moved": [], "steady": 0, "unmeasured": []}


def test_the_report_is_written_and_unreadable_runs_are_skipped(tmp_path, capsys):
    for stamp, median in [(1, 20.0), (2, 21.0), (3, 20.0), (4, 30.0)]:
        (tmp_path / f"bench-{stamp}.json").write_text(json.dumps(run(median, 100)))
    (tmp_path / "bench-5.json").write_text("{ not json")
    main(tmp_path)
    printed = capsys.readouterr().out
    assert "governed.median_us: 20 -> 30 (+50%; noise ±5%)" in printed, printed
    assert "skipped bench-5.json" in printed
    [report] = tmp_path.glob("moved-*.json")
    assert json.loads(report.read_text())["bench"]["moved"][0]["figure"] == "governed.median_us"
