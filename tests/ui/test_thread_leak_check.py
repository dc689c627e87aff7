"""The thread-leak check can fail: a thread named like app/'s, left running on purpose, is reported."""

from __future__ import annotations

import threading

from tests.support.threads import leaked_threads


def test_a_specchat_thread_left_running_is_reported_and_one_that_ends_is_not():
    before = set(threading.enumerate())
    release = threading.Event()
    leak = threading.Thread(target=release.wait, name="SpecChat leak on purpose", daemon=True)
    other = threading.Thread(target=release.wait, name="not ours", daemon=True)
    ends = threading.Thread(target=lambda: None, name="SpecChat ends at once", daemon=True)
    for thread in (leak, other, ends):
        thread.start()
    try:
        assert leaked_threads(before, deadline_s=0.2) == [leak]
    finally:
        release.set()  # the fixture's own check, after this test, then finds nothing
    leak.join(5)
    assert leaked_threads(before, deadline_s=5) == []


def test_the_window_tests_fixture_fails_a_test_that_leaks_a_thread(pytester):
    """The window tests' fixture itself fails a test that leaks a SpecChat thread on purpose (run by pytester)."""
    pytester.makeconftest("""
import tests.support.threads
from tests.support.threads import no_thread_leaks  # noqa: F401

tests.support.threads.THREAD_END_S = 0.2
""")
    pytester.makepyfile("""
import threading
release = threading.Event()

def test_leaks():
    threading.Thread(target=release.wait, name="SpecChat leak on purpose", daemon=True).start()

def test_cleans_up():
    release.set()
""")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test left 1 thread(s) running: SpecChat leak on purpose*"])
