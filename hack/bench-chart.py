#!/usr/bin/python3
"""The scale curve's chart: reads the JSON figures operator_bench prints (one object per line,
mixed with its text lines) and draws time to synced caches and RSS against the number of seeded
pods, with a straight line through the smallest and largest point so that growth faster or
slower than linear is visible at a glance.

Usage: hack/bench-chart.py OUTPUT.png BENCH_OUTPUT [BENCH_OUTPUT...]
Exits non-zero, saying why, when the inputs hold fewer than two scale_curve points.
Debian's python3 with python3-matplotlib (hack/install-deps.sh installs it).
"""
import sys

import matplotlib

matplotlib.use("Agg")  # no display: render straight to the file
import matplotlib.pyplot as plt  # noqa: E402

from bench_figures import points  # noqa: E402  (hack/, the script's own directory)


def linear(xs, ys):
    """The straight line through the first and last point, evaluated at every x."""
    if xs[-1] == xs[0]:
        return ys
    slope = (ys[-1] - ys[0]) / (xs[-1] - xs[0])
    return [ys[0] + slope * (x - xs[0]) for x in xs]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    curve = points(argv[2:], "scale_curve", "seeded_pods")
    if len(curve) < 2:
        print(f"bench-chart: {len(curve)} scale_curve point(s) in {', '.join(argv[2:])}; "
              "need at least two (operator_bench --scale-curve)", file=sys.stderr)
        return 1
    pods = [p["cached_pods"] for p in curve]
    synced = [p["time_to_synced_s"] for p in curve]
    rss = [p["rss_bytes"] / 1048576.0 for p in curve]

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), dpi=100)
    for axis, ys, label, unit in ((left, synced, "time to synced caches", "s"),
                                  (right, rss, "operator RSS", "MiB")):
        axis.plot(pods, ys, "o-", label="measured")
        axis.plot(pods, linear(pods, ys), "--", color="grey", label="linear (first to last)")
        for x, y in zip(pods, ys):
            axis.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(0, 6),
                          ha="center", fontsize=8)
        axis.set_xlabel("pods cached by the operator")
        axis.set_ylabel(f"{label} ({unit})")
        axis.set_title(label)
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    fig.suptitle(f"egress-operator cold start, {curve[0]['policies']} policies "
                 "(operator_bench --scale-curve)")
    fig.tight_layout()
    fig.savefig(argv[1])
    for p in curve:
        print(f"seeded_pods={p['seeded_pods']} cached_pods={p['cached_pods']} "
              f"time_to_synced_s={p['time_to_synced_s']} rss_mib={p['rss_bytes'] / 1048576.0:.1f} "
              f"rss_bytes_per_cached_pod={p['rss_bytes_per_cached_pod']}")
    print(f"bench-chart: wrote {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
