"""LogPane: a capped log keeps redrawing (Textual 8.2.8's Log did not), filter, follow, timestamps, wrap (headless
pilot)."""

from __future__ import annotations

import html
import re

from textual.app import App
from textual.scroll_view import ScrollView
from textual.widgets import Log

from ncui.widgets.logpane import LogPane

from .waits import until


class PaneApp(App):
    def __init__(self, pane: LogPane) -> None:
        super().__init__()
        self.pane = pane

    def compose(self):
        yield self.pane


def _screen_numbers(app: App) -> list[int]:
    """The line numbers painted on the (virtual) screen right now."""
    svg = app.export_screenshot()
    plain = html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
    return [int(x) for x in re.findall(r"line (\d+)", plain)]


async def _painted(pilot, pane: LogPane, seconds: float = 5.0) -> None:
    await until(lambda: not pane.lines_log.paint_pending, seconds, "the pane's repaint", 0.02, sleep=pilot.pause)
    await pilot.pause()


async def test_capped_log_keeps_redrawing_the_newest_lines():
    pane = LogPane(max_lines=50)
    app = PaneApp(pane)
    async with app.run_test(size=(60, 12)) as pilot:
        for b in range(6):  # 180 lines into a 50-line cap, in batches
            pane.write_batch([f"line {b * 30 + i}" for i in range(30)])
            await pilot.pause()
        assert pane.lines_log.lines[-1] == "line 179" and len(pane.lines_log.lines) == 50
        await _painted(pilot, pane)  # a repaint put off (batches too close together) comes in its time
        shown = _screen_numbers(app)
        assert shown and shown[-1] == 179, f"the screen still shows old lines: {shown[-3:]}"
        assert shown == list(range(shown[0], 180))


async def test_batches_close_together_repaint_once_their_interval_has_passed():
    pane = LogPane(max_lines=50)
    app = PaneApp(pane)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        pane.lines_log.min_paint_interval = 3600.0  # (so that no timing of this machine decides the test)
        pane.write_batch([f"line {i}" for i in range(60)])  # painted at once: the first in its interval
        await pilot.pause()
        assert not pane.lines_log.paint_pending and _screen_numbers(app)[-1] == 59
        pane.write_batch([f"line {i}" for i in range(60, 70)])  # too soon: put off, the screen unchanged
        await pilot.pause()
        assert pane.lines_log.paint_pending and _screen_numbers(app)[-1] == 59
        assert pane.lines_log.lines[-1] == "line 69"


async def test_filter_follow_timestamps_and_wrap():
    entries = [
        (f"2026-11-02T09:00:{i % 60:02d}.000000000Z", f"iter {i}: loss {2 + i / 1000:.4f}, time 1ms")
        for i in range(300)
    ]
    pane = LogPane(source=lambda: entries, max_lines=1000)
    app = PaneApp(pane)
    async with app.run_test(size=(60, 12)) as pilot:
        pane.write_batch(entries[:200])
        await pilot.pause()
        log = pane.lines_log
        assert log.lines[-1].startswith("iter 199:") and log.is_vertical_scroll_end
        # follow off: new lines do not move the view
        pane.follow = False
        log.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        pane.write_batch(entries[200:300])
        await pilot.pause()
        assert log.scroll_y == 0 and log.lines[-1].startswith("iter 299:")
        await pilot.press("G")  # jump to the end: follows again
        await pilot.pause()
        assert pane.follow and log.is_vertical_scroll_end
        # the filter re-renders from the source, then keeps applying to new batches
        pane.set_filter("iter 7")
        await pilot.pause()
        assert log.lines and all("iter 7" in x for x in log.lines) and len(log.lines) == 11  # 7, 70–79
        pane.write_batch([("t", "iter 700: loss 1, time 1ms"), ("t", "iter 800: loss 1, time 1ms")])
        assert log.lines[-1].startswith("iter 700:")
        pane.set_filter("")
        await pilot.pause()
        assert len(log.lines) == 300
        await pilot.press("t")  # timestamps on
        await pilot.pause()
        assert log.lines[0].startswith("2026-11-02T09:00:00.000000000Z iter 0:")
        await pilot.press("w")  # wrap: long lines become several rows of the pane's width
        await pilot.pause()
        width = log.scrollable_content_region.width
        assert len(log.lines) > 300 and max(len(x) for x in log.lines) <= width
        await pilot.press("w", "t")
        await pilot.pause()
        assert len(log.lines) == 300 and log.lines[0] == "iter 0: loss 2.0000, time 1ms"
        await pilot.press("slash")  # the filter box
        await pilot.press("i", "t", "e", "r", " ", "2", "9", "9")
        await pilot.pause()
        assert pane.filter_text == "iter 299" and list(log.lines) == ["iter 299: loss 2.2990, time 1ms"]
        assert isinstance(log, ScrollView) and not isinstance(log, Log)  # a Line API view of its own


