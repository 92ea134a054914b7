"""The renders of one chart run: the Helm engine's renders cached by values content and options (a probe and a
proof value set with the same values are one render), the second render of a value set that finds random values
(started early on a render thread when the first was slow), the core's migration of a rendered stream done once, and
the render threads that run independent renders in parallel (render_all, render_each)."""

from __future__ import annotations

import copy
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

from dramigrate import lifetime
from dramigrate.config import Settings
from dramigrate.memo import per_run, remember
from dramigrate.rules import RuleSet
from dramigrate.versions import Target

PARALLEL_FROM = 1.0  # CPU seconds of renders in one batch from which more Helm workers start (one costs ~0.35 s)


# a first render that took this many CPU seconds, and as many times the usual render, has its second started early
AGAIN_FROM, AGAIN_TIMES = 0.05, 4


@dataclass
class Render:
    manifests: list[Any]
    stream: str  # the manifests that may hold anything dramigrate reports, as `helm template` prints them
    rest: str = ""  # the other manifests
    error: str = ""
    took: float = 0.0  # the CPU seconds the Helm worker took to render it (0 without a worker: --helm-binary)
    ended: float = 0.0  # the wall clock when the render returned (time.time())


@dataclass
class RunCache:
    """What one chart run computes more than once: renders of the chart it checks (by values content and options;
    a probe and a proof value set with the same values are one render), chart defaults by folder, the core's
    migration of a rendered stream, and whether the chart can render differently twice."""

    root: Path
    renders: dict[tuple[Any, ...], Render] = field(default_factory=dict)
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)
    # subcharts by folder (chartvalues.subchart_dirs), keyed with the stat of charts/ and Chart.yaml: asked for at
    # each level of every finding's template path, re-read each time it made a tall or wide umbrella quadratic
    subcharts: dict[tuple[Any, ...], dict[str, Path | None]] = field(default_factory=dict)
    cores: dict[tuple[Any, ...], Any] = field(default_factory=dict)  # run_core results (read-only: copied out)
    reads: dict[str, Any] = field(default_factory=dict)  # how the core reads a rendered document (perdocument._read)
    structured: dict[str, bool] = field(default_factory=dict)  # a rendered document within the limits on nesting
    steady: bool | None = None  # nothing in the chart can render differently twice (_may_differ); None: not read
    clocked: bool = False  # a file of the chart reads the clock (_CLOCK_IN_ACTION); read with steady
    # the second render of a value set (a chart with random values: what differs between two renders is masked),
    # rendered once, started early when the first was slow (render_again)
    again: dict[tuple[Any, ...], Future[Render]] = field(default_factory=dict)
    claimed: set[tuple[Any, ...]] = field(default_factory=set)  # the second renders started (or dropped)
    marked: dict[tuple[Any, ...], Future[Any]] = field(default_factory=dict)  # helper.marked_render, started early
    # renders of any chart (the rewritten copy too) started ahead of their cached_render (start_renders), by chart
    # folder and render_key
    started: dict[tuple[str, tuple[Any, ...]], Future[Render]] = field(default_factory=dict)
    libraries: dict[tuple[Any, ...], Any] = field(default_factory=dict)  # packedlib.find_request, by work and options
    subchartless: dict[str, Any] = field(default_factory=dict)  # subchartless.reach, by chart folder
    leftout: Any = None  # leftout.Plan: the subcharts renders of this run may leave out
    narrow: bool = False  # leave out only subcharts that include no template of another chart (leftout.Wider)
    lock: threading.Lock = field(default_factory=threading.Lock)


CACHE: list[RunCache] = []  # the innermost chart run's cache (run_chart)


def run_cache(root: Path) -> RunCache | None:
    """The innermost chart run's cache when `root` is that run's chart, else None (a copy, another chart)."""
    return CACHE[-1] if CACHE and CACHE[-1].root == root else None


# Template functions whose result differs from one render to the next (Sprig and Helm): random text, numbers, keys
# and certificates, salted hashes, random-IV encryption, DNS; named anywhere (a name in a value can reach `tpl`).
# The clock and Go map order (`now`, `ago`, `keys`, `values`) are ordinary words: counted inside template actions.
_RANDOM_FUNCTIONS = re.compile(
    r"(?<![\w.$])(?:rand(?:AlphaNum|Alpha|Numeric|Ascii|Int|Bytes)|uuidv4|shuffle|genPrivateKey|genCA\w*|"
    r"genSelfSignedCert\w*|genSignedCert\w*|bcrypt|htpasswd|encryptAES|getHostByName)\b"
)


