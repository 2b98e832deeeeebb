#!/usr/bin/python3
"""The data plane's scale chart: reads the JSON figures agent_bench prints (one object per line,
mixed with its text lines) and draws, against the number of source pods, the four figures of one
egw-agent at cluster scale: a pod's latency from its API write to the kernel (p50 and p99), the
agent's CPU per 1,000 pod changes, its RSS (after the churn, and its peak), and the time from its
start to its first full programming. The targets the project measures against are drawn as
dotted lines where there is one.

Usage: hack/agent-bench-chart.py OUTPUT.png BENCH_OUTPUT [BENCH_OUTPUT...]
Exits non-zero, saying why, when the inputs hold fewer than two agent_scale points.
Debian's python3 with python3-matplotlib (hack/install-deps.sh installs it).
"""
import sys

import matplotlib

matplotlib.use("Agg")  # no display: render straight to the file
import matplotlib.pyplot as plt  # noqa: E402

from bench_figures import points  # noqa: E402  (hack/, the script's own directory)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    curve = points(argv[2:], "agent_scale", "sources")
    if len(curve) < 2:
        print(f"agent-bench-chart: {len(curve)} agent_scale point(s) in {', '.join(argv[2:])}; "
              "need at least two (agent_bench --sources)", file=sys.stderr)
        return 1
    xs = [p["sources"] for p in curve]
    panels = (
        ("a pod change, API write to kernel", "ms",
         (("p50", [p["change_p50_ms"] for p in curve]),
          ("p99", [p["change_p99_ms"] for p in curve])), 100, "target p99"),
        ("agent CPU per 1,000 pod changes", "s",
         (("measured", [p["cpu_s_per_1000"] for p in curve]),), 1, "target"),
        ("agent RSS", "MiB",
         (("after the churn", [p["rss_mib"] for p in curve]),
          ("peak", [p["peak_mib"] for p in curve])), 64, "target"),
        ("start to first full programming", "s",
         (("measured", [p["first_programming_s"] for p in curve]),), None, None),
    )
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), dpi=100)
    for axis, (title, unit, series, target, target_label) in zip(axes.flat, panels):
        for label, ys in series:
            axis.plot(xs, ys, "o-", label=label)
            for x, y in zip(xs, ys):
                axis.annotate(f"{y:.0f}" if y >= 10 else f"{y:.2f}", (x, y),
                              textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
        if target is not None:
            axis.axhline(target, linestyle=":", color="grey", label=f"{target_label} {target} {unit}")
        axis.set_xlabel("selected source pods")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    first = curve[0]
    fig.suptitle(f"one egw-agent against the real control plane: {first['nodes']} nodes, "
                 f"{first['policies']} policies, {first['egress_ips']} egress IPs, churn "
                 f"{first['churn_rate']} pods/s (agent_bench)")
    fig.tight_layout()
    fig.savefig(argv[1])
    for p in curve:
        print(" ".join(f"{k}={v}" for k, v in p.items() if k != "figure"))
    print(f"agent-bench-chart: wrote {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
