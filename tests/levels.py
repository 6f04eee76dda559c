"""The CPU levels and kernel paths the kernel tests run at, and how many examples their
property tests draw."""

import os

from dmlops.backends import cpu


def levels_under_test() -> list[str]:
    """Every level this machine runs, or those of them ``DMLOPS_TEST_LEVELS`` names (a comma
    list: tests/sanitize.sh, whose package holds one sanitized level and, where that is not
    the baseline, a baseline module that only tells the CPU's features)."""
    levels = list(cpu.supported())
    named = os.environ.get("DMLOPS_TEST_LEVELS")
    return [lv for lv in levels if lv in named.split(",")] if named else levels


def level_paths() -> list[tuple[str, str]]:
    """Every tested level, with the fast paths; the plain kernels at the lowest and the
    highest level only. The plain kernels are the same scalar code at every level: the lowest
    and the highest compile it with the narrowest and the widest vectors the compiler's own
    vectorising can use (tests/sanitize.sh runs them at its one level)."""
    levels = levels_under_test()
    plain = sorted({levels[0], levels[-1]}, key=levels.index)
    if os.environ.get("DMLOPS_TEST_PATHS") == "fast":     # (tests/aarch64.sh --ci)
        plain = []
    return [(lv, "fast") for lv in levels] + [(lv, "plain") for lv in plain]


def examples(n: int) -> int:
    """A property test's number of examples: ``n``, scaled by ``DMLOPS_TEST_EXAMPLES`` (a
    fraction; tests/aarch64.sh --ci takes a quarter, each example costing 10 to 20 times as much
    under emulation), at least 4."""
    return max(4, round(n * float(os.environ.get("DMLOPS_TEST_EXAMPLES", "1"))))
