"""Benchmarks of dmlops against its peers (a script, not a test suite).

For each workload of ``peers.WORKLOADS`` this times dmlops (the ``cpu`` backend and the
``reference`` backend) and every available peer implementation listed in ``peers.IMPLS``, in
one process: warm-up, then the median of repeats, the number of repeats chosen so that a row
takes about ``--budget`` seconds, the implementations taking turns (``ROUNDS`` rounds; the
slow reference backend alone, first) so that a slow spell of the machine falls on all
alike. Inputs are prepared and layouts converted outside the timing; outputs are
preallocated where the peer allows it. Each result, dmlops cpu's included,
is checked against the reference backend's (the SPEC's oracle), and a table is printed:

    workload, implementation, median ms, GB/s (bytes read once + written once),
    ratio to dmlops (implementation median / dmlops median: > 1 means slower than dmlops),
    % of the machine's copy bandwidth (a 2-thread copy of 1 GiB, measured in the same run),
    repeats, agreement with the oracle, note

followed by the targets of the issue (dmlops at most 0.8x the fastest peer; at least 50 % of
the copy bandwidth where no peer is fast; never slower than the reference backend) and a
summary of every agreement failure and error. The exit status is 1 when an implementation
disagrees with dmlops or dmlops itself fails, else 0.

    python benchmarks/run.py                    # everything (several minutes)
    python benchmarks/run.py --quick            # fewer repeats and peers (< 2 min)
    python benchmarks/run.py --workloads 1,5r   # workload groups (1 = 1 and 1i) or ids
    python benchmarks/run.py --markdown > benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import os
import platform
import resource
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the registry beside this script)

import dmlops  # noqa: E402

TARGET_PEER_RATIO = 0.8        # dmlops median / fastest peer median
TARGET_COPY_FRACTION = 0.50    # of the 2-thread copy bandwidth (issue 41)


# ------------------------------------------------------------------------------------------
# Measuring

def copy_bandwidth(nbytes: int = 1 << 30, runs: int = 5, threads: int = 2) -> float:
    """GB/s (bytes read + bytes written) of ``threads`` threads each copying a slice of a
    ``nbytes`` float32 array with ``np.copyto`` (which releases the GIL); median of runs."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.zeros_like(src)
    parts = np.array_split(np.arange(src.size), threads)
    bounds = [(p[0], p[-1] + 1) for p in parts]

    def work(lo, hi):
        np.copyto(dst[lo:hi], src[lo:hi])

    times = []
    for _ in range(runs + 1):          # the first run is a warm-up
        ts = [threading.Thread(target=work, args=b) for b in bounds]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        times.append(time.perf_counter() - t0)
    return 2 * nbytes / statistics.median(times[1:]) / 1e9


ROUNDS = 5         # a full run times its implementations in this many interleaved rounds
MOST = 200         # calls timed per implementation at most


@contextmanager
def _no_gc():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Timing:
    """One implementation's calls: warmed up, then timed (seconds each)."""
    run: object
    result: object = None
    times: list = field(default_factory=list)
    done: bool = False            # no more calls: a slow first call was the only sample
    error: str = ""               # a timed call raised: the first line of what it said

    @property
    def median(self):
        return statistics.median(self.times)

    def enough(self, budget: float, quick: bool) -> bool:
        least = 1 if quick else (3 if self.times and self.times[0] > 1.0 else 5)
        return self.done or len(self.times) >= MOST or (
            len(self.times) >= least and sum(self.times) >= budget)


def warm_up(run, budget: float, quick: bool, cold_ok: bool = False) -> Timing:
    """A warm-up call (two in a full run when a call is cheap: the first may compile). With
    ``quick`` and ``cold_ok`` (an implementation with nothing to compile), a first call over
    0.2 s is the only sample."""
    t = Timing(run)
    with _no_gc():
        t0 = time.perf_counter()
        t.result = run()
        first = time.perf_counter() - t0
        if quick and cold_ok and first > 0.2:
            t.times, t.done = [first], True
        elif not quick and first < budget / 2:
            t.result = run()
    return t


