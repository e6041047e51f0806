"""The store: slices with value, age and error; subscriptions; interest counts."""

from __future__ import annotations

from ncui.store import Interest, Store


def test_set_fail_keeps_last_good_value():
    now = [100.0]
    s = Store(clock=lambda: now[0])
    assert not s.get("balance").loaded and s.value("balance", "x") == "x"
    s.set("balance", 5)
    now[0] = 130.0
    assert s.get("balance").age() is not None and s.get("balance").age(now[0]) == 30.0
    s.fail("balance", "National Compute had an error (500)")
    sl = s.get("balance")
    assert sl.value == 5 and sl.error.startswith("National Compute") and sl.error_at == 130.0
    s.set("balance", 6)
    assert s.get("balance").error is None and s.get("balance").version == 3


def test_subscribers_see_their_slices_only_until_they_leave():
    s = Store()
    seen = []
    unsub = s.subscribe(("a", "b"), lambda sl: seen.append((sl.name, sl.value)))
    s.set("a", 1)
    s.set("c", 2)
    s.fail("b", "boom")
    unsub()
    s.set("a", 3)
    assert seen == [("a", 1), ("b", None)]


def test_interest_counts_only_interested_subscriptions():
    s = Store()
    assert s.interest("ladder") == 0
    u1 = s.subscribe("ladder", lambda sl: None)
    u2 = s.subscribe("ladder", lambda sl: None, interested=False)
    assert s.interest("ladder") == 1
    i = Interest(s, ("ladder", "ticks"))
    i.on()
    i.on()  # idempotent
    assert s.interest("ladder") == 2 and s.interest("ticks") == 1
    i.off()
    u1()
    u1()  # idempotent
    u2()
    assert s.interest("ladder") == 0 and s.interest("ticks") == 0


def test_clear_forgets_values():
    s = Store()
    s.set("ladder", 1)
    s.clear("ladder")
    assert s.value("ladder") is None and not s.get("ladder").loaded


def test_a_failing_subscriber_does_not_stop_the_others():
    s = Store()
    seen = []

    def broken(sl):
        raise RuntimeError("a bug in a view")

    s.subscribe("a", broken)
    s.subscribe("a", lambda sl: seen.append(sl.value))
    s.set("a", 1)  # does not raise
    assert seen == [1] and s.value("a") == 1
