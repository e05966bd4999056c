"""A precise wake-up for the load generator's dispatcher: an event loop timer with microsecond resolution.

asyncio's timers wait in epoll, whose timeout is whole milliseconds rounded up, so `asyncio.sleep` wakes up to
1 ms late. The dispatcher used to sleep to 1.5 ms before a request's time and then yield to the loop until it
was due: precise, but the loop spun through those 1.5 ms of every gap (at 400 req/s, 60% of the time; above
~670 req/s, all of it), and on a shared host the spinning took the cores the endpoint under test and the
client's own streams needed.

On Linux a timerfd (CLOCK_MONOTONIC, the clock of `time.perf_counter`) armed at the absolute time joins the
loop's epoll set: the loop sleeps until a stream event or the alarm. Here the wait returns p50 0.11 ms after the
time on an idle loop (an idle virtual CPU takes that long to wake; the timer slack is not it: 1 ns of slack
changed nothing), against 2 us spinning, and costs the client no CPU in between. Python 3.13 has
os.timerfd_*; before it, libc's timerfd_create and timerfd_settime are called through ctypes. Where neither exists
(another OS, another clock) `Alarm.open` returns None and the dispatcher keeps the sleep-then-yield wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import os
import sys
import time

CLOCK_MONOTONIC = 1
TFD_TIMER_ABSTIME = 1
TFD_NONBLOCK = 0o4000
TFD_CLOEXEC = 0o2000000


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _LibcTimerfd:
    """timerfd through libc (Linux, Python before 3.13)."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols, libc's among them (no library search)
        self._create, self._settime = libc.timerfd_create, libc.timerfd_settime
        self._create.argtypes = [ctypes.c_int, ctypes.c_int]
        self._settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
        self._spec = _Itimerspec()

    def create(self) -> int:
        fd = self._create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create")
        return int(fd)

    def arm(self, fd: int, ns: int) -> None:
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = divmod(ns, 1_000_000_000)
        if self._settime(fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime")


class _OsTimerfd:
    """timerfd through the os module (Python 3.13 and later)."""

    def create(self) -> int:
        flags = os.TFD_NONBLOCK | os.TFD_CLOEXEC  # type: ignore[attr-defined,unused-ignore]
        return int(os.timerfd_create(time.CLOCK_MONOTONIC, flags=flags))  # type: ignore[attr-defined,unused-ignore]

    def arm(self, fd: int, ns: int) -> None:
        os.timerfd_settime_ns(fd, flags=os.TFD_TIMER_ABSTIME, initial=ns)  # type: ignore[attr-defined,unused-ignore]


@functools.cache  # once a process: every load level opens an alarm
def _timerfd() -> _LibcTimerfd | _OsTimerfd | None:
    if not sys.platform.startswith("linux"):
        return None
    if time.get_clock_info("perf_counter").implementation != "clock_gettime(CLOCK_MONOTONIC)":
        return None
    if hasattr(os, "timerfd_create"):
        return _OsTimerfd()
    try:
        return _LibcTimerfd()
    except (OSError, AttributeError):  # no libc to load, or one without timerfd
        return None


class Alarm:
    """Wakes a coroutine of the running loop at a perf_counter() time: never before it, as soon after it as the
    CPU wakes when the loop is free (a busy loop serves what is ahead of it first)."""

    def __init__(self, api: _LibcTimerfd | _OsTimerfd, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._api, self._fd, self._loop = api, fd, loop
        self._waiter: asyncio.Future[None] | None = None
        loop.add_reader(fd, self._rang)

    @classmethod
    def open(cls) -> Alarm | None:
        """An alarm on the running loop, or None where this platform has no timerfd (see the module docstring)."""
        api = _timerfd()
        if api is None:
            return None
        try:
            fd = api.create()
        except OSError:
            return None
        return cls(api, fd, asyncio.get_running_loop())

    async def at(self, when: float) -> None:
        """Return at perf_counter() `when` or after it."""
        while time.perf_counter() < when:
            self._waiter = self._loop.create_future()
            # perf_counter() is CLOCK_MONOTONIC in seconds; rounding `when` up to the next nanosecond keeps the
            # kernel's expiry from falling a hair before it.
            self._api.arm(self._fd, int(when * 1e9) + 1)
            await self._waiter

    def _rang(self) -> None:
        with contextlib.suppress(BlockingIOError):  # read the expiry count, or nothing if it was re-armed meanwhile
            os.read(self._fd, 8)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