def sample(t: Timing, seconds: float, budget: float, quick: bool) -> None:
    """Timed calls of ``t`` for about ``seconds`` (one at least), stopping early once it has
    enough (``Timing.enough``)."""
    with _no_gc():
        start = time.perf_counter()
        while not t.enough(budget, quick):
            t0 = time.perf_counter()
            t.result = t.run()
            t.times.append(time.perf_counter() - t0)
            if time.perf_counter() - start >= seconds:
                break


def interleaved(timings: list, budget: float, quick: bool, rounds: int) -> None:
    """Time several implementations of one workload in turns: each round gives each about
    ``budget / rounds`` seconds, so a spell when the machine is slow (a neighbour on the
    host) falls on all of them alike rather than on whichever was running. Each round starts
    one implementation later, so none always runs right after the same other one."""
    for r in range(rounds):
        last = r == rounds - 1
        for t in timings[r % len(timings):] + timings[:r % len(timings)]:
            if t.error:
                continue
            try:
                sample(t, float("inf") if last else budget / rounds, budget, quick)
            except Exception as e:       # reported in its row; the others go on
                t.error = _first_line(e)



# ------------------------------------------------------------------------------------------
# Running

@dataclass
class Row:
    workload: peers.Workload
    impl: peers.Impl
    median: float | None = None      # seconds
    repeats: int = 0
    agreement: str = ""
    agrees: bool | None = None
    note: str = ""
    status: str = "ok"               # ok | skipped | error
    ratio: float | None = None

    @property
    def gbps(self):
        return None if self.median is None else self.workload.nbytes / self.median / 1e9


@dataclass
class Report:
    copy_gbps: float
    rows: list = field(default_factory=list)
    oracle: dict = field(default_factory=dict)   # workload id -> implementation compared with


def _first_line(e: BaseException) -> str:
    msg = str(e).strip()
    if msg.startswith("{{") and "}}" in msg:      # TensorFlow's "{{function_node ...}}" prefix
        msg = msg[msg.index("}}") + 2:].strip()
    msg = msg.splitlines()[0] if msg else ""
    msg = f"{type(e).__name__}: {msg}"
    return msg if len(msg) <= 160 else msg[:159] + "…"


def start_one(w, impl, data, args):
    """Prepare and warm up one implementation: ``(row, bench, timing)``, the last two None
    where it was skipped or refused the workload (the row says why)."""
    row = Row(w, impl)
    if not peers.library_available(impl.library):
        row.status, row.note = "skipped", f"{peers.LIBRARIES[impl.library][0]} not installed"
        return row, None, None
    try:
        bench = impl.prepare(w, data)
    except peers.Skip as e:
        row.status, row.note = "skipped", str(e)
        return row, None, None
    except Exception as e:          # the library refused the workload: reported
        row.status, row.note = "error", _first_line(e)
        return row, None, None
    try:
        timing = warm_up(bench.run, args.budget, args.quick, cold_ok=not impl.compiles)
    except Exception as e:
        row.status, row.note = "error", _first_line(e)
        return row, None, None
    return row, bench, timing


def finish_one(row, bench, timing):
    """The row's figures and the result's arrays (None where a timed call or fetching the
    result failed)."""
    try:
        if timing.error:
            raise RuntimeError(timing.error)
        got = tuple(bench.fetch(timing.result))
    except Exception as e:
        row.status, row.note = "error", timing.error or _first_line(e)
        return None
    row.median, row.repeats, row.note = timing.median, len(timing.times), bench.note
    return got


