"""The job's reader: byte ranges of the inputs (splits) and the lines that start in each, as the CLI's reader
splits them."""
import os
import stat

DEFAULT_SPLIT_BYTES = 256 << 20


def _owned_segments(path, start, end, limit, chunk_size=8 << 20):
    """The lines that start in [start, end) of `path`, as the CLI's reader splits them (on "\\n" only, the last
    line with or without one; white space " \\t\\r" trimmed; a blank line counted, not an item; a line longer
    than `limit` one oversized item, never held whole), a chunk at a time. Yields ("items", numbers, contents):
    runs of items (their line numbers within the split, from 1; their trimmed bytes, views into the chunk),
    ("oversized", number) for each oversized line, in order, and last ("end", lines): the number of lines
    owned. Newlines are found with numpy, and only lines that need trimming are
    looked at one by one."""
    import numpy as np

    white = np.zeros(256, bool)
    white[[9, 13, 32]] = True
    lines = 0

    def single(content):
        """(kind, content) of a line looked at alone: oversized, blank, or an item."""
        if content is None or len(content) > limit:
            return "oversized", None
        content = bytes(content).strip(b" \t\r")
        return ("item", content) if content else ("blank", None)

    def run(data, view, first, last):
        """The lines data[first[k]:last[k]], all owned: their segments, in order."""
        nonlocal lines
        count = len(first)
        numbers = np.arange(lines + 1, lines + 1 + count)
        lines += count
        if not count:
            return
        lengths = last - first
        arr = np.frombuffer(data, np.uint8)
        end_byte = arr[np.maximum(last - 1, 0)]
        special = (lengths == 0) | (lengths > limit) | white[arr[np.minimum(first, len(arr) - 1)]] | white[end_byte]
        contents = [view[a:b] for a, b in zip(first.tolist(), last.tolist())]
        numbers = numbers.tolist()
        if not special.any():
            yield "items", numbers, contents
            return
        at = 0
        for k in np.flatnonzero(special).tolist():
            if k > at:
                yield "items", numbers[at:k], contents[at:k]
            kind, content = single(contents[k] if lengths[k] <= limit else None)
            if kind == "oversized":
                yield "oversized", numbers[k]
            elif kind == "item":
                yield "items", [numbers[k]], [content]
            at = k + 1
        if at < count:
            yield "items", numbers[at:], contents[at:]

    def lone(content):
        """One line (the one a chunk boundary cut) as its segment."""
        nonlocal lines
        lines += 1
        kind, content = single(content)
        if kind == "oversized":
            yield "oversized", lines
        elif kind == "item":
            yield "items", [lines], [content]

    begin = max(0, start - 1)  # the byte before the split says whether a line starts at its first byte
    with open(path, "rb") as f:
        f.seek(begin)
        pending, pending_at, at = b"", begin, begin  # pending: an unended line (None: over the limit) from pending_at
        while True:
            data = f.read(chunk_size)
            if not data:
                if (pending is None or pending) and start <= pending_at < end:
                    yield from lone(pending)
                break
            arr = np.frombuffer(data, np.uint8)
            newlines = np.flatnonzero(arr == 10)
            if not len(newlines):
                if pending is not None:
                    pending = pending + data if len(pending) + len(data) <= limit else None
                at += len(data)
                continue
            if pending_at >= start:
                cut = newlines[0]
                yield from lone(None if pending is None or len(pending) + cut > limit else pending + data[:cut])
            first, last = newlines[:-1] + 1, newlines[1:]
            owned = np.searchsorted(first + at, end)  # lines starting at or past `end` are the next split's
            view = memoryview(data)
            low = np.searchsorted(first + at, start)
            yield from run(data, view, first[low:owned], last[low:owned])
            if owned < len(first):
                break
            pending_at = at + int(newlines[-1]) + 1
            if pending_at >= end:
                break
            tail = data[int(newlines[-1]) + 1:]
            pending = tail if len(tail) <= limit else None
            at += len(data)
    yield "end", lines


def _default_split_bytes(total, cores):
    """Equal splits, as many as a multiple of the cores (so every round of tasks keeps each core busy), none over
    DEFAULT_SPLIT_BYTES and none under 1 MiB. Few and large: each Python task costs Spark about 0.15 s beyond its
    work (measured on local[2]), while a split's memory no longer grows with its size (its lines are staged a
    call at a time)."""
    per_round = max(1, cores)
    count = -(-max(1, -(-total // DEFAULT_SPLIT_BYTES)) // per_round) * per_round
    return max(1 << 20, -(-total // count))


def plan_splits(inputs, split_bytes):
    """Byte ranges of the inputs, in input order: dicts with s (split number), input (its position among the
    inputs: the same file given twice is two inputs, numbered apart), path, start, end, and the file's identity
    (size, modification time, inode, change time: a split whose file no longer has it is refused). Each becomes
    one partition."""
    splits = []
    for number, path in enumerate(inputs):
        if path == "-" or os.path.isdir(path) or path.lower().endswith(".zip"):
            raise ValueError(f"input {path}: the Spark job reads JSONL files (stdin, directories and .zip archives: use the CLI)")
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"input {path}: the Spark job reads regular files, which its tasks read by byte range "
                             "(a pipe or device: use the CLI)")
        size = info.st_size
        starts = list(range(0, size, split_bytes)) or [0]
        for start in starts:
            splits.append({"s": len(splits), "input": number, "path": path, "start": start,
                           "end": min(size, start + split_bytes) if size else 0, "identity": _identity(info)})
    return splits


def _check_unchanged(split):
    """A split whose file is not the one planned is refused, never numbered twice: another size, modification time,
    inode or change time (which no utime can set back, so `cp -p` or `rsync -t` over the file is seen too; not the
    device, which differs between a cluster's mounts of one shared file)."""
    info = os.stat(split["path"])
    if _identity(info) != split["identity"]:
        raise RuntimeError(f"input {split['path']} changed while the job ran (size, modification time, inode or "
                           "change time): refused")


def _identity(info):
    return [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]
