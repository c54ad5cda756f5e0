"""A check of a pickle's opcode stream before anything is built (see :func:`_check_opcodes`).

The C unpickler cannot be stopped once it runs: what it would allocate, hash or call is
refused here, on the raw bytes, by a symbolic run of the pickle machine.
"""

from __future__ import annotations

import pickle
from typing import Any, Dict, List

from retrieval_conformance.reference.readers.pickles.allowed_globals import _BYTES_GLOBALS, _allowed_global

# Opcodes with no place in data: instances of classes (INST, OBJ, NEWOBJ*), the extension
# registry, persistent ids and out-of-band buffers.
_REFUSED_OPCODES = {
    ord("i"): ("INST", "an instance of a class"),
    ord("o"): ("OBJ", "an instance of a class"),
    0x81: ("NEWOBJ", "an instance of a class"),
    0x92: ("NEWOBJ_EX", "an instance of a class"),
    0x82: ("EXT1", "an extension-registry global"),
    0x83: ("EXT2", "an extension-registry global"),
    0x84: ("EXT4", "an extension-registry global"),
    ord("P"): ("PERSID", "a persistent id"),
    ord("Q"): ("BINPERSID", "a persistent id"),
    0x97: ("NEXT_BUFFER", "an out-of-band buffer"),
    0x98: ("READONLY_BUFFER", "an out-of-band buffer"),
}
# What the model knows of a stack entry: a hashable scalar (safe as a dict key), anything
# else, or a tuple ("s", codec, start, end) for a str (its bytes, decoded only when
# STACK_GLOBAL names a global with it) or ("g", (module, name)) for a global.
_KEY, _OTHER = 0, 1
# numbers written with more digits than this are refused (CPython itself refuses int() of
# more than 4300 digits; the C unpickler's conversion of a huge one is quadratic)
_MAX_NUMBER_TEXT = 5000
_PLAIN_OPS = {  # opcode -> (pop, push) for the opcodes without argument or mark
    ord("N"): (0, _KEY),
    0x88: (0, _KEY),
    0x89: (0, _KEY),
    ord("]"): (0, _OTHER),
    ord("}"): (0, _OTHER),
    ord(")"): (0, _OTHER),
    0x8F: (0, _OTHER),
    0x85: (1, _OTHER),
    0x86: (2, _OTHER),
    0x87: (3, _OTHER),
}
_FIXED_KEYS = {ord("J"): 4, ord("K"): 1, ord("M"): 2, ord("G"): 8}  # BININT*, BINFLOAT
_SIZED = {  # opcode -> (bytes of the size, signed, what it pushes)
    ord("U"): (1, False, _KEY),
    ord("T"): (4, True, _KEY),
    ord("C"): (1, False, _KEY),
    ord("B"): (4, False, _KEY),
    0x8E: (8, False, _KEY),
    0x96: (8, False, _OTHER),
    0x8C: (1, False, "utf-8"),
    ord("X"): (4, False, "utf-8"),
    0x8D: (8, False, "utf-8"),
    0x8A: (1, False, "long"),
    0x8B: (4, True, "long"),
}