_ACTION = re.compile(r"\{\{.*?\}\}", re.DOTALL)


_RANDOM_IN_ACTION = re.compile(r"(?<![\w.$])(?:now|ago|keys|values|date|dateInZone|date_in_zone|htmlDate\w*)\b")


# Sprig functions that read the clock: `now`, `ago`, and the date formatters given something not a time (`date
# "2006" .Values.x` formats time.Now()). Their output changes with the second (`now | unixEpoch`).
_CLOCK_IN_ACTION = re.compile(r"(?<![\w.$])(?:now|ago|date|dateInZone|date_in_zone|htmlDate\w*)\b")


def _may_differ(cache: RunCache, key: tuple[Any, ...]) -> bool:
    """Whether two renders of the run's chart with these values may differ: some file of the chart (templates, and
    any file a template can `tpl`) or of the values names a random function, or the chart holds a packaged
    subchart or a file that is not text (not read here). Only ever too careful: a chart judged steady that is not
    would fail its proof (nothing masked), never pass it."""
    if cache.steady is None:
        from dramigrate.helm.sandbox import chart_for_render

        # read into locals, set once read whole: the proof's renders ask from several threads at once, and one that
        # found `steady` set while another still read the files took the chart for steady and the first render for
        # the second (nothing masked: a chart writing a random password failed its proof, at random)
        steady, clocked = True, False
        with chart_for_render(cache.root) as safe:  # the copy every render of the run reads
            for path in sorted(Path(safe).rglob("*")):
                if not path.is_file():
                    continue
                data = b"" if path.suffix == ".tgz" else path.read_bytes()  # each file read once
                if path.suffix == ".tgz" or not _steady_bytes(data):
                    steady = False  # the clock words are random words: only such a file can read the clock
                    clocked = clocked or _clock_bytes(data)
        with cache.lock:
            cache.clocked = cache.clocked or clocked
            cache.steady = steady
    if not cache.steady:
        return True
    return not all(_steady_bytes(part) for part in key[0]) or not _steady_bytes(key[1].encode("utf-8"))


def _reads_clock(cache: RunCache, key: tuple[Any, ...]) -> bool:
    """Whether a render of the run's chart with these values may write the time (a file of the chart or of the
    values calls a Sprig clock function in a template action). Read after _may_differ."""
    return cache.clocked or any(_clock_bytes(part) for part in key[0]) or _clock_bytes(key[1].encode("utf-8"))


# What an action says without calling anything: its comments and string literals (a `fail "... values must be ..."`
# message, a comment that names `keys`): such words had every value set of deepgram's proof rendered twice
_INERT = re.compile(r'/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|`[^`]*`', re.DOTALL)


# an action that ranges over a map's keys as sprig's `keys` gives them, in Go's random map order (not `sortAlpha`ed)
_UNSORTED_KEYS = re.compile(r"(?<![\w.$])keys\b(?!.*\bsortAlpha\b)", re.DOTALL)


def orders_at_random(root: Path) -> bool:
    """Whether a template of the chart or of a subchart unpacked in it ranges over `keys` unsorted, so that the
    documents one template renders come in another order from one render to the next (bjw-s common's objects)."""
    found = _UNORDERED.get(str(root))
    if found is None:
        texts = chain(
            (
                p.read_text(encoding="utf-8", errors="replace")
                for p in sorted(root.rglob("templates/**/*"))
                if p.is_file()
            ),
            _packed_templates(root),
        )
        found = any(_UNSORTED_KEYS.search(a) for text in texts for a in _calls(text) if "keys" in a)
        remember(_UNORDERED, str(root), found, 256)
    return found


_UNORDERED: dict[str, bool] = {}  # bounded by memo.remember, as the run's other memos
per_run(_UNORDERED.clear)  # a chart's templates may change between runs in one process


def _packed_templates(root: Path) -> Iterator[str]:
    """The template texts of the subcharts root holds packed (`charts/common-4.4.0.tgz`: bjw-s common before 5
    ranges over its objects' keys unsorted, and one fix in two of a chart using it failed proof L at random, its
    Deployments rendered in another order); an archive that cannot be read is the render's to name."""
    from dramigrate.helm.twins import packed_members

    for archive in sorted(root.rglob("*.tgz")):
        members = packed_members(archive) if archive.parent.name == "charts" else None
        for name, data in sorted((members or {}).items()):
            if "/templates/" in name:
                yield data.decode("utf-8", "replace")