def run_workload(w, data, args, report: Report, log) -> None:
    """Time every implementation of ``w``: the reference backend (the SPEC's oracle, slow)
    alone first, then the others interleaved (``interleaved``); then compare each result
    with the oracle's."""
    impls = [i for i in peers.implementations(w) if
             (not i.name.startswith("dmlops ") or i.name.split()[-1] in args.backends) and
             (i.quick or not args.quick)]
    # The reference backend runs first: its result is what every other implementation,
    # dmlops cpu included, is compared with. The table keeps registry order.
    order = sorted(impls, key=lambda i: i.name != "dmlops reference")
    started = []
    if order and order[0].name == "dmlops reference":
        started.append(start_one(w, order[0], data, args))
        if started[0][2] is not None:
            interleaved([started[0][2]], args.budget, args.quick, 1)       # alone
    alone = len(started)
    started += [start_one(w, impl, data, args) for impl in order[alone:]]
    interleaved([t for _, _, t in started[alone:] if t is not None], args.budget, args.quick,
                1 if args.quick else ROUNDS)
    want = None
    rows = []
    for impl, (row, bench, timing) in zip(order, started):
        rows.append(row)
        got = None if bench is None else finish_one(row, bench, timing)
        if got is None:
            log(f"  {impl.name:<22} {row.status}: {row.note}")
            continue
        check = peers.check_of(w, bench)
        if want is None and impl.is_dmlops:
            want = tuple(np.array(a, copy=True) for a in got)
            report.oracle[w.id] = impl.name
            row.agreement, row.agrees = "(oracle)", True
        elif want is not None:
            agreement = peers.compare(got, want, check, w.dtype)
            row.agreement, row.agrees = agreement.text, agreement.ok
        else:
            row.agreement = "n/a (no dmlops result)"
        got = None
        log(f"  {impl.name:<22} {1e3 * row.median:10.2f} ms  x{row.repeats:<3} "
            f"{row.agreement}")
    rows.sort(key=lambda r: impls.index(r.impl))
    base = next((r for r in rows if r.impl.is_dmlops and r.median is not None), None)
    for r in rows:
        if base is not None and r.median is not None:
            r.ratio = r.median / base.median
        if r.impl.is_dmlops and r.status == "error":
            r.agrees = False
    report.rows.extend(rows)


def select(spec: str | None):
    if not spec:
        return list(peers.WORKLOADS)
    tokens = [t.strip() for t in spec.split(",") if t.strip()]
    chosen = [w for w in peers.WORKLOADS if any(
        t == w.id or (t.isdigit() and int(t) == w.group) for t in tokens)]
    unknown = [t for t in tokens if not any(t == w.id or (t.isdigit() and int(t) == w.group)
                                            for w in peers.WORKLOADS)]
    if unknown:
        ids = ", ".join(w.id for w in peers.WORKLOADS)
        raise SystemExit(f"--workloads: unknown {', '.join(unknown)}; known ids: {ids} "
                         f"(a number selects its group)")
    return chosen


# ------------------------------------------------------------------------------------------
# Reporting

