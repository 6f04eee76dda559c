"""The CPU levels and kernel paths the kernel tests run at."""

from dmlops.backends import cpu


def level_paths() -> list[tuple[str, str]]:
    """Every level this machine runs, with the fast paths; the plain kernels at the lowest
    and the highest level only. The plain kernels are the same scalar code at every level:
    the lowest and the highest compile it with the narrowest and the widest vectors the
    compiler's own vectorising can use (tests/sanitize.sh runs them at the lowest)."""
    levels = list(cpu.supported())
    plain = sorted({levels[0], levels[-1]}, key=levels.index)
    return [(lv, "fast") for lv in levels] + [(lv, "plain") for lv in plain]