def _calls(text: str) -> list[str]:
    """The template actions of text, each without its comments and string literals, except an action that calls
    `tpl` (a literal it is given is template text, which can call anything)."""
    return [a if "tpl" in a else _INERT.sub('""', a) for a in _ACTION.findall(text)]


def _clock_bytes(data: bytes) -> bool:
    text = data.decode("utf-8", "replace")
    return any(_CLOCK_IN_ACTION.search(action) for action in _calls(text))


def _steady_bytes(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "\0" in text or _RANDOM_FUNCTIONS.search(text):
        return False
    return not any(_RANDOM_IN_ACTION.search(action) for action in _calls(text))


# Template functions that generate keys or hash passwords: a render that calls one takes 0.1 to 2 s of CPU where the
# chart's other renders take milliseconds (nim-llm's multi-node secret: genPrivateKey "rsa", a 4096-bit key).
_KEY_FUNCTIONS = re.compile(
    r"(?<![\w.$])(?:genPrivateKey|genCA\w*|genSelfSignedCert\w*|genSignedCert\w*|bcrypt|htpasswd)\b"
)


def generates_keys(root: Path) -> bool:
    """Whether a template of the chart (or of a subchart folder) names a function that generates keys."""
    from dramigrate.helm.sandbox import chart_for_render

    with chart_for_render(root) as safe:
        templates = [p for p in sorted(Path(safe).rglob("*")) if "templates" in p.relative_to(safe).parts[:-1]]
        return any(_KEY_FUNCTIONS.search(p.read_bytes().decode("utf-8", "replace")) for p in templates if p.is_file())


def render_key(options: Any) -> tuple[Any, ...] | None:
    """The render's inputs as content: the text of the values files, not their names (each probe writes its own)."""
    import dataclasses

    try:
        texts = tuple(Path(path).read_bytes() for path in options.values_files)
    except OSError:
        return None
    return texts, repr(dataclasses.replace(options, values_files=()))


def cached_render(root: Path, options: Any, fresh: bool = False) -> Render:
    """The chart rendered with options; a render of the run's own chart with the same values is done once. `fresh`:
    the second render of a value set, which finds what differs between two renders (random values), also done
    once, and only when the chart or values can render differently twice (_may_differ)."""
    from dramigrate.helm.sandbox import check_chart_time

    check_chart_time()  # a render taken from the cache is still worked on
    cache = run_cache(root)
    key = render_key(options) if cache is not None else None
    if cache is not None and key is not None and key in cache.renders:
        if fresh and _may_differ(cache, key):
            return _again(cache, root, options, key)
        return cache.renders[key]
    rendered = _taken(root, options)
    if rendered is None:
        rendered = _render_uncached(root, options)
    if cache is not None and key is not None and key not in cache.renders:
        cache.renders[key] = rendered
    return rendered


def start_renders(root: Path, options: list[Any]) -> None:
    """Start these renders of a chart (the run's own, or a rewritten copy) now, on the render threads in this order:
    cached_render(root, o) then takes each one's render, waiting for it if need be, instead of rendering it there. A
    proof that compares value set after value set starts the renders it reads next, so its comparisons overlap them.
    Only within a chart run, and when more than one core renders (else each is rendered where it is read)."""
    from dramigrate.helm.sandbox import render_parallelism

    if not CACHE or render_parallelism() < 2:
        return
    cache = CACHE[-1]
    for o in options:
        key = render_key(o)
        with cache.lock:
            if key is None or (str(root), key) in cache.started or (cache.root == root and key in cache.renders):
                continue
            cache.started[(str(root), key)] = render_pool().submit(_render_uncached, root, o)


def _taken(root: Path, options: Any) -> Render | None:
    """The render of these values that start_renders started (waited for; taken once), or None."""
    key = render_key(options) if CACHE and CACHE[-1].started else None
    if key is None:
        return None
    with CACHE[-1].lock:
        future = CACHE[-1].started.pop((str(root), key), None)
    return None if future is None else lifetime.result(future)


class Again:
    """A value set's second render of the run's chart (cached_render with `fresh`), rendered when first read: a proof
    compares without it first (byte-identical renders need no mask) and reads it only on a difference. Charts judged
    unsteady that render steadily (a packaged subchart, a `keys` that is sorted) then skip one render per value set
    (deepgram's 20 of 119). The first one read that differs from its first render starts the others not read yet on
    the render threads, as they were before (groundx: a `genCA` in every render)."""

    def __init__(self, root: Path, options: Any, group: list[Again]) -> None:
        self._root, self._options, self._group = root, options, group
        self._render: Render | None = None
        group.append(self)

    def read(self) -> Render:
        if self._render is None:
            self._render = cached_render(self._root, self._options, fresh=True)
            if _differs(self._root, self._options, self._render):
                _start_agains(self._root, [a._options for a in self._group if a._render is None])
        return self._render

    def __getattr__(self, name: str) -> Any:  # read as a Render: manifests, stream, rest, error
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.read(), name)