def _version(dists) -> str | None:
    for d in dists:
        try:
            return importlib.metadata.version(d)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _git_commit() -> str:
    """The checkout's commit, with "+changes" when the working tree differs from it."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "commit unknown"
    if not head:
        return "commit unknown"
    return f"commit {head}" + (" + uncommitted changes in src/" if dirty else "")


def environment(args) -> list:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [f"CPU: {cpu}, {cores} cores usable ({os.cpu_count()} online); "
             f"{platform.system()} {platform.release()}; Python {platform.python_version()}"]
    available = dmlops.backends()
    timed = ", ".join(b if b in available else f"{b} (not available: skipped)"
                      for b in args.backends)
    lines.append(f"dmlops {dmlops.__version__} ({_git_commit()}): backends available {', '.join(available)}; "
                 f"timed: {timed}")
    libs = []
    for lib, (module, dists) in peers.LIBRARIES.items():
        if lib == "dmlops":
            continue
        v = _version(dists)
        extra = ""
        if lib == "onnxruntime" and v:
            extra = f" (onnx {_version(['onnx']) or 'missing'})"
        if lib == "jax" and v:
            extra = f" (jaxlib {_version(['jaxlib']) or 'missing'})"
        libs.append(f"{lib} {v}{extra}" if v else f"{lib}: not installed (skipped)")
    lines.append("Peers: " + "; ".join(libs) + f"; every library limited to "
                 f"{peers.THREADS} threads")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    busy = os.getloadavg()[0] > 0.5
    lines.append(f"Load average before the run (1, 5, 15 min): {load} ("
                 + ("other processes were using the cores: expect noisier timings)" if busy
                    else "the machine was idle)"))
    mode = "quick" if args.quick else "full"
    names = [i.name for i in peers.IMPLS]
    skipped = ", ".join(sorted(
        i.name + (f" ({', '.join(sorted(i.ops))})" if names.count(i.name) > 1 else "")
        for i in peers.IMPLS if not i.quick))
    lines.append(f"Mode: {mode} (about {args.budget:g} s of repeats per row"
                 f"{'; skipped: ' + skipped if args.quick else ''}); seed {args.seed}")
    return lines


def _fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def table_rows(report: Report):
    out = []
    for r in report.rows:
        w = r.workload
        status = {"skipped": "skipped",
                  "error": "ERROR" if r.impl.is_dmlops else "refused"}.get(r.status, r.agreement)
        if r.status == "ok" and r.agrees is False:
            status = r.agreement
        pct = None if r.gbps is None else 100 * r.gbps / report.copy_gbps
        out.append([w.id, r.impl.name, _fmt(r.median and 1e3 * r.median, ".2f"),
                    _fmt(r.gbps, ".2f"), _fmt(r.ratio, ".2f"), _fmt(pct, ".0f"),
                    str(r.repeats or "-"), status, r.note])
    return out


HEADER = ["workload", "implementation", "median ms", "GB/s", "x dmlops", "% copy", "reps",
          "agreement", "note"]


def targets(report: Report):
    """One line per workload: the issue's targets, met or missed."""
    lines = []
    by = {}
    for r in report.rows:
        by.setdefault(r.workload.id, []).append(r)
    for wid, rows in by.items():
        w = rows[0].workload
        get = lambda name: next((r for r in rows if r.impl.name == name and r.median), None)
        cpu, ref = get("dmlops cpu"), get("dmlops reference")
        dm = cpu or ref
        fast = min((r for r in rows if not r.impl.is_dmlops and r.median),
                   key=lambda r: r.median, default=None)
        cells = [wid, w.title]
        if dm is None:
            lines.append(cells + ["-", "-", "-", "-", "no dmlops result"])
            continue
        who = "" if dm is cpu else " (reference)"
        verdicts = []
        pct = 100 * dm.gbps / report.copy_gbps
        if w.target == "peer" and fast is not None:
            ratio = dm.median / fast.median
            peer_cell = f"{fast.impl.name} {1e3 * fast.median:.2f} ms; dmlops/peer {ratio:.2f}"
            verdicts.append(("met" if ratio <= TARGET_PEER_RATIO else "MISSED") +
                            f" (<= {TARGET_PEER_RATIO})")
        else:
            peer_cell = ("-" if fast is None else
                         f"{fast.impl.name} {1e3 * fast.median:.2f} ms; dmlops/peer "
                         f"{dm.median / fast.median:.2f}")
            verdicts.append(("met" if pct >= 100 * TARGET_COPY_FRACTION else "MISSED") +
                            f" (>= {100 * TARGET_COPY_FRACTION:.0f} % copy)")
        if cpu is not None and ref is not None:
            verdicts.append(("met" if cpu.median <= ref.median else "MISSED") +
                            f" (cpu/reference {cpu.median / ref.median:.2f})")
        else:
            verdicts.append("cpu vs reference: n/a")
        lines.append(cells + [f"{1e3 * dm.median:.2f}{who}", f"{pct:.0f}", peer_cell,
                              w.target, "; ".join(verdicts)])
    return lines


TARGET_HEADER = ["workload", "title", "dmlops ms", "% copy", "fastest peer", "target",
                 "verdicts"]


def problems(report: Report):
    out = []
    for r in report.rows:
        if r.agrees is False:
            what = "dmlops failed" if r.impl.is_dmlops and r.status == "error" else "disagrees"
            out.append(f"{r.workload.id} {r.impl.name}: {what}: "
                       f"{r.agreement if r.status == 'ok' else r.note}")
    errors = [f"{r.workload.id} {r.impl.name}: {r.note}" for r in report.rows
              if r.status == "error" and not r.impl.is_dmlops]
    return out, errors


def render_text(lines, header, rows, group=True) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header) - 1)]
    fmt = lambda cells: "  ".join(c.ljust(widths[i]) if i < len(widths) else c
                                  for i, c in enumerate(cells))
    out = [fmt(header), fmt(["-" * wd for wd in widths] + ["-" * 4])]
    last = None
    for r in rows:
        if group and last is not None and r[0] != last:
            out.append("")
        last = r[0]
        out.append(fmt(r))
    return "\n".join(lines + [""] + out)


