"""The job's split reader (_owned_segments) against the CLI's reading rule, written the plain way: every split of
random files (blank, white-space and CR lines, lines over the limit, a last line with or without newline) at
every chunk size down to one byte gives the lines, numbers and items the rule gives, and the splits of a file
together own each line once."""
import random

import pytest

from test_spark import job  # puts the package on sys.path

PIECES = [b"{}", b"", b" ", b"\t", b"\r", b" {a} \r", b"x" * 30, b"y" * 9, b"  ", b"\r\r", b"z", b"\x00"]


def by_the_rule(data, start, end, limit):
    """(items, lines) of the lines starting in [start, end): ("item", number, trimmed) or ("oversized", number)."""
    items, lines, at = [], 0, 0
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()  # a file ending in a newline has no line after it
    for part in parts:
        if start <= at < end:
            lines += 1
            if len(part) > limit:
                items.append(("oversized", lines))
            elif part.strip(b" \t\r"):
                items.append(("item", lines, part.strip(b" \t\r")))
        at += len(part) + 1
    return items, lines


def read(path, start, end, limit, chunk_size):
    items, lines = [], None
    for segment in job._owned_segments(path, start, end, limit, chunk_size=chunk_size):
        if segment[0] == "items":
            items += [("item", number, bytes(content)) for number, content in zip(segment[1], segment[2])]
        elif segment[0] == "oversized":
            items.append(("oversized", segment[1]))
        else:
            lines = segment[1]
    return items, lines


@pytest.mark.parametrize("seed", range(4))
def test_every_split_reads_as_the_cli_reads(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "input.jsonl"
    for _ in range(600):
        data = b"\n".join(b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
                          for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.5:
            data += b"\n"
        path.write_bytes(data)
        limit = rng.choice([5, 10, 29, 30, 100])
        size = rng.randint(1, max(1, len(data)))
        owned = 0
        for start in range(0, max(1, len(data)), size):
            end = min(len(data), start + size)
            got = read(str(path), start, end, limit, rng.choice([1, 2, 3, 7, 64, 1 << 20]))
            assert got == by_the_rule(data, start, end, limit), (data, start, end, limit)
            owned += got[1]
        assert owned == by_the_rule(data, 0, len(data) + 1, limit)[1]