def agains(root: Path, options: list[Any]) -> list[Again]:
    """The second renders of value sets (Again), none rendered yet."""
    group: list[Again] = []
    return [Again(root, o, group) for o in options]


def _differs(root: Path, options: Any, again: Render) -> bool:
    """Whether a second render differs from the run's first render of the same values."""
    cache = run_cache(root)
    key = render_key(options) if cache is not None else None
    first = cache.renders.get(key) if cache is not None and key is not None else None
    return first is not None and [m.text for m in first.manifests] != [m.text for m in again.manifests]


def _start_agains(root: Path, options: list[Any]) -> None:
    """Start the second renders of these value sets on the render threads (as render_again, whatever their time)."""
    cache = run_cache(root)
    if cache is None:
        return
    for o in options:
        key = render_key(o)
        if key is not None and key in cache.renders and _may_differ(cache, key):
            _start_early(cache, key, root, o)


def _start_early(cache: RunCache, key: tuple[Any, ...], root: Path, options: Any) -> None:
    """Give the second render of a value set to the render threads (_early), unless it is started already."""
    with cache.lock:
        if key in cache.again:
            return
        future = cache.again[key] = Future()
    render_pool().submit(_early, cache, key, future, root, options)


def _again(cache: RunCache, root: Path, options: Any, key: tuple[Any, ...]) -> Render:
    """The second render of a value set: the one started early (render_again), else rendered here now."""
    with cache.lock:
        future = cache.again.setdefault(key, Future())
        mine = key not in cache.claimed  # not started yet: rendered here rather than waited for in the queue
        cache.claimed.add(key)
    if mine:
        _settle(future, root, options, _after(cache, key))
    return lifetime.result(future)


def _after(cache: RunCache, key: tuple[Any, ...]) -> float:
    """When the second render of a value set may start: for a chart that writes the time (`now | unixEpoch`), the
    next whole second after its first render ended, so every field that holds the time differs between the two
    renders and is masked (two renders in one second, the rewritten chart's in the next, failed its proof);
    for the others, now."""
    first = cache.renders.get(key)
    if first is None or not first.ended or not _reads_clock(cache, key):
        return 0.0
    return float(int(first.ended) + 1)


def render_later(root: Path, options: Any) -> Render | None:
    """For a chart that reads the clock (_reads_clock), the run's chart rendered once more with a value set's values,
    now, after the rewritten chart's renders the proof compares: where a time field changes at a coarser step than
    the second (`now | date "15:04"`), the first two renders can fall in one minute and the rewritten one in the next;
    this third render is in that next minute too, so what differs is masked. None for another chart, or values this
    run did not render."""
    cache = run_cache(root)
    key = render_key(options) if cache is not None else None
    if cache is None or key is None or key not in cache.renders:
        return None
    if not _may_differ(cache, key) or not _reads_clock(cache, key):
        return None
    return _render_uncached(root, options)


def render_once_more(root: Path, options: Any) -> Render | None:
    """The run's chart rendered afresh with a value set's values when two of its renders may differ (_may_differ:
    random values, map order): a third sample of what differs between renders; None for a steady chart, or values
    this run did not render."""
    cache = run_cache(root)
    key = render_key(options) if cache is not None else None
    if cache is None or key is None or key not in cache.renders or not _may_differ(cache, key):
        return None
    return _render_uncached(root, options)


# a top-level value no template reads by name: what changes with it is derived from the values as a whole
PROBE_VALUE = "dramigrateWholeValuesProbe=1"