def render_markdown(header, rows) -> str:
    esc = lambda c: c.replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def report_text(report: Report, env, args, wall: float) -> str:
    fails, errors = problems(report)
    cpu_ran = all(any(r.impl.name == "dmlops cpu" and r.median for r in report.rows
                      if r.workload.id == wid) for wid in {r.workload.id for r in report.rows})
    ratio_note = ("x dmlops = median / dmlops cpu median" if cpu_ran else
                  "x dmlops = median / dmlops cpu median (the reference backend's where cpu "
                  "gave no result)")
    ratio_note += " (> 1: slower than dmlops)"
    oracles = sorted(set(report.oracle.values()))
    ratio_note += ("; agreement is with " + (" / ".join(oracles) or "nothing") +
                   " (marked '(oracle)')")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    tail = [f"Copy bandwidth (2 threads, 1 GiB, read + written): {report.copy_gbps:.2f} GB/s",
            ratio_note + "; GB/s counts bytes read once + written once; % copy = GB/s / copy "
            "bandwidth",
            f"Wall time {wall:.0f} s; peak RSS {rss:.1f} GB; load average at the end "
            + ", ".join(f"{v:.1f}" for v in os.getloadavg())]
    verdicts = [t[-1] for t in targets(report)]
    met = sum(v.count("met (") for v in verdicts)
    missed = sum(v.count("MISSED") for v in verdicts)
    heads, items = [f"Targets: {met} met, {missed} missed."], [[]]
    if fails:
        heads.append(f"AGREEMENT FAILURES ({len(fails)}):")
        items.append(fails)
    else:
        heads.append("Agreement: every implementation that ran agrees with dmlops.")
        items.append([])
    if errors:
        heads.append(f"Peers that refused a workload or failed ({len(errors)}):")
        items.append(errors)
    if args.markdown:
        summary = []
        for h, its in zip(heads, items):
            summary += [h, ""] + [f"- {i}" for i in its] + ([""] if its else [])
        cmd = "python benchmarks/run.py --markdown" + (" --quick" if args.quick else "")
        return "\n".join(["# dmlops benchmark results", "",
                          f"Produced by `{cmd}`; the method, how each peer is called and "
                          "where peers' semantics differ are in [README.md](README.md).", "",
                          *[f"- {l}" for l in env + tail], "",
                          "## Results", "", render_markdown(HEADER, table_rows(report)), "",
                          "## Targets", "", render_markdown(TARGET_HEADER, targets(report)),
                          "", "## Summary", "", *summary]).rstrip() + "\n"
    summary = []
    for h, its in zip(heads, items):
        summary += [h] + [f"  {i}" for i in its]
    return "\n".join([*env, *tail, "", render_text([], HEADER, table_rows(report)), "",
                      "Targets:", render_text([], TARGET_HEADER, targets(report), group=False), "",
                      *summary]) + "\n"


# ------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats, no slow baselines or secondary layouts (under 2 minutes)")
    ap.add_argument("--workloads", help="comma-separated ids (1i, 5r) or groups (1 = 1, 1i)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown document")
    ap.add_argument("--backends", default="cpu,reference",
                    help="dmlops backends to time (default cpu,reference; cpu-avx2 and "
                         "cpu-baseline: the cpu backend at that CPU level)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of timed repeats per row (default 1.5, 0.05 with --quick)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if args.budget is None:
        args.budget = 0.05 if args.quick else 1.5
    workloads = select(args.workloads)
    log = lambda s: print(s, file=sys.stderr, flush=True)

    start = time.perf_counter()
    env = environment(args)
    for line in env:
        log(line)
    copy = copy_bandwidth(runs=3 if args.quick else 7)
    log(f"copy bandwidth: {copy:.2f} GB/s")
    report = Report(copy)
    data = peers.Data(args.seed)
    for n, w in enumerate(workloads):
        log(f"[{w.id}] {w.title}  {w.shape} {w.dtype}")
        t_w = time.perf_counter()
        run_workload(w, data, args, report, log)
        log(f"  ({time.perf_counter() - t_w:.1f} s)")
        data.keep_only(set().union(*(peers.data_keys(v) for v in workloads[n + 1:])))
        gc.collect()
        gc.freeze()     # the libraries' objects: later collections skip them (cheaper)
    wall = time.perf_counter() - start
    sys.stdout.write(report_text(report, env, args, wall))
    fails, _ = problems(report)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