async def test_entries_of_a_burst_the_newest_shown_and_every_mode_honoured():
    # The follower hands the pane "<timestamp> <text>" entries; of a burst only the newest max_lines show.
    entries = [f"2026-11-02T09:00:00.{i:09d}Z line {i}" for i in range(5000)]
    pane = LogPane(max_lines=100)
    app = PaneApp(pane)
    async with app.run_test(size=(60, 12)) as pilot:
        pane.write_entries(entries[:4000])
        await _painted(pilot, pane)
        log = pane.lines_log
        assert list(log.lines) == [f"line {i}" for i in range(3900, 4000)]
        assert log.virtual_size.height == 100 and log.is_vertical_scroll_end
        assert _screen_numbers(app)[-1] == 3999
        pane.write_entries(["2026-11-02T09:00:01.000000000Z ", " no timestamp"])  # an empty text; no timestamp
        assert list(log.lines)[-2:] == [" ", "no timestamp"]
        pane.timestamps = True
        pane.write_entries(entries[4000:4002])
        assert list(log.lines)[-2:] == [entries[4000], entries[4001]]
        pane.timestamps = False
        pane.set_filter("line 42")  # a filter looks back through the whole batch, not just its tail
        pane.write_entries(entries)
        # the batch's last 100 lines (4900–4999) hold no match: the newest 100 matches are 4200–4299
        assert list(log.lines) == [f"line {i}" for i in range(4200, 4300)]


async def test_a_throttled_chart_draws_the_newest_data_when_its_time_comes():
    from ncui.widgets.chart import Chart, ChartData, Series

    class ChartApp(App):
        def compose(self):
            yield Chart(min_interval=0.3)

    app = ChartApp()
    async with app.run_test(size=(60, 14)) as pilot:
        chart = app.query_one(Chart)
        await pilot.pause()

        def data(n: int) -> ChartData:
            return ChartData(
                series=(Series(tuple(float(i) for i in range(n)), tuple(float(i) for i in range(n)), f"s{n}"),)
            )

        chart.set_data(data(5))  # drawn at once
        assert not chart.pending and "s5" in chart.content.plain
        chart.set_data(data(6))  # too soon: put off…
        chart.set_data(data(7))  # …and this one rides along
        assert chart.pending and "s5" in chart.content.plain
        await until(lambda: not chart.pending, 5, "the put-off chart drawn", 0.05, sleep=pilot.pause)
        assert "s7" in chart.content.plain


async def test_the_status_line_showing_keeps_the_newest_line_in_view_and_following():
    """A status line under the log ("log ended: …", "resuming …") takes a row from it: a following pane
    still shows its newest line, and goes on following the lines written after."""
    pane = LogPane()
    app = PaneApp(pane)
    async with app.run_test(size=(60, 12)) as pilot:
        pane.write_batch([f"line {i}" for i in range(100)])
        await _painted(pilot, pane)
        assert _screen_numbers(app)[-1] == 99
        pane.set_status("log ended: the run ended (my-job exited)")
        await pilot.pause()
        await _painted(pilot, pane)
        assert _screen_numbers(app)[-1] == 99
        pane.write_batch(["line 100"])
        await _painted(pilot, pane)
        assert _screen_numbers(app)[-1] == 100


async def test_a_growing_log_draws_what_a_full_layout_would():
    """While a log grows (longer, wider) its view sets the scrollbars' extents itself, without laying out the
    screen: what it draws is what a layout of the screen then draws (lines, scrollbars, their thumbs)."""
    pane = LogPane(max_lines=500)
    app = PaneApp(pane)
    async with app.run_test(size=(60, 14)) as pilot:
        log = pane.lines_log
        for b in range(8):  # 100 lines a batch, each batch 10 cells wider; the cap reached at the fifth
            pane.write_batch([f"line {b * 100 + i} " + "x" * (b * 10) for i in range(100)])
            await _painted(pilot, pane)
            drawn = app.export_screenshot()
            bars = (log.vertical_scrollbar.window_virtual_size, log.horizontal_scrollbar.window_virtual_size)
            assert log.virtual_size == (len(f"line {b * 100 + 99} ") + b * 10, min(500, (b + 1) * 100))
            assert bars == (log.virtual_size.height, log.virtual_size.width)
            log.refresh(layout=True)
            await pilot.pause()
            await pilot.pause()
            assert app.export_screenshot() == drawn, f"batch {b}: the screen moved on a layout"
        assert _screen_numbers(app)[-1] == 799


async def test_lines_are_selected_with_textual_selection():
    """Text selection (the mouse's) works on the pane's lines as on Textual's Log: the selected text, and the
    selected cells drawn in the screen's selection style."""
    from textual.geometry import Offset
    from textual.selection import Selection

    pane = LogPane()
    app = PaneApp(pane)
    async with app.run_test(size=(60, 12)) as pilot:
        pane.write_batch([f"line {i}" for i in range(5)])
        await _painted(pilot, pane)
        log = pane.lines_log
        assert log.allow_select
        app.screen.selections = {log: Selection.from_offsets(Offset(5, 1), Offset(4, 3))}
        await pilot.pause()
        assert app.screen.get_selected_text() == "1\nline 2\nline"
        selected = app.screen.get_component_rich_style("screen--selection")
        styled = [(seg.text, seg.style) for seg in log.render_line(1)]
        assert styled[0][0] == "line " and styled[0][1] is not None and styled[0][1].bgcolor != selected.bgcolor
        assert styled[1][0] == "1" and styled[1][1] is not None and styled[1][1].bgcolor == selected.bgcolor
        app.screen.selections = {}
        await pilot.pause()
        assert [seg.text for seg in log.render_line(1)][0].startswith("line 1")