def render_probed(root: Path, options: Any) -> Render:
    """The chart rendered afresh with one more top-level value (PROBE_VALUE): where it differs from the chart's render
    with `options` (random values aside), the chart writes something derived from its values as a whole (a runner
    scale set's `actions.github.com/values-hash: {{ toJson .Values | sha256sum }}`). An error for a chart whose
    values schema refuses an unknown key."""
    from dataclasses import replace

    return _render_uncached(root, replace(options, set_values=(*options.set_values, PROBE_VALUE)))


def render_again(root: Path, options: list[Any]) -> None:
    """Start now, on the render threads, the second renders of the value sets whose first render was slow, several
    times the usual one (a private key generated in a template: nim-llm's took up to 2 s, its other renders 10 ms),
    so they overlap the work before the proof asks for them. Only for the run's own chart, when it can render
    differently twice and more than one core renders."""
    from dramigrate.helm.sandbox import prestart_another, render_parallelism, render_seconds

    cache = run_cache(root)
    if cache is None or render_parallelism() < 2:
        return
    slow = max(AGAIN_FROM, AGAIN_TIMES * render_seconds())
    for o in options:
        key = render_key(o)
        first = cache.renders.get(key) if key is not None else None
        if first is None or first.took < slow or key in cache.again or not _may_differ(cache, key):
            continue
        prestart_another()  # for it, not for the next render of this thread: that keeps its warm worker
        _start_early(cache, key, root, o)


def _early(cache: RunCache, key: tuple[Any, ...], future: Future[Render], root: Path, options: Any) -> None:
    with cache.lock:
        if key in cache.claimed:  # the proof asked for it first and renders it itself
            return
        cache.claimed.add(key)
    _settle(future, root, options, _after(cache, key))


def _settle(future: Future[Render], root: Path, options: Any, after: float = 0.0) -> None:
    if (wait := after - time.time()) > 0:
        time.sleep(wait)
    try:
        future.set_result(_render_uncached(root, options))
    except BaseException as exc:  # a render past its limits: raised where the render is asked for
        future.set_exception(exc)


def settled(cache: RunCache) -> None:
    """At the end of a chart run: second renders not started are dropped, and the ones rendering waited for, so
    none outlives its run (its values files and chart copy). A dropped one is not waited for: `wait` counts a
    cancelled Future as done only once an executor has run it (set_running_or_notify_cancel), which never happens
    to the run's own second-render futures, so waiting for one hung the run for good (fix of a chart whose second
    renders were started but not all begun when the proof ended)."""
    from concurrent.futures import wait

    with cache.lock:
        for key, future in cache.again.items():
            if key not in cache.claimed:
                cache.claimed.add(key)
                future.cancel()
        for future in cache.marked.values():
            future.cancel()  # a marked render started early (helper.start_marked_render) and not asked for
        for future in cache.started.values():
            future.cancel()  # a render started ahead (start_renders) that a proof ended before reading
    wait([f for f in (*cache.again.values(), *cache.marked.values(), *cache.started.values()) if not f.cancelled()])


_T = TypeVar("_T")


_POOL: list[ThreadPoolExecutor] = []  # the render threads, made once: a worker dies with the thread that started it


def render_pool() -> ThreadPoolExecutor:
    from dramigrate.helm.sandbox import render_parallelism

    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=render_parallelism(), thread_name_prefix="dramigrate-render"))
    return _POOL[0]


def render_all(calls: list[Callable[[], _T]]) -> list[_T]:
    """The results of independent renders, in order, run render_parallelism() at a time (each thread waits for its
    own Helm worker, so on two cores two charts render at once). An exception is the first call's that raised, after
    every call has ended."""
    return list(render_each(calls))


def render_each(calls: list[Callable[[], _T]]) -> Iterator[_T]:
    """render_all's results one by one as each is ready, in order, while the later ones still render: the caller's
    own work on a result overlaps the next renders. Leaving early waits for the renders still running."""
    from dramigrate.helm import sandbox

    threads = sandbox.render_parallelism()
    done = 0
    while threads > sandbox.workers_started() and done < len(calls):
        took = sandbox.render_seconds()  # one at a time until the renders left are known to pay for another worker
        if took and (len(calls) - done) * took >= PARALLEL_FROM:
            break
        yield calls[done]()
        done += 1
    calls = calls[done:]
    if threads <= 1 or len(calls) <= 1:
        for call in calls:
            yield call()
        return
    futures = [render_pool().submit(call) for call in calls]
    try:
        for future in futures:
            lifetime.settle(future)
            exception = future.exception()
            if exception is not None:
                raise exception
            yield future.result()
    finally:
        from concurrent.futures import wait

        wait(futures)


