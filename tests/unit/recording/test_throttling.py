"""The load generator's CPU throttling, read from cgroup v1 and v2 cpu.stat files."""

from __future__ import annotations

from loadtests.recording.throttling import ThrottleMeter, add, read_cpu_stat


def test_cgroup_v2_and_v1_formats(tmp_path):
    v2 = tmp_path / "v2.stat"
    v2.write_text("usage_usec 100\nnr_periods 50\nnr_throttled 5\nthrottled_usec 250000\n")
    v1 = tmp_path / "v1.stat"
    v1.write_text("nr_periods 40\nnr_throttled 4\nthrottled_time 2000000000\nnr_bursts 0\n")
    assert read_cpu_stat((v2,)) == {"periods": 50, "throttled_periods": 5, "throttled_us": 250000}
    assert read_cpu_stat((v1,)) == {"periods": 40, "throttled_periods": 4, "throttled_us": 2000000}
    usage_only = tmp_path / "usage.stat"  # cgroup v2 without the cpu controller
    usage_only.write_text("usage_usec 100\nuser_usec 60\nsystem_usec 40\n")
    assert read_cpu_stat((usage_only, tmp_path / "absent", v1)) == read_cpu_stat((v1,))
    assert read_cpu_stat((tmp_path / "absent",)) is None


def test_the_meter_gives_deltas_and_workers_add_up(tmp_path):
    stat = tmp_path / "cpu.stat"
    stat.write_text("nr_periods 10\nnr_throttled 1\nthrottled_usec 1000\n")
    meter = ThrottleMeter((stat,))
    stat.write_text("nr_periods 30\nnr_throttled 4\nthrottled_usec 51000\n")
    delta = meter.take()
    assert delta == {"periods": 20, "throttled_periods": 3, "throttled_us": 50000}
    assert meter.take() == {"periods": 0, "throttled_periods": 0, "throttled_us": 0}
    assert add(add(None, delta), delta) == {"periods": 40, "throttled_periods": 6, "throttled_us": 100000}
    assert add(None, None) is None
    assert ThrottleMeter((tmp_path / "absent",)).take() is None
