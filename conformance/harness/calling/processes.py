"""The processes a worker leaves behind: found and killed, so none outlives the harness.

A user's function may start processes of its own (a ``multiprocessing.Pool``, a torch
``DataLoader`` with ``num_workers > 0``, ``os.fork``, ``subprocess``).  The worker is the leader of
a process group of its own, which its descendants inherit; :func:`kill_tree` kills that group and
every descendant found by walking the parent links (``/proc`` on Linux, psutil where installed),
which also finds a descendant that left the group (``setsid``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from typing import Dict, Iterable, List

__all__ = ["adopt_orphans", "descendants", "end_adopted", "kill_group", "kill_tree", "living_children"]

_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37  # linux/prctl.h


def adopt_orphans(on: bool) -> bool:
    """Linux: while ``on``, a process orphaned below this one (a child a dead worker left, even one
    in a session of its own) becomes this process's child instead of init's, so that it can still be
    found and killed.  Returns whether this process adopted orphans before (False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        before = ctypes.c_int(0)
        libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        return bool(before.value)
    except (OSError, AttributeError):
        return False


def living_children(zombies: bool = False) -> List[int]:
    """This process's children ``/proc`` shows (with the ended ones not yet reaped: ``zombies``)."""
    me = os.getpid()
    return [pid for pid, parent in _parents_from_proc(zombies).items() if parent == me]


def end_adopted(known: Iterable[int], seconds: float = 2.0) -> None:
    """Kill the children of this process that are not ``known`` (orphans it adopted, with their own
    descendants) and reap them, and reap the adopted ones that have ended."""
    known = set(known)
    adopted = [pid for pid in living_children(zombies=True) if pid not in known]
    for pid in adopted:
        kill_tree(pid)
    deadline = time.monotonic() + seconds
    while adopted and time.monotonic() < deadline:
        left = []
        for pid in adopted:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere, or never ours
                continue
            if not done:
                left.append(pid)
        adopted = left
        if adopted:
            time.sleep(0.01)


def _parents_from_proc(zombies: bool = False) -> Dict[int, int]:
    """``{pid: parent pid}`` of every living process ``/proc`` shows (empty where there is none);
    with ``zombies``, also of those that ended and wait to be reaped."""
    parents: Dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # the process ended meanwhile
            continue
        # "pid (command) state ppid ...": the command may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and (zombies or fields[0] != b"Z"):  # a zombie has ended: only its reaping is due
            parents[int(name)] = int(fields[1])
    return parents


def _parents_from_psutil() -> Dict[int, int]:
    try:
        import psutil
    except ImportError:
        return {}
    parents: Dict[int, int] = {}
    for proc in psutil.process_iter(["ppid", "status"]):
        ppid = proc.info.get("ppid")
        if ppid is not None and proc.info.get("status") != psutil.STATUS_ZOMBIE:
            parents[proc.pid] = ppid
    return parents


def descendants(pid: int) -> List[int]:
    """The living descendants of ``pid`` (children first), as far as this platform shows them."""
    parents = _parents_from_proc() or _parents_from_psutil()
    children: Dict[int, List[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found: List[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child != pid:
                found.append(child)
                todo.append(child)
    return found


def kill_group(pgid: int, known: Iterable[int] = ()) -> None:
    """SIGKILL the process group ``pgid`` and the processes ``known`` (a tree found earlier)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (OSError, AttributeError):  # no such group left, or no process groups here
        pass
    for pid in dict.fromkeys(known):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` (not yet reaped: its number is still its own), the group it leads and its
    descendants, found before anything is killed (a killed process's children are handed to
    init and no longer show as descendants).  ``pid`` is left for its parent to reap."""
    kill_group(pid, [pid, *descendants(pid)])