def _render_uncached(root: Path, options: Any) -> Render:
    """The chart rendered now; the subcharts the run leaves out of its renders left out, each with its marker
    (leftout.py)."""
    from dramigrate.helm.leftout import leaving_out

    left = leaving_out(root, options)
    return _render_folder(root, options) if left is None else left.render(options)


def _render_folder(root: Path, options: Any) -> Render:
    from dramigrate.helm.render import HelmError, render_chart
    from dramigrate.helm.sandbox import last_render_seconds

    try:
        manifests = render_chart(root, options)
    except HelmError as exc:
        return Render([], "", "", str(exc), last_render_seconds(), time.time())
    ended = time.time()
    relevant, others = split_relevant(manifests)
    took = last_render_seconds()
    return Render(manifests, manifest_stream(relevant), manifest_stream(others), took=took, ended=ended)


def split_relevant(manifests: list[Any]) -> tuple[list[Any], list[Any]]:
    """The manifests that may matter to the core (may_matter), and the others, each in render order. (The others
    were those `not in` the first list: comparisons quadratic in the documents, seconds per render of thousands.)"""
    relevant: list[Any] = []
    others: list[Any] = []
    for m in manifests:
        (relevant if may_matter(m.text) else others).append(m)
    return relevant, others


_RELEVANT = ("limits", "requests", "claims", "Claim", "Quota", "LimitRange", "NodePool", "Queue", "extra_resource")


# a double-quoted YAML escape that can spell a letter (`"\u006cimits"` is `limits`), or a line break it joins
_ESCAPED = re.compile(r"\\(?:[xuU]|\r?\n)")


def may_matter(text: str) -> bool:
    """Whether a manifest can hold anything the core reports (a superset of the core's own triage, so the
    core sees every document it would act on; the others are compared as rendered). A word spelled with escapes
    is found only by a parse: such a manifest is the core's to read."""
    return any(word in text for word in _RELEVANT) or _ESCAPED.search(text) is not None


def manifest_stream(manifests: list[Any]) -> str:
    return "".join(f"---\n# Source: {m.source}\n{m.text}" for m in manifests)


_DEVICE_NAME = re.compile(r"[\w.-]+\.[a-z]+/[\w.-]+")
_DOCUMENT_START = re.compile(r"^---", re.MULTILINE)


def device_documents(stream: str, rules: RuleSet) -> int:
    """How many documents of a rendered stream name a device resource the rule packs know (a document that only
    mentions one in text counts too: a bound, not a finding)."""
    names = [n for n in set(_DEVICE_NAME.findall(stream)) if rules.is_device_candidate(n) and rules.lookup(n)]
    if not names:
        return 0
    return sum(1 for document in _DOCUMENT_START.split(stream) if any(n in document for n in names))


def run_core(
    stream: str, name: str, rules: RuleSet, settings: Settings, target: Target, fix: bool, objects: bool = False
) -> Any:
    """The core's result for a rendered stream; within a chart run a stream is migrated once (per `objects`), each
    caller getting its own copy to change. `objects`: the rewritten text is read only as objects (a proof's
    migration of a value set), so an edited document's comments and blank lines may go (migrate.Job.comments):
    Helm's renders hold both, and ruamel's pure-Python parse of them was most of a proof's migration time."""
    from dramigrate.migrate import Job, run_file

    cache = CACHE[-1].cores if CACHE else None
    key = (stream, name, id(rules), id(settings), id(target), fix, objects)
    if cache is not None and key in cache:
        return copy.deepcopy(cache[key][0])
    from dramigrate.helm.perdocument import by_document
    from dramigrate.helm.sandbox import check_chart_time, check_device_documents

    check_chart_time()
    check_device_documents(device_documents(stream, rules))
    result = by_document(stream, name, rules, settings, target, fix) if objects and cache is not None else None
    if result is None:
        job = Job(name, stream.encode("utf-8"), fix, suppressions=False, helm_render=True, comments=not objects)
        result = run_file(job, rules, settings, target)
    if cache is None:
        return result
    cache[key] = (result, rules, settings, target)  # kept alive, so their ids stay theirs during the run
    return copy.deepcopy(result)
