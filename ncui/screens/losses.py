"""The loss chart beside a log, as Workloads, the nodes pane and the Slurm panel all draw it."""

from __future__ import annotations

from ..logfollow import LossCurve
from ..widgets.chart import Chart, ChartData, Series

# The log pane takes a batch within 100 ms of a line; while the log runs at hundreds of lines a second and
# more, every 500 ms (LogFollower's busy_interval): each batch repaints the pane, and at 2,000 lines/s
# four repaints a second cost more than 15% of a core (bench/logs.py).
LOG_BATCH_INTERVAL = 0.1
# The loss chart redraws at most every 2 s: a draw (plotext, then a pane of braille cells) costs about
# as much as a batch of log lines, and a fast log adds points every batch.
LOSS_CHART_INTERVAL = 2.0


def loss_chart(losses: LossCurve) -> ChartData:
    pts = losses.points
    if not pts:
        return ChartData(empty="loss: no loss lines yet")  # (not shown: the chart shows only beside loss lines)
    xs = tuple(float(i) for i, _ in pts)
    ys = tuple(v for _, v in pts)
    return ChartData(
        series=(Series(xs, ys, "loss", "magenta"),),
        xticks=((xs[0], xs[-1]), (f"{losses.unit} {int(xs[0])}", f"{int(xs[-1])}")),
    )


def show_losses(chart: Chart, losses: LossCurve) -> None:
    """The loss chart, only beside a log that has loss lines (a train or a tune): any other log takes the
    whole width. Workloads, the VM/research nodes pane and the Slurm panel all chart this way."""
    chart.display = bool(losses.points)
    chart.set_data(loss_chart(losses))