def _check_opcodes(data: bytes, max_items: int) -> None:
    """Check a pickle's opcode stream before the C unpickler builds anything.

    A symbolic run of the pickle machine over the raw bytes: the stack and the memo hold
    only what kind of object each entry is (a hashable scalar, a str, a global, anything
    else).  It refuses, before any object exists, what the C unpickler cannot be stopped
    from doing once it runs:

    * more than ``max_items`` container elements (a list of 10**8 references to one
      object is a few hundred MB of ``BINGET`` but 800 MB of list);
    * memo indices beyond the number of opcodes read (``LONG_BINPUT 2**31`` makes the C
      unpickler allocate and clear a 32 GiB memo table);
    * dict keys and set items other than str, bytes, None, bool, float and ints below
      2**60 (a tuple key is hashed recursively -- exponential time for nested tuples that
      share sub-tuples -- and crafted colliding keys cost quadratic time);
    * opcodes that build class instances or use persistent ids or out-of-band buffers,
      and globals outside the allow-list (named in the message, in stream order);
    * malformed or truncated streams (a ``BINBYTES8`` claiming 2**60 bytes is refused
      here instead of being allocated).

    The arguments are sized exactly as the C unpickler sizes them, so both see the same
    opcodes; streams the model cannot follow are refused.
    """
    stack: List[Any] = []
    marks: List[int] = []
    memo: Dict[int, Any] = {}
    items = 0
    ops = 0
    pos = 0
    end = len(data)

    def bad(what: str) -> pickle.UnpicklingError:
        return pickle.UnpicklingError(f"malformed pickle: {what} (at byte {pos})")

    def fence() -> int:
        return marks[-1] if marks else 0

    def pop(n: int) -> List[Any]:
        if len(stack) - n < fence():
            raise bad("stack underflow")
        out = stack[len(stack) - n :]
        del stack[len(stack) - n :]
        return out

    def pop_mark(onto_target: bool) -> List[Any]:
        # APPENDS / SETITEMS / ADDITEMS put what is above the mark into the object just
        # below it; the C unpickler silently skips them when there is none, which the model
        # would not follow: such streams are refused.
        if not marks:
            raise bad("no MARK")
        m = marks.pop()
        if onto_target and m <= fence():
            raise bad("no container below MARK")
        out = stack[m:]
        del stack[m:]
        return out

    def count(n: int) -> None:
        nonlocal items
        items += n
        if items > max_items:
            raise pickle.UnpicklingError(
                f"the pickle builds more than {max_items:,} container elements (max_items); "
                "pass max_items=... to read a larger pickle"
            )

    def hashable(entries: List[Any], what: str) -> None:
        for e in entries:
            if e != _KEY and not (type(e) is tuple and e[0] == "s"):
                raise pickle.UnpicklingError(
                    f"refused {what}: dict keys and set items must be str, bytes, None, bool, "
                    "float or int (a compound key can cost exponential time to hash)"
                )

    def line() -> bytes:
        nonlocal pos
        nl = data.find(b"\n", pos)
        if nl < 0:
            raise bad("truncated line")
        out = data[pos:nl]
        pos = nl + 1
        return out

    def number_line() -> bytes:
        text = line()
        if len(text) > _MAX_NUMBER_TEXT:
            raise pickle.UnpicklingError(f"refused a number written with {len(text):,} digits")
        return text

    def memo_index(idx: int) -> int:
        if not 0 <= idx <= ops:
            raise pickle.UnpicklingError(f"refused memo index {idx}: beyond the {ops} opcodes read so far")
        return idx

    def uint(n: int) -> int:
        nonlocal pos
        if pos + n > end:
            raise bad("truncated")
        value = int.from_bytes(data[pos : pos + n], "little")
        pos += n
        return value

    def name_of(entry: Any) -> str:
        # the str a STACK_GLOBAL names (module or attribute), decoded as the C unpickler does
        if type(entry) is not tuple or entry[0] != "s" or entry[3] - entry[2] > 256:
            raise pickle.UnpicklingError("refused STACK_GLOBAL of a non-string name")
        codec, start, stop = entry[1:]
        try:
            return data[start:stop].decode(codec, "surrogatepass" if codec == "utf-8" else "strict")
        except UnicodeDecodeError:
            raise bad("undecodable name") from None

    push = stack.append
    while True:
        if pos >= end:
            raise bad("no STOP opcode")
        op = data[pos]
        pos += 1
        ops += 1
        # the opcodes of a long list of names first (SHORT_BINUNICODE or BINUNICODE, then
        # MEMOIZE or BINPUT), inline: a million names then take about a second
        if op == 0x8C and pos < end:  # SHORT_BINUNICODE
            start = pos + 1
            pos = start + data[pos]
            if pos > end:
                raise bad("truncated")
            push(("s", "utf-8", start, pos))
        elif op == 0x58 and pos + 4 <= end:  # BINUNICODE
            start = pos + 4
            pos = start + int.from_bytes(data[pos:start], "little")
            if pos > end:
                raise bad("truncated")
            push(("s", "utf-8", start, pos))
        elif op == 0x94:  # MEMOIZE (len(memo) <= ops: no index check needed)
            if len(stack) <= (marks[-1] if marks else 0):
                raise bad("stack underflow")
            memo[len(memo)] = stack[-1]
        elif (op == 0x71 and pos < end) or (op == 0x72 and pos + 4 <= end):  # (LONG_)BINPUT
            if op == 0x71:
                idx = data[pos]
                pos += 1
            else:
                idx = int.from_bytes(data[pos : pos + 4], "little")
                pos += 4
            if len(stack) <= (marks[-1] if marks else 0):
                raise bad("stack underflow")
            memo[memo_index(idx) if idx > ops else idx] = stack[-1]
        elif (op == 0x68 and pos < end) or (op == 0x6A and pos + 4 <= end):  # (LONG_)BINGET
            if op == 0x68:
                idx = data[pos]
                pos += 1
            else:
                idx = int.from_bytes(data[pos : pos + 4], "little")
                pos += 4
            if idx not in memo:
                raise bad(f"memo index {idx} unset")
            push(memo[idx])
        elif op in _SIZED:
            width, signed, kind = _SIZED[op]
            if pos + width > end:
                raise bad("truncated")
            n = int.from_bytes(data[pos : pos + width], "little", signed=signed)
            if n < 0:
                raise bad("negative size")
            start = pos + width
            pos = start + n
            if pos > end:  # never trust a size the data does not back (BINBYTES8 2**60)
                raise bad(f"{n:,} bytes claimed, {end - start:,} present")
            if kind == "utf-8":
                stack.append(("s", "utf-8", start, pos))
            elif kind == "long":
                stack.append(_KEY if n <= 7 else _OTHER)  # fewer than 2**56: distinct hashes
            else:
                stack.append(kind)
        elif op == 0x71 or op == 0x72:  # BINPUT, LONG_BINPUT: truncated
            idx = uint(1 if op == 0x71 else 4)
            if len(stack) <= fence():
                raise bad("stack underflow")
            memo[memo_index(idx)] = stack[-1]
        elif op == 0x68 or op == 0x6A:  # BINGET, LONG_BINGET: truncated
            idx = uint(1 if op == 0x68 else 4)
            if idx not in memo:
                raise bad(f"memo index {idx} unset")
            stack.append(memo[idx])
        elif op in _FIXED_KEYS:
            if pos + _FIXED_KEYS[op] > end:
                raise bad("truncated")
            pos += _FIXED_KEYS[op]
            stack.append(_KEY)
        elif op in _PLAIN_OPS:
            npop, kind = _PLAIN_OPS[op]
            if npop:
                pop(npop)
                count(npop)
            stack.append(kind)
        elif op == 0x28:  # MARK
            marks.append(len(stack))
        elif op == 0x65:  # APPENDS
            count(len(pop_mark(True)))
        elif op == 0x61:  # APPEND
            if len(stack) - 1 <= fence():
                raise bad("APPEND without a list")
            pop(1)
            count(1)
        elif op == 0x75:  # SETITEMS
            entries = pop_mark(True)
            if len(entries) % 2:
                raise bad("odd SETITEMS")
            hashable(entries[0::2], "a dict key")
            count(len(entries) // 2)
        elif op == 0x73:  # SETITEM
            if len(stack) - 2 <= fence():
                raise bad("SETITEM without a dict")
            hashable(pop(2)[:1], "a dict key")
            count(1)
        elif op == 0x90:  # ADDITEMS
            entries = pop_mark(True)
            hashable(entries, "a set item")
            count(len(entries))
        elif op in (0x6C, 0x74, 0x91, 0x64):  # LIST, TUPLE, FROZENSET, DICT
            entries = pop_mark(False)
            if op == 0x91:
                hashable(entries, "a frozenset item")
            if op == 0x64:
                if len(entries) % 2:
                    raise bad("odd DICT")
                hashable(entries[0::2], "a dict key")
            count(len(entries) // (2 if op == 0x64 else 1))
            stack.append(_OTHER)
        elif op == 0x52:  # REDUCE
            callable_, _args = pop(2)
            if type(callable_) is not tuple or callable_[0] != "g":
                raise pickle.UnpicklingError("refused REDUCE of something not a global")
            stack.append(_KEY if callable_[1] in _BYTES_GLOBALS else _OTHER)
        elif op == 0x62:  # BUILD
            pop(1)
            if len(stack) <= fence():
                raise bad("stack underflow")
        elif op == 0x93:  # STACK_GLOBAL
            module, attr = pop(2)
            stack.append(("g", _allowed_global(name_of(module), name_of(attr))))
        elif op == 0x63:  # GLOBAL
            try:
                module, attr = line().decode("utf-8"), line().decode("utf-8")
            except UnicodeDecodeError:
                raise bad("undecodable GLOBAL") from None
            stack.append(("g", _allowed_global(module, attr)))
        elif op in (0x49, 0x4C, 0x46, 0x53):  # INT, LONG, FLOAT, STRING: text lines
            text = number_line() if op != 0x53 else line()
            stack.append(_OTHER if op in (0x49, 0x4C) and len(text.strip(b" L")) > 18 else _KEY)
        elif op == 0x56:  # UNICODE (raw-unicode-escape text)
            start = pos
            line()
            stack.append(("s", "raw-unicode-escape", start, pos - 1))
        elif op == 0x67 or op == 0x70:  # GET, PUT (text index)
            try:
                idx = int(number_line())
            except ValueError:
                raise bad("memo index") from None
            if op == 0x67:
                if idx not in memo:
                    raise bad(f"memo index {idx} unset")
                stack.append(memo[idx])
            else:
                if len(stack) <= fence():
                    raise bad("stack underflow")
                memo[memo_index(idx)] = stack[-1]
        elif op == 0x80:  # PROTO
            if uint(1) > pickle.HIGHEST_PROTOCOL:
                raise bad("unsupported protocol")
        elif op == 0x95:  # FRAME: transparent, the opcodes inside are read on
            size = uint(8)
            if pos + size > end:
                raise bad("truncated frame")
        elif op == 0x30:  # POP: the C unpickler drops an empty mark instead
            if marks and marks[-1] == len(stack):
                marks.pop()
            else:
                pop(1)
        elif op == 0x31:  # POP_MARK
            pop_mark(False)
        elif op == 0x32:  # DUP
            if len(stack) <= fence():
                raise bad("stack underflow")
            stack.append(stack[-1])
        elif op == 0x2E:  # STOP
            pop(1)
            return
        elif op in _REFUSED_OPCODES:
            name, what = _REFUSED_OPCODES[op]
            raise pickle.UnpicklingError(f"refused opcode {name} ({what}): not needed for data")
        else:
            raise bad(f"unknown opcode {op:#04x}")
